"""One step after another: read, tokenize and pack on the training thread, copy, compute.

The loop a first version of an online-tokenizing trainer has: the step's documents are
read and tokenized on the thread that drives the GPU, the packed rows (pageable memory) go
to the GPU with `.to("cuda")`, and the forward pass is launched. CUDA's asynchronous launch
already lets the host tokenize step i + 1 while the GPU computes step i, but nothing more:
the pageable copy waits for the stream to drain before it copies (the GPU idles while the
host stages the bytes and launches the next step's kernels), and tokenizing and launching
share one thread.
"""
import torch

from ch05._token_pipeline_common import TokenPipeline


class SerialPipeline(TokenPipeline):
    def run(self, plan: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        losses, checksums = [], []
        for documents in plan.tolist():
            rows = torch.from_numpy(self.load_step(documents)).to(self.device)
            step_losses, checksum = self.step(rows)
            losses.append(step_losses)
            checksums.append(checksum)
        return torch.stack(losses), torch.stack(checksums)


get_benchmark = SerialPipeline

if __name__ == "__main__":
    from core.single import main
    main(SerialPipeline)
