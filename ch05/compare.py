"""Run every ch05 pair: `python ch05/compare.py [--examples dataloader,vectorized_parse] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
