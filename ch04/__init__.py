"""Chapter 04 pairs (see README.md)."""
