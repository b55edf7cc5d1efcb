"""Per-stage gains from cumulative speedups (ch20's stage tables).

Cumulative stage variants each add one fix to the stage before and are all timed against
the same baseline in one run, so speedup_k = baseline time / stage k's time. Stage k's own
gain is speedup_k / speedup_{k-1} (stage 0 being the baseline, speedup 1): measured, not
estimated, and the gains multiply back to the last stage's speedup.
"""
from __future__ import annotations

import json
import math
from pathlib import Path


def stage_gains(speedups: list[float]) -> list[float]:
    """Cumulative speedups vs the baseline, stage 1 first -> each stage's own gain."""
    if not speedups:
        raise ValueError("stage_gains needs at least one stage's speedup")
    for s in speedups:
        if not (math.isfinite(s) and s > 0):
            raise ValueError(f"a speedup must be a positive finite number, got {s!r}")
    return [s / prev for prev, s in zip([1.0, *speedups[:-1]], speedups)]


# the cumulative stages of `multiple_unoptimized`, in order: (row id suffix, fix added)
TRAINING_STAGES = (
    ("_s1_bf16", "bf16 autocast"),
    ("_s2_fused_ops", "+ fused RMSNorm/GELU"),
    ("_s3_fused_optimizer", "+ `AdamW(fused=True)`"),
    ("_s4_no_sync_logging", "+ device-side loss logging"),
    ("", "+ loader workers, pinned, `non_blocking`"),
)


def training_stage_table(results_json: str | Path) -> str:
    """The README's cumulative stage table, as markdown, from a run's results.json: the
    numbers come from the run, never typed. Raises ValueError when a stage is missing."""
    record = json.loads(Path(results_json).read_text())
    pairs = [pair for pair in record["pairs"] if pair["pair"] == "ch20:multiple_unoptimized"]
    rows = {ex["id"]: ex for pair in pairs for ex in pair["examples"]}
    stem = "ch20:multiple_unoptimized"
    missing = [stem + suffix for suffix, _ in TRAINING_STAGES if stem + suffix not in rows
               or rows[stem + suffix].get("speedup") is None]
    if missing:
        raise ValueError(f"{results_json}: no measured row for {', '.join(missing)}; run "
                         f"`bench run ch20:multiple_unoptimized` first")
    stages = [rows[stem + suffix] for suffix, _ in TRAINING_STAGES]
    speedups = [ex["speedup"] for ex in stages]
    gains = stage_gains(speedups)
    base_ms = pairs[0]["baseline"]["stats"]["median"]
    lines = ["| stage | fix added | ms per call | speedup vs baseline (cumulative) | this stage's gain |",
             "|---|---|---|---|---|",
             f"| baseline | — | {_ms(base_ms)} | 1× | — |"]
    for k, ((suffix, fix), ex, speedup, gain) in enumerate(zip(TRAINING_STAGES, stages, speedups, gains), 1):
        name = f"`_{suffix.lstrip('_')}`" if suffix else "full (`optimized_multiple_unoptimized`)"
        lines.append(f"| {k} {name} | {fix} | {_ms(ex['timing']['stats']['median'])} | {speedup:.2f}× | {gain:.2f}× |")
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    return f"{value:.1f}" if value is not None else "-"


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: python -m ch20.stage_table RUN_DIR_OR_RESULTS_JSON")
    path = Path(sys.argv[1])
    print(training_stage_table(path / "results.json" if path.is_dir() else path))
