"""Chapter 17 pairs (see README.md)."""
