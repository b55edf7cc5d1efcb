"""Run every ch16 pair: `python ch16/compare.py [--examples flash_sdp,paged_attention] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
