"""Chapter 14 pairs (see README.md)."""
