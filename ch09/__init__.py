"""Chapter 09 pairs (see README.md)."""
