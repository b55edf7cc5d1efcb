#!/usr/bin/env bash
# Nsight Compute counters for every kernel of ONE warm call: SDPA's, then Flex decode's as the
# flexdecoding pair first called it (no block_mask) and as it calls it now (full-block mask),
# then ch16 paged_attention's first and current Flex layouts. GPU machine, repository root:
#
#     bash ch18/ncu_flexdecoding.sh                 # every call below
#     bash ch18/ncu_flexdecoding.sh nomask pair     # named ch18 configs only (sweep names)
#
# Each call is `python -m ch18.sweep_flexdecoding --profile-one [--paged] --config NAME`: it
# compiles and warms the config outside the profiled range, then runs one call between
# cudaProfilerStart/Stop, so `--profile-from-start off` profiles that call's kernels only.
# `--clock-control none`: ncu's default (base clocks) lengthens kernels by ~20% against the
# timings (design.md, Timing). Printed per kernel: duration, DRAM and SM throughput (% of
# peak), grid and block, registers, achieved warps (% of peak, active cycles), SM active
# cycles avg/max (~ the share of SMs busy for the kernel's length: if 32 CTAs do all the work
# on 132 SMs, as the source predicts for the no-mask call, about 0.25) and DRAM bytes read.
# PY=.venv/bin/python (or whichever python has the repo's torch) if `python` is not it.
set -euo pipefail
PY=${PY:-python}
# Inductor's compile workers are subprocesses; under ncu keep the compile in-process.
export TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-1}
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
METRICS+=,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size
METRICS+=,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active
METRICS+=,sm__cycles_active.avg,sm__cycles_active.max,dram__bytes_read.sum

# ncu --csv --page raw: a header row, a units row, one row per kernel; keep the kernel's name
# (cut to 48 characters) and the metrics above, and add SM active avg/max.
read -r -d '' CUT <<'PYEOF' || true
import csv, sys
label, metrics, header = sys.argv[1], sys.argv[2].split(","), sys.argv[3] == "1"
lines = sys.stdin.read().splitlines()
start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
if start is None:
    sys.exit(f"{label}: no ncu CSV in the output:\n" + "\n".join(lines[-20:]))
rows = list(csv.DictReader(lines[start:]))
kernels = [r for r in rows if r["ID"].strip()]
units = next((r for r in rows if not r["ID"].strip()), {})  # the units row: its ID is empty
short = {"gpu__time_duration.sum": "time", "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram%",
         "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm%", "launch__grid_size": "grid",
         "launch__block_size": "block", "launch__registers_per_thread": "regs",
         "sm__warps_active.avg.pct_of_peak_sustained_active": "warps%", "sm__cycles_active.avg": "sm_cyc_avg",
         "sm__cycles_active.max": "sm_cyc_max", "dram__bytes_read.sum": "dram_bytes"}
w = csv.writer(sys.stdout)
if header:
    unit = lambda m: f"[{units[m]}]" if units.get(m) and units[m] != "%" else ""
    w.writerow(["call", "kernel"] + [short.get(m, m) + unit(m) for m in metrics] + ["sm_active_avg/max"])
for k in kernels:
    try:
        cyc = [float(k[f"sm__cycles_active.{s}"].replace(",", "")) for s in ("avg", "max")]
        ratio = f"{cyc[0] / max(cyc[1], 1.0):.2f}"
    except (KeyError, ValueError):
        ratio = "n/a"
    w.writerow([label, k["Kernel Name"][:48]] + [k.get(m, "n/a") for m in metrics] + [ratio])
PYEOF

HEADER=1
profile() {  # $1: label, then the sweep's arguments
  local label=$1; shift
  ncu --profile-from-start off --clock-control none --print-units base --csv --page raw \
      --metrics "$METRICS" "$PY" -m ch18.sweep_flexdecoding --profile-one "$@" \
    | "$PY" -c "$CUT" "$label" "$METRICS" "$HEADER"
  HEADER=0
}

if [ $# -gt 0 ]; then
  for name in "$@"; do profile "$name" --config "$name"; done
  exit 0
fi
profile sdpa --config sdpa                      # the baseline's kernel(s)
profile nomask --config nomask                  # the pair's first call: no block_mask
profile pair --config pair                      # the pair now: full-block mask
profile paged.sdpa --paged --config sdpa        # ch16: gather + SDPA
profile paged.full --paged --config full        # ch16's first layout: full blocks + last partial
profile paged.pair --paged --config pair        # ch16 now: every block partial, SPLIT_KV 4
