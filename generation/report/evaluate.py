"""`ambigdocs evaluate`: score answered AmbigDocs examples with the paper's metrics.

    ambigdocs evaluate RESULTS [RESULTS ...] --output-dir DIR [--no-df1] [--qa-model ID]
        [--score-documents first5|shown|all] [--plot] [--labels-field FIELD]
        [--bootstrap N] [--bootstrap-seed S] [--table-ci] [--report]

RESULTS is the authors' results file (a JSON list of data-set rows, each with `gen_answer` and
`docs`, the documents shown) or the JSONL that `ambigdocs answer` writes (same fields); other
fields are ignored. One file writes DIR/per_example.jsonl and DIR/summary.json; several write one
subfolder each and a combined DIR/summary.json. A table like the paper's Table 2 and the category
distribution (Figure 4) are printed; `--plot` draws the distribution as a stacked bar chart.
The report steps (generation/report/outputs.py, docs/report.md) add intervals, slices and
provenance to each summary and write table.md/.csv/.tex, comparison.json/.md (several files)
and, with `--report`, report.html.

The lexical scores import nothing heavy (no torch, transformers or datasets), so they are
instant; Disambig-F1 loads the QA model only when asked.
"""

from __future__ import annotations

import argparse
import gc
import os
import shlex
import sys
from collections import Counter
from pathlib import Path

from generation.io.records import (
    atomic_write_binary,
    atomic_write_json,
    jsonl_bytes,
    read_records,
)
from generation.options import one_line
from generation.report.layout import CATEGORY_COLOURS, CATEGORY_NAMES, TABLE_ROWS
from generation.report.outputs import ReportOptions, annotate_summary, write_report_files
from generation.report.provenance import qa_model_record
from metric.ambigdocs_metric.disambig_f1 import DEFAULT_QA_MODEL
from metric.ambigdocs_metric.scoring import (
    CATEGORIES,
    ExampleScores,
    aggregate,
    score_parsed,
    validate_inputs,
)


def load_results(path: str | Path) -> list[dict]:
    """Reads answered examples: a JSON array or JSONL (`generation.io.records.read_records`).

    Raises:
        ValueError: malformed file, or a row without `gen_answer` (names the file and row).
    """
    if Path(path).is_dir():
        raise ValueError(f"{path}: a folder, not a results file (JSON or JSONL)")
    rows = read_records(path)
    for i, row in enumerate(rows):
        if "gen_answer" not in row:
            raise ValueError(f"{path}: row {i} (qid {row.get('qid')}) has no field 'gen_answer'")
    return rows


def _contexts(rows: list[dict]) -> list | None:
    """The shown documents per row, or None for every row when some row lacks them."""
    docs = [row.get("docs") for row in rows]
    return docs if all(d is not None for d in docs) else None


# Below this many examples, starting worker processes costs more than it saves.
MIN_EXAMPLES_PER_WORKER = 1000
_SHARED: tuple | None = None  # what forked workers read: inherited, never pickled


def _score_range(bounds: tuple[int, int]) -> list[ExampleScores]:
    predictions, references, contexts, score_documents = _SHARED
    a, b = bounds
    return score_parsed(
        predictions[a:b], references[a:b], contexts and contexts[a:b], score_documents
    )


def score_lexical(
    predictions: list[str],
    rows: list[dict],
    contexts: list | None,
    score_documents: str = "first5",
    workers: int = 1,
    unique_qids: bool = True,
) -> list[ExampleScores]:
    """Validates and scores every example; with `workers` > 1, in forked processes.

    The examples are shared with the workers by fork (copy-on-write), so only the small score
    tuples travel between processes. Where fork is unavailable, or the input is small, the
    scoring runs in this process. The result does not depend on `workers`.
    """
    global _SHARED
    references = validate_inputs(predictions, rows, contexts, unique_qids=unique_qids)
    n = len(references)
    workers = max(1, min(workers, n // MIN_EXAMPLES_PER_WORKER))
    import multiprocessing as mp

    _SHARED = (predictions, references, contexts, score_documents)
    try:
        if workers == 1 or "fork" not in mp.get_all_start_methods():
            return _score_range((0, n))
        step = -(-n // (4 * workers))
        with mp.get_context("fork").Pool(workers) as pool:
            parts = pool.map(_score_range, [(i, min(i + step, n)) for i in range(0, n, step)])
        return [s for part in parts for s in part]
    finally:
        _SHARED = None


def evaluate_rows(
    rows: list[dict], score_documents: str = "first5", workers: int = 1, unique_qids: bool = True
) -> tuple[list[dict], dict]:
    """The lexical scores of answered rows; returns (per-example records, summary).

    Args:
        rows: answered examples (`gen_answer`, data-set fields, optionally `docs`).
        score_documents: see `scoring.scored_documents`.
        workers: processes for the scores.
        unique_qids: refuse two rows with the same qid.
    """
    predictions = [row["gen_answer"] for row in rows]
    scores = score_lexical(
        predictions, rows, _contexts(rows), score_documents, workers, unique_qids
    )
    records = [
        {
            "qid": row.get("qid"),
            "answer_recall": s.answer_recall,
            "entity_recall": s.entity_recall,
            "entity_answer_recall": s.entity_answer_recall,
            "k_precision": s.k_precision,
            "answer_length": s.answer_length,
            "category": s.category,
        }
        for row, s in zip(rows, scores, strict=True)
    ]
    summary = aggregate(scores)
    summary["n"] = len(rows)
    return records, summary


def add_disambig_f1(
    rows: list[dict], records: list[dict], summary: dict, qa, score_documents: str = "first5"
) -> None:
    """Adds `disambig_f1` to each record and to the summary (the QA model runs batched)."""
    from metric.ambigdocs_metric.disambig_f1 import disambig_f1

    predictions = [row["gen_answer"] for row in rows]
    df1 = disambig_f1(predictions, rows, qa, _contexts(rows), score_documents, progress=True)
    for rec, value in zip(records, df1, strict=True):
        rec["disambig_f1"] = value
    values = [v for v in df1 if v is not None]
    n = summary.pop("n")  # keep `n` last
    summary["disambig_f1"] = sum(values) / len(values) if values else 0.0
    summary["n"] = n


def load_qa_model(name: str, **options):
    """Loads the QA model (options: QAExtractor's), or prints one line why not and returns None."""
    return try_load_qa_model(name, **options)[0]


def try_load_qa_model(name: str, **options):
    """(the QA model, None), or (None, why not) after printing why in one line when torch and
    transformers are not installed (the `df1` extra), or when the Hub cannot be reached and the
    model is not in the local cache.

    Raises:
        QAModelError: (an OSError) the model fails to load for another reason (a missing
            folder, an unknown id, not a question-answering model): an error, not a skip.
    """
    from generation.extras import MissingExtraError, require
    from metric.ambigdocs_metric.qa_loading import QAModelError, load_qa_extractor

    try:
        require("df1", what="the QA model")
        return load_qa_extractor(name, **options), None
    except MissingExtraError as err:
        print(f"Disambig-F1 skipped: {err}", file=sys.stderr)
        return None, str(err)
    except QAModelError as err:
        if not err.unreachable:
            raise
        print(
            f"Disambig-F1 skipped: the QA model {name!r} is not in the local cache and the Hub "
            "cannot be reached. Use --qa-model PATH for a local copy, or --no-df1.",
            file=sys.stderr,
        )
        return None, "the Hub cannot be reached and the QA model is not in the local cache"


# --- output ----------------------------------------------------------------------------------------


def _write_jsonl(path: Path, records: list[dict]) -> None:
    atomic_write_binary(path, lambda f: f.write(jsonl_bytes(records)))  # exact beyond 64 bits


def format_table(columns: dict[str, dict]) -> str:
    """Table 2 of the paper: one row per metric, one column per results file."""
    names = list(columns)
    width = max([len(label) for _, label, _ in TABLE_ROWS] + [len("Answer category")])
    colw = [max(len(n), 8) for n in names]
    lines = [" " * width + "  " + "  ".join(n.rjust(w) for n, w in zip(names, colw, strict=True))]
    for key, label, fmt in TABLE_ROWS:
        if not any(key in s for s in columns.values()):
            continue
        cells = [fmt.format(s[key]) if key in s else "-" for s in columns.values()]
        lines.append(
            label.ljust(width)
            + "  "
            + "  ".join(c.rjust(w) for c, w in zip(cells, colw, strict=True))
        )
    lines.append("")
    lines.append("Answer category".ljust(width))
    for key in CATEGORIES:
        cells = [f"{s[key]:.3f}" for s in columns.values()]
        lines.append(
            f"  {CATEGORY_NAMES[key]}".ljust(width)
            + "  "
            + "  ".join(c.rjust(w) for c, w in zip(cells, colw, strict=True))
        )
    return "\n".join(lines)


def format_agreement(categories: list[str | None], labels: list) -> str:
    """Confusion matrix (rows: labels, columns: automatic categories), accuracy and Cohen's kappa,
    like the paper's Figure 5."""
    pairs = [
        (str(lab), cat) for lab, cat in zip(labels, categories, strict=True) if lab is not None
    ]
    if not pairs:
        return "no labels found"
    counts = Counter(pairs)
    order = list(CATEGORIES)
    order += sorted({lab for lab, _ in pairs} - set(order))
    n = len(pairs)
    agree = sum(1 for lab, cat in pairs if lab == cat)
    p_o = agree / n
    lab_tot = Counter(lab for lab, _ in pairs)
    cat_tot = Counter(cat for _, cat in pairs)
    p_e = sum(lab_tot[c] * cat_tot[c] for c in order) / (n * n)
    kappa = (p_o - p_e) / (1 - p_e) if p_e < 1 else 1.0
    w = max(len(c) for c in order) + 1
    lines = ["label \\ automatic".ljust(w + 8) + "".join(c[:9].rjust(10) for c in order)]
    for lab in order:
        if lab_tot[lab]:
            lines.append(lab.ljust(w + 8) + "".join(str(counts[(lab, c)]).rjust(10) for c in order))
    lines.append(f"agreement {agree}/{n} = {p_o:.3f}, Cohen's kappa {kappa:.3f}")
    return "\n".join(lines)


def format_examples(rows: list[dict], records: list[dict], labels_field: str | None = None) -> str:
    """One line per example: qid, category (and the label, marked when it differs), answer."""
    head = f"{'qid':>8}  {'category':10}" + (f"  {labels_field:10}" if labels_field else "")
    lines = [head + "  answer"]
    for row, rec in zip(rows, records, strict=True):
        line = f"{str(rec['qid']):>8}  {str(rec['category']):10}"
        if labels_field:
            label = row.get(labels_field)
            mark = "" if label is None or label == rec["category"] else " *"
            line += f"  {str(label) + mark:10}"
        answer = " ".join(row["gen_answer"].split())
        lines.append(f"{line}  {answer[:70] + '...' if len(answer) > 70 else answer}")
    if labels_field:
        lines.append(f"(* the automatic category differs from {labels_field!r})")
    return "\n".join(lines)


def plot_categories(columns: dict[str, dict], path: Path) -> None:
    """Stacked bars of the category distribution per results file (the paper's Figure 4)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from generation.report.tables import escape_mathtext

    names = list(columns)
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(names), 4.2))
    bottom = [0.0] * len(names)
    for key in CATEGORIES:
        colour = CATEGORY_COLOURS[key]
        values = [100 * columns[n][key] for n in names]
        bars = ax.bar(
            [escape_mathtext(n) for n in names],  # a `$` in a name is shown, not mathtext
            values, bottom=bottom, color=colour, label=CATEGORY_NAMES[key], width=0.6,
        )  # fmt: skip
        for bar, v, b in zip(bars, values, bottom, strict=True):
            if v >= 4:
                ax.text(
                    bar.get_x() + bar.get_width() / 2,
                    b + v / 2,
                    f"{v:.0f}",
                    ha="center",
                    va="center",
                    fontsize=8,
                )
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel("% of answers")
    ax.set_ylim(0, 100)
    ax.set_title("Answer categories")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def _column_names(paths: list[Path]) -> list[str]:
    """Short unique names for the results files (their stems, made unique)."""
    names, seen = [], Counter()
    for p in paths:
        stem = p.name.removesuffix(".jsonl").removesuffix(".json")
        seen[stem] += 1
        names.append(stem if seen[stem] == 1 else f"{stem}-{seen[stem]}")
    return names


# --- command line ----------------------------------------------------------------------------------


def check_extra_args(extra: list[str], flag: str) -> None:
    """Raises ValueError when `extra`, options for a later `ambigdocs evaluate` run (e.g.
    `ambigdocs answer --evaluate-args`), would not parse: found before hours of answering, not
    after.
    """
    parser = build_parser()

    def fail(message: str):
        raise ValueError(f"{flag} {shlex.join(extra)!r}: {message}")

    parser.error = fail
    try:
        args = parser.parse_args(["RESULTS", "--output-dir", "DIR", *extra])
    except SystemExit:  # --help would end the run there
        raise ValueError(f"{flag} {shlex.join(extra)!r}: not an option to pass on") from None
    try:
        _check_numbers(args)
    except ValueError as err:
        fail(str(err))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ambigdocs evaluate",
        description="Score answered AmbigDocs examples (answer/entity/entity-answer recall, "
        "categories, K-Precision, Disambig-F1).",
    )
    p.add_argument("results", nargs="+", type=Path, help="results files (JSON list or JSONL)")
    p.add_argument("--output-dir", type=Path, required=True, help="where to write the scores")
    p.add_argument("--no-df1", action="store_true", help="skip Disambig-F1 (no QA model)")
    p.add_argument(
        "--qa-model",
        help=f"QA model for Disambig-F1 (path or Hub id; default {DEFAULT_QA_MODEL}, skipped "
        "with a note when the Hub cannot be reached and it is not cached; a model named here "
        "that cannot be loaded, or that is not a question-answering model, is an error)",
    )
    p.add_argument(
        "--qa-batch-size",
        type=int,
        default=64,
        help="at most this many windows per QA forward pass",
    )
    p.add_argument(
        "--qa-batch-tokens",
        type=int,
        default=8192,
        help="at most this many padded tokens per QA forward pass (default 8192)",
    )
    p.add_argument(
        "--qa-padding",
        choices=["longest", "max_length"],
        default="longest",
        help="pad each batch of similar-length windows to its longest (default) or every window "
        "to 384 tokens as run_qa did (same spans, slower)",
    )
    p.add_argument(
        "--qa-dtype",
        choices=["float32", "bfloat16", "float16"],
        default="float32",
        help="QA model precision; float32 (default) as the authors ran it, the others can change spans",
    )
    p.add_argument(
        "--score-documents",
        choices=["first5", "shown", "all"],
        default="first5",
        help="gold documents scored: first5 (the authors), shown, or all",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=min(os.cpu_count() or 1, 8),
        help="processes for the lexical scores (default: the CPU count, at most 8)",
    )
    p.add_argument("--plot", action="store_true", help="write categories.png (like Figure 4)")
    p.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        metavar="N",
        help="bootstrap resamples for the 95%% intervals and the comparison (0: none)",
    )
    p.add_argument("--bootstrap-seed", type=int, default=0, help="seed of the resampling")
    p.add_argument(
        "--table-ci", action="store_true", help="put the intervals in table.md/.csv/.tex"
    )
    p.add_argument(
        "--report",
        action="store_true",
        help="write report.html: summary, comparison, slices and a per-example viewer",
    )
    p.add_argument(
        "--show-examples", action="store_true", help="print every example's category and answer"
    )
    p.add_argument(
        "--allow-duplicate-qids",
        action="store_true",
        help="score rows that share a qid (several answers to one question, as in the bundled "
        "sample); otherwise a repeated qid is an error",
    )
    p.add_argument(
        "--labels-field",
        help="a field of the rows holding reference categories (e.g. human labels): prints the "
        "confusion matrix and Cohen's kappa against the automatic categories (Figure 5)",
    )
    return p


def report_options(args: argparse.Namespace) -> ReportOptions:
    """The report steps' options from the command line."""
    return ReportOptions(
        score_documents=args.score_documents,
        bootstrap=args.bootstrap,
        seed=args.bootstrap_seed,
        table_ci=args.table_ci,
        html=args.report,
    )


def _qa_options(args: argparse.Namespace) -> dict:
    return {
        "batch_size": args.qa_batch_size,
        "batch_tokens": args.qa_batch_tokens,
        "padding": args.qa_padding,
        "dtype": args.qa_dtype,
    }


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        _check_arguments(args)
        loaded = [load_results(path) for path in args.results]
        _check_labels_field(args, loaded)
        # This process keeps the rows to the end: spare every later collection the walk over them.
        gc.freeze()
        # Lexical scores first, for every file: forking workers is safe before torch is loaded.
        scored = [_score_file(p, rows, args) for p, rows in zip(args.results, loaded, strict=True)]
        qa, qa_absent = _qa_model(args)
        columns = _write_scores(args, loaded, scored, qa, qa_absent)
        written = write_report_files(
            args.output_dir, columns, _systems(args, loaded, scored), report_options(args)
        )
    except (OSError, ValueError) as err:
        print(f"ambigdocs evaluate: error: {one_line(err)}", file=sys.stderr)
        return 2
    _print_results(args, columns, written)
    return 0


def _check_arguments(args: argparse.Namespace) -> None:
    """Bad options and an unusable --output-dir, before any work."""
    _check_numbers(args)
    for folder in (args.output_dir, *args.output_dir.parents):
        if folder.is_dir():
            break
        if folder.exists():
            if folder == args.output_dir:
                raise ValueError(f"--output-dir {folder} is a file, not a folder")
            raise ValueError(f"--output-dir {args.output_dir}: {folder} is a file, not a folder")
    args.output_dir.mkdir(parents=True, exist_ok=True)  # OSError: cannot be created


def _check_numbers(args: argparse.Namespace) -> None:
    """Numbers out of range (also checked for `answer --evaluate-args`, before answering)."""
    if args.bootstrap < 0:
        raise ValueError("--bootstrap must be 0 or more")
    for flag, value, low in (
        ("--bootstrap-seed", args.bootstrap_seed, 0),  # numpy's own error names no flag
        ("--workers", args.workers, 1),
        ("--qa-batch-size", args.qa_batch_size, 1),
        ("--qa-batch-tokens", args.qa_batch_tokens, 1),
    ):
        if value < low:
            raise ValueError(f"{flag} must be {low} or more, got {value}")


def _check_labels_field(args: argparse.Namespace, loaded: list[list[dict]]) -> None:
    """A --labels-field that no row holds is a typo, not a result: refuse it before scoring.
    So is a label that is not a category name: it could never agree, and would only lower the
    agreement and kappa printed."""
    field = args.labels_field
    if not field:
        return
    if not any(row.get(field) is not None for rows in loaded for row in rows):
        files = ", ".join(str(p) for p in args.results)
        raise ValueError(f"--labels-field {field!r}: no row of {files} has that field")
    for path, rows in zip(args.results, loaded, strict=True):
        for i, row in enumerate(rows):
            label = row.get(field)
            if label is not None and label not in CATEGORIES:
                raise ValueError(
                    f"{path}: row {i} (qid {row.get('qid')}): --labels-field {field!r} holds "
                    f"{label!r}, not a category ({', '.join(CATEGORIES)})"
                )


def _score_file(path: Path, rows: list[dict], args: argparse.Namespace) -> tuple[list, dict]:
    try:
        return evaluate_rows(
            rows, args.score_documents, args.workers, not args.allow_duplicate_qids
        )
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def _qa_model(args: argparse.Namespace):
    """(QA model, None) or (None, why it is absent). The default model may be absent (one line
    says why); a model the user named must load and be a question-answering model."""
    if args.no_df1:
        return None, "--no-df1 was given"
    if args.qa_model is None:
        return try_load_qa_model(DEFAULT_QA_MODEL, **_qa_options(args))
    from generation.extras import require
    from metric.ambigdocs_metric.qa_loading import load_qa_extractor

    # A model the user named must load: QAModelError (an OSError) or MissingExtraError (a
    # ValueError) ends the command in one line.
    require("df1", what=f"--qa-model {args.qa_model}")
    return load_qa_extractor(args.qa_model, **_qa_options(args)), None


def _write_scores(args, loaded, scored, qa, qa_absent) -> dict[str, dict]:
    """Disambig-F1 (when a QA model is there), intervals and provenance; writes each file's
    per_example.jsonl and summary.json; returns the summaries by column name."""
    qa_record = qa_model_record(args.qa_model or DEFAULT_QA_MODEL, qa, qa_absent)
    options = report_options(args)
    single = len(args.results) == 1
    columns: dict[str, dict] = {}
    names = _column_names(args.results)
    for name, path, rows, (records, summary) in zip(
        names, args.results, loaded, scored, strict=True
    ):
        if qa is not None:
            add_disambig_f1(rows, records, summary, qa, args.score_documents)
        annotate_summary(summary, rows, records, path, qa_record, options)
        out = args.output_dir if single else args.output_dir / name
        _write_jsonl(out / "per_example.jsonl", records)
        atomic_write_json(out / "summary.json", summary)
        columns[name] = summary
        if args.show_examples:
            print(f"\n{name}:")
            print(format_examples(rows, records, args.labels_field))
        if args.labels_field:
            print(f"\n{name}: automatic categories against {args.labels_field!r}")
            labels = [row.get(args.labels_field) for row in rows]
            print(format_agreement([r["category"] for r in records], labels))
    if not single:
        atomic_write_json(args.output_dir / "summary.json", columns)
    return columns


def _systems(args, loaded, scored) -> dict[str, tuple[list[dict], list[dict]]]:
    names = _column_names(args.results)
    return {n: (rows, s[0]) for n, rows, s in zip(names, loaded, scored, strict=True)}


def _print_results(args: argparse.Namespace, columns: dict[str, dict], written) -> None:
    print()
    print(format_table(columns))
    if args.plot:
        png = args.output_dir / "categories.png"
        plot_categories(columns, png)
        print(f"\nwrote {png}")
    print("wrote " + ", ".join(str(p) for p in written))
    print(f"\nscores written to {args.output_dir}/")


if __name__ == "__main__":
    sys.exit(main())
