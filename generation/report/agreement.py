"""The automatic answer categories against reference labels (the paper's Figure 5): the
confusion matrix, the agreement and Cohen's kappa, for `summary.json`, the console and the page."""

from __future__ import annotations

from collections import Counter

from metric.ambigdocs_metric.scoring import CATEGORIES


def label_agreement(categories: list[str | None], labels: list, field: str) -> dict | None:
    """The automatic categories against reference labels, like the paper's Figure 5.

    Returns:
        {"field", "n", "agreed", "agreement", "kappa" (Cohen's), "confusion": {label:
        {category: count}}} over the examples whose label is not None; None when there are none.
    """
    pairs = [
        (str(lab), cat) for lab, cat in zip(labels, categories, strict=True) if lab is not None
    ]
    if not pairs:
        return None
    counts = Counter(pairs)
    order = [*CATEGORIES, *sorted({lab for lab, _ in pairs} - set(CATEGORIES))]
    n = len(pairs)
    agree = sum(1 for lab, cat in pairs if lab == cat)
    p_o = agree / n
    lab_tot = Counter(lab for lab, _ in pairs)
    cat_tot = Counter(cat for _, cat in pairs)
    p_e = sum(lab_tot[c] * cat_tot[c] for c in order) / (n * n)
    kappa = (p_o - p_e) / (1 - p_e) if p_e < 1 else 1.0
    confusion = {lab: {c: counts[(lab, c)] for c in order} for lab in order if lab_tot[lab]}
    return {
        "field": field,
        "n": n,
        "agreed": agree,
        "agreement": p_o,
        "kappa": kappa,
        "confusion": confusion,
    }


def format_agreement(agreement: dict | None) -> str:
    """`label_agreement`'s result as text: the confusion matrix (rows: labels, columns:
    automatic categories), the agreement and Cohen's kappa."""
    if agreement is None:
        return "no labels found"
    confusion = agreement["confusion"]
    order = list(next(iter(confusion.values())))
    w = max(len(c) for c in order) + 1
    lines = ["label \\ automatic".ljust(w + 8) + "".join(c[:9].rjust(10) for c in order)]
    for lab, row in confusion.items():
        lines.append(lab.ljust(w + 8) + "".join(str(row[c]).rjust(10) for c in order))
    lines.append(
        f"agreement {agreement['agreed']}/{agreement['n']} = {agreement['agreement']:.3f}, "
        f"Cohen's kappa {agreement['kappa']:.3f}"
    )
    return "\n".join(lines)
