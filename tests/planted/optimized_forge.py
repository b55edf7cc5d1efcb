"""CHEAT (issue class: the pair writes a forged result file from inside the child): on
its first call it writes a result claiming a 100x speedup to the child's result path
(from sys.argv) and exits before the harness can write its own."""
import json
import os
import sys

from ._planted_common import Planted

EXPECT = "was not written by the harness"
TWIN = "optimized_scratch_file"  # its honest twin


class Forger(Planted):
    def run(self, inputs):
        forged = {"pair": "forged", "status": "ok", "examples": [], "speedup": 100.0}
        with open(sys.argv[-1], "w") as handle:
            json.dump({"token": "guess", "payload": forged}, handle)
        os._exit(0)


get_benchmark = Forger
