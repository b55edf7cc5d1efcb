"""Chapter 20 pairs (see README.md)."""
