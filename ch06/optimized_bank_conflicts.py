"""The same kernel with K staged as [32][33]: the padding column spreads a column over 32 banks."""
import torch

from ch06._bank_conflicts_common import TILES, ScoresBench


class PaddedTileScores(ScoresBench):
    def run(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k = inputs
        self.lib.launch_scores_padded(q, k, self.s, TILES)
        return self.s


get_benchmark = PaddedTileScores

if __name__ == "__main__":
    from core.single import main
    main(PaddedTileScores)
