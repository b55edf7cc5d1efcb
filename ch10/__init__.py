"""Chapter 10 pairs (see README.md)."""
