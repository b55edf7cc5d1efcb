"""Baseline: the 32 layers launched one after another with <<<>>>.

A stream starts a kernel only once the previous one has completed and its memory is flushed;
then the next grid is launched and its blocks scheduled and started. For kernels of a couple
of µs that gap is a large share of the step.
"""
from ch11._pdl_common import PdlBench


class PlainLaunch(PdlBench):
    use_pdl = 0


get_benchmark = PlainLaunch

if __name__ == "__main__":
    from core.single import main
    main(PlainLaunch)
