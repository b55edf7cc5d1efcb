"""Run every ch01 pair: `python ch01/compare.py [--examples performance] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
