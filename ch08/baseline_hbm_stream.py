"""The STREAM triad one float per thread: 8 bytes in flight per thread, warps do the rest."""
import torch

from ch08._hbm_stream_common import A, N, TriadBench


class ScalarTriad(TriadBench):
    def run(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x, z = inputs
        self.lib.launch_triad_scalar(x, z, self.y, A, N)
        return self.y


get_benchmark = ScalarTriad

if __name__ == "__main__":
    from core.single import main
    main(ScalarTriad)
