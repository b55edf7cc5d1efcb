"""Run every ch07 pair: `python ch07/compare.py [--examples transpose,lookup] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
