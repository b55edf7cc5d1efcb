"""Chapter 19 pairs (see README.md)."""
