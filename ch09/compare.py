"""Run every ch09 pair: `python ch09/compare.py [--examples fused_l2norm,fp8_gemm] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
