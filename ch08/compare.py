"""Run every ch08 pair: `python ch08/compare.py [--examples threshold,hbm_stream] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
