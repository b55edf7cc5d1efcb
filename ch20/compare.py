"""Run every ch20 pair: `python ch20/compare.py [--examples multiple_unoptimized,pipeline_sequential] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
