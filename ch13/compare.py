"""Run every ch13 pair: `python ch13/compare.py [--examples kv_cache] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
