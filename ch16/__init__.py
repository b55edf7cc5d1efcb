"""Chapter 16 pairs (see README.md)."""
