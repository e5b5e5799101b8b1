"""`report.html`: one self-contained page (no network, works from disk) with the summary table,
the category chart, the comparison, the slices, the provenance and a per-example viewer.

The static parts are built here as HTML; the examples travel as one JSON block that the page's
script renders lazily, a screenful at a time, so the page stays quick with the 7,220-example
test split and several systems (see benchmarks/bench_report.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from html import escape
from importlib import resources

from generation.report.layout import (
    CATEGORY_COLOURS,
    CATEGORY_NAMES,
    SCORE_FORMATS,
    SCORE_KEYS,
    difference_ci,
    number,
    score_name,
)
from generation.report.tables import score_cell, table_rows
from metric.ambigdocs_metric.scoring import (
    CATEGORIES,
    bare_title,
    parse_reference,
    scored_documents,
    surface_name,
    tokens_many,
)

# Scores shown per answer in the viewer (the per-example records' fields), and their labels.
VIEWER_SCORES = {
    "answer_recall": "AR",
    "entity_recall": "ER",
    "entity_answer_recall": "EAR",
    "disambig_f1": "DF1",
}


# --- the examples ------------------------------------------------------------------------------


def _highlight_tokens(row: dict, index: int, score_documents: str) -> tuple[list, list, list]:
    """(gold [[title, answer, scored]], answer strings, entity strings) of one row; the strings
    are tokenised later in one batch, as the scorer tokenises them."""
    ref = parse_reference(row, index)
    try:
        scored = set(scored_documents(ref, row.get("docs"), score_documents))
    except ValueError:  # 'shown' without shown documents: nothing was scored
        scored = set()
    gold = [[d.title, d.answer, int(d in scored)] for d in ref.documents]
    answers = [d.answer for d in ref.documents if d in scored]
    entities = [bare_title(d.title) for d in ref.documents if d in scored]
    return gold, answers, [surface_name(ref.ambiguous_entity), *entities]


def example_payload(
    systems: dict[str, tuple[Sequence[dict], Sequence[dict]]], score_documents: str = "first5"
) -> list[dict]:
    """The viewer's examples: every qid of any system, in the order first seen.

    Args:
        systems: {name: (rows, per-example records)}, rows and records in the same order.
        score_documents: the scored gold documents (which answers/entities are highlighted).

    Returns:
        One dict per question: `q` qid, `question`, `sn`, `gold` [[title, answer, scored]],
        `ta`/`te` the answer/entity tokens the scorer matches, and `o`: per system, None or
        [answer, category, *VIEWER_SCORES].
    """
    names = list(systems)
    examples: dict[tuple[str, int], dict] = {}
    pending = []  # (example, answers, entity strings) to tokenise in one batch
    for k, name in enumerate(names):
        rows, records = systems[name]
        seen: dict[str, int] = {}
        for i, (row, rec) in enumerate(zip(rows, records, strict=True)):
            qid = str(row.get("qid", f"{name}:{i}"))
            # A qid repeated within a file (several answers to one question, as in the bundled
            # sample) is one example per occurrence, paired with the same occurrence elsewhere.
            seen[qid] = seen.get(qid, 0) + 1
            key = (qid, seen[qid])
            ex = examples.get(key)
            if ex is None:
                gold, answers, entity_strings = _highlight_tokens(row, i, score_documents)
                ex = {"q": qid, "question": row["question"], "sn": row["ambiguous_entity"]}
                ex.update(gold=gold, o=[None] * len(names))
                examples[key] = ex
                pending.append((ex, answers, entity_strings))
            ex["o"][k] = [
                row["gen_answer"],
                rec.get("category"),
                *(None if rec.get(s) is None else round(float(rec[s]), 3) for s in VIEWER_SCORES),
            ]
    _add_tokens(pending)
    return list(examples.values())


def _add_tokens(pending: list) -> None:
    strings = [s for _, answers, ents in pending for s in (*answers, *ents)]
    toks = iter(tokens_many(strings))
    for ex, answers, ents in pending:
        answer_tokens = {t for _ in answers for t in next(toks)}
        sn_tokens = set(next(toks))
        entity_tokens = {t for _ in ents[1:] for t in next(toks)} - sn_tokens
        ex["ta"] = sorted(answer_tokens)
        ex["te"] = sorted(entity_tokens)


# --- the static sections -----------------------------------------------------------------------


def _grid(header: Sequence[str], rows: Sequence[str]) -> str:
    """A table from header cells and row HTML (both already escaped)."""
    head = "".join(f"<th>{h}</th>" for h in header)
    return (
        f'<table class="grid"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _row(label: str, cells: Sequence[str], cls: str = "", label_cls: str = "") -> str:
    """A row: an escaped label, then cells given as <td> HTML or as text to put in one."""
    tds = "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in cells)
    attr = f' class="{cls}"' if cls else ""
    th_attr = f' class="{label_cls}"' if label_cls else ""
    return f"<tr{attr}><th{th_attr}>{escape(label)}</th>{tds}</tr>"


_CI_SPAN = '{}<span class="ci">[{}, {}]</span>'  # a mean's interval under it


def summary_table_html(columns: dict[str, dict]) -> str:
    """Table 2 with intervals (when computed) under each mean."""
    names = list(columns)
    body, in_categories = [], False
    for key, label, fmt, is_category in table_rows(columns):
        if is_category and not in_categories:
            span = len(names) + 1  # the label column too
            body.append(f'<tr class="group"><th colspan="{span}">Answer category</th></tr>')
            in_categories = True
        cells = [score_cell(columns[n], key, fmt, True, ci=_CI_SPAN) for n in names]
        body.append(_row(label, cells, label_cls="sub" if is_category else ""))
    return _grid(["", *map(escape, names)], body)


def category_chart_html(columns: dict[str, dict]) -> str:
    """The category distribution (the paper's Figure 4) as stacked bars in plain HTML/CSS."""
    bars = []
    for name, s in columns.items():
        parts = []
        for key in CATEGORIES:
            pct = 100 * s.get(key, 0.0)
            text = f"{pct:.0f}%" if pct >= 6 else ""
            parts.append(
                f'<span class="seg" style="width:{pct:.3f}%;background:{CATEGORY_COLOURS[key]}" '
                f'title="{CATEGORY_NAMES[key]}: {pct:.1f}%">{text}</span>'
            )
        bars.append(
            f'<div class="bar-row"><span class="bar-name">{escape(name)}</span>'
            f'<span class="bar">{"".join(parts)}</span></div>'
        )
    legend = "".join(
        f'<span class="legend"><i style="background:{CATEGORY_COLOURS[k]}"></i>'
        f"{CATEGORY_NAMES[k]}</span>"
        for k in CATEGORIES
    )
    return f'<div class="chart">{"".join(bars)}<div>{legend}</div></div>'


def _difference_row(key: str, s: dict) -> str:
    cells = [number(s["difference"]), difference_ci(s["ci95"]), number(s["p_value"], "{:.4f}")]
    significant = s["p_value"] is not None and s["p_value"] < 0.05
    return _row(score_name(key), [*cells, str(s["n"])], cls="sig" if significant else "")


def comparison_html(comparison: dict | None) -> str:
    """The paired comparison: differences with intervals and p-values, and transitions."""
    if not comparison or not comparison["comparisons"]:
        return "<p>Only one results file: nothing to compare.</p>"
    parts = []
    for c in comparison["comparisons"]:
        base, system = escape(c["baseline"]), escape(c["system"])
        rows = [_difference_row(key, s) for key, s in c["scores"].items()]
        parts += [
            f"<h3>{system} vs {base}</h3>",
            f"<p>{c['n_shared']} shared questions; left out: {c['only_in_baseline']} only in "
            f"{base}, {c['only_in_system']} only in {system}.</p>",
            f'<p class="note">{escape(c["note"])}</p>' if c.get("note") else "",
            _grid(["Score", "difference", "95% CI", "p-value", "n"], rows),
            f"<p>Category transitions (rows: {base}, columns: {system})</p>",
            _matrix_html(c["transitions"]),
        ]
    return "".join(parts)


def _matrix_html(matrix: dict[str, dict[str, int]], corner: str = "") -> str:
    """{row category: {column category: count}} as a grid, the diagonal marked."""
    order = list(next(iter(matrix.values()), {}))
    rows = [
        _row(
            score_name(a), [f'<td class="{"diag" if a == b else ""}">{row[b]}</td>' for b in order]
        )
        for a, row in matrix.items()
    ]
    return _grid([corner, *(escape(score_name(k)) for k in order)], rows)


def notes_html(columns: dict[str, dict]) -> str:
    """The summaries' notes (what changes how the numbers read), each once, naming the
    system when it is one system's."""
    seen: dict[str, None] = {}
    for name, summary in columns.items():
        for note in summary.get("notes", []):
            shared = all(note in s.get("notes", []) for s in columns.values())
            seen[note if shared or len(columns) == 1 else f"{name}: {note}"] = None
    items = "".join(f"<li>{escape(note)}</li>" for note in seen)
    return f'<ul class="notes">{items}</ul>' if items else ""


def agreement_html(columns: dict[str, dict]) -> str:
    """Each system's categories against the reference labels (--labels-field), like the
    paper's Figure 5: the confusion matrix, the agreement and Cohen's kappa."""
    parts = []
    for name, summary in columns.items():
        labels = summary.get("labels")
        if not labels:
            continue
        parts += [
            f"<h3>{escape(name)}: categories against {escape(repr(labels['field']))}</h3>",
            f"<p>agreement {labels['agreed']}/{labels['n']} = {labels['agreement']:.3f}, "
            f"Cohen's kappa {labels['kappa']:.3f} (rows: labels, columns: automatic "
            "categories)</p>",
            _matrix_html(labels["confusion"], "label \\ automatic"),
        ]
    title = "<h2>Agreement with labels (Figure 5)</h2>"
    return f'<section id="agreement">{title}{"".join(parts)}</section>' if parts else ""


SLICE_TITLES = {
    "gold_documents": "By number of gold documents",
    "setting": "By document setting",
    "category": "By answer category",
}


def slices_html(slices: dict[str, dict]) -> str:
    """One table per results file and slice kind: groups down, means across."""
    parts = []
    for name, kinds in slices.items():
        parts.append(f"<h3>{escape(name)}</h3>")
        for kind, groups in kinds.items():
            keys = [k for k in (*SCORE_KEYS, *CATEGORIES) if any(k in g for g in groups.values())]
            rows = [
                _row(score_name(group), [str(g["n"]), *(_slice_cell(g, k) for k in keys)])
                for group, g in groups.items()
            ]
            header = ["", "n", *(escape(score_name(k)) for k in keys)]
            parts += [f"<h4>{SLICE_TITLES.get(kind, escape(kind))}</h4>", _grid(header, rows)]
    return "".join(parts)


def _slice_cell(group: dict, key: str) -> str:
    return SCORE_FORMATS.get(key, "{:.3f}").format(group[key]) if key in group else "-"


def provenance_html(provenance: dict[str, dict]) -> str:
    """Each file's provenance, folded."""
    return "".join(
        f"<details><summary>{escape(name)}</summary>"
        f"<pre>{escape(json.dumps(p, indent=2))}</pre></details>"
        for name, p in provenance.items()
    )


# --- the page ----------------------------------------------------------------------------------


def script_json(obj) -> str:
    """JSON safe inside a <script> element: with every "<" written as an escape, no "</script>"
    can close it and no "<!--" change how the browser reads it."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c")


def render_report(
    columns: dict[str, dict],
    systems: dict[str, tuple[Sequence[dict], Sequence[dict]]],
    comparison: dict | None,
    slices: dict[str, dict],
    provenance: dict[str, dict],
    score_documents: str = "first5",
    title: str = "AmbigDocs evaluation report",
) -> str:
    """The whole page as a string (see the module doc)."""
    data = {
        "systems": list(systems),
        "categories": list(CATEGORIES),
        "categoryNames": CATEGORY_NAMES,
        "categoryColours": CATEGORY_COLOURS,
        "scoreLabels": list(VIEWER_SCORES.values()),
        "examples": example_payload(systems, score_documents),
    }
    values = {
        "TITLE": escape(title),
        "SUMMARY": summary_table_html(columns),
        "NOTES": notes_html(columns),
        "AGREEMENT": agreement_html(columns),
        "AGREEMENTLINK": '<a href="#agreement">Agreement</a>'
        if any(s.get("labels") for s in columns.values())
        else "",
        "CHART": category_chart_html(columns),
        "COMPARISON": comparison_html(comparison),
        "SLICES": slices_html(slices),
        "PROVENANCE": provenance_html(provenance),
        "DATA": script_json(data),
    }
    template = resources.files("generation").joinpath("resources", "report", "report.html")
    # One pass: text put in by one placeholder is never read for another.
    return re.sub(
        r"\{\{([A-Z]+)\}\}", lambda m: values[m.group(1)], template.read_text(encoding="utf-8")
    )
