"""What the evaluation report shows, in which order and under which names (one home for the
table, the files and the HTML page)."""

from __future__ import annotations

# The paper's Table 2: (summary key, row label, format).
TABLE_ROWS = [
    ("answer_length", "Answer Length (|y|)", "{:.1f}"),
    ("answer_recall", "Answer Recall", "{:.3f}"),
    ("entity_recall", "Entity Recall", "{:.3f}"),
    ("entity_answer_recall", "Entity-Answer Recall", "{:.3f}"),
    ("disambig_f1", "Disambig-F1", "{:.3f}"),
    ("k_precision", "K-Precision", "{:.3f}"),
]
CATEGORY_NAMES = {
    "complete": "Complete",
    "partial": "Partial",
    "no_answer": "No Answer",
    "ambiguous": "Ambiguous",
    "merged": "Merged",
}
CATEGORY_COLOURS = {
    "complete": "#4c9a2a",
    "partial": "#a4c639",
    "no_answer": "#bbbbbb",
    "ambiguous": "#f4a261",
    "merged": "#e76f51",
}
# The per-example scores (each a mean in summary.json), in table order.
SCORE_KEYS = tuple(key for key, _, _ in TABLE_ROWS)
SCORE_LABELS = {key: label for key, label, _ in TABLE_ROWS}
SCORE_FORMATS = {key: fmt for key, _, fmt in TABLE_ROWS}


def score_name(key: str) -> str:
    """The name a score or category is shown under."""
    return SCORE_LABELS.get(key) or CATEGORY_NAMES.get(key, key)


def number(x, fmt: str = "{:+.3f}") -> str:
    """`x` in `fmt` (by default a signed difference), `-` for None."""
    return "-" if x is None else fmt.format(x)


def difference_ci(ci: list | None) -> str:
    """A difference's 95% interval as `[-0.012, +0.034]` (`-` when there is none)."""
    return "-" if not ci or ci[0] is None else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


# The authors' category rule, stated wherever categories are shown: an answer is judged by the
# gold answers it contains, so a wrong answer, however confident, is "No Answer".
NO_ANSWER_RULE = (
    "An answer that contains none of the gold answers counts as No Answer, even when it "
    "confidently gives a wrong one (the authors' rule)."
)
# The files `ambigdocs evaluate` writes at the top of its output folder: no system's subfolder
# may take one of these names.
OUTPUT_FILES = (
    "summary.json",
    "per_example.jsonl",
    "table.md",
    "table.csv",
    "table.tex",
    "comparison.json",
    "comparison.md",
    "report.html",
    "categories.png",
)
