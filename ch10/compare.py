"""Run every ch10 pair: `python ch10/compare.py [--examples attention,persistent] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
