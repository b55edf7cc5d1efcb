"""Baseline (teaching): cudaMalloc the task's scratch buffer, run the task, cudaFree it.

The book's naive starting point, and code that many libraries and hand-written extensions
still contain. cudaFree blocks the host until the whole device is idle (it cannot know which
stream last used the memory), so task t+1 is enqueued only after every stream has drained:
the four streams never overlap, the GPU idles during each cudaMalloc/cudaFree, and the host
stalls 16 times per call. (torch's own tensors come from its caching allocator, which avoids
this; a kernel library with its own cudaMalloc does not.) An engineer who owns the loop would
allocate the buffers once instead (optimized_stream_ordered_prealloc.py), so this pair's
speedup is the lesson, not a headline.
"""
import torch

from ch11._stream_ordered_common import COLS, ROWS, STREAMS, TASKS, StreamOrderedBench


class MallocPerTask(StreamOrderedBench):
    teaching = True  # the synchronizing allocator is the book's deliberate naive example

    def launch(self, x: torch.Tensor, out: torch.Tensor) -> None:
        self.lib.launch_tasks_malloc(x, out, TASKS, ROWS, COLS, self.handles, STREAMS)


get_benchmark = MallocPerTask

if __name__ == "__main__":
    from core.single import main
    main(MallocPerTask)
