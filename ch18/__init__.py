"""Chapter 18 pairs (see README.md)."""
