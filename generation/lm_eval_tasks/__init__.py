"""AmbigDocs for lm-evaluation-harness (`lm_eval --tasks ambigdocs --include_path TASK_DIR`).

The task folder (`ambigdocs/`: the YAML files and `utils.py`) ships inside the package; the task
itself is `harness.py`. README.md, section "lm-evaluation-harness", has the commands.
"""

from pathlib import Path

TASK_DIR = Path(__file__).resolve().parent / "ambigdocs"
