"""Chapter 02 pairs (see README.md)."""
