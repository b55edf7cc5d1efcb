"""Find chapters, pairs and examples; turn command-line targets into a selection.

Naming rules (a chapter is a folder `chNN` at the repo root):
    baseline_<stem>.py                    the baseline of a pair
    optimized_<stem>.py                   its default optimized variant (example "<stem>")
    optimized_<stem>_<variant>.py         another variant           (example "<stem>_<variant>")
An optimized file belongs to the baseline with the longest stem that prefixes its name.

Targets: `ch07`, `7`, `07` (a whole chapter), `ch07:copy_vectorized` (a stem, with all its
variants, or one example by name), `all`, `multi-gpu` (every pair whose baseline needs two
GPUs or more: the set a multi-GPU node's regression gate runs, with `--gpus N`).

Chapters are looked up in the repo root, or in the folder named by the environment variable
AISP_ROOT when it is set (chapters kept outside the repo; the tests' fake chapters).
"""
from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from core import REPO_ROOT

_CHAPTER_RE = re.compile(r"^ch(\d{2})$")
MULTI_GPU = ("multi-gpu", "multigpu")  # the target naming every pair that needs >= 2 GPUs
# `Requirements(..., gpus=N, ...)` in a pair's source (tests/test_discovery.py checks it
# against the imported declaration of every pair in the repo)
_GPUS = re.compile(r"\bRequirements\([^)]*?\bgpus\s*=\s*(\d+)", re.S)


class TargetError(ValueError):
    """A target that names nothing; the message lists close matches."""


@dataclass(frozen=True)
class Example:
    """One baseline → optimized comparison; `name` is the optimized file's name sans prefix."""

    chapter: str
    stem: str
    variant: str  # "" for the default optimized_<stem>.py
    baseline: Path
    optimized: Path

    @property
    def name(self) -> str:
        return f"{self.stem}_{self.variant}" if self.variant else self.stem

    @property
    def id(self) -> str:
        return f"{self.chapter}:{self.name}"


@dataclass
class Pair:
    """A baseline and all its optimized variants; the unit that runs in one child process."""

    chapter: str
    stem: str
    baseline: Path
    examples: list[Example] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.chapter}:{self.stem}"


@dataclass
class Chapter:
    name: str
    path: Path
    pairs: list[Pair]
    orphans: list[Path]  # optimized files with no baseline, baselines with no optimized

    @property
    def number(self) -> int:
        return int(self.name[2:])


def chapters_root() -> Path:
    """The folder holding the chNN chapters: $AISP_ROOT if set, else the repo root."""
    return Path(os.environ.get("AISP_ROOT") or REPO_ROOT)


def chapter_dirs(root: Path | None = None) -> list[Path]:
    root = chapters_root() if root is None else Path(root)
    return sorted(p for p in root.iterdir() if p.is_dir() and _CHAPTER_RE.match(p.name))


def discover_chapter(path: Path) -> Chapter:
    baselines = {p.stem[len("baseline_"):]: p for p in sorted(path.glob("baseline_*.py"))}
    pairs = {stem: Pair(path.name, stem, file) for stem, file in baselines.items()}
    orphans = []
    for file in sorted(path.glob("optimized_*.py")):
        name = file.stem[len("optimized_"):]
        owners = [s for s in baselines if name == s or name.startswith(s + "_")]
        if not owners:
            orphans.append(file)
            continue
        stem = max(owners, key=len)
        variant = name[len(stem) + 1:]
        pairs[stem].examples.append(Example(path.name, stem, variant, baselines[stem], file))
    for stem, pair in list(pairs.items()):
        if not pair.examples:
            orphans.append(pair.baseline)
            del pairs[stem]
    return Chapter(path.name, path, list(pairs.values()), orphans)


def discover(root: Path | None = None) -> list[Chapter]:
    return [discover_chapter(p) for p in chapter_dirs(root)]


def _chapter_name(token: str) -> str | None:
    match = re.fullmatch(r"(?:ch)?0*(\d{1,2})", token.strip().lower())
    return f"ch{int(match.group(1)):02d}" if match else None


def select(targets: list[str], root: Path | None = None) -> list[tuple[Pair, list[Example]]]:
    """Resolve targets to (pair, examples to run) in chapter order, without duplicates."""
    chapters = {c.name: c for c in discover(root)}
    chosen: dict[str, tuple[Pair, dict[str, Example]]] = {}

    def add(pair: Pair, examples: list[Example]) -> None:
        entry = chosen.setdefault(pair.id, (pair, {}))
        entry[1].update({e.name: e for e in examples})

    if not targets:
        raise TargetError("no targets given; try `--targets ch07` (see `bench list-targets`)")
    for raw in targets:
        for token in filter(None, (t.strip() for t in raw.split(","))):
            if token.lower() == "all":
                for chapter in chapters.values():
                    for pair in chapter.pairs:
                        add(pair, pair.examples)
                continue
            if token.lower() in MULTI_GPU:
                several = [p for c in chapters.values() for p in c.pairs if gpus_needed(p, root) > 1]
                if not several:
                    raise TargetError(f"'{token}': no pair here needs more than one GPU")
                for pair in several:
                    add(pair, pair.examples)
                continue
            chapter_token, _, name = token.partition(":")
            chapter_name = _chapter_name(chapter_token)
            chapter = chapters.get(chapter_name or "")
            if chapter is None:
                raise TargetError(_unknown(token, chapters))
            if not name:
                if not chapter.pairs:
                    raise TargetError(
                        f"{chapter.name} has no benchmark pairs yet "
                        f"(see {chapter.name}/README.md for what is planned)")
                for pair in chapter.pairs:
                    add(pair, pair.examples)
                continue
            pair = next((p for p in chapter.pairs if p.stem == name), None)
            if pair is not None:
                add(pair, pair.examples)
                continue
            example = next((e for p in chapter.pairs for e in p.examples if e.name == name), None)
            if example is None:
                raise TargetError(_unknown(token, chapters))
            add(next(p for p in chapter.pairs if p.stem == example.stem), [example])
    ordered = sorted(chosen.values(), key=lambda item: (item[0].chapter, item[0].stem))
    return [(pair, list(examples.values())) for pair, examples in ordered]


def gpus_needed(pair: Pair, root: Path | None = None) -> int:
    """The GPU count a pair's baseline declares (`Requirements(gpus=N)`), read from its source
    or a chapter module it imports, as the front page reads `only_on`: selecting pairs imports
    no pair code. 1 where none is declared."""
    root = chapters_root() if root is None else Path(root)
    declared = source_declaration(pair.baseline, root, _GPUS)
    return int(declared) if declared else 1


def all_target_names(chapters: dict[str, Chapter]) -> list[str]:
    names = ["all", *MULTI_GPU]
    for chapter in chapters.values():
        names.append(chapter.name)
        for pair in chapter.pairs:
            names.append(pair.id)
            names.extend(e.id for e in pair.examples if e.variant)
    return names


def _unknown(token: str, chapters: dict[str, Chapter]) -> str:
    close = difflib.get_close_matches(token.lower(), all_target_names(chapters), n=5, cutoff=0.5)
    hint = f"; did you mean: {', '.join(close)}?" if close else ""
    return f"unknown target '{token}'{hint} (`bench list-targets` lists them all)"


_IMPORT = re.compile(r"^from (ch\d\d)\.(\w+) import", re.M)


def source_declaration(path: Path, root: Path, pattern: re.Pattern, depth: int = 3) -> str:
    """`pattern`'s first group in a variant file, or in a chapter module it imports from
    (read from the source: the generated tables import no pair code); "" where none has it."""
    try:
        text = path.read_text()
    except OSError:
        return ""
    found = pattern.search(text)
    if found or depth == 0:
        return found.group(1) if found else ""
    for chapter, module in _IMPORT.findall(text):
        if declared := source_declaration(root / chapter / f"{module}.py", root, pattern, depth - 1):
            return declared
    return ""
