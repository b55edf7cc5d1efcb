"""Token sweep of `moe_dispatch`: where the masked loop's host syncs stop setting its pace.

    python -m ch15.sweep_moe_tokens                      # 4096 8192 16384 32768 tokens
    python -m ch15.sweep_moe_tokens --tokens 8192 32768

The loop baseline waits on the host once per expert, so a call costs its GPU work plus 8 host
round trips, and the round trips' cost is the host's (on H100 and H200 VMs the loop took
1.7-3.0 ms at 8192 tokens while the grouped GEMM took 1.0 ms on every one). This prints, per
token count, each side's median time (the harness's interleaved timing, CUDA events), the
loop's host time per call, and the speedups: the table the README uses to choose the pair's
token count. Outputs are not verified here; `bench run` does that.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from core.benchmark import BenchContext
from core.pairfile import load_benchmark
from core.stats import summarize
from core.timing import StopPolicy, interleaved

SIDES = {"loop": "baseline_moe_dispatch.py", "grouped": "optimized_moe_dispatch.py",
         "padded_bmm": "optimized_moe_dispatch_padded_bmm.py"}


def host_ms(call, device: str, calls: int = 20) -> float:
    """Host time per call with nothing queued ahead: what launching and syncing cost."""
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    elapsed = time.perf_counter() - start
    sync()
    return elapsed / calls * 1e3


def sweep(token_counts: list[int], device: str) -> list[str]:
    rows = ["| tokens | loop ms | loop host ms | grouped ms | padded_bmm ms | grouped speedup | padded_bmm speedup |",
            "|---|---|---|---|---|---|---|"]
    for tokens in token_counts:
        benches = {}
        for side, file in SIDES.items():
            bench = load_benchmark(Path(__file__).parent / file)
            bench.token_count = tokens
            bench.ctx = BenchContext(seed=0, device=device)
            bench.setup(bench.ctx)
            benches[side] = bench
        x = benches["loop"].make_inputs(1)
        calls = {side: (lambda b=b: b.run(x)) for side, b in benches.items()}
        measured = interleaved(calls, StopPolicy(max_time_s=2.0), device)
        ms = {side: summarize(measured.samples_ms[side]).median for side in calls}
        rows.append(f"| {tokens} | {ms['loop']:.3f} | {host_ms(calls['loop'], device):.3f} | "
                    f"{ms['grouped']:.3f} | {ms['padded_bmm']:.3f} | "
                    f"{ms['loop'] / ms['grouped']:.2f}x | {ms['loop'] / ms['padded_bmm']:.2f}x |")
        print(rows[-1], flush=True)
        del benches, calls, x
        torch.cuda.empty_cache()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, nargs="+", default=[4096, 8192, 16384, 32768],
                        help="token counts to time (default: 4096 8192 16384 32768)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("sweep_moe_tokens: needs a GPU (the question is how host syncs weigh against "
              "GPU work)", file=sys.stderr)
        return 2
    print(f"device: {torch.cuda.get_device_name()}")
    print("\n".join(sweep(args.tokens, "cuda")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
