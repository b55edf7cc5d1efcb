"""cuFile through kvikio: the drive's DMA engine writes the chunks straight into GPU memory.

With GPUDirect Storage, `CuFile.pread` reads with O_DIRECT and the NVMe controller writes
into the GPU's memory over PCIe: no pinned bounce buffer, no second copy, and the chunks land
in the destination as their reads complete. kvikio splits each read into tasks for its
thread pool (IO_THREADS threads, as on the baseline side); the destination is registered
with cuFile once in setup(), as cuFile recommends for a buffer reused by many reads.

Where GDS is unavailable (no nvidia-fs driver, an unsupported file system, a container
without /run/udev), kvikio runs in compatibility mode: POSIX reads into its own pinned
bounce buffers, then copies to the GPU, which is the baseline's data path with kvikio's
pipelining, not GPUDirect Storage. The side then SKIPs (`unavailable`): its speedup would be
kvikio's thread pool against ours, under GDS's name. setup() prints which mode ran.

cuFile writes GPU memory outside CUDA stream order, so run() first waits for the work the
current stream may still have queued on the destination (the previous call's readers).
"""
from __future__ import annotations

import torch

from ch05._gds_read_common import IO_THREADS, FileToGpu
from core.benchmark import BenchContext


def kvikio_mode() -> str:
    """Which path kvikio takes, in words (the API moved in kvikio 25.04)."""
    import kvikio
    import kvikio.defaults

    if hasattr(kvikio.defaults, "is_compat_mode_preferred"):  # 25.04+: AUTO already resolved
        compat = kvikio.defaults.is_compat_mode_preferred()
    else:
        mode = kvikio.defaults.compat_mode()  # older: a bool, or a CompatMode
        if isinstance(mode, bool):
            compat = mode
        elif mode == kvikio.CompatMode.AUTO:
            return (f"kvikio {kvikio.__version__}: compatibility mode AUTO (cuFile where it "
                    f"opens, POSIX reads otherwise)")
        else:
            compat = mode == kvikio.CompatMode.ON
    if compat:
        return (f"kvikio {kvikio.__version__}: compatibility mode ON: POSIX reads through pinned "
                f"host bounce buffers, then copies to the GPU (not GPUDirect Storage)")
    return f"kvikio {kvikio.__version__}: compatibility mode OFF: cuFile reads (GPUDirect Storage)"


class CuFileRead(FileToGpu):
    def unavailable(self) -> str | None:
        mode = kvikio_mode()
        if "compatibility mode ON" in mode:
            return f"GPUDirect Storage is not available here ({mode})"
        return None

    def setup(self, ctx: BenchContext) -> None:
        import kvikio
        import kvikio.defaults

        super().setup(ctx)
        if hasattr(kvikio.defaults, "set"):  # 25.04+
            kvikio.defaults.set("num_threads", IO_THREADS)
        else:
            kvikio.defaults.num_threads_reset(IO_THREADS)
        self.file = kvikio.CuFile(self.path, "r")
        self.registered = hasattr(kvikio, "memory_register")
        if self.registered:
            kvikio.memory_register(self.out)
        self.description = kvikio_mode()
        print(f"ch05:gds_read: {self.description}", flush=True)

    def run(self, chunks: torch.Tensor) -> torch.Tensor:
        self.evict()
        torch.cuda.current_stream().synchronize()  # earlier readers of self.out are done
        size = self.cfg.chunk
        reads = [self.file.pread(self.out[slot], size, chunk * size)
                 for slot, chunk in enumerate(chunks.tolist())]
        for read in reads:
            if read.get() != size:
                raise OSError("short read")
        return self.out

    def teardown(self) -> None:
        import kvikio

        if getattr(self, "registered", False):
            kvikio.memory_deregister(self.out)
        if hasattr(self, "file"):
            self.file.close()
        super().teardown()


get_benchmark = CuFileRead

if __name__ == "__main__":
    from core.single import main
    main(CuFileRead)
