"""What the YAML files here name with `!function utils.X`: lm-eval loads this file by path.

It re-exports `generation/lm_eval_tasks/harness.py`, making the toolkit importable when it is
not installed (lm-eval run from a clone: the repository root is three folders up).
"""

import sys
from pathlib import Path

try:
    import generation.lm_eval_tasks  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from generation.lm_eval_tasks.harness import (  # noqa: E402,F401
    AmbigDocsFewShotTask,
    AmbigDocsTask,
    ambiguous,
    answer_recall,
    complete,
    disambig_f1,
    doc_to_target,
    entity_answer_recall,
    entity_recall,
    k_precision,
    merged,
    no_answer,
    partial,
    process_results,
)
