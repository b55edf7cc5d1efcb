"""The STREAM triad one float per thread: 8 bytes in flight per thread, warps do the rest."""
import torch

from ch08._hbm_stream_common import A, N, TriadBench


class ScalarTriad(TriadBench):
    def run(self) -> torch.Tensor:
        self.lib.launch_triad_scalar(self.x, self.z, self.y, A, N)
        return self.y


def get_benchmark() -> ScalarTriad:
    return ScalarTriad()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
