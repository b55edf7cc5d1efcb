"""aisp core: the benchmark harness library (see README.md, 'How the harness works')."""
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
