"""Flex decode's kernel_options against SDPA, on the `flexdecoding` pair's cache (or on ch16
`paged_attention`'s pool with --paged). GPU only.

    python -m ch18.sweep_flexdecoding                  # 8 x 32k keys, GQA 16/4, bf16
    python -m ch18.sweep_flexdecoding --paged          # 64 ragged sequences in a paged pool
    python -m ch18.sweep_flexdecoding --only pair,S16  # a subset of rows
    python -m ch18.sweep_flexdecoding --profile-one [--paged] [--config NAME]   # for ncu

One row per config: the baseline (SDPA, or ch16's gather + SDPA), then compiled Flex with one
thing changed at a time around the pair's call. Columns: median GPU time per call
(triton.testing.do_bench), GB/s (the pair's workload() bytes: each KV byte once) and % of a
measured copy (torch copy_ of 1 GiB: read + write bytes / time), the host's time per call
(enqueue only), the CTAs that get keys out of those launched and the keys the busiest CTA
walks, both from the decode kernel's tile arithmetic (`split_plan`), and the largest error
against the baseline as a % of the pair's tolerance. A row over 100% is FAILED and the
script exits 1 after the table. Each config recompiles (torch._dynamo.reset() first).

--profile-one runs one warm call of one config (default: the pair's) between
torch.cuda.profiler.start() and stop(), for `ncu --profile-from-start off`
(ch18/ncu_flexdecoding.sh); `--config sdpa` profiles the baseline instead.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

LARGE_BLOCK = 1 << 30  # the KV block of the mask Flex builds when it is given none
DEVICE = "cuda"


@dataclass(frozen=True)
class Config:
    name: str
    mask: str                      # ch18: none | full | create;  --paged: full | partial
    options: dict = field(default_factory=dict)   # on top of the pair's KERNEL_OPTIONS if on_pair
    note: str = ""
    on_pair: bool = True


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def split_plan(rows: list[tuple[int, int]], kv_len: int, sparse_block: int, has_full: bool,
               split_kv: int, block_n: int, heads: int = 1) -> tuple[int, int, int]:
    """(CTAs that get keys, CTAs launched, keys the busiest CTA walks) of Flex's decode kernel.

    Follows torch 2.13's flex_decode.py.jinja: each (mask row, KV head) launches SPLIT_KV
    CTAs; a CTA's tile is cdiv(span, SPLIT_KV) keys rounded up to BLOCK_N, where span is
    KV_LEN when the mask has full blocks and the row's partial blocks * SPARSE_KV_BLOCK_SIZE
    when it has none. CTA t walks the row's partial blocks from t * tile and its full blocks
    from (SPLIT_KV - 1 - t) * tile, each list clipped at its own length (and at KV_LEN).
    rows: (partial blocks, full blocks) per mask row, one row per sequence."""
    block_n = min(block_n, sparse_block)  # the lowering caps its BLOCK_N at the mask's block
    mult = sparse_block // block_n
    n_cap = max(cdiv(kv_len, block_n), 1)
    busy, top = 0, 0
    for partial, full in rows:
        span = kv_len if has_full else partial * sparse_block
        tile = cdiv(cdiv(span, split_kv), block_n)                     # in BLOCK_N blocks
        keys = [0] * split_kv
        lists = [(partial, False)] + ([(full, True)] if has_full else [])
        for n_blocks, reverse in lists:
            last = min(n_blocks * mult, n_cap)
            for t in range(split_kv):
                start = (split_kv - 1 - t if reverse else t) * tile
                keys[t] += max(0, min(start + tile, last) - start) * block_n
        busy += sum(k > 0 for k in keys)
        top = max(top, max(keys))
    return busy * heads, len(rows) * split_kv * heads, top


def default_split_kv(batch: int, kv_heads: int, sms: int) -> int:
    """torch's get_split_k (flex_decoding.py): two CTAs per SM for B * Hkv rows."""
    return max(sms // max(batch * kv_heads, 1) * 2, 1)


def template_splits_by_row() -> bool | None:
    """Does the installed torch size a mask-without-full-blocks tile by the row's blocks (the
    arithmetic split_plan follows)? None when the template is not where torch 2.13 keeps it."""
    import torch._inductor.kernel.flex as flex

    path = Path(flex.__file__).parent / "templates" / "flex_decode.py.jinja"
    if not path.exists():
        return None
    return "kv_num_blocks * SPARSE_KV_BLOCK_SIZE, SPLIT_KV" in path.read_text()


def default_decode_config(head_dim: int, dtype: torch.dtype) -> tuple[int, int, int]:
    """torch's (BLOCK_N, num_stages, num_warps) for the decode kernel on this GPU."""
    try:
        from torch._inductor.template_heuristics.triton import CUDAConfigHeuristic

        conf = CUDAConfigHeuristic().get_flex_decode_configs(head_dim, dtype)[-1]
        return conf.block_n, conf.num_stages, conf.num_warps
    except Exception:  # an older/newer torch keeps it elsewhere: the template's usual default
        return 64, 1, 2


DECODE_GRID = [  # one change at a time around the pair's call (its mask and KERNEL_OPTIONS)
    Config("nomask", "none", {}, "no block_mask: the pair's first call", on_pair=False),
    Config("nomask.S1", "none", {"SPLIT_KV": 1}, "same, one split: equal time = idle splits", on_pair=False),
    Config("pair", "full", {}, "full blocks + the pair's KERNEL_OPTIONS"),
    Config("create", "create", {}, "create_block_mask(noop_mask): partial blocks"),
    Config("S4", "full", {"SPLIT_KV": 4}),
    Config("S16", "full", {"SPLIT_KV": 16}),
    Config("S32", "full", {"SPLIT_KV": 32}),
    Config("N128", "full", {"BLOCK_N": 128}),
    Config("W4", "full", {"num_warps": 4}),
    Config("st3", "full", {"num_stages": 3}, "torch's intended sm_90 default"),
    Config("contig", "full", {"BLOCKS_ARE_CONTIGUOUS": True}, "no block-index loads"),
    Config("tma", "full", {"USE_TMA": True}, "ignored if can_use_tma() refuses the tensors"),
]
PAGED_GRID = [
    Config("full", "full", {}, "full blocks + last partial: the pair's first layout", on_pair=False),
    Config("full.S4", "full", {"SPLIT_KV": 4}, "same, 4 splits: tiles cut from the pool", on_pair=False),
    Config("partial.S1", "partial", {"SPLIT_KV": 1}),
    Config("partial.S2", "partial", {"SPLIT_KV": 2}),
    Config("pair", "partial", {}, "all blocks partial + the pair's KERNEL_OPTIONS"),
    Config("partial.S8", "partial", {"SPLIT_KV": 8}),
    Config("partial.S16", "partial", {"SPLIT_KV": 16}),
    Config("pair.W4", "partial", {"num_warps": 4}),
    Config("pair.st3", "partial", {"num_stages": 3}),
]


class DecodeCase:
    """The flexdecoding pair's cache and call."""

    def __init__(self) -> None:
        from ch18._flexdecoding_common import KERNEL_OPTIONS
        from ch18.baseline_flexdecoding import SdpaDecode
        from core.benchmark import BenchContext

        self.base = SdpaDecode()
        self.base.ctx = BenchContext(seed=0, device=DEVICE)
        self.base.setup(self.base.ctx)
        self.s = self.base.shape()
        self.q = self.base.make_inputs(1)
        self.pair_options = KERNEL_OPTIONS
        self.grid = DECODE_GRID
        self.tolerance = self.base.tolerance
        self.bytes = self.base.workload().bytes
        self.title = (f"flexdecoding: {self.s.batch} x {self.s.kv_len} keys, {self.s.n_heads}/"
                      f"{self.s.n_kv_heads} heads of {self.s.head_dim}, {self.s.dtype}")

    def baseline(self) -> torch.Tensor:
        return self.base.run(self.q)

    def call(self, cfg: Config, options: dict) -> Callable[[], torch.Tensor]:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention, noop_mask

        from ch18._flexdecoding_common import dense_block_mask

        n = self.s.kv_len
        mask = {"none": lambda: None,
                "full": lambda: dense_block_mask(n, DEVICE),
                "create": lambda: create_block_mask(noop_mask, None, None, 1, n, device=DEVICE)}[cfg.mask]()
        flex = torch.compile(flex_attention, dynamic=False)
        return lambda: flex(self.q, self.base.k, self.base.v, block_mask=mask, enable_gqa=True,
                            kernel_options=options)

    def plan(self, cfg: Config, split_kv: int, block_n: int) -> tuple[int, int, int]:
        s = self.s
        if cfg.mask == "none":
            rows, sparse, full = [(1, 0)] * s.batch, LARGE_BLOCK, False
        elif cfg.mask == "create":
            rows, sparse, full = [(s.kv_len // 128, 0)] * s.batch, 128, True  # full count 0
        else:
            from ch18._flexdecoding_common import KV_BLOCK
            rows, sparse, full = [(0, s.kv_len // KV_BLOCK)] * s.batch, KV_BLOCK, True
        return split_plan(rows, s.kv_len, sparse, full, split_kv, block_n, s.n_kv_heads)

    def rows_heads(self) -> tuple[int, int]:
        return self.s.batch, self.s.n_kv_heads


class PagedCase:
    """ch16 paged_attention's pool, block table and call (the mask built once, outside)."""

    def __init__(self) -> None:
        from ch16._paged_attention_common import KERNEL_OPTIONS
        from ch16.baseline_paged_attention import GatherThenSdpa
        from core.benchmark import BenchContext

        self.base = GatherThenSdpa()
        self.base.ctx = BenchContext(seed=0, device=DEVICE)
        self.base.setup(self.base.ctx)
        kv = self.base.kv
        self.nb, self.bs, self.hkv, d = kv.k.shape[1:]
        self.k = kv.k[0].view(1, self.nb * self.bs, self.hkv, d).transpose(1, 2)
        self.v = kv.v[0].view(1, self.nb * self.bs, self.hkv, d).transpose(1, 2)
        self.table = kv.block_table[self.base.slots]
        self.q = self.base.make_inputs(1)
        self.pair_options = KERNEL_OPTIONS
        self.grid = PAGED_GRID
        self.tolerance = self.base.tolerance
        self.bytes = self.base.workload().bytes
        lens, (cfg, _) = self.base.lengths_list, self.base.dims()
        self.title = (f"paged_attention: {len(lens)} sequences of {min(lens)}-{max(lens)} keys in a "
                      f"pool of {self.nb} x {self.bs}-token blocks, {cfg.n_heads}/{self.hkv} heads "
                      f"of {d}, {cfg.dtype}")

    def builder(self, full_blocks: bool):
        from ch16._paged_attention_common import PagedBlockMask

        return PagedBlockMask(self.bs, self.nb, len(self.base.lengths_list), DEVICE, full_blocks)

    def baseline(self) -> torch.Tensor:
        return self.base.run(self.q)

    def call(self, cfg: Config, options: dict) -> Callable[[], torch.Tensor]:
        from torch.nn.attention.flex_attention import flex_attention

        mask = self.builder(cfg.mask == "full")(self.table, self.base.lengths)
        flex = torch.compile(flex_attention, dynamic=False)
        q = self.q[:, :, None]
        return lambda: flex(q, self.k, self.v, block_mask=mask, enable_gqa=True,
                            kernel_options=options)[:, :, 0]

    def plan(self, cfg: Config, split_kv: int, block_n: int) -> tuple[int, int, int]:
        n = [cdiv(x, self.bs) for x in self.base.lengths_list]
        rows = [(1, k - 1) for k in n] if cfg.mask == "full" else [(k, 0) for k in n]
        return split_plan(rows, self.nb * self.bs, self.bs, cfg.mask == "full", split_kv, block_n,
                          self.hkv)

    def rows_heads(self) -> tuple[int, int]:
        return len(self.base.lengths_list), self.hkv


def median_us(fn: Callable[[], Any]) -> float:
    from triton.testing import do_bench

    return 1e3 * do_bench(fn, warmup=25, rep=200, return_mode="median")


def host_us(fn: Callable[[], Any], calls: int = 20) -> float:
    """The host's time to enqueue one call (no sync inside: the GPU runs behind)."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return 1e6 * (t1 - t0) / calls


def copy_gbs() -> float:
    """The copy ceiling: 1 GiB copied device to device, read + write bytes per second."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return 2 * (1 << 30) / (median_us(lambda: dst.copy_(src)) * 1e-6) / 1e9


def err_pct(out: torch.Tensor, ref: torch.Tensor, tol) -> float:
    """Largest |out - ref| as a % of the pair's allowance atol + rtol * |ref|."""
    diff = (out.double() - ref.double()).abs()
    return 100.0 * float((diff / (tol.atol + tol.rtol * ref.double().abs())).max())


def options_of(case, cfg: Config) -> dict:
    return {**(case.pair_options if cfg.on_pair else {}), **cfg.options}


def sweep(case, only: set[str] | None) -> int:
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    s_dtype = torch.bfloat16
    block_n0, stages0, warps0 = default_decode_config(128, s_dtype)
    split0 = default_split_kv(*case.rows_heads(), sms)
    by_row = template_splits_by_row()
    ceiling = copy_gbs()
    print(f"{props.name}, {sms} SMs, torch {torch.__version__}; copy ceiling {ceiling:.0f} GB/s")
    print(case.title)
    print(f"torch's decode defaults here: SPLIT_KV {split0}, BLOCK_N {block_n0}, num_stages {stages0}, "
          f"num_warps {warps0}; template sizes a no-full-block tile by the row's blocks: {by_row}")
    head = f"{'config':<12} {'options':<28} {'us':>8} {'GB/s':>6} {'%copy':>6} {'host us':>8} " \
           f"{'CTAs busy/launched':>19} {'max keys/CTA':>12} {'err/tol':>8}  note"
    print(head)
    print("-" * len(head))
    ref = case.baseline()
    us = median_us(case.baseline)
    gbs = case.bytes / (us * 1e-6) / 1e9
    print(f"{'baseline':<12} {type(case.base).__name__:<28} {us:8.1f} {gbs:6.0f} {100 * gbs / ceiling:6.1f} "
          f"{host_us(case.baseline):8.1f} {'':>19} {'':>12} {'':>8}  the pair's baseline", flush=True)
    failed, t_start = [], time.perf_counter()
    for cfg in case.grid:
        if only and cfg.name not in only:
            continue
        options = options_of(case, cfg)
        shown = ",".join(f"{k}={v}" for k, v in options.items()) or "(defaults)"
        split, block_n = options.get("SPLIT_KV", split0), options.get("BLOCK_N", block_n0)
        busy, launched, top = case.plan(cfg, split, block_n)
        torch._dynamo.reset()  # each config compiles afresh: no recompile limit, no stale guard
        try:
            fn = case.call(cfg, options)
            out = fn()
            torch.cuda.synchronize()
        except Exception as exc:  # a config this torch/Triton cannot build: say so, go on
            print(f"{cfg.name:<12} {shown:<28} error: {str(exc).splitlines()[0][:100]}", flush=True)
            continue
        err = err_pct(out, ref, case.tolerance)
        us = median_us(fn)
        gbs = case.bytes / (us * 1e-6) / 1e9
        flag = "  FAILED" if err > 100 else ""
        if flag:
            failed.append(f"{cfg.name}: {err:.0f}% of the tolerance")
        print(f"{cfg.name:<12} {shown:<28} {us:8.1f} {gbs:6.0f} {100 * gbs / ceiling:6.1f} "
              f"{host_us(fn):8.1f} {f'{busy}/{launched}':>19} {top:>12} {err:7.0f}%  {cfg.note}{flag}",
              flush=True)
    print(f"({time.perf_counter() - t_start:.0f} s for the Flex rows, compiles included)")
    if hasattr(case, "builder"):  # the paged pair builds its mask every step: what that costs
        build = case.builder(False)
        step = lambda: build(case.table, case.base.lengths)  # noqa: E731
        print(f"BlockMask build per step (pair layout): {median_us(step):.1f} us GPU, "
              f"{host_us(step):.1f} us host")
    if failed:
        print("FAILED against the baseline: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


def profile_one(case, name: str) -> None:
    """One warm call between cudaProfilerStart/Stop (ncu --profile-from-start off)."""
    if name == "sdpa":
        fn = case.baseline
    else:
        cfg = next((c for c in case.grid if c.name == name), None)
        if cfg is None:
            raise SystemExit(f"no config {name!r}; one of: sdpa, " + ", ".join(c.name for c in case.grid))
        fn = case.call(cfg, options_of(case, cfg))
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"profiled one call of {name!r} ({case.title})", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paged", action="store_true", help="ch16 paged_attention's pool instead")
    parser.add_argument("--only", default="", help="comma-separated config names")
    parser.add_argument("--profile-one", action="store_true", help="one warm call for ncu")
    parser.add_argument("--config", default="pair", help="the config --profile-one runs (or sdpa)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("sweep_flexdecoding needs a CUDA GPU (Flex's decode kernel is Triton)")
    only = set(filter(None, args.only.split(",")))
    names = {c.name for c in (PAGED_GRID if args.paged else DECODE_GRID)}
    if only - names:
        raise SystemExit(f"no config {sorted(only - names)}; one of: {', '.join(sorted(names))}")
    case = PagedCase() if args.paged else DecodeCase()
    if args.profile_one:
        profile_one(case, args.config)
        return
    sys.exit(sweep(case, only or None))


if __name__ == "__main__":
    main()
