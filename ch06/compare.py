"""Run every ch06 pair: `python ch06/compare.py [--examples ilp,occupancy] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
