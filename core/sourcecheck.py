"""A static check of pair sources: what no honest pair needs, refused before any of it runs.

A pair's code runs in the process that measures it, so it could reach into the harness: read
the timing loop's locals through frames, find the baseline's answers with the garbage
collector, swap a function's code, patch a verifier's tensor method or a setting of aisp's
own modules. No pair in ch01-ch20 needs any of that (tests/test_sourcecheck.py reads them
all). This check reads the pair's files (baseline, variants, and the chapter modules they
import) before the child imports them and names the file and line of:

- frame access: `sys._getframe`, `inspect.currentframe` / `stack` / `trace`, a frame's
  `f_back` / `f_locals` / `f_globals`, a traceback's `tb_frame`, a generator's `gi_frame`;
- the garbage collector's object graph: `gc.get_objects` / `get_referrers` / `get_referents`;
- assignments to `__code__`, `__class__`, `__globals__`, `__defaults__`, `__kwdefaults__`
  (also through `setattr` with that name);
- writes to anything reached through aisp's modules (`core.*`): an attribute, an item, a
  `setattr`, a `del`;
- patches of `torch.Tensor` (its methods are what the verifier calls), of `builtins` and of
  `threading` (core.threads records each thread's starter through it);
- threads started outside `threading.Thread` (`_thread.start_new_thread`): they are not in
  `threading.enumerate()`, so the thread rule could not count their time;
- the channel the result's token comes through (core.signing): `sys.stdin`, or fd 0 opened,
  read or duplicated (`os.read(0, ...)`, `open(0)`, `socket.socket(fileno=0)`).

What it cannot see: code built at run time (`getattr(sys, "_get" + "frame")`, `exec`, an
imported third-party module doing it). The runtime checks stand behind it: the Guard compares
the harness, the pair's modules and torch.Tensor against a snapshot before every verdict
(core.integrity), and outputs are checked on values the pair could not predict.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

FRAME_ACCESS = {"sys._getframe", "sys._current_frames", "inspect.currentframe", "inspect.stack",
                "inspect.trace", "inspect.getouterframes", "inspect.getinnerframes",
                "traceback.extract_stack", "traceback.walk_stack", "traceback.print_stack"}
OBJECT_GRAPH = {"gc.get_objects", "gc.get_referrers", "gc.get_referents"}
# threads that threading.enumerate() never lists, so core.threads cannot count their time
UNLISTED_THREADS = {"_thread.start_new_thread", "_thread.start_new", "_thread.start_joinable_thread",
                    "threading._start_new_thread", "threading._start_joinable_thread"}
SIGNING_CHANNEL = {"sys.stdin", "sys.__stdin__"}  # the token desk (core.signing)
FD_CALLS = {"os.read", "os.fdopen", "os.dup", "os.dup2", "socket.socket", "socket.fromfd", "open"}
FRAME_ATTRIBUTES = {"f_back", "f_locals", "f_globals", "tb_frame", "gi_frame", "cr_frame",
                    "ag_frame"}
CODE_ATTRIBUTES = {"__code__", "__class__", "__globals__", "__defaults__", "__kwdefaults__"}
PROTECTED = ("core", "torch.Tensor", "torch._C.TensorBase", "torch._C._TensorBase", "builtins",
             "threading")


@dataclass(frozen=True)
class Finding:
    file: str  # chNN/file.py
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.what}"


def _protected(name: str | None) -> str | None:
    """The protected namespace `name` lies in (`core.verify.X` -> `core`), or None."""
    if not name:
        return None
    for root in PROTECTED:
        if name == root or name.startswith(root + "."):
            return root
    return None


class _Reader(ast.NodeVisitor):
    """One file's findings; `aliases` maps a local name to what it was imported as."""

    def __init__(self, file: str, package: str) -> None:
        self.file, self.package = file, package
        self.aliases: dict[str, str] = {}
        self.found: list[Finding] = []

    def flag(self, node: ast.AST, what: str) -> None:
        self.found.append(Finding(self.file, getattr(node, "lineno", 0), what))

    # --- names ----------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:  # `import a.b` binds `a`
                top = alias.name.split(".")[0]
                self.aliases[top] = top

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:  # a chapter module imported relatively
            module = f"{self.package}.{module}" if module else self.package
        for alias in node.names:
            full = f"{module}.{alias.name}"
            self.aliases[alias.asname or alias.name] = full
            if full in FRAME_ACCESS | OBJECT_GRAPH | UNLISTED_THREADS:
                self.flag(node, f"imports {full}")

    def qualified(self, node: ast.AST) -> str | None:
        """`a.b.c` as imported (`import torch as t; t.Tensor` -> `torch.Tensor`), else None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        return ".".join([self.aliases[node.id], *reversed(parts)])

    def reaches(self, node: ast.AST) -> str | None:
        """The protected namespace a target's chain of attributes, items and calls starts in
        (`core.verify.TOL["x"]`, `vars(core.verify)[...]`), or None."""
        while True:
            root = _protected(self.qualified(node))
            if root:
                return root
            if isinstance(node, (ast.Attribute, ast.Subscript)):
                node = node.value
            elif isinstance(node, ast.Call) and node.args:  # vars(m), getattr(m, "x")
                node = node.args[0]
            else:
                return None

    # --- reads --------------------------------------------------------------------------
    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = self.qualified(node)
        if name in FRAME_ACCESS:
            self.flag(node, f"reads the call stack ({name})")
        elif name in OBJECT_GRAPH:
            self.flag(node, f"walks the garbage collector's objects ({name})")
        elif name in UNLISTED_THREADS:
            self.flag(node, f"starts a thread outside threading.Thread ({name}): the harness "
                            f"could not tell which side's work it does")
        elif name in SIGNING_CHANNEL:
            self.flag(node, f"reads {name}: the harness's signing channel")
        elif node.attr in FRAME_ATTRIBUTES:
            self.flag(node, f"reads a frame (.{node.attr})")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
            root = self.reaches(node.args[0])
            name = node.args[1] if len(node.args) > 1 else None
            if root:
                self.flag(node, f"{func.id}() on {root}: a pair must not patch {_what(root)}")
            elif (isinstance(name, ast.Constant) and isinstance(name.value, str)
                  and name.value in CODE_ATTRIBUTES):
                self.flag(node, f"{func.id}() of {name.value}: swaps an object's code or class")
        elif isinstance(func, ast.Name) and self.aliases.get(func.id) in (FRAME_ACCESS | OBJECT_GRAPH
                                                                           | UNLISTED_THREADS):
            self.flag(node, f"calls {self.aliases[func.id]}")
        called = func.id if isinstance(func, ast.Name) and func.id not in self.aliases else (
            self.qualified(func))
        if called in FD_CALLS and _fd_zero(node):
            self.flag(node, f"{called}() of fd 0: the harness's signing channel")
        self.generic_visit(node)

    # --- writes -------------------------------------------------------------------------
    def check_target(self, target: ast.AST, verb: str) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.check_target(element, verb)
            return
        if isinstance(target, ast.Starred):
            self.check_target(target.value, verb)
            return
        if isinstance(target, ast.Attribute) and target.attr in CODE_ATTRIBUTES:
            self.flag(target, f"{verb} {target.attr}: swaps an object's code or class")
            return
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            root = self.reaches(target.value)
            if root:
                self.flag(target, f"{verb} {ast.unparse(target)}: a pair must not patch "
                                  f"{_what(root)}")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self.check_target(target, "assigns")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.check_target(node.target, "assigns")
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.check_target(node.target, "assigns")
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self.check_target(target, "deletes")
        self.generic_visit(node)


def _fd_zero(call: ast.Call) -> bool:
    """Whether a call names file descriptor 0 (its first argument, or `fileno=0`)."""
    given = [*call.args[:1], *(k.value for k in call.keywords if k.arg in ("fileno", "fd"))]
    return any(isinstance(a, ast.Constant) and a.value == 0 and type(a.value) is int for a in given)


def _what(root: str) -> str:
    return {"core": "aisp's own modules", "builtins": "Python's builtins",
            "threading": "threading (the harness records which thread started each one)"}.get(
        root, "torch.Tensor (the verifier calls its methods)")


def check_file(path: Path) -> list[Finding]:
    """Every finding in one pair file (`chNN/x.py`), in line order."""
    path = Path(path)
    file = f"{path.parent.name}/{path.name}"
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except SyntaxError:
        return []  # the import reports it, with its line
    reader = _Reader(file, path.parent.name)
    reader.visit(tree)
    return sorted(set(reader.found), key=lambda f: (f.line, f.what))


def chapter_imports(path: Path) -> list[Path]:
    """The chapter modules (`chNN.x`, or relative) that `path` imports, as files."""
    path = Path(path)
    try:
        tree = ast.parse(path.read_text())
    except SyntaxError:
        return []
    root, chapter = path.parent.parent, path.parent.name
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                module = f"{chapter}.{module}" if module else chapter
            names += [module] + [f"{module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names]
    found = []
    for name in names:
        parts = name.split(".")
        if len(parts) >= 2 and parts[0].startswith("ch") and parts[0][2:].isdigit():
            candidate = root.joinpath(*parts).with_suffix(".py")
            if candidate.is_file():
                found.append(candidate)
    return found


def check_pair_files(paths: list[Path]) -> dict[Path, list[Finding]]:
    """Findings per file for `paths` and every chapter module they import (transitively);
    files without findings are left out. A finding in a shared module is reported under the
    pair file that imports it."""
    out: dict[Path, list[Finding]] = {}
    read: dict[Path, tuple[list[Finding], list[Path]]] = {}  # each file read once
    for path in paths:
        seen: set[Path] = set()
        todo = [Path(path).resolve()]
        findings: list[Finding] = []
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            if current not in read:
                read[current] = (check_file(current), [p.resolve() for p in chapter_imports(current)])
            found, imported = read[current]
            findings += found
            todo += imported
        if findings:
            out[Path(path)] = findings
    return out


def describe(findings: list[Finding]) -> str:
    """One message for a pair file's findings (the first three named)."""
    shown = "; ".join(map(str, findings[:3]))
    more = f" (and {len(findings) - 3} more)" if len(findings) > 3 else ""
    return (f"refused before running: {shown}{more}. No honest pair needs this; the harness "
            f"reads pair sources for it (README, 'Integrity')")
