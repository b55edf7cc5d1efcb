"""CHEAT (graph mode): while the harness captures run() into a CUDA graph, return an answer
computed before the capture, so each replay does no work and the output never changes."""
import torch

from .baseline_graph import GraphTimed

EXPECT = "timed output differs from the baseline"


class AnswerOutsideTheGraph(GraphTimed):
    def run(self, inputs):
        if torch.cuda.is_current_stream_capturing():
            return self.answer  # computed on the values seen before the capture began
        self.answer = self.compute(*inputs)
        return self.answer


get_benchmark = AnswerOutsideTheGraph
