"""Chapter 15 pairs (see README.md)."""
