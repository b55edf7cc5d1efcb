"""HONEST twin of gil_hog: a worker thread started in setup() that does each call's work when
asked and waits otherwise (ch03's feeder pools, a DataLoader's pin-memory thread)."""
from concurrent.futures import ThreadPoolExecutor

from ._planted_common import Planted

EXPECT = "pass"


class PooledWork(Planted):
    def setup(self, ctx):
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="planted-worker")
        self.pool.submit(lambda: None).result()  # the thread exists before timing

    def run(self, inputs):
        return self.pool.submit(self.compute, *inputs).result()

    def teardown(self):
        self.pool.shutdown()


get_benchmark = PooledWork
