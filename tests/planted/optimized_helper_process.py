"""Leaves a helper process running (a 'warm pool' it never stops). The pair itself is
honest; the harness must kill the helper with the pair's process group when it ends."""
import subprocess
import sys

from ._planted_common import Planted

EXPECT = "pass"
MARKER = "aisp-planted-helper-7f3a"  # tests look for a process carrying this


class LeavesAHelper(Planted):
    def setup(self, ctx):
        self.helper = subprocess.Popen([sys.executable, "-c",
                                        f"import time; time.sleep(600)  # {MARKER}"])


get_benchmark = LeavesAHelper
