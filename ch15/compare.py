"""Run every ch15 pair: `python ch15/compare.py [--examples continuous_batching,paged_kv] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
