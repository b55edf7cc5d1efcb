"""Run every ch12 pair: `python ch12/compare.py [--examples cuda_graphs,work_queue] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
