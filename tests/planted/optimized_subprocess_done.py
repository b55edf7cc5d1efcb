"""HONEST twin of helper_process: runs a helper process to completion in setup()."""
import subprocess
import sys

from ._planted_common import Planted

EXPECT = "pass"


class WaitsForItsHelper(Planted):
    def setup(self, ctx):
        subprocess.run([sys.executable, "-c", "pass"], check=True)


get_benchmark = WaitsForItsHelper
