"""The paper's Table 2 as files: `table.md`, `table.csv` and `table.tex` (booktabs).

One column per results file; rows are the scores, then the answer-category fractions. With
intervals (`--table-ci`), each cell also gives its 95% bootstrap interval from `ci95`.
"""

from __future__ import annotations

import csv
import html
import io
import re
from pathlib import Path

from generation.io.records import atomic_write_text
from generation.report.layout import CATEGORY_NAMES, TABLE_ROWS
from metric.ambigdocs_metric.scoring import CATEGORIES

CATEGORY_HEADER = "Answer category"
_TEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def table_rows(columns: dict[str, dict]) -> list[tuple[str, str, str, bool]]:
    """(key, label, format, is_category) for every row some column has, in Table 2's order."""
    rows = [(k, label, fmt, False) for k, label, fmt in TABLE_ROWS if _any(columns, k)]
    rows += [(k, CATEGORY_NAMES[k], "{:.3f}", True) for k in CATEGORIES if _any(columns, k)]
    return rows


def _any(columns: dict[str, dict], key: str) -> bool:
    return any(key in s for s in columns.values())


def _interval(summary: dict, key: str) -> list | None:
    ci = summary.get("ci95", {}).get(key)
    return ci if ci and ci[0] is not None else None


def score_cell(
    summary: dict, key: str, fmt: str, with_ci: bool, missing: str = "-", ci: str = "{} [{}, {}]"
) -> str:
    """One score cell: `missing` without the score; with an interval, laid out by `ci` (the
    score, the low end, the high end)."""
    if key not in summary:
        return missing
    text = fmt.format(summary[key])
    low_high = _interval(summary, key) if with_ci else None
    return text if low_high is None else ci.format(text, *(fmt.format(x) for x in low_high))


def format_markdown(columns: dict[str, dict], with_ci: bool = False) -> str:
    """Table 2 as a Markdown table."""
    names = list(columns)
    head = " | ".join(md_escape(n) for n in names)
    lines = [f"| | {head} |", "|---|" + "---:|" * len(names)]
    in_categories = False
    for key, label, fmt, is_category in table_rows(columns):
        if is_category and not in_categories:
            lines.append(f"| *{CATEGORY_HEADER}* |" + " |" * len(names))
            in_categories = True
        name = f"&nbsp;&nbsp;{label}" if is_category else md_escape(label)
        cells = [score_cell(columns[n], key, fmt, with_ci) for n in names]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def md_escape(text: str) -> str:
    """Text safe in a Markdown table cell: HTML shown as text (`<`, `>`, `&` escaped, so a name
    cannot inject markup), `|` escaped (a bare one would split the cell; the answer length's
    label is "(|y|)"), line breaks as spaces (one would end the row)."""
    return " ".join(html.escape(text, quote=False).replace("|", "\\|").splitlines())


def md_code(text: str) -> str:
    """`text` as a Markdown code span that it cannot break out of: the fence is longer than any
    run of backticks inside (CommonMark), so HTML and Markdown in a name stay literal text."""
    text = " ".join(text.splitlines())
    longest = max(map(len, re.findall("`+", text)), default=0)
    pad = " " if longest else ""
    return f"{'`' * (longest + 1)}{pad}{text}{pad}{'`' * (longest + 1)}"


# What makes a spreadsheet read a cell as a formula (OWASP "CSV injection"), and the full-width
# forms some spreadsheets fold to them.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def csv_cell(text: str) -> str:
    """A text cell a spreadsheet shows as text: one starting like a formula gets a leading `'`
    (the OWASP rule). Only for text (names, labels): numbers are written as they are."""
    return "'" + text if text.startswith(_FORMULA_START) else text


def escape_mathtext(label: str) -> str:
    """A plot label matplotlib shows literally: `$` escaped, so that `$x^2$` or an odd `$` in a
    file name is text, not mathtext (which would render TeX or fail to parse)."""
    return label.replace("$", "\\$")


def format_csv(columns: dict[str, dict], with_ci: bool = False) -> str:
    """Table 2 as CSV: one row per score, full-precision numbers; with intervals, two more
    columns per file (`NAME ci95 low`, `NAME ci95 high`)."""
    names = list(columns)
    header = ["metric"]
    for n in names:
        n = csv_cell(n)
        header += [n, f"{n} ci95 low", f"{n} ci95 high"] if with_ci else [n]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for key, label, _, is_category in table_rows(columns):
        row = [f"{CATEGORY_HEADER}: {label}" if is_category else label]
        for n in names:
            s = columns[n]
            row.append(_plain(s.get(key)))
            if with_ci:
                ci = _interval(s, key) or [None, None]
                row += [_plain(ci[0]), _plain(ci[1])]
        writer.writerow(row)
    return buffer.getvalue()


def _plain(x) -> str:
    return "" if x is None else f"{x:.6g}" if isinstance(x, float) else str(x)


def tex_escape(text: str) -> str:
    """Text safe inside a LaTeX table cell."""
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in text)


# A TeX cell's interval, in small type after the score.
_TEX_CI = r"{} {{\scriptsize[{}, {}]}}"


def format_latex(columns: dict[str, dict], with_ci: bool = False) -> str:
    """Table 2 as a booktabs `tabular` (needs `\\usepackage{booktabs}`)."""
    names = list(columns)
    lines = [
        r"\begin{tabular}{l" + "r" * len(names) + "}",
        r"\toprule",
        " & " + " & ".join(tex_escape(n) for n in names) + r" \\",
        r"\midrule",
    ]
    in_categories = False
    for key, label, fmt, is_category in table_rows(columns):
        if is_category and not in_categories:
            lines += [
                r"\midrule",
                rf"\multicolumn{{{len(names) + 1}}}{{l}}{{\textit{{{CATEGORY_HEADER}}}}} \\",
            ]
            in_categories = True
        # The only maths in a label: the answer length's |y|.
        name = tex_escape(label).replace("(|y|)", r"($|y|$)")
        name = r"\quad " + name if is_category else name
        cells = [score_cell(columns[n], key, fmt, with_ci, "--", _TEX_CI) for n in names]
        lines.append(f"{name} & " + " & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def write_tables(columns: dict[str, dict], out_dir: Path, with_ci: bool = False) -> list[Path]:
    """Writes table.md, table.csv and table.tex into `out_dir`; returns their paths."""
    paths = [Path(out_dir) / name for name in ("table.md", "table.csv", "table.tex")]
    for path, format_table in zip(paths, (format_markdown, format_csv, format_latex), strict=True):
        atomic_write_text(path, format_table(columns, with_ci))
    return paths
