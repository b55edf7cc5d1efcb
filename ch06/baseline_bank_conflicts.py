"""Q·Kᵀ tiles with K staged as a plain [32][32] shared array: column reads are 32-way conflicts."""
import torch

from ch06._bank_conflicts_common import TILES, ScoresBench


class PlainTileScores(ScoresBench):
    def run(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k = inputs
        self.lib.launch_scores_plain(q, k, self.s, TILES)
        return self.s


get_benchmark = PlainTileScores

if __name__ == "__main__":
    from core.single import main
    main(PlainTileScores)
