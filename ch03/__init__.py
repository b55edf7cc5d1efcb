"""Chapter 03 pairs (see README.md)."""
