#!/usr/bin/env bash
# Nsight Compute on one warm call of each side of ch13's quantization pairs: the counters that
# say what bounds each kernel (HBM, tensor pipes, issue), one short CSV per side.
#
#   bash ch13/ncu_quantization.sh                       # quantization, quantization_dynamic, precisionfp8
#   bash ch13/ncu_quantization.sh quantization          # one pair
#
# The driver (python -m ch13.sweep_quantization --profile-one PAIR:SIDE) sets the side up as
# the harness does (weights, autotuning, compiles), warms it, and runs exactly one call
# between cudaProfilerStart/Stop, so `--profile-from-start off` profiles that call's kernels
# and nothing of the setup. `--clock-control none` keeps the GPU's own clocks (ncu's default
# `base` lengthened kernels by ~20% on an H100: core/profiling.py). Kernel replay restores
# memory between passes, so the weight-only kernel's split-K counters start at zero each pass.
# Columns: us (kernel duration), grid, dram% (HBM throughput, % of peak), MB_read (HBM),
# L2hit%, sm% (SM throughput), wgmma% / mma% (tensor pipe busy: Hopper's warpgroup MMA and
# the warp-level mma.sync), alu% / xu% (integer and conversion pipes), occupancy%, stall_mem%
# (warps waiting on memory); kernels of one name are summed (us, MB) or averaged over their
# time (%). precisionfp8 runs ~60 kernels per side: the 12 longest are listed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
NCU=${NCU:-ncu}
NCU_ARGS=${NCU_ARGS:-}  # extra ncu flags, e.g. NCU_ARGS='--kernel-name regex:gemm|cast' for precisionfp8
PAIRS=("$@")
[ ${#PAIRS[@]} -eq 0 ] && PAIRS=(quantization quantization_dynamic precisionfp8)

WANTED=(
  gpu__time_duration.sum
  launch__grid_size
  dram__throughput.avg.pct_of_peak_sustained_elapsed
  gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed
  dram__bytes_read.sum
  lts__t_sector_hit_rate.pct
  sm__throughput.avg.pct_of_peak_sustained_elapsed
  sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active
  sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
  sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active
  sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active
  sm__warps_active.avg.pct_of_peak_sustained_active
  smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct
)
# Keep the metrics this GPU has (a name ncu does not know stops the whole run): `--query-metrics`
# lists base names (the part before the first '.'); launch__ and gpu__time_duration always exist;
# if the query prints nothing, every metric is asked for.
AVAILABLE=$("$NCU" --query-metrics 2>/dev/null | awk '{print $1}' || true)
METRICS=()
for m in "${WANTED[@]}"; do
  base=${m%%.*}
  if [[ -z $AVAILABLE || $base == launch__* || $base == gpu__time_duration ]] \
     || grep -qx "$base" <<<"$AVAILABLE"; then
    METRICS+=("$m")
  fi
done
METRIC_LIST=$(IFS=,; echo "${METRICS[*]}")

for pair in "${PAIRS[@]}"; do
  for side in baseline optimized; do
    raw=$(mktemp)
    "$NCU" --profile-from-start off --clock-control none --replay-mode kernel \
      --metrics "$METRIC_LIST" --csv --page raw $NCU_ARGS \
      "$PY" -m ch13.sweep_quantization --profile-one "$pair:$side" >"$raw" 2>"$raw.err" \
      || { echo "ncu failed for $pair:$side:"; tail -5 "$raw.err"; tail -5 "$raw"; }
    "$PY" -m ch13.sweep_quantization --ncu-summary "$pair:$side" "$raw"
    rm -f "$raw" "$raw.err"
  done
done
