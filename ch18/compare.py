"""Run every ch18 pair: `python ch18/compare.py [--examples flexdecoding,mla_decode] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
