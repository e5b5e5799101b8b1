"""Paired comparison of results files on the questions they share (`comparison.json`,
`comparison.md`): the first file against each other one (docs/report.md, "Paired comparison").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from generation.report.bootstrap import (
    CHUNK,
    LEVEL,
    percentile_interval,
    resampled_means,
    small_sample_note,
    value_matrix,
)
from generation.report.layout import SCORE_KEYS, difference_ci, number, score_name
from generation.report.predictions import index_by_qid
from generation.report.tables import md_code, md_escape
from metric.ambigdocs_metric.scoring import CATEGORIES

UNSCORED = "unscored"  # the transition-matrix row/column of examples without a category


def permutation_p_values(diffs: np.ndarray, defined: np.ndarray, n: int, seed: int) -> list:
    """Two-sided paired permutation p-values, one per column: the share of `n` random sign
    flips whose mean difference is at least as far from 0 as the observed one, counting the
    observed one ((1 + hits) / (1 + n), so never 0)."""
    rng = np.random.default_rng(seed)
    counts = defined.sum(axis=0)
    d = diffs * defined
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.abs(d.sum(axis=0) / counts)
    hits = np.zeros(d.shape[1])
    for start in range(0, n, CHUNK):
        signs = rng.choice([-1.0, 1.0], size=(min(CHUNK, n - start), d.shape[0]))
        with np.errstate(invalid="ignore", divide="ignore"):
            flipped = np.abs((signs @ d) / counts)
        # A tolerance so that float noise does not decide ties (e.g. all differences 0).
        hits += (flipped >= observed - 1e-12).sum(axis=0)
    return [None if not c else float((1 + h) / (1 + n)) for h, c in zip(hits, counts, strict=True)]


def transition_matrix(base: Sequence[dict], other: Sequence[dict]) -> dict[str, dict[str, int]]:
    """{baseline category: {other category: count}} over paired records, every cell present."""
    order = [*CATEGORIES, UNSCORED]
    matrix = {a: dict.fromkeys(order, 0) for a in order}
    for a, b in zip(base, other, strict=True):
        matrix[a.get("category") or UNSCORED][b.get("category") or UNSCORED] += 1
    if not any(matrix[UNSCORED].values()) and not any(m[UNSCORED] for m in matrix.values()):
        matrix.pop(UNSCORED)
        for row in matrix.values():
            row.pop(UNSCORED)
    return matrix


def compare_pair(
    base: Sequence[dict],
    other: Sequence[dict],
    names: tuple[str, str],
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict:
    """Compares two files' per-example records on their shared qids (see the module doc).

    Returns:
        {"baseline", "system", "n_shared", "only_in_baseline", "only_in_system", "scores":
        {key: {"baseline", "system", "difference", "ci95", "p_value", "n"}}, "transitions",
        "note"}; the note warns of too few shared questions (None when there are enough).
    """
    a_by = index_by_qid(base, names[0], "comparison")
    b_by = index_by_qid(other, names[1], "comparison")
    shared = [q for q in a_by if q in b_by]
    a = [a_by[q] for q in shared]
    b = [b_by[q] for q in shared]
    keys = [k for k in (*SCORE_KEYS, *CATEGORIES) if _present(a, k) and _present(b, k)]
    va, da = value_matrix(a, keys)
    vb, db = value_matrix(b, keys)
    both = da * db
    diffs = vb - va
    scores = (
        _score_differences(keys, va, vb, diffs, both, n_resamples, seed) if shared and keys else {}
    )
    return {
        "baseline": names[0],
        "system": names[1],
        "n_shared": len(shared),
        "only_in_baseline": len(a_by) - len(shared),
        "only_in_system": len(b_by) - len(shared),
        "scores": scores,
        "transitions": transition_matrix(a, b),
        "note": small_sample_note(len(shared), "intervals and p-values") if n_resamples else None,
    }


def _present(records: Sequence[dict], key: str) -> bool:
    return key in CATEGORIES or any(rec.get(key) is not None for rec in records)


def _score_differences(keys, va, vb, diffs, both, n_resamples, seed) -> dict:
    counts = both.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_a = (va * both).sum(axis=0) / counts
        mean_b = (vb * both).sum(axis=0) / counts
    if n_resamples > 0:
        ci = percentile_interval(resampled_means(diffs, both, n_resamples, seed), LEVEL)
        p = permutation_p_values(diffs, both, n_resamples, seed + 1)
    else:
        ci, p = [None] * len(keys), [None] * len(keys)
    out = {}
    for j, key in enumerate(keys):
        n = int(counts[j])
        out[key] = {
            "baseline": float(mean_a[j]) if n else None,
            "system": float(mean_b[j]) if n else None,
            "difference": float(mean_b[j] - mean_a[j]) if n else None,
            "ci95": ci[j],
            "p_value": p[j],
            "n": n,
        }
    return out


def compare_files(
    records_by_name: dict[str, Sequence[dict]], n_resamples: int = 1000, seed: int = 0
) -> dict:
    """The first file compared with each other one: {"baseline", "comparisons": [...]}."""
    names = list(records_by_name)
    base = names[0]
    return {
        "baseline": base,
        "bootstrap": {"resamples": n_resamples, "seed": seed, "level": LEVEL},
        "p_value_method": "paired permutation (random sign flips), two-sided",
        "comparisons": [
            compare_pair(records_by_name[base], records_by_name[n], (base, n), n_resamples, seed)
            for n in names[1:]
        ],
    }


# --- Markdown ----------------------------------------------------------------------------------


def format_comparison_markdown(comparison: dict) -> str:
    """`comparison.json` as Markdown: a table of differences and a transition matrix per pair."""
    lines = [f"# Paired comparison against {md_code(comparison['baseline'])}", ""]
    for c in comparison["comparisons"]:
        lines += [
            f"## {md_code(c['system'])} vs {md_code(c['baseline'])}",
            "",
            f"{c['n_shared']} shared questions; left out: {c['only_in_baseline']} only in "
            f"{md_code(c['baseline'])}, {c['only_in_system']} only in {md_code(c['system'])}.",
            "",
            *([f"Note: {c['note']}", ""] if c.get("note") else []),
            "| Score | baseline | system | difference | 95% CI | p-value |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for key, s in c["scores"].items():
            lines.append(
                f"| {md_escape(score_name(key))} | {number(s['baseline'], '{:.3f}')} | "
                f"{number(s['system'], '{:.3f}')} | {number(s['difference'])} | {difference_ci(s['ci95'])} | "
                f"{number(s['p_value'], '{:.4f}')} |"
            )
        lines += [
            "",
            f"Category transitions (rows: {md_code(c['baseline'])}, columns: {md_code(c['system'])})",
        ]
        matrix = c["transitions"]
        lines += ["", "| | " + " | ".join(score_name(k) for k in matrix) + " |"]
        lines.append("|---|" + "---:|" * len(matrix))
        for a, row in matrix.items():
            lines.append(f"| {score_name(a)} | " + " | ".join(str(n) for n in row.values()) + " |")
        lines.append("")
    return "\n".join(lines)
