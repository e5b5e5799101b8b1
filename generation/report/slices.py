"""Scores of subsets of the examples: by number of gold documents (2, 3, 4-5, 6+), by document
setting (when the rows or the run's meta file say it), and per answer category."""

from __future__ import annotations

from collections.abc import Sequence

from generation.report.bootstrap import point_means
from generation.report.layout import SCORE_KEYS
from metric.ambigdocs_metric.scoring import CATEGORIES, parse_reference

# The bins of Table 1's distribution of answers per question, with 4 and 5 merged.
GOLD_BINS = (("2", 2, 2), ("3", 3, 3), ("4-5", 4, 5), ("6+", 6, None))


def gold_bin(m: int) -> str:
    """The bin of an example with `m` gold documents ("1" only in data that is not AmbigDocs')."""
    for label, low, high in GOLD_BINS:
        if m >= low and (high is None or m <= high):
            return label
    return str(m)


def _slice_summary(records: Sequence[dict], with_categories: bool = True) -> dict:
    keys = [k for k in SCORE_KEYS if any(r.get(k) is not None for r in records)]
    if with_categories:
        keys += list(CATEGORIES)
    means = point_means(records, keys)
    return {**{k: v for k, v in means.items() if v is not None}, "n": len(records)}


def _grouped(records: Sequence[dict], labels: Sequence[str], order: Sequence[str]) -> dict:
    groups: dict[str, list[dict]] = {}
    for rec, label in zip(records, labels, strict=True):
        groups.setdefault(label, []).append(rec)
    ordered = [k for k in order if k in groups] + sorted(k for k in groups if k not in order)
    return {k: groups[k] for k in ordered}


def compute_slices(
    rows: Sequence[dict], records: Sequence[dict], run_setting: str | None = None
) -> dict:
    """The slices of one results file, from its rows, their per-example records and the
    setting `ambigdocs answer` recorded for the whole file, if any: {"gold_documents": {bin:
    summary}, "setting": {...} (when known), "category": {...}}, each with the means and `n`."""
    bins = [gold_bin(len(parse_reference(row, i).documents)) for i, row in enumerate(rows)]
    out = {
        "gold_documents": {
            k: _slice_summary(g)
            for k, g in _grouped(records, bins, [b[0] for b in GOLD_BINS]).items()
        }
    }
    # Each row's document setting: its `setting` field, else the run's (none known: no slice).
    settings = [row.get("setting") or run_setting for row in rows]
    if any(s is not None for s in settings):
        settings = [str(s) if s is not None else "unknown" for s in settings]
        out["setting"] = {k: _slice_summary(g) for k, g in _grouped(records, settings, []).items()}
    categories = [rec.get("category") or "unscored" for rec in records]
    out["category"] = {
        k: _slice_summary(g, with_categories=False)
        for k, g in _grouped(records, categories, CATEGORIES).items()
    }
    return out
