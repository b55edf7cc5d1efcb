"""Chapter 07 pairs (see README.md)."""
