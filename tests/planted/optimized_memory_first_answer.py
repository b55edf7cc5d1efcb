"""CHEAT (memory): the full layer on its first call after setup(), that answer again on the
next two (allocating nothing), honest from the fourth call on. The memory goal measures a
side's first three calls after setup() (core.memory), where this side would look frugal;
each of them gets inputs no earlier call had and the last one's output is checked against
the baseline's (core.goals.memory), so the stale answer fails there."""
from ._planted_common import TwoLayer

EXPECT = "on the memory measurement's last call"
TWIN = "optimized_memory_lazy_workspace"  # its first call differs too; it computes on every one


class FirstAnswerAgain(TwoLayer):
    goal = "memory"

    def setup(self, ctx):
        super().setup(ctx)
        self.calls, self.first = 0, None

    def run(self, x):
        self.calls += 1
        if self.calls == 1 or self.calls > 3:
            self.first = super().run(x)
            return self.first
        return self.first.clone()


get_benchmark = FirstAnswerAgain
