"""Chapter 11 pairs (see README.md)."""
