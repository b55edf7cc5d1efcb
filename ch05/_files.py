"""The files the ch05 pairs read: written by setup() into a temporary directory, deleted by
teardown().

The sides of a pair run in one process and read the same files, so the directory is shared:
the first side's setup() builds it, and the last side's teardown() deletes it. Which files a
call reads is decided by that call's inputs (indices, offsets), never by setup(), so a side
cannot prepare its answers in advance.

`AISP_CH05_DATA_DIR` picks the parent directory (default: the system's temporary directory).
Point it at the local NVMe drive to measure that drive: on tmpfs the "disk" is memory.
A process killed before its teardown (a timeout) leaves its directory behind; the next
setup() deletes the directories of processes that no longer exist.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Callable

DATA_DIR_ENV = "AISP_CH05_DATA_DIR"
PREFIX = "aisp_ch05_"
_OWNED = re.compile(rf"^{PREFIX}(\d+)_")
_shared: dict[str, list] = {}  # key -> [TemporaryDirectory, users]


def data_dir() -> Path:
    """The parent of the fixture directories."""
    return Path(os.environ.get(DATA_DIR_ENV) or tempfile.gettempdir())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: a liveness check, nothing is sent
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _remove_orphans(parent: Path) -> None:
    """Delete fixture directories whose owning process is gone (killed before teardown)."""
    for entry in parent.glob(f"{PREFIX}*"):
        match = _OWNED.match(entry.name)
        if match and entry.is_dir() and not _alive(int(match.group(1))):
            shutil.rmtree(entry, ignore_errors=True)


def acquire(key: str, build: Callable[[Path], None]) -> Path:
    """The directory for `key`, built by `build(directory)` if no side holds it yet."""
    entry = _shared.get(key)
    if entry is None:
        parent = data_dir()
        parent.mkdir(parents=True, exist_ok=True)
        _remove_orphans(parent)
        directory = tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}_{key}_", dir=parent)
        try:
            build(Path(directory.name))
        except BaseException:
            directory.cleanup()
            raise
        entry = _shared[key] = [directory, 0]
    entry[1] += 1
    return Path(entry[0].name)


def release(key: str) -> None:
    """One side is done with `key`'s directory; the last one deletes it."""
    entry = _shared.get(key)
    if entry is None:
        return
    entry[1] -= 1
    if entry[1] <= 0:
        del _shared[key]
        entry[0].cleanup()


def close(bench: object) -> None:
    """A side's teardown of what it opened: its file descriptor (`fd`) and its share of the
    data directory (`fixture`), whichever setup() got as far as creating."""
    if hasattr(bench, "fd"):
        os.close(bench.fd)
    if hasattr(bench, "fixture"):
        release(bench.fixture)


def evict_from_page_cache(fd: int) -> None:
    """Ask the kernel to drop the file's clean pages from the page cache, so the next read
    comes from the drive (no privileges needed; no effect on tmpfs, whose pages are the file)."""
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
