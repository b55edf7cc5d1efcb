"""The same kernel with K stored [32][32] at column i ^ row: conflict-free without padding."""
import torch

from ch06._bank_conflicts_common import TILES, ScoresBench


class SwizzledTileScores(ScoresBench):
    def run(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k = inputs
        self.lib.launch_scores_swizzled(q, k, self.s, TILES)
        return self.s


get_benchmark = SwizzledTileScores

if __name__ == "__main__":
    from core.single import main
    main(SwizzledTileScores)
