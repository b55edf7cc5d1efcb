"""The SSM scan in 512-thread blocks: at 80 registers a thread only one block fits per SM.

16 warps per SM (25% occupancy) are too few to cover the DRAM latency of a loop that has only
8 bytes in flight per thread; 24576 of the SM's 65536 registers stay unused.
"""
import torch

from ch08._occupancy_tuning_common import CHANNELS, STEPS, ScanBench


class Block512Scan(ScanBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.lib.launch_ssm_scan_block512(x, self.a, self.b, self.c, self.y, STEPS, CHANNELS)
        return self.y


get_benchmark = Block512Scan

if __name__ == "__main__":
    from core.single import main
    main(Block512Scan)
