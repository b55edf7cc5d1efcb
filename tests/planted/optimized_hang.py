"""PLANTED HANG: run() never returns; the runner must kill the pair after its TIMEOUT_S
and report it FAILED, while every other pair is measured."""
import time

from ._planted_common import Planted

EXPECT = "timed out"


class Hang(Planted):
    def run(self, inputs):
        while True:
            time.sleep(0.5)


get_benchmark = Hang
