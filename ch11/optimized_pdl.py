"""Optimized: programmatic dependent launch (Hopper and later).

Layers 2..32 are launched with cudaLaunchKernelEx and the attribute
cudaLaunchAttributeProgrammaticStreamSerialization = 1: the stream may start a layer before
the previous one has completed, once all the previous layer's blocks have called
cudaTriggerProgrammaticLaunchCompletion (right after their own wait). The new layer's blocks
load their parameters, then wait in cudaGridDependencySynchronize until the previous layer
has completed and its writes are visible, and only then read its output. Launch and
scheduling of each layer overlap the layer before; the dependency itself is kept.
"""
from ch11._pdl_common import PdlBench


class ProgrammaticLaunch(PdlBench):
    use_pdl = 1


get_benchmark = ProgrammaticLaunch

if __name__ == "__main__":
    from core.single import main
    main(ProgrammaticLaunch)
