"""Run every ch17 pair: `python ch17/compare.py [--examples moe_gating,dynamic_routing] [bench run options]`."""
from cli.aisp import chapter_main

if __name__ == "__main__":
    chapter_main(__file__)
