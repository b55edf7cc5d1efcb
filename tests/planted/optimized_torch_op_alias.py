"""HONEST twin of torch_op_patch: keeps its own name for a torch function (a local alias,
as fast-path code does) without rebinding anything in torch."""
import torch

from ._planted_common import Planted

EXPECT = "pass"

_sin = torch.sin


class LocalAlias(Planted):
    @staticmethod
    def compute(x, y):
        return _sin(x) * y + x


get_benchmark = LocalAlias
