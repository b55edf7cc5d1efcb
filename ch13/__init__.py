"""Chapter 13 pairs (see README.md)."""
