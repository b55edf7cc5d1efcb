"""The same kernel with K stored [32][32] at column i ^ row: conflict-free without padding."""
import torch

from ch06._bank_conflicts_common import TILES, ScoresBench


class SwizzledTileScores(ScoresBench):
    def run(self) -> torch.Tensor:
        self.lib.launch_scores_swizzled(self.q, self.k, self.s, TILES)
        return self.s


def get_benchmark() -> SwizzledTileScores:
    return SwizzledTileScores()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
