"""Run every ch04 pair: `python ch04/compare.py [--examples ddp_overlap] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
