"""Chapter 12 pairs (see README.md)."""
