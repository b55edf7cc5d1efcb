"""aisp command line: `python -m cli.aisp bench ...` / `hw ...` / `tools ...` (also the `aisp` script).

Exit codes: 0 all good · 1 a failed pair, a verification failure or a regression ·
2 a usage error (unknown target, malformed expectations file, bad option) · 130 interrupted
(Ctrl-C) · 143 terminated (SIGTERM, what `timeout` or a cancelled CI job sends): both keep the
pairs measured so far, write results.json, stop the running pair and say how to continue.
Chapters are read from the repo, or from $AISP_ROOT when set (see core/discovery.py).
"""
from __future__ import annotations

import json
import math
import re
import shlex
import signal
import sys
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, List, Optional

import typer
from tabulate import tabulate

from cli._help import Typer
from core import REPO_ROOT
from core.side_by_side import MOST_JOBS, default_jobs

if TYPE_CHECKING:  # imported where used: `--help` and `--version` stay quick
    from core.discovery import Chapter
    from core.events import Event, Listener
    from core.runner import RunOptions

app = Typer(help="Benchmark harness for 'AI Systems Performance Engineering': baseline vs "
                 "optimized pairs per chapter, verified, gated against stored speedups.",
            no_args_is_help=True, add_completion=False)
bench_app = Typer(help="List, run and gate benchmark pairs.", no_args_is_help=True)
hw_app = Typer(help="Describe this machine: its GPUs, their ceilings and links, and the host "
                    "settings the book tunes (read-only).", no_args_is_help=True)
tools_app = Typer(help="Look inside pairs and runs: what the compiler generated, a serving "
                       "pair under load, a run's roofline, a candidate kernel judged.",
                  no_args_is_help=True)
app.add_typer(bench_app, name="bench")
app.add_typer(hw_app, name="hw")
app.add_typer(tools_app, name="tools")

USAGE_ERROR = 2


class Profile(str, Enum):
    none = "none"
    minimal = "minimal"
    deep = "deep"
    memory = "memory"


class Replay(str, Enum):
    kernel = "kernel"
    application = "application"


class Format(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"


class HwFormat(str, Enum):
    table = "table"
    json = "json"


HW_FORMAT = typer.Option(HwFormat.table, "--format", help="table or json (as bench run's --format).")
OLD_JSON = typer.Option(False, "--json", hidden=True, help="Same as --format json.")


class Mode(str, Enum):
    full = "full"
    smoke = "smoke"


class ListFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


def _usage_error(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(USAGE_ERROR)


def _print_version(value: bool) -> None:
    if not value:
        return
    from cli._version import version_lines

    for line in version_lines():
        typer.echo(line)
    raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version,
        help="Print aisp's version, torch's and the git commit, and exit.")) -> None:
    pass  # the app's options only; its help is the Typer's


@bench_app.command("list-targets")
def list_targets(
    chapters_wanted: Optional[List[str]] = typer.Argument(None, metavar="[CHAPTERS]...", help=(
        "Only these chapters, e.g. ch07 17 (as `bench run` names them).")),
    chapter: Optional[str] = typer.Option(None, "--chapter", help="Only this chapter, e.g. ch07 or 7."),
    format: ListFormat = typer.Option(ListFormat.table, "--format", help=(
        "table: chapters, pairs and variants (instant). json or csv: one row per optimized "
        "variant with what its pair files declare (requirements, goal, teaching / "
        "negative_result / cpu_bound tags), read by importing them in a child process with no "
        "GPU visible; a file that fails to import gets an `error`.")),
) -> None:
    """List chapters, pairs and their optimized variants (the names `bench run` accepts)."""
    from core.discovery import TargetError, discover, select

    chapters = discover()
    names = [*(chapters_wanted or []), *([chapter] if chapter else [])]
    if names:
        try:
            wanted = {p.chapter for p, _ in select([n.split(":")[0] for n in names])}
        except TargetError as exc:
            _usage_error(str(exc))
        chapters = [c for c in chapters if c.name in wanted]
    if format != ListFormat.table:
        _print_target_rows(chapters, format)
        return
    rows = []
    for c in chapters:
        if not c.pairs:
            rows.append([c.name, "(no pairs yet: see README.md)", ""])
        for pair in c.pairs:
            variants = ", ".join(e.name for e in pair.examples)
            rows.append([c.name, pair.id, variants])
        for orphan in c.orphans:
            rows.append([c.name, f"! {orphan.name} has no partner file", ""])
    typer.echo(tabulate(rows, headers=["chapter", "target", "optimized variants"]))


def _print_target_rows(chapters: list[Chapter], format: ListFormat) -> None:
    """list-targets --format json|csv (cli.targets): chapters without pairs and files without
    a partner are not targets and have no row; the table shows them."""
    import csv

    from cli.targets import CSV_COLUMNS, csv_row, target_rows

    rows = target_rows(chapters)
    if format == ListFormat.json:
        typer.echo(json.dumps(rows, indent=2))
        return
    writer = csv.DictWriter(sys.stdout, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(csv_row(row) for row in rows)


TARGETS_HELP = ("What to run: ch07, 7, ch07:copy_vectorized (a pair or one variant), all, "
                "multi-gpu (every pair that needs 2+ GPUs). Several: ch06 ch08 or ch06,ch08.")
HOW_TO_NAME_TARGETS = ("name what to run, e.g. `bench run ch07` or `bench run ch07 ch08:copy` "
                       "(`bench list-targets` lists every name)")


@bench_app.command("run")
def run(
    ctx: typer.Context,
    positional: Optional[List[str]] = typer.Argument(None, metavar="TARGETS",
                                                     show_default=False, help=TARGETS_HELP),
    targets: Optional[List[str]] = typer.Option(None, "--targets", "-t", show_default=False, help=(
        "Targets as an option (repeat it, or follow it with more names); merged with the "
        "TARGETS arguments.")),
    iterations: Optional[int] = typer.Option(None, min=1, help=(
        "Exactly this many timed samples per side (default: adaptive, until each median is "
        "known to ±1%).")),
    warmup: Optional[int] = typer.Option(None, min=0, help=(
        "Warm-up calls per side (default: adaptive, ≥3 calls and ≥50 ms).")),
    update_expectations: bool = typer.Option(False, "--update-expectations", help=(
        "Store the measured speedups as chNN/expectations_<gpu>.json (verified pairs only).")),
    output_dir: Path = typer.Option(REPO_ROOT / "artifacts" / "runs", help=(
        "Where run directories (results.jsonl, results.json, logs) are created.")),
    format: Format = typer.Option(Format.table, "--format", help="table, markdown or json."),
    timeout: float = typer.Option(600.0, min=1.0, help="Seconds before a pair's child process "
                                  "is killed and the pair reported FAILED."),
    strict: bool = typer.Option(False, help="Treat inconclusive gate results as failures."),
    seed: int = typer.Option(0, help=(
        "Weight seed handed to setup(); input seeds are drawn at random and recorded in "
        "results.json (integrity.verify_seeds, integrity.timed_seeds).")),
    resume: Optional[Path] = typer.Option(None, help=(
        "Continue an interrupted run: keep the pairs finished in this run directory "
        "(its results.jsonl) and run only the rest.")),
    profile: Profile = typer.Option(Profile.none, "--profile", help=(
        "After timing, profile each verified pair: minimal = NVTX ranges + a torch.profiler "
        "trace per side with its top kernels; deep = also Nsight Compute (and Nsight Systems "
        "where installed) on one timed iteration per side; memory = a CUDA allocator snapshot "
        "per side (open it at pytorch.org/memory_viz) and the allocation sites holding the most "
        "bytes at its peak, in summary.md. Never feeds the timings.")),
    ncu_replay_mode: Replay = typer.Option(Replay.kernel, help="Nsight Compute replay mode."),
    ncu_clock_control: str = typer.Option("none", help=(
        "Nsight Compute --clock-control: none keeps the GPU's clocks (durations comparable "
        "with timings); base locks base clocks.")),
    mode: Mode = typer.Option(Mode.full, "--mode", help=(
        "full: measure and gate. smoke: check quickly that every pair runs and verifies: 3 "
        "samples and 1 warm-up call per side unless given, one goodput replay, no cold starts, "
        "shapes a pair may shrink (BenchContext.smoke); nothing is gated or stored.")),
    precompile: bool = typer.Option(True, "--precompile/--no-precompile", help=(
        "Before the pairs, compile the sides that use torch.compile or Triton in parallel "
        "(fresh processes, several at a time) so each pair finds its compiled code in the "
        "ordinary on-disk caches: nothing timed changes, the run gets shorter. In a full run "
        "sides whose compile benchmarks kernels (max-autotune) compile in their own pair, and "
        "compile_time pairs still time their cold starts on empty caches of their own. A smoke "
        "run with several pairs at a time (--jobs) skips it.")),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help=(
        "--mode smoke only: run this many pairs at a time, each in its own process (default "
        f"on a GPU: one per 2 of the host's cores, at most {MOST_JOBS}, so {default_jobs()} on "
        "this host; 1 on a CPU-only machine). A pair "
        "that fails beside others runs again alone, and that result is kept. A full run "
        "times pairs one at a time: its timings need the GPU to themselves.")),
    aa: bool = typer.Option(False, "--aa", help=(
        "A/A run: each selected pair's baseline timed against itself (chNN:stem_aa). Its "
        "ratios would all be 1.00 with no noise; `bench calibrate` turns A/A runs from fresh "
        "machines into the gate's tolerances. Nothing is stored.")),
    gpus: Optional[int] = typer.Option(None, "--gpus", min=1, help=(
        "Multi-GPU pairs whose technique scales with the GPU count (collectives, DDP, FSDP, "
        "tensor/pipeline/context/expert parallelism) run on this many GPUs (default: every GPU "
        "present; on a CPU machine, their minimum as CPU ranks) and are stored by the count "
        "(expectations_4x_h100.json). A pair about a fixed number of GPUs runs on that number; "
        "one that needs more than N SKIPs.")),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=(
        "Print only the final table and its verdict lines: no per-pair progress.")),
    verbose: bool = typer.Option(False, "--verbose", "-v", help=(
        "Also print, as each pair finishes, its child process's log file and why its timing "
        "stopped.")),
) -> None:
    """Run pairs, verify outputs, time them, gate against stored expectations.

    Name the targets as arguments (`bench run ch07 ch08:copy`) or with --targets."""
    from core.discovery import TargetError, select
    from core.expectations import ExpectationsError
    from core.report import render
    from core.runner import ResumeError, RunOptions, run_suite

    names = [*(targets or []), *(positional or [])]
    if not names and resume is not None:  # `--resume DIR` alone: that run's targets and options
        names, then = _resumed_run(ctx, resume)
        iterations, warmup = then.get("iterations", iterations), then.get("warmup", warmup)
        seed, gpus = then.get("seed", seed), then.get("gpus", gpus)
        update_expectations = then.get("update_expectations", update_expectations)
        mode, profile = Mode(then.get("mode", mode)), Profile(then.get("profile", profile))
    if not names:
        _usage_error(f"no targets given: {HOW_TO_NAME_TARGETS}")
    unknown_options = [a for a in names if a.startswith("-")]
    if unknown_options:
        _usage_error(f"unknown option {unknown_options[0]} (see --help)")
    if quiet and verbose:
        _usage_error("--quiet and --verbose contradict each other; pass one of them")
    try:
        selection = select(names)
    except TargetError as exc:
        _usage_error(str(exc))
    if not selection:
        _usage_error(f"targets {' '.join(names)} select no pairs")
    if aa:
        if update_expectations:
            _usage_error("--aa times each baseline against itself, which is not a result to "
                         "store: drop --update-expectations")
        from core.calibration import aa_selection

        selection = aa_selection(selection)
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        probe_file = output_dir / ".aisp-write-test"
        probe_file.write_text("")
        probe_file.unlink()
    except OSError as exc:
        _usage_error(f"cannot write to output dir {output_dir}: {exc.strerror}; "
                     f"choose another with --output-dir")
    if mode == Mode.smoke and update_expectations:
        _usage_error("--mode smoke measures too little to store: drop --update-expectations, "
                     "or run --mode full")
    if jobs is not None and jobs > 1 and mode != Mode.smoke:
        _usage_error(f"--jobs {jobs} runs pairs side by side, which only --mode smoke allows: "
                     f"a full run's timings need the GPU to themselves; add --mode smoke, or "
                     f"drop --jobs")
    if mode == Mode.smoke:
        iterations = 3 if iterations is None else iterations
        warmup = 1 if warmup is None else warmup
    if ncu_clock_control not in ("none", "base"):
        _usage_error(f"--ncu-clock-control must be none or base, not {ncu_clock_control!r}")
    from core.ranks import nodes

    try:
        node_count = nodes()  # AISP_TORCHRUN_ARGS: a pair's ranks are split over its nodes
    except ValueError as exc:
        _usage_error(str(exc))
    if gpus is not None and gpus > 1:
        import torch

        have = torch.cuda.device_count()
        if have and gpus > have * node_count:
            _usage_error(f"--gpus {gpus}: this machine has {have} GPU(s)"
                         + (f", {have * node_count} on {node_count} nodes" if node_count > 1 else ""))
    options = RunOptions(iterations=iterations, warmup=warmup, seed=seed, timeout_s=timeout,
                         update_expectations=update_expectations, strict=strict,
                         output_dir=output_dir, resume=resume, profile=profile.value,
                         ncu_replay_mode=ncu_replay_mode.value,
                         ncu_clock_control=ncu_clock_control, mode=mode.value,
                         precompile=precompile, jobs=jobs, gpus=gpus)
    if resume is not None and not (resume / "results.jsonl").exists():
        _usage_error(f"--resume {resume}: no results.jsonl there; pass the run directory of an "
                     f"earlier `bench run`")
    from cli.progress import suite_progress

    output_choices = ([] if format == Format.table else ["--format", format.value]) + \
        (["--quiet"] if quiet else []) + (["--verbose"] if verbose else [])
    watcher = _RunDirWatcher(resume)
    with _sigterm_as_interrupt() as terminated:
        try:
            with suite_progress(len(selection), quiet=quiet or format == Format.json) as progress:
                watcher.listener = progress
                listener = _with_pair_details(watcher) if verbose else watcher
                result = run_suite(selection, options, listener=listener)
        except (ExpectationsError, ResumeError) as exc:
            _usage_error(str(exc))
        except KeyboardInterrupt:
            # Ctrl-C outside the pairs loop (the probe, the CUDA builds, the reports), which
            # run_suite does not catch: say how to go on all the same.
            _say_how_to_continue(watcher.run_dir, names, options, output_choices, terminated)
            raise typer.Exit(143 if terminated else 130)
    typer.echo(render(result, format.value))
    if result.interrupted:
        _say_how_to_continue(Path(result.run_dir), names, options, output_choices, terminated)
    code = result.exit_code(strict, update_expectations)
    raise typer.Exit(143 if code == 130 and terminated else code)


def _resumed_run(ctx: typer.Context, run_dir: Path) -> tuple[list[str], dict]:
    """For `--resume DIR` alone: the pairs the run in `run_dir` chose and, of the options it
    recorded (its run.json, what --resume insists on), those not given now. Without them a
    smoke run could not be resumed by `--resume DIR` alone (it was "now full")."""
    try:
        chosen = json.loads((run_dir / "run.json").read_text())
        targets = list(chosen.get("targets") or [])
    except (OSError, ValueError, AttributeError):
        _usage_error(f"--resume {run_dir}: no readable run.json there; pass the run directory of "
                     f"an earlier `bench run`, or name the targets too")
    then = {name: value for name, value in chosen.items()
            if name in ctx.params and ctx.get_parameter_source(name).name == "DEFAULT"}
    return targets, then


@contextmanager
def _sigterm_as_interrupt() -> Iterator[list[bool]]:
    """While active, SIGTERM stops the run as Ctrl-C does (the running pair's processes
    killed, the pairs measured so far kept and written); the yielded list holds True once it
    came. Without it, SIGTERM ended the run at once: exit 143, no results.json, and the fork
    server and the running pair (holding the GPU) left alive."""
    came: list[bool] = []

    def stop(signum: int, frame: object) -> None:
        if not came:  # a second SIGTERM while stopping changes nothing
            came.append(True)
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield came
    finally:
        signal.signal(signal.SIGTERM, previous)


class _RunDirWatcher:
    """Passes every event on and remembers the run directory (core.events.RunStarted), which
    run_suite otherwise only returns at the end: Ctrl-C outside its pairs loop needs it."""

    def __init__(self, resume: Optional[Path]) -> None:
        self.run_dir = resume
        self.listener: Listener = lambda event: None  # the progress display, once it is up

    def __call__(self, event: Event) -> None:
        from core.events import RunStarted

        if isinstance(event, RunStarted):
            self.run_dir = event.run_dir
        self.listener(event)


def _with_pair_details(progress: _RunDirWatcher) -> Listener:
    """--verbose: after each pair's progress line, its child process's log and why its timing
    stopped (the PairFinished event carries the result; the log is where core.runner.run_pair
    writes it, logs/<pair with : as __>.log in the run directory)."""
    from core.events import Event, PairFinished

    def listen(event: Event) -> None:
        progress(event)
        if not isinstance(event, PairFinished) or event.kept:
            return
        pair = event.result
        folder = progress.run_dir
        log = folder / "logs" / f"{pair.pair.replace(':', '__')}.log" if folder else None
        where = (f"log: {log}" if log and log.exists()
                 else "log: none (no child process ran for it)" if folder
                 else "log: (run directory not found)")
        stopped = (f"stopped: {pair.stop_reason} after {pair.rounds} rounds" if pair.stop_reason
                   else f"not timed ({pair.status})")
        typer.echo(f"      {where}; {stopped}", err=True)
    return listen


def _say_how_to_continue(run_dir: Optional[Path], names: list[str], options: RunOptions,
                         output_choices: list[str], terminated: list[bool] | None = None) -> None:
    """After Ctrl-C or SIGTERM: the command that continues this run (the same targets and
    options, which --resume insists on, plus --resume), or that starts it again when nothing
    was kept."""
    command = ["python", "-m", "cli.aisp", "bench", "run", *names, *_option_words(options),
               *output_choices]
    stopped = "terminated (SIGTERM)" if terminated else "interrupted"
    if run_dir is not None and (run_dir / "results.jsonl").exists():
        typer.echo(f"{stopped}: the pairs finished so far are kept in {run_dir}; continue "
                   f"with:\n  {shlex.join([*command, '--resume', str(run_dir)])}", err=True)
        return
    where = f" (nothing was kept in {run_dir})" if run_dir is not None else ""
    typer.echo(f"{stopped} before any pair finished{where}; start again with:\n  "
               f"{shlex.join(command)}", err=True)


def _option_words(options: RunOptions) -> list[str]:
    """The `bench run` options that repeat `options`, defaults left out; not --resume or
    --output-dir, which a resumed run does not use."""
    from core.runner import RunOptions

    usual = RunOptions()
    words: list[str] = []
    for flag, value, default in (("--iterations", options.iterations, usual.iterations),
                                 ("--warmup", options.warmup, usual.warmup),
                                 ("--seed", options.seed, usual.seed),
                                 ("--timeout", options.timeout_s, usual.timeout_s),
                                 ("--profile", options.profile, usual.profile),
                                 ("--ncu-replay-mode", options.ncu_replay_mode, usual.ncu_replay_mode),
                                 ("--ncu-clock-control", options.ncu_clock_control,
                                  usual.ncu_clock_control),
                                 ("--mode", options.mode, usual.mode)):
        if value != default:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    words += ["--update-expectations"] if options.update_expectations else []
    words += ["--no-precompile"] if not options.precompile else []
    words += ["--jobs", str(options.jobs)] if options.jobs is not None else []
    words += ["--strict"] if options.strict else []
    return words


@bench_app.command("expectations")
def expectations(
    hardware: Optional[str] = typer.Option(None, help="Only this hardware key, e.g. h100."),
    min_speedup: Optional[float] = typer.Option(None, help=(
        "Show only entries whose stored speedup is below this, and exit 1 if there are any.")),
) -> None:
    """Show the stored speedups of every chapter (chNN/expectations_<gpu>.json)."""
    from core import expectations as expect
    from core.discovery import chapters_root

    rows = []
    paths = sorted(chapters_root().glob("ch[0-9][0-9]/expectations_*.json"))
    keys = sorted({path.stem[len("expectations_"):] for path in paths})
    hardware = hardware.lower() if hardware else None  # `H100` is the key `h100`
    if hardware and hardware not in keys:
        _usage_error(f"--hardware {hardware}: no expectations file has that key; the keys "
                     f"stored are {', '.join(keys)}")
    for path in paths:
        key = path.stem[len("expectations_"):]
        if hardware and key != hardware:
            continue
        try:
            entries = expect.load(path)
        except expect.ExpectationsError as exc:
            _usage_error(str(exc))
        for name, entry in sorted(entries.items()):
            if min_speedup is not None and entry["speedup"] >= min_speedup:
                continue
            prov = entry.get("provenance", {})
            rows.append([path.parent.name, name, key, f"{entry['speedup']:.2f}x",
                         entry.get("baseline_ms", "-"), entry.get("optimized_ms", "-"),
                         prov.get("device", "-"), (prov.get("date") or "-")[:10]])
    if not rows:
        typer.echo("no stored expectations match" if min_speedup is None
                   else f"every stored speedup is ≥ {min_speedup}x")
        return
    typer.echo(tabulate(rows, headers=["chapter", "example", "gpu", "speedup", "baseline ms",
                                       "optimized ms", "measured on", "date"]))
    if min_speedup is not None:
        raise typer.Exit(1)


@bench_app.command("readme")
def readme(runs: Optional[List[Path]] = typer.Argument(None, help=(
        "Run directories (or their results.json), oldest first: for one GPU model a later "
        "run's rows replace an earlier run's.")),
        chapter: Optional[List[str]] = typer.Option(None, "--chapter", "-c", help=(
            "Only this chapter's README (repeat for several). Without it every chapter the "
            "runs cover is rewritten from these runs alone, so a run that re-measured one "
            "pair of another chapter would shrink that chapter's table to that pair.")),
        keep_others: bool = typer.Option(False, "--keep-others", help=(
            "Keep the rows of pairs these runs do not cover, with their earlier runs' "
            "provenance (a re-measured pair replaces only its own rows).")),
        forget: Optional[List[str]] = typer.Option(None, "--forget", help=(
            "Drop this example's rows (e.g. ch14:triton_norm) from every block of its "
            "chapter: its code changed since they were measured; ch04:symmetric_memory@2x_h200 "
            "drops them from that block only. Repeat for several; needs no run."))) -> None:
    """Write the measured tables of each chapter README from runs (one block per GPU model
    between `<!-- aisp:measured KEY -->` and `<!-- aisp:end -->`; prose is left alone).
    A block is rebuilt from the given runs only (pass every run whose rows it should show),
    unless --keep-others."""
    from core.compare import load_run
    from core.discovery import chapters_root
    from core.readme import not_publishable, write_tables

    runs, forgotten = runs or [], frozenset(forget or [])
    bad = sorted(i for i in forgotten if not re.fullmatch(r"ch\d\d:\w+(@\w+)?", i))
    if bad:
        _usage_error(f"--forget takes example ids like ch14:triton_norm (or "
                     f"ch04:symmetric_memory@2x_h200 for one block), not {' '.join(bad)}")
    if not runs and not forgotten:
        _usage_error("pass the run directory of a full `bench run` on a GPU (or --forget ids)")
    try:
        records = [load_run(path) for path in runs]
    except ValueError as exc:
        _usage_error(str(exc))
    kept = []
    for path, record in zip(runs, records):
        why = not_publishable(record)
        if why:
            typer.echo(f"{path}: not written into READMEs: {why}", err=True)
        else:
            kept.append(record)
    if runs and not kept:
        _usage_error("no run to write from: pass the run directory of a full `bench run` on a GPU")
    records = kept
    wanted = None
    if chapter:
        digits = [c[2:] if c.lower().startswith("ch") else c for c in chapter]
        if not all(d.isdigit() for d in digits):
            _usage_error(f"--chapter takes chapters like ch15 or 15, not {' '.join(chapter)}")
        wanted = {f"ch{int(d):02d}" for d in digits}
    for readme_path in write_tables(records, chapters_root(), wanted, keep_others, forgotten):
        typer.echo(f"wrote {readme_path}")


@bench_app.command("calibrate")
def calibrate(runs: List[Path] = typer.Argument(..., help=(
        "Run directories (or their results.json), each from a fresh machine of one GPU "
        "model: A/A runs (`bench run --aa`), or ordinary runs of one commit."))) -> None:
    """Set the gate's tolerances from runs on fresh machines: per family of pairs (GPU-timed,
    cpu_bound), the largest distance d a stored ratio and a gate run could lie apart (A/A: 2
    |ln r|; one commit's runs: |ln(S1/S2)|, host differences included) gives t = 1 - exp(-d);
    written to calibration/<gpu>.json, which every later run of that GPU model gates with."""
    from core import calibration
    from core.compare import load_run

    try:
        found = calibration.summarize([load_run(path).to_dict() for path in runs])
    except ValueError as exc:
        _usage_error(str(exc))
    rows = [[name, f.source, f.ratios, f"{math.exp(f.spread_ln) - 1:.2%}", f.worst,
             "-" if f.tolerance is None else f"{f.tolerance:.1%}"]
            for name, f in found.families.items()]
    typer.echo(tabulate(rows, headers=["family", "from", "examples", "largest distance",
                                       "where", "tolerance"]))
    typer.echo(f"wrote {calibration.write(found)}")


@bench_app.command("front-page")
def front_page(check: bool = typer.Option(False, "--check", help=(
        "Change nothing; exit 1 if the README's table differs from the expectations."))) -> None:
    """Rewrite the root README's results table (between `<!-- aisp:front-page -->` and
    `<!-- aisp:end -->`), its roof summary (`<!-- aisp:roof-summary -->`), and each chapter
    README's scaling and roof tables (`<!-- aisp:scaling -->`, `<!-- aisp:roof -->`) from
    every chapter's committed expectations files."""
    from core import front_page as page
    from core.discovery import chapters_root

    root = chapters_root()
    readme = root / "README.md"
    try:
        if page.BEGIN not in readme.read_text():
            raise ValueError(f"no {page.BEGIN} ... {page.END} markers: add them where the table goes")
        if check:
            stale = page.stale(root)
            for path in stale:
                typer.echo(f"{path}: out of date: run bench front-page")
            if not stale:
                typer.echo(f"{readme} and the chapters' generated tables: up to date")
            raise typer.Exit(1 if stale else 0)
        changed = page.write_all(root)
    except (OSError, ValueError) as exc:
        _usage_error(f"{readme}: {exc}")
    for path in changed:
        typer.echo(f"wrote {path}")
    if not changed:
        typer.echo(f"unchanged: {readme} and the chapters' generated tables")


@bench_app.command("compare")
def compare(
    run_a: Optional[Path] = typer.Argument(None, help=(
        "The older run: a run directory, its results.json, or a run id in --runs-dir "
        "(default: the saved run before the latest).")),
    run_b: Optional[Path] = typer.Argument(None, help=(
        "The newer run, as RUN_A (default: the latest saved run).")),
    runs_dir: Path = typer.Option(REPO_ROOT / "artifacts" / "runs", "--runs-dir", help=(
        "Where saved runs are looked up (bench run's --output-dir).")),
    threshold: float = typer.Option(0.05, min=0.0, max=0.5, help=(
        "Changes smaller than this fraction count as the same.")),
    format: Format = typer.Option(Format.table, "--format", help="table, markdown or json."),
    histograms: bool = typer.Option(False, "--histograms", help=(
        "After the table, each example's timed samples in both runs as text histograms over "
        "the same bins (where they sit, their spread, a second mode).")),
) -> None:
    """Compare two runs pair by pair; exit 1 if a pair got slower or stopped working. With no
    run named, the last two saved runs; with one, that run against the latest."""
    from core.compare import (comparable, compare_runs, environment_differences, is_regression,
                              load_run, pick_runs)
    from core.compare import histograms as sample_histograms

    try:
        run_a, run_b = pick_runs([p for p in (run_a, run_b) if p is not None], runs_dir)
        old, new = load_run(run_a), load_run(run_b)
    except ValueError as exc:
        _usage_error(str(exc))
    typer.echo(f"comparing {run_a} (older) with {run_b} (newer)", err=True)
    rows = compare_runs(old, new, threshold)
    for line in environment_differences(old, new):
        typer.echo(f"WARNING: the runs differ in {line}; their timings are not comparable "
                   f"as a code change", err=True)
    if not comparable(rows):
        _usage_error(f"{run_a} and {run_b} have no pair measured in both runs: nothing to compare")
    if format == Format.json:
        typer.echo(json.dumps([r.to_dict() for r in rows], indent=2))
    else:
        table = [[r.id, _num(r.old_ms, ".4f"), _num(r.new_ms, ".4f"),
                  _num(r.old_speedup, ".2f", "x"), _num(r.new_speedup, ".2f", "x"),
                  (f"{r.ratio_ci[0]:.3f}-{r.ratio_ci[1]:.3f}" if r.ratio_ci else "-"),
                  r.verdict] for r in rows]
        typer.echo(tabulate(table, headers=["pair", "old ms", "new ms", "old speedup",
                                            "new speedup", "new/old time", "verdict"],
                            tablefmt="github" if format == Format.markdown else "simple"))
        if histograms:
            typer.echo("\n".join(["", *sample_histograms(old, new)]))
    raise typer.Exit(1 if any(is_regression(r) for r in rows) else 0)


def _num(value: Optional[float], spec: str, suffix: str = "") -> str:
    return "-" if value is None else format(value, spec) + suffix


@hw_app.command("peak")
def hw_peak(refresh: bool = typer.Option(False, help="Measure again even if cached."),
            format: HwFormat = HW_FORMAT, as_json: bool = OLD_JSON,
            gpus: int = typer.Option(1, "--gpus", min=1, help=(
                "With N > 1: the link ceilings of N GPUs together (NCCL all-reduce and "
                "all-gather bus bandwidth from 1 KiB to 1 GiB, P2P copy GPU 0 → 1), measured "
                "by N ranks under torchrun; multi-GPU pairs report % of the all-reduce one."))
            ) -> None:
    """Measure this GPU's ceilings (copy GB/s; host<->device GB/s, pinned and pageable;
    fp32/tf32/bf16/fp16/fp8 matmul TFLOP/s), cache them per device, and print them beside
    the datasheet figures."""
    import torch

    as_json = as_json or format == HwFormat.json
    from core.hardware import (DATASHEET, HOST_LINK_DATASHEET_NOTE, HOST_LINK_CEILINGS,
                               cached_peaks, fingerprint, measure_ceilings, store_peaks)

    if not torch.cuda.is_available():
        typer.echo("hw peak needs a CUDA GPU; none is available on this machine", err=True)
        raise typer.Exit(1)
    info = fingerprint()
    if gpus > 1:
        _hw_peak_multi(info, gpus, refresh, as_json)
        return
    cached = None if refresh else cached_peaks(info)
    if cached and not set(HOST_LINK_CEILINGS) <= set(cached["ceilings"]):
        cached = None  # cached before the host-link ceilings existed: measure them all again
    if cached:
        peaks, source = cached["ceilings"], f"cached {cached['measured']}"
    else:
        typer.echo("measuring (about 17 s: each ceiling runs 1 s and keeps its best 25 ms "
                   "window, each host-link copy 0.25 s) ...", err=True)
        peaks = measure_ceilings(full=True)
        source = f"measured now, cached in {store_peaks(info, peaks)}"
    if as_json:
        typer.echo(json.dumps({"device": info["device"], "ceilings": peaks, "source": source}, indent=2))
        return
    sheet = DATASHEET.get(info["hardware_key"], {})
    rows = []
    for key, value in peaks.items():
        unit = "GB/s" if key.endswith("gbps") else "TFLOP/s"
        name = key.replace("_gbps", "").replace("_tflops", "").replace("_", " ")
        spec = sheet.get(key)
        rows.append([name, f"{value:.0f} {unit}", f"{spec:g} {unit}" if spec else "-",
                     f"{100 * value / spec:.0f}%" if spec else "-"])
    typer.echo(f"{info['device']} ({source})")
    typer.echo(tabulate(rows, headers=["ceiling", "measured", "datasheet (dense)", "measured/datasheet"]))
    if any(key in peaks for key in HOST_LINK_CEILINGS):
        typer.echo(HOST_LINK_DATASHEET_NOTE)


def _hw_peak_multi(info: dict, gpus: int, refresh: bool, as_json: bool) -> None:
    import tempfile

    import torch

    from core.hardware import cached_peaks, store_peaks
    from core.process import run_child

    have = torch.cuda.device_count()
    if have < gpus:
        _usage_error(f"--gpus {gpus}: this machine has {have} GPU(s)")
    cached = None if refresh else cached_peaks(info, gpus)
    if cached:
        data, source = cached, f"cached {cached['measured']}"
    else:
        typer.echo(f"measuring with {gpus} ranks under torchrun (about a minute) ...", err=True)
        with tempfile.TemporaryDirectory(prefix="aisp-peak-") as folder:
            out = Path(folder) / "peak.json"
            outcome = run_child(["--peak-ranks", str(gpus), str(out)], 600, Path(folder) / "peak.log",
                                result=out, module="core.toolchild")
            data = outcome.payload or {"error": outcome.problem or outcome.tail[-2000:]}
        if "error" in data:
            typer.echo(f"hw peak --gpus {gpus} failed: {data['error']}", err=True)
            raise typer.Exit(1)
        source = f"measured now, cached in {store_peaks(info, data['ceilings'], gpus, {'sweep': data['sweep']})}"
        data = {**data, "measured": "now"}
    if as_json:
        typer.echo(json.dumps({"device": info["device"], "gpus": gpus, **data, "source": source}, indent=2))
        return
    c = data["ceilings"]
    typer.echo(f"{gpus} x {info['device']} ({source})")
    typer.echo(tabulate([["NCCL all-reduce (bus)", f"{c['nccl_allreduce_gbps']:.0f} GB/s"],
                         ["NCCL all-gather (bus)", f"{c['nccl_allgather_gbps']:.0f} GB/s"],
                         ["P2P copy 0 → 1", f"{c['p2p_oneway_gbps']:.0f} GB/s"],
                         ["P2P copy both ways", f"{c['p2p_bidir_gbps']:.0f} GB/s"]],
                        headers=["ceiling", "measured"]))
    sweep = data["sweep"]
    rows = [[_size(r["bytes"]), f"{r['us']:.1f}", f"{r['busbw_gbps']:.1f}", f"{g['us']:.1f}",
             f"{g['busbw_gbps']:.1f}"] for r, g in zip(sweep["all_reduce"], sweep["all_gather"])]
    typer.echo("")
    typer.echo(tabulate(rows, headers=["message", "all-reduce µs", "bus GB/s", "all-gather µs",
                                       "bus GB/s"]))


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:g} {unit}"
        n /= 1024
    return str(n)


@hw_app.command("info")
def hw_info(format: HwFormat = HW_FORMAT, as_json: bool = OLD_JSON) -> None:
    """Print the device fingerprint stored with every result."""
    as_json = as_json or format == HwFormat.json
    from core.hardware import fingerprint

    info = fingerprint()
    topo = None
    if info.get("gpu_count", 0) > 1:
        from core.multigpu import topology

        topo = topology()
    if as_json:
        typer.echo(json.dumps({**info, **({"topology": topo} if topo else {})}, indent=2))
        return
    typer.echo(tabulate(sorted(info.items()), tablefmt="plain"))
    if topo:
        typer.echo("")
        typer.echo(tabulate([[g["index"], g["name"], g["numa_node"], g["cpus"]] for g in topo["gpus"]],
                            headers=["GPU", "name", "NUMA node", "CPU affinity"]))
        count = len(topo["gpus"])
        matrix = [[f"GPU{i}"] + ["X" if i == j else
                                 f"{topo['links'][f'{i}-{j}']['link']}"
                                 f"{'' if topo['links'][f'{i}-{j}']['peer_access'] else ' (no P2P)'}"
                                 for j in range(count)] for i in range(count)]
        typer.echo("")
        typer.echo(tabulate(matrix, headers=[""] + [f"GPU{j}" for j in range(count)]))


@hw_app.command("tuning-check")
def hw_tuning_check(format: HwFormat = HW_FORMAT, as_json: bool = OLD_JSON) -> None:
    """Report the host and GPU settings chapter 3 tunes (persistence mode, GPU clocks, CPU
    governor, transparent huge pages, memlock limit, NUMA balancing): each with what is
    recommended, why, and OK / CHECK / unknown. Read-only: it never changes anything."""
    from dataclasses import asdict

    as_json = as_json or format == HwFormat.json
    from core.tuning import render, tuning_checks

    checks = tuning_checks()
    if as_json:
        typer.echo(json.dumps([{**asdict(c), "setting": c.label} for c in checks], indent=2))
        return
    typer.echo(render(checks))


def _one_variant(target: str, side: str):
    """The (pair, example) a tools command works on: TARGET must name one variant; exits with
    a usage error otherwise, or when --side is neither optimized nor baseline."""
    from core.discovery import TargetError, select

    try:
        selection = select([target])
    except TargetError as exc:
        _usage_error(str(exc))
    examples = [e for _, chosen in selection for e in chosen]
    if len(examples) != 1:
        _usage_error(f"{target} selects {len(examples)} variants; name one, e.g. "
                     f"{examples[0].id if examples else 'ch14:model_compile'}")
    if side not in ("optimized", "baseline"):
        _usage_error(f"--side must be optimized or baseline, not {side!r}")
    return selection[0][0], examples[0]


@tools_app.command("inspect-compiled")
def inspect_compiled(
    target: str = typer.Argument(..., help="One pair variant, e.g. ch14:model_compile."),
    side: str = typer.Option("optimized", help="Which side: optimized (the target's variant) "
                             "or baseline."),
    out: Optional[Path] = typer.Option(None, help="Where to copy the generated code (default "
                                       "runs/inspect/<target>/<side>)."),
    timeout: float = typer.Option(1800.0, min=1.0, help="Seconds before the child is killed."),
) -> None:
    """Set one side up in a fresh process with empty compiler caches, call it once, and copy
    the output code Inductor generated (Triton or C++ kernels and the call() launching them),
    listing its kernels."""
    from core.inspect_compiled import collect, fresh_caches
    from core.process import run_child
    from core.runner import RunOptions, pair_spec

    pair, example = _one_variant(target, side)
    out = out or REPO_ROOT / "runs" / "inspect" / example.id.replace(":", "__") / side
    out.mkdir(parents=True, exist_ok=True)
    spec_path, result = out / "spec.json", out / "cold_start.json"
    spec_path.write_text(json.dumps(pair_spec(pair, [example], RunOptions()).to_dict(), indent=2))
    tmp, env = fresh_caches()
    with tmp:
        outcome = run_child(["--cold-start", str(spec_path),
                             "baseline" if side == "baseline" else example.name, str(result)],
                            timeout, out / "child.log", pair.baseline.parent.parent,
                            result=result, env=env, module="core.toolchild")
        payload = outcome.payload or {"error": outcome.problem or outcome.tail[-1500:]}
        if "error" in payload:
            typer.echo(f"{example.id} ({side}) failed: {payload['error']}", err=True)
            raise typer.Exit(1)
        code = collect(Path(env["TORCHINDUCTOR_CACHE_DIR"]), out)
    typer.echo(f"{example.id} ({side}): setup {payload['setup_s']:.1f} s, first call "
               f"{payload['first_call_s']:.1f} s; {len(code.kernels)} output-code "
               f"module(s), {code.kernel_count} kernel(s), copied to {out}")
    for name, kernels in code.kernels.items():
        typer.echo(f"  {name}: {len(kernels)} kernel(s)")
        for kernel in kernels:
            typer.echo(f"    {kernel}")
    if not code.kernels:
        typer.echo("  nothing compiled: this side does not call torch.compile (or its code "
                   "came from a cache outside TORCHINDUCTOR_CACHE_DIR)")


@tools_app.command("roofline")
def roofline(
    run_dir: Path = typer.Argument(..., help="A run directory of `bench run` (or its results.json)."),
    out: Optional[Path] = typer.Option(None, help="Where to write the chart (default "
                                       "RUN_DIR/roofline.png)."),
    format: Format = typer.Option(Format.table, "--format", help="table, markdown or json."),
) -> None:
    """Place both sides of every measured pair of a finished run under that run's roofs
    (its copy bandwidth and matmul TFLOP/s): FLOP per byte, what each side achieved, the roof
    at its intensity and the share of it reached. Re-measures nothing."""
    from dataclasses import asdict

    from core import plots
    from core.compare import load_run
    from core.report import chart_context
    from core.roofline import roofline as place_all, table_rows

    try:
        record = load_run(run_dir)
    except ValueError as exc:
        _usage_error(str(exc))
    found = place_all(record)
    if format == Format.json:
        typer.echo(json.dumps({"copy_gbps": found.copy_gbps,
                               "points": [dict(asdict(p), pct_of_roof=p.pct_of_roof)
                                          for p in found.points],
                               "unplaced": [{"example": e, "why": why} for e, why in found.unplaced]},
                              indent=2))
        return
    if not found.points:
        typer.echo(f"{run_dir}: no measured pair with a FLOP or byte count"
                   + (f" ({len(found.unplaced)} without: see --format json)" if found.unplaced else ""))
    else:
        typer.echo(tabulate(table_rows(found), tablefmt="github" if format == Format.markdown else "simple",
                            headers=["example", "side", "FLOP/byte", "achieved", "roof at that intensity",
                                     "of roof", "bound"], disable_numparse=True))
    for example, why in found.unplaced:
        typer.echo(f"  {example}: no point ({why})")
    path = out or (run_dir if run_dir.is_dir() else run_dir.parent) / "roofline.png"
    try:
        chart = plots.roofline(record.rows, record.ceilings, path, chart_context(record))
    except OSError as exc:
        typer.echo(f"chart not written: {exc}; choose another place with --out", err=True)
        raise typer.Exit(1)
    if chart is not None:
        typer.echo(f"chart: {chart}")


@tools_app.command("new-pair")
def new_pair(
    candidate: Path = typer.Argument(..., help="The candidate: a .py file defining "
                                     "candidate(inputs), or a .cu file exporting candidate(...)."),
    baseline: Path = typer.Option(..., "--baseline", help="The pair's baseline it must match, "
                                  "e.g. ch07/baseline_copy_vectorized.py."),
    name: str = typer.Option(..., "--name", help="The variant's name: the files are "
                             "chNN/optimized_<stem>_<name>.py and chNN/_<stem>_<name>_candidate.*"),
    force: bool = typer.Option(False, "--force", help="Replace that variant's files if they exist."),
    iterations: Optional[int] = typer.Option(None, min=1, help="Timed samples per side "
                                             "(default: adaptive, as bench run)."),
    output_dir: Path = typer.Option(REPO_ROOT / "artifacts" / "runs", help="Where the run "
                                    "directory goes."),
    timeout: float = typer.Option(600.0, min=1.0, help="Seconds before the pair's process is killed."),
) -> None:
    """Judge a candidate kernel against an existing baseline: scaffold it as a variant of the
    pair (the baseline's inputs, reference, tolerance and workload, only run() replaced),
    run it through the harness's verification and integrity checks, and print ACCEPTED or
    REJECTED with the evidence. Exit code 0 accepted, 1 rejected or not judged."""
    from core.discovery import select
    from core.events import describe
    from core.new_pair import ScaffoldError, scaffold, verdict
    from core.runner import RunOptions, run_suite

    try:
        made = scaffold(candidate, baseline, name, force)
    except ScaffoldError as exc:
        _usage_error(str(exc))
    typer.echo(f"wrote {made.optimized} and {made.candidate}; judging {made.target} ...", err=True)
    options = RunOptions(iterations=iterations, warmup=None if iterations is None else 1,
                         timeout_s=timeout, output_dir=output_dir)
    record = run_suite(select([made.target], root=made.optimized.parent.parent), options,
                       listener=lambda event: typer.echo(describe(event), err=True))
    if record.interrupted:
        typer.echo(f"interrupted: {made.target} was not judged", err=True)
        raise typer.Exit(130)
    judged = verdict(record.pairs[0] if record.pairs else None, made.target)
    for line in judged.lines:
        typer.echo(line)
    typer.echo(f"  run directory: {record.run_dir}")
    raise typer.Exit(0 if judged.accepted else 1)


@tools_app.command("occupancy-tuning")
def occupancy_tuning(
    target: str = typer.Argument(..., help="One pair variant whose kernel is built from tuning "
                                 "macros, e.g. ch08:occupancy_tuning."),
    side: str = typer.Option("optimized", help="Which side's kernel: optimized or baseline."),
    presets: str = typer.Option(None, "--presets", help="THREADS[xMIN_BLOCKS][rMAX_REGISTERS], "
                                "comma-separated (default: core.occupancy.DEFAULT_PRESETS)."),
    timeout: float = typer.Option(1800.0, min=1.0, help="Seconds before the child is killed."),
) -> None:
    """Build the pair's kernel once per preset (block size, launch bounds, register cap),
    check each build against the baseline's output, time them together and print threads,
    registers, spills, blocks and warps per SM, time and speedup over the first preset.
    A sweep to read: nothing is gated or stored."""
    import tempfile

    from core.occupancy import DEFAULT_PRESETS, HEADERS, PresetError, PresetResult, parse_presets, table_rows
    from core.process import run_child
    from core.runner import RunOptions, pair_spec

    chosen = presets or DEFAULT_PRESETS
    try:
        parse_presets(chosen)
    except PresetError as exc:
        _usage_error(str(exc))
    pair, example = _one_variant(target, side)
    with tempfile.TemporaryDirectory(prefix="aisp-occupancy-") as tmp:
        spec_path, result = Path(tmp) / "spec.json", Path(tmp) / "result.json"
        spec_path.write_text(json.dumps(pair_spec(pair, [example], RunOptions()).to_dict(), indent=2))
        outcome = run_child(["--occupancy", str(spec_path),
                             "baseline" if side == "baseline" else example.name, chosen,
                             str(result)], timeout, Path(tmp) / "child.log",
                            pair.baseline.parent.parent, result=result, module="core.toolchild")
    payload = outcome.payload or {"error": outcome.problem or outcome.tail[-1500:]}
    if "error" in payload:
        typer.echo(f"{example.id} ({side}): {payload['error']}", err=True)
        raise typer.Exit(1)
    rows = [PresetResult(**row) for row in payload["rows"]]
    typer.echo(f"{example.id} ({side}): one kernel under {len(rows)} launch configurations "
               f"(warps/SM of 64 on Hopper)")
    typer.echo(tabulate(table_rows(rows), headers=HEADERS, tablefmt="simple", disable_numparse=True))


@tools_app.command("load-test")
def load_test(
    target: str = typer.Argument(..., help="One serving pair variant, e.g. ch15:continuous_batching."),
    side: str = typer.Option("optimized", help="Which side: optimized (the target's variant) "
                             "or baseline."),
    duration: float = typer.Option(30.0, min=0.1, help="Seconds of replays counted, after "
                                   "one warm-up replay."),
    timeout: float = typer.Option(1800.0, min=1.0, help="Seconds before the child is killed."),
) -> None:
    """Serve the pair's published request trace against one side's engine, back to back on
    fresh engines for DURATION seconds after a warm-up replay, and print the latency
    distribution (TTFT and TPOT p50/p99, tokens/s, goodput at the pair's SLO)."""
    import tempfile

    from core.process import run_child
    from core.runner import RunOptions, pair_spec

    pair, example = _one_variant(target, side)
    with tempfile.TemporaryDirectory(prefix="aisp-load-") as tmp:
        spec_path, result = Path(tmp) / "spec.json", Path(tmp) / "result.json"
        spec_path.write_text(json.dumps(pair_spec(pair, [example], RunOptions()).to_dict(), indent=2))
        outcome = run_child(["--load-test", str(spec_path),
                             "baseline" if side == "baseline" else example.name, str(duration),
                             str(result)], timeout, Path(tmp) / "child.log",
                            pair.baseline.parent.parent, result=result, module="core.toolchild")
    payload = outcome.payload or {"error": outcome.problem or outcome.tail[-1500:]}
    if "error" in payload:
        typer.echo(f"{example.id} ({side}): {payload['error']}", err=True)
        raise typer.Exit(1)
    s = payload["stats"]
    rows = [["TTFT", f"{s['ttft_p50_s'] * 1e3:.1f}", f"{s['ttft_p99_s'] * 1e3:.1f}"],
            ["TPOT", f"{s['tpot_p50_s'] * 1e3:.2f}", f"{s['tpot_p99_s'] * 1e3:.2f}"]]
    typer.echo(f"{example.id} ({side}): {s['requests']} requests in {payload['replays']} "
               f"replays after a warm-up, {s['duration_s']:.1f} s")
    typer.echo(tabulate(rows, headers=["ms", "p50", "p99"], tablefmt="simple",
                        disable_numparse=True))
    typer.echo(f"{s['tokens_per_s']:.0f} tokens/s; {s['met']}/{s['requests']} requests met "
               f"{payload['slo']}: goodput {s['goodput_rps']:.2f} req/s")


def chapter_main(compare_file: str, argv: list[str] | None = None) -> None:
    """Entry point of `chNN/compare.py`: `bench run` with targets fixed to that chapter.

    `--examples a,b` restricts the run to those pairs/variants of the chapter.
    """
    chapter = Path(compare_file).resolve().parent.name
    args = list(sys.argv[1:] if argv is None else argv)
    if "--help" in args or "-h" in args:
        typer.echo(_compare_help(Path(compare_file).resolve().parent))
        return
    targets = [chapter]
    if "--examples" in args:
        at = args.index("--examples")
        if at + 1 >= len(args):
            typer.echo("error: --examples needs a value, e.g. --examples copy_vectorized", err=True)
            sys.exit(USAGE_ERROR)
        targets = [f"{chapter}:{name}" for name in args[at + 1].split(",") if name]
        del args[at:at + 2]
    app(args=["bench", "run", "--targets", *targets, *args], prog_name=f"{chapter}/compare.py")


def _compare_help(chapter_dir: Path) -> str:
    """`python chNN/compare.py --help`: its own usage and names, then `bench run`'s options
    (all but the targets, which compare.py fixes to the chapter)."""
    from core.discovery import discover_chapter

    chapter = discover_chapter(chapter_dir)
    names = [name for pair in chapter.pairs
             for name in (pair.stem, *(e.name for e in pair.examples if e.name != pair.stem))]
    command = typer.main.get_command(app).commands["bench"].commands["run"]  # type: ignore[attr-defined]
    ctx = typer.Context(command, info_name="bench run", terminal_width=88)
    formatter = ctx.make_formatter()
    formatter.write_usage(f"python {chapter.name}/compare.py", "[--examples NAME[,NAME...]] [OPTIONS]")
    formatter.write_paragraph()
    formatter.write_text(f"Run every pair of {chapter.name} through the harness: verify, time and "
                         f"gate each against the stored expectations (`python -m cli.aisp bench run "
                         f"{chapter.name}`).")
    with formatter.section("Options of compare.py"):
        formatter.write_dl([("--examples NAME[,NAME...]",
                             "Only these pairs or variants of the chapter: "
                             + (", ".join(names) if names else "(none yet)"))])
    rows = [record for param in command.get_params(ctx)
            if param.name not in ("positional", "targets")
            and (record := param.get_help_record(ctx)) is not None]
    with formatter.section("Options of bench run (all apply)"):
        formatter.write_dl(rows)
    return formatter.getvalue()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
