"""Run every ch11 pair: `python ch11/compare.py [--examples streams,pdl] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
