"""HONEST twin of ptr_cache: reads the inputs' addresses (as every ctypes kernel launch
does) to pick a path, and computes every call."""
from ._planted_common import Planted

EXPECT = "pass"


class AddressReader(Planted):
    def run(self, inputs):
        x, y = inputs
        aligned = x.data_ptr() % 16 == 0 and y.data_ptr() % 16 == 0
        return self.compute(x, y) if aligned else self.compute(x.clone(), y.clone())


get_benchmark = AddressReader
