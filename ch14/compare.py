"""Run every ch14 pair: `python ch14/compare.py [--examples triton_norm,flex_attention] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
