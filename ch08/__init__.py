"""Chapter 08 pairs (see README.md)."""
