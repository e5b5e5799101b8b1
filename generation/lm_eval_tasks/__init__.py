"""AmbigDocs for lm-evaluation-harness (`lm_eval --tasks ambigdocs --include_path TASK_DIR`).

The task folder (`ambigdocs/`: the YAML files and the `utils.py` that lm-eval loads by path)
ships inside the `generation` package, so that an installed toolkit finds it as well as a clone:

    lm_eval --include_path "$(python -c 'import generation.lm_eval_tasks as t; print(t.TASK_DIR)')" ...

The task itself is `harness.py`; the README's section "lm-evaluation-harness" shows the
commands and how the numbers relate to `ambigdocs answer` + `ambigdocs evaluate`.
"""

from pathlib import Path

TASK_DIR = Path(__file__).resolve().parent / "ambigdocs"
