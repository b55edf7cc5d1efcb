"""Chapter 01 pairs (see README.md)."""
