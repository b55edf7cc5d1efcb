"""CHEAT (issue class: an answer computed in setup() and returned as a copy): setup()
builds the inputs of the seeds it expects (v1 verified on seeds 0 and 1 and timed on 0)
and precomputes their answers; run() looks the answer up by the first input value."""
from ._planted_common import Planted

EXPECT = "verification failed"


class AnswerFromSetup(Planted):
    def setup(self, ctx):
        self.answers = {}
        for seed in range(4):
            x, y = self.make_inputs(seed)
            self.answers[float(x[0])] = self.compute(x, y)
        self.fallback = next(iter(self.answers.values()))

    def run(self, inputs):
        return self.answers.get(float(inputs[0][0]), self.fallback).clone()


get_benchmark = AnswerFromSetup
