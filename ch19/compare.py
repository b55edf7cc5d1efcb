"""Run every ch19 pair: `python ch19/compare.py [--examples kv_quantization,fp8_linear] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
