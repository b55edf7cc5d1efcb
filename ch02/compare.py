"""Run every ch02 pair: `python ch02/compare.py [--examples zero_copy,cublas] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
