"""Mutation runner: breaks one harness rule at a time and checks that the tests catch it.

    python -m tests.mutations              # every mutation below
    python -m tests.mutations NAME ...     # only these (names as printed by --list)
    python -m tests.mutations --list       # the mutations and the tests meant to catch them
    python -m tests.mutations --keep       # keep the temporary copy (its path is printed)

Each mutation is (name, file, exact original text, replacement, test node ids). The working
tree (tracked and untracked, not ignored files: `git ls-files -co --exclude-standard`) is
copied once into a temporary directory; the repository itself is never edited. First the
tests of every mutation must pass on the unmutated copy; then, for each mutation, the file in
the copy is edited (and restored afterwards), and the tests run there with
`pytest -x -q` and PYTHONPATH set to the copy. A mutation is "caught" when pytest reports
failing tests, "MISSED" when they all pass. The original text must occur exactly once in its
file: when the code has moved, the mutation is reported as "original text not found in FILE"
(an ERROR, never a silent pass) and must be updated here.

Exit status: 0 when every mutation was caught; 1 when any was missed or could not be
applied or run; 2 when the tests fail on the unmutated copy (nothing can be judged then).

Not collected by pytest (the name does not match test_*.py) and not part of the test run:
each pytest run imports torch, a few seconds per mutation. Run only the tests named here.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
T = "tests/test_thresholds.py::"


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str  # relative to the repository root
    original: str  # must occur exactly once in `file`
    replacement: str
    tests: tuple[str, ...]  # pytest node ids that must fail on the mutated code


G = "tests/test_goals.py::"
C = "tests/test_contract_v3.py::"
TOLERANCE_TESTS = (T + "test_default_tolerance_boundary_per_dtype",)
NOISY_TESTS = (T + "test_too_few_samples_on_either_side_is_noisy",
               T + "test_enough_samples_on_both_sides_is_not_noisy",
               T + "test_interval_width_limit_follows_the_tolerance")
TIMED_INPUT_TESTS = (T + "test_modifying_inputs_only_during_timing_fails",
                     T + "test_baseline_modifying_inputs_during_timing_fails_the_pair",
                     T + "test_honest_pair_passes_the_timed_checks")

MUTATIONS = [
    # --- core/verify.py: the verification tolerance ---------------------------------------
    Mutation("tolerance-fp64-x3", "core/verify.py",
             "torch.float64: Tolerance(1e-7, 1e-9),", "torch.float64: Tolerance(3e-7, 3e-9),",
             TOLERANCE_TESTS),
    Mutation("tolerance-fp32-x3", "core/verify.py",
             "torch.float32: Tolerance(1e-4, 1e-5),", "torch.float32: Tolerance(3e-4, 3e-5),",
             TOLERANCE_TESTS),
    Mutation("tolerance-fp16-x3", "core/verify.py",
             "torch.float16: Tolerance(1e-2, 1e-3),", "torch.float16: Tolerance(3e-2, 3e-3),",
             TOLERANCE_TESTS),
    Mutation("tolerance-bf16-x3", "core/verify.py",
             "torch.bfloat16: Tolerance(1e-2, 1e-2),", "torch.bfloat16: Tolerance(3e-2, 3e-2),",
             TOLERANCE_TESTS),
    Mutation("tolerance-all-x10", "core/verify.py",
             "    torch.float64: Tolerance(1e-7, 1e-9),\n"
             "    torch.float32: Tolerance(1e-4, 1e-5),\n"
             "    torch.float16: Tolerance(1e-2, 1e-3),\n"
             "    torch.bfloat16: Tolerance(1e-2, 1e-2),\n",
             "    torch.float64: Tolerance(1e-6, 1e-8),\n"
             "    torch.float32: Tolerance(1e-3, 1e-4),\n"
             "    torch.float16: Tolerance(1e-1, 1e-2),\n"
             "    torch.bfloat16: Tolerance(1e-1, 1e-1),\n",
             TOLERANCE_TESTS),
    Mutation("tolerance-fp8-x3", "core/verify.py",
             "FP8_TOLERANCE = Tolerance(1e-1, 1e-1)", "FP8_TOLERANCE = Tolerance(3e-1, 3e-1)",
             (T + "test_fp8_tolerance_boundary",)),
    Mutation("compare-allowed-x3", "core/verify.py",
             "allowed = tol.atol + tol.rtol * e_abs",
             "allowed = 3 * (tol.atol + tol.rtol * e_abs)",
             TOLERANCE_TESTS + (T + "test_explicit_tolerance_is_used_as_rtol_and_atol",)),
    Mutation("compare-allowed-x10", "core/verify.py",
             "allowed = tol.atol + tol.rtol * e_abs",
             "allowed = 10 * (tol.atol + tol.rtol * e_abs)",
             TOLERANCE_TESTS + (T + "test_explicit_tolerance_is_used_as_rtol_and_atol",)),
    Mutation("compare-rtol-x3", "core/verify.py",
             "allowed = tol.atol + tol.rtol * e_abs",
             "allowed = tol.atol + 3 * tol.rtol * e_abs",
             (T + "test_explicit_tolerance_is_used_as_rtol_and_atol",)),
    Mutation("compare-atol-x3", "core/verify.py",
             "allowed = tol.atol + tol.rtol * e_abs",
             "allowed = 3 * tol.atol + tol.rtol * e_abs",
             (T + "test_explicit_tolerance_is_used_as_rtol_and_atol",)),
    Mutation("compare-rtol-atol-swapped", "core/verify.py",
             "allowed = tol.atol + tol.rtol * e_abs",
             "allowed = tol.rtol + tol.atol * e_abs",
             TOLERANCE_TESTS),
    Mutation("compare-reference-by-expected-dtype", "core/verify.py",
             "tol = tolerance or default_tolerance(e.dtype if same_dtype else a.dtype)",
             "tol = tolerance or default_tolerance(e.dtype)",
             (T + "test_reference_comparison_uses_the_sides_dtype",)),
    # --- core/integrity.py: the escaped-work allowance ------------------------------------
    Mutation("escape-fraction-0.5", "core/integrity.py",
             "ESCAPE_FRACTION = 0.02", "ESCAPE_FRACTION = 0.5",
             (T + "test_escape_fraction_of_wall_time",)),
    Mutation("escape-fraction-0.06", "core/integrity.py",
             "ESCAPE_FRACTION = 0.02", "ESCAPE_FRACTION = 0.06",
             (T + "test_escape_fraction_of_wall_time",)),
    Mutation("gap-factor-30", "core/integrity.py",
             "GAP_FACTOR = 3.0", "GAP_FACTOR = 30.0",
             (T + "test_escape_gap_allowance_per_sample",)),
    Mutation("gap-factor-4", "core/integrity.py",
             "GAP_FACTOR = 3.0", "GAP_FACTOR = 4.0",
             (T + "test_escape_gap_allowance_per_sample",)),
    Mutation("escape-harness-host-time-ignored", "core/integrity.py",
             "harness_idle = sum(b.harness_host_ms for b in batches)", "harness_idle = 0.0",
             (T + "test_escape_gap_allowance_per_sample",
              "tests/test_integrity.py::test_the_gpu_waiting_for_the_harness_host_work_is_not_escaped_work")),
    Mutation("left-running-fraction-0.5", "core/integrity.py",
             "LEFT_FRACTION = 0.1", "LEFT_FRACTION = 0.5",
             ("tests/test_integrity.py::test_a_call_that_leaves_the_gpu_busy_after_its_end_event_escaped",)),
    Mutation("left-running-floor-0.2", "core/integrity.py",
             "LEFT_FLOOR_MS = 0.05", "LEFT_FLOOR_MS = 0.2",
             ("tests/test_integrity.py::test_a_call_that_leaves_the_gpu_busy_after_its_end_event_escaped",)),
    Mutation("escape-strikes-forgive-all", "core/integrity.py",
             "    FORGIVEN = 1\n", "    FORGIVEN = 99\n",
             (T + "test_one_stalled_batch_is_forgiven_a_second_flagged_batch_fails",)),
    # --- core/calibration.py: the measured gate tolerance -----------------------------------
    Mutation("calibration-one-sided-spread", "core/calibration.py",
             "seen[family].append((2 * abs(math.log(ratio)),", "seen[family].append((abs(math.log(ratio)),",
             ("tests/test_calibration.py::test_the_largest_stray_sets_the_tolerance_of_its_family",)),
    Mutation("calibration-min-ratios-1", "core/calibration.py",
             "MIN_RATIOS = 10", "MIN_RATIOS = 1",
             ("tests/test_calibration.py::test_too_few_ratios_or_runs_or_mixed_gpus_set_nothing",)),
    # --- core/gate.py: NOISY ---------------------------------------------------------------
    Mutation("noisy-min-to-max", "core/gate.py",
             "if min(samples) < MIN_SAMPLES:", "if max(samples) < MIN_SAMPLES:", NOISY_TESTS),
    Mutation("noisy-min-samples-5", "core/gate.py",
             "MIN_SAMPLES = 10", "MIN_SAMPLES = 5", NOISY_TESTS),
    Mutation("noisy-interval-ratio-1.2", "core/gate.py",
             "MAX_INTERVAL_RATIO = 1.10", "MAX_INTERVAL_RATIO = 1.20", NOISY_TESTS),
    # --- core/checks.py and core/child.py: the checks during timing -------------------------
    Mutation("timed-baseline-self-check-off", "core/checks.py",
             'if "baseline" in captured:', "if False:",
             (T + "test_baseline_caching_across_timed_calls_fails_the_pair",)),
    Mutation("timed-input-check-off", "core/child.py",
             'problem = f"{mutation_problem(mutated)} (during timing)" if mutated else None',
             "problem = None", TIMED_INPUT_TESTS),
    Mutation("timed-input-check-wrong-values", "core/child.py",
             "mutated = changed(fresh[name].last, inputs)",
             "mutated = changed(fresh[name].sets[0], inputs)", TIMED_INPUT_TESTS),
    # --- core/fresh.py, core/timing.py: values new to every call, the kept call drawn after it --
    Mutation("fresh-values-once-per-batch", "core/fresh.py",
             "torch._foreach_copy_(self._dsts, self.sources[i])",
             "torch._foreach_copy_(self._dsts, self.sources[0])",
             ("tests/test_child.py::test_every_timed_call_gets_values_no_earlier_call_had",
              "tests/test_fresh.py::test_each_call_gets_its_own_set_in_the_same_tensors")),
    Mutation("kept-call-always-the-first", "core/timing.py",
             "keep.draw(i - keep.window.start + 1) == 0",
             "i == keep.window.start",
             ("tests/test_stats_timing.py::"
              "test_the_kept_call_is_drawn_after_each_call_returns_and_is_uniform_over_the_batch",)),
    # --- core/goals/: each goal's noise rule (a result too wide to store) --------------------
    Mutation("compile-time-noise-width-x3", "core/goals/compile_time.py",
             "if hi / lo > 1 + verdict.CPU_BOUND_TOLERANCE:",
             "if hi / lo > 1 + 3 * verdict.CPU_BOUND_TOLERANCE:",
             (G + "test_compile_time_gate_noise_rule_is_the_cpu_bound_width",)),
    Mutation("goodput-noise-width-x3", "core/goals/goodput.py",
             "if lo <= 0 or hi / lo > 1 + verdict.CPU_BOUND_TOLERANCE:",
             "if lo <= 0 or hi / lo > 1 + 3 * verdict.CPU_BOUND_TOLERANCE:",
             (G + "test_goodput_gate_noise_rule_is_the_cpu_bound_width_of_the_round_ratios",)),
    Mutation("simulated-cost-noise-width-x3", "core/goals/simulated_cost.py",
             "if interval[1] / interval[0] > verdict.MAX_INTERVAL_RATIO:",
             "if interval[1] / interval[0] > 3 * verdict.MAX_INTERVAL_RATIO:",
             (G + "test_simulated_cost_gate_noise_rule_is_five_percent_over_the_seeds",)),
    # --- contract v3: the rules a variant cannot choose --------------------------------------
    Mutation("tolerance-bound-atol-x10", "core/verify.py",
             "MAX_ATOL_OF_RMS = 1.5", "MAX_ATOL_OF_RMS = 15.0",
             (C + "test_a_declared_atol_far_above_the_outputs_rms_is_refused_with_the_numbers",)),
    Mutation("tolerance-bound-rtol-x3", "core/verify.py",
             "MAX_RTOL = 0.1", "MAX_RTOL = 0.3",
             (C + "test_a_declared_rtol_above_the_widest_honest_one_is_refused",)),
    Mutation("rms-share-x2", "core/verify.py",
             "RMS_SHARE = 0.5", "RMS_SHARE = 1.0",
             (C + "test_the_rms_error_may_use_half_the_declared_band",
              C + "test_an_answer_off_everywhere_within_the_elementwise_tolerance_fails_the_rms_check")),
    Mutation("variant-brings-its-own-hooks", "core/rules.py",
             "if theirs is ours or", "if True or",
             (C + "test_a_variant_that_brings_its_own_pair_owned_hook_fails_naming_its_file",)),
    Mutation("own-workload-unbounded", "core/rules.py",
             "if getattr(variant, name) > getattr(baseline, name) * (1 + 1e-9)]",
             "if False]",
             (C + "test_a_declared_precision_may_count_fewer_bytes_never_more",)),
    Mutation("nan-tolerance-passes-the-bounds", "core/verify.py",
             "    if not all(math.isfinite(v) and v >= 0 for v in (tolerance.rtol, tolerance.atol)):",
             "    if False:",
             (C + "test_a_tolerance_that_is_not_two_finite_non_negative_numbers_is_refused",)),
    Mutation("declarations-through-properties", "core/declarations.py",
             '        if hasattr(type(found), "__get__"):',
             "        if False:",
             (C + "test_declarations_are_plain_class_attributes_fixed_at_load",)),
    Mutation("torch-namespace-unwatched", "core/integrity.py",
             "                    if owner in TORCH_NAMESPACES and self._torch_rewrap(current, value):",
             "                    if owner in TORCH_NAMESPACES:",
             (C + "test_the_guard_watches_every_torch_function_but_torchs_own_rewraps",)),
    Mutation("threads-outside-their-calls-pass", "core/threads.py",
             "OUTSIDE_CPU_SHARE = 0.1", "OUTSIDE_CPU_SHARE = 100.0",
             ("tests/test_threads.py::test_a_variant_whose_threads_work_while_the_baseline_is_timed_fails",)),
    Mutation("threads-owned-by-who-ran-when-they-appeared", "core/threads.py",
             "        starter, hops = STARTERS.get(ident), 0",
             "        starter, hops = None, 0",
             ("tests/test_threads.py::test_a_thread_belongs_to_its_starters_side_whenever_it_appears",)),
    Mutation("thread-start-unwatched", "core/integrity.py",
             '    "threading.Thread": ("start",),  # records each thread\'s starter (core.threads)\n',
             "",
             ("tests/test_threads.py::test_a_pair_that_puts_back_thread_start_is_caught",)),
    Mutation("state-check-share-set-by-a-variant", "core/statecheck.py",
             '        if side == "baseline":\n            self._setup_s = seconds',
             '        if True:\n            self._setup_s = seconds',
             ("tests/test_statecheck.py::test_a_variant_cannot_lower_its_own_checks_by_a_slow_setup",)),
    Mutation("no-later-state-check", "core/statecheck.py",
             "(index in (1, self.later) or", "(index == 1 or",
             ("tests/test_statecheck.py::test_round_one_and_one_later_round_always_check",)),
    Mutation("state-window-times-unread", "core/child.py",
             "checks.window_problem(name, STATE_CHECK_CALLS)", "None",
             ("tests/test_statecheck.py::test_a_stateful_side_honest_only_after_setup_is_caught",)),
    Mutation("state-window-counts-call-one", "core/statecheck.py",
             "looked := samples_ms[1:window]", "looked := samples_ms[0:window]",
             ("tests/test_statecheck.py::test_window_problem_compares_calls_two_to_four_after_setup_with_the_rest",)),
    Mutation("state-window-fastest-call", "core/statecheck.py",
             "append(median(looked))", "append(min(looked))",
             ("tests/test_statecheck.py::test_window_problem_compares_calls_two_to_four_after_setup_with_the_rest",)),
    Mutation("expectations-merge-unlocked", "core/expectations.py",
             "        with write_lock(path):", "        if True:",
             ("tests/test_expectations.py::test_update_waits_for_another_writers_lock_and_names_the_file",)),
    Mutation("unlisted-threads-allowed", "core/sourcecheck.py",
             "        elif name in UNLISTED_THREADS:", "        elif False:",
             ("tests/test_sourcecheck.py::test_each_rule_names_the_file_and_line",)),
    Mutation("declaration-values-read-as-wording", "core/declarations.py",
             'WORDING_ONLY = ("negative_result", "cpu_bound")',
             'WORDING_ONLY = ("negative_result", "cpu_bound", "tolerance", "timing_mode", "goal", '
             '"precision", "simulated")',
             (C + "test_any_other_changed_value_is_a_rule_change",)),
    Mutation("declarations-not-pinned", "core/declarations.py",
             "    if not differences:\n        return None",
             "    return None",
             (C + "test_a_run_declaring_other_rules_than_stored_fails_the_gate",)),
    Mutation("rules-changed-passes-the-run", "core/gate.py",
             'FAILING = ("regression", "rules changed")', 'FAILING = ("regression",)',
             (C + "test_rules_changed_fails_the_run_like_a_regression",)),
    Mutation("memory-read-at-step-two", "core/memory.py",
             "WARM_CALLS = 2", "WARM_CALLS = 1",
             ("tests/test_memory.py::test_a_one_off_transient_of_the_second_step_is_not_the_steps_footprint",)),
    Mutation("goodput-baseline-always-first", "core/goals/goodput.py",
             "            if index % 2:\n                order.reverse()", "            pass",
             ("tests/test_goodput.py::test_no_side_wins_goodput_by_its_place_in_the_round",
              "tests/test_goodput.py::test_a_one_time_cost_is_paid_in_an_uncounted_warm_up_round")),
    Mutation("memory-calls-share-inputs", "core/goals/memory.py",
             "sets = [session.baseline.make_inputs(session.new_seed()) for _ in range(CALLS)]",
             "sets = [session.baseline.make_inputs(session.new_seed())] * CALLS",
             ("tests/test_memory.py::test_memory_calls_get_fresh_inputs_and_the_measured_calls_output_is_checked",)),
    Mutation("memory-call-unchecked", "core/goals/memory.py",
             "            for name in [n for n in session.sides if answers.get(n) is not None]:",
             "            for name in []:",
             ("tests/test_memory.py::test_memory_calls_get_fresh_inputs_and_the_measured_calls_output_is_checked",)),
    Mutation("symmetric-memory-across-nodes", "core/pairfile.py",
             "    if req.one_node and req.gpus > 1", "    if False and req.one_node and req.gpus > 1",
             ("tests/test_multinode.py::test_symmetric_memory_sides_skip_over_several_nodes_and_their_baselines_still_run",)),
    Mutation("multi-gpu-target-reads-no-imports", "core/discovery.py",
             "declared = source_declaration(pair.baseline, root, _GPUS)",
             "declared = source_declaration(pair.baseline, root, _GPUS, depth=0)",
             ("tests/test_discovery.py::test_multi_gpu_target_selects_pairs_whose_baseline_needs_several_gpus",
              "tests/test_discovery.py::test_multi_gpu_target_agrees_with_every_repo_pairs_imported_declaration")),
    Mutation("replay-heap-not-collected", "core/goodput.py",
             "    gc.collect()\n    gc.freeze()", "    gc.freeze()",
             ("tests/test_goodput.py::test_a_replay_starts_on_a_collected_heap",)),
    Mutation("replay-heap-left-frozen", "core/goodput.py",
             "    finally:\n        gc.unfreeze()", "    finally:\n        pass",
             ("tests/test_goodput.py::test_a_replay_freezes_the_heap_it_found_and_thaws_it_after",)),
    Mutation("negative-result-note-says-gated", "core/goals/base.py",
             "        if ex.negative_result:", "        if False:",
             (G + "test_memory_gate_judges_the_peak_saved_and_stores_both_peaks",)),
    Mutation("parity-speedup-stored-undeclared", "core/runner.py",
             "(lowest is not None and lowest < 1.0)", "(lowest is not None and lowest < 0.0)",
             ("tests/test_honest_headlines.py::test_a_speedup_whose_interval_reaches_below_1x_is_stored_only_as_declared",)),
    Mutation("readme-forget-ignores-its-block", "core/readme.py",
             'if i.partition("@")[2] in ("", key))', "if True)",
             ("tests/test_readme.py::test_forget_with_a_block_key_drops_the_rows_of_that_block_only",)),
]


def copy_tree(dest: Path) -> None:
    """The working tree's files (no .git, no ignored build outputs or virtual environments)."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "-co", "--exclude-standard"],
                            check=True, capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        source = ROOT / rel
        if source.is_file() and "__pycache__" not in source.parts:
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def environment(copy: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(copy)  # the copy's core/ and tests/, not an installed checkout's
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no .pyc of a mutated file can outlive its mutation
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def pytest(copy: Path, tests: tuple[str, ...], timeout_s: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider",
                           *tests], cwd=copy, env=environment(copy), capture_output=True,
                          text=True, timeout=timeout_s)


def imports_from(copy: Path) -> str:
    out = subprocess.run([sys.executable, "-c", "import core; print(core.__file__)"], cwd=copy,
                         env=environment(copy), capture_output=True, text=True, check=True)
    return out.stdout.strip()


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def run_one(copy: Path, m: Mutation, timeout_s: float) -> tuple[str, str]:
    """("caught" | "MISSED" | "ERROR", detail)."""
    path = copy / m.file
    if not path.is_file():
        return "ERROR", f"{m.file} does not exist"
    text = path.read_text()
    count = text.count(m.original)
    if count == 0:
        return "ERROR", f"original text not found in {m.file}: {m.original.splitlines()[0]!r}"
    if count > 1:
        return "ERROR", f"original text found {count} times in {m.file} (must be exactly once)"
    try:
        path.write_text(text.replace(m.original, m.replacement))
        try:
            proc = pytest(copy, m.tests, timeout_s)
        except subprocess.TimeoutExpired:
            return "ERROR", f"the tests ran past {timeout_s:.0f} s"
    finally:
        path.write_text(text)
    if proc.returncode == 1:  # tests failed: the mutation was seen
        return "caught", last_line(proc.stdout)
    if proc.returncode == 0:
        return "MISSED", last_line(proc.stdout)
    return "ERROR", f"pytest exit {proc.returncode}: {last_line(proc.stdout + proc.stderr)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutations",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="mutations to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per pytest run")
    args = parser.parse_args(argv)
    by_name = {m.name: m for m in MUTATIONS}
    assert len(by_name) == len(MUTATIONS), "mutation names must be unique"
    unknown = [n for n in args.names if n not in by_name]
    if unknown:
        parser.error(f"unknown mutation(s): {', '.join(unknown)} (see --list)")
    chosen = [by_name[n] for n in args.names] if args.names else MUTATIONS
    if args.list:
        for m in chosen:
            print(f"{m.name:38s} {m.file}\n    {' '.join(m.tests)}")
        return 0

    copy = Path(tempfile.mkdtemp(prefix="aisp-mutations-"))
    started = time.perf_counter()
    try:
        copy_tree(copy)
        where = imports_from(copy)
        if not where.startswith(str(copy)):
            print(f"core is imported from {where}, not from the copy {copy}: cannot judge")
            return 2
        tests = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
        proc = pytest(copy, tests, args.timeout)
        if proc.returncode != 0:
            print(f"the tests fail on the unmutated copy; fix them first:\n{proc.stdout[-3000:]}")
            return 2
        print(f"unmutated: {last_line(proc.stdout)}  ({len(tests)} test ids, copy in {copy})")
        if "skipped" in last_line(proc.stdout):
            print("warning: some tests were skipped here; a mutation only they catch reads MISSED")
        outcomes = []
        for m in chosen:
            t0 = time.perf_counter()
            verdict, detail = run_one(copy, m, args.timeout)
            outcomes.append(verdict)
            print(f"{verdict:7s} {m.name:38s} {time.perf_counter() - t0:5.1f}s  {detail}", flush=True)
        caught = outcomes.count("caught")
        print(f"{caught}/{len(chosen)} mutations caught in {time.perf_counter() - started:.0f} s"
              + ("" if caught == len(chosen) else
                 f"; {outcomes.count('MISSED')} MISSED, {outcomes.count('ERROR')} ERROR"))
        return 0 if caught == len(chosen) else 1
    finally:
        if args.keep:
            print(f"kept {copy}")
        else:
            shutil.rmtree(copy, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
