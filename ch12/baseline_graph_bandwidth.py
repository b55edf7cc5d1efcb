"""Baseline: the wide decode step (few large memory-bound kernels) launched eagerly."""
import torch

from ch12._graph_bandwidth_common import WideDecodeBench


class EagerWideDecode(WideDecodeBench):
    @torch.no_grad()
    def run(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)


get_benchmark = EagerWideDecode

if __name__ == "__main__":
    from core.single import main
    main(EagerWideDecode)
