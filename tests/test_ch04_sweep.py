"""ch04.sweep_ddp_overlap's gloo smoke check: two CPU ranks under torchrun print one table row
per tokens value and exit cleanly (every rank's collectives paired up, the group destroyed)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKENS = [16, 32]


def test_cpu_sweep_prints_one_row_per_tokens_value():
    # --standalone: a free rendezvous port, so this can run beside other torchrun tests
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "-m", "ch04.sweep_ddp_overlap", "--cpu", "--tokens", ",".join(map(str, TOKENS)),
           "--steps", "2", "--windows", "2"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    # the deadline: a rank stuck in a collective fails the test instead of hanging the suite
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [int(r.split("|")[1]) for r in rows] == TOKENS, done.stdout
    assert all(len(r.split("|")) == 12 for r in rows), rows  # ten cells each
