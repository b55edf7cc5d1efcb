"""Run every ch03 pair: `python ch03/compare.py [--examples pinned_host,cpu_threads] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
