"""Chapter 06 pairs (see README.md)."""
