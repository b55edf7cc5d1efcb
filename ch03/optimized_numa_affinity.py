"""Feeder threads bound to the GPU's NUMA-local cores; buffers first touched there.

NVML names the CPUs closest to the GPU (`nvmlDeviceGetCpuAffinity`: the cores of the node its
PCIe root hangs off). Each feeder thread binds itself to them (`os.sched_setaffinity`) before
it does anything else, and the same threads write the batch buffers first, so the buffers'
pages are on the GPU's node: the threads write local memory and the GPU's DMA reads local
memory. Only the feeder's threads are bound; the rest of the process is left as it was.
"""
from ch03._feeder import feeder_pool
from ch03._numa_affinity_common import CropFeeder


class GpuLocalNode(CropFeeder):
    def start_pool(self, workers, local_cpus):
        return feeder_pool(workers, cpus=local_cpus, intra_op_threads=1)


get_benchmark = GpuLocalNode

if __name__ == "__main__":
    from core.single import main
    main(GpuLocalNode)
