"""Chapter 05 pairs (see README.md)."""
