"""`ambigdocs evaluate`: score answered AmbigDocs examples with the paper's metrics, print Table 2
and the category distribution, and write the files docs/report.md lists.

The lexical scores import nothing heavy (no torch, transformers or datasets), so they are
instant; Disambig-F1 loads the QA model only when asked.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import sys
from collections import Counter
from pathlib import Path

from generation.io.data_sources import load_split_rows
from generation.io.outputs import unique_names
from generation.io.records import (
    atomic_write_binary,
    atomic_write_json,
    jsonl_bytes,
)
from generation.options import run_command
from generation.report.agreement import format_agreement, label_agreement
from generation.report.bootstrap import small_sample_note
from generation.report.layout import (
    CATEGORY_COLOURS,
    CATEGORY_NAMES,
    NO_ANSWER_RULE,
    OUTPUT_FILES,
    TABLE_ROWS,
)
from generation.report.options import (
    DESCRIPTION,
    PROG,
    EvaluateOptions,
    check_extra_args,
)
from generation.report.outputs import (
    annotate_summary,
    evaluation_folder,
    write_report_files,
)
from generation.report.predictions import join_predictions, read_predictions
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
    """The rows of a results file of whole rows with their answers (the authors' format,
    `ambigdocs answer`'s JSONL, lm-eval samples), repeated qids allowed; for `{qid, answer}`
    predictions, see `generation.report.predictions.join_predictions`.

    Raises:
        ValueError: a malformed file, or a row without an answer (names the file and row).
    """
    return join_predictions(path, allow_duplicate_qids=True)


def _contexts(rows: list[dict]) -> list | None:
    """The shown documents per row (None for a row without them), or None when no row has any.
    K-Precision is scored on the rows that have them (`scoring.aggregate`)."""
    docs = [row.get("docs") for row in rows]
    return docs if any(d is not None for d in docs) else None


# Below this many examples, starting worker processes costs more than it saves.
MIN_EXAMPLES_PER_WORKER = 1000
_SHARED: tuple | None = None  # what forked workers read: inherited, never pickled


def _score_range(bounds: tuple[int, int]) -> list[ExampleScores]:
    predictions, references, contexts, score_documents = _SHARED
    a, b = bounds
    return score_parsed(
        predictions[a:b], references[a:b], contexts and contexts[a:b], score_documents
    )


def evaluate_rows(
    rows: list[dict],
    score_documents: str = "first5",
    workers: int = 1,
    unique_qids: bool = True,
    system: str | None = None,
) -> tuple[list[dict], dict]:
    """Validates and scores answered rows; returns (per-example records, summary).

    With `workers` > 1 (and enough rows), the scores are computed in forked processes that
    share the examples by fork (copy-on-write), so only the small score tuples travel; where
    fork is unavailable this process scores them. The result does not depend on `workers`.

    Args:
        rows: answered examples (`gen_answer`, data-set fields, optionally `docs`).
        score_documents: see `scoring.scored_documents`.
        unique_qids: refuse two rows with the same qid.
        system: the name of the system that answered (kept in each record).
    """
    global _SHARED
    predictions = [row["gen_answer"] for row in rows]
    contexts = _contexts(rows)
    references = validate_inputs(predictions, rows, contexts, unique_qids=unique_qids)
    n = len(references)
    workers = max(1, min(workers, n // MIN_EXAMPLES_PER_WORKER))
    _SHARED = (predictions, references, contexts, score_documents)
    try:
        if workers == 1 or "fork" not in mp.get_all_start_methods():
            scores = _score_range((0, n))
        else:
            step = -(-n // (4 * workers))
            with mp.get_context("fork").Pool(workers) as pool:
                parts = pool.map(_score_range, [(i, min(i + step, n)) for i in range(0, n, step)])
            scores = [s for part in parts for s in part]
    finally:
        _SHARED = None
    records = [
        {
            "index": i,
            "qid": row.get("qid"),
            "system": system,
            "answer_recall": s.answer_recall,
            "entity_recall": s.entity_recall,
            "entity_answer_recall": s.entity_answer_recall,
            "k_precision": s.k_precision,
            "answer_length": s.answer_length,
            "category": s.category,
        }
        for i, (row, s) in enumerate(zip(rows, scores, strict=True))
    ]
    summary = aggregate(scores)  # K-Precision over the rows with `docs`, and how many
    summary["n"] = len(rows)
    return records, summary


def summary_notes(summary: dict, bootstrap: int) -> list[str]:
    """What changes how the numbers read, in words (summary.json, the console, the page)."""
    n = summary["n"]
    notes = []
    with_docs = summary.get("k_precision_n", 0)
    if with_docs == 0:
        notes.append("K-Precision left out: no row has its shown documents ('docs').")
    elif with_docs < n:
        notes.append(
            f"K-Precision is over the {with_docs} of {n} rows with shown documents ('docs'); "
            f"{n - with_docs} have none."
        )
    notes.append(NO_ANSWER_RULE)
    small = small_sample_note(n, "intervals") if bootstrap > 0 else None
    if small:
        notes.append(small)
    return notes


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


# --- output ----------------------------------------------------------------------------------------


def format_table(columns: dict[str, dict]) -> str:
    """Table 2 of the paper: one row per metric, one column per results file."""
    names = list(columns)
    width = max([len(label) for _, label, _ in TABLE_ROWS] + [len("Answer category")])
    colw = [max(len(n), 8) for n in names]

    def row(label: str, cells: list[str]) -> str:
        return f"{label.ljust(width)}  " + "  ".join(
            c.rjust(w) for c, w in zip(cells, colw, strict=True)
        )

    lines = [row("", names)]
    for key, label, fmt in TABLE_ROWS:
        if any(key in s for s in columns.values()):
            lines.append(
                row(label, [fmt.format(s[key]) if key in s else "-" for s in columns.values()])
            )
    lines += ["", "Answer category".ljust(width)]
    for key in CATEGORIES:
        lines.append(row(f"  {CATEGORY_NAMES[key]}", [f"{s[key]:.3f}" for s in columns.values()]))
    return "\n".join(lines)


def format_examples(rows: list[dict], records: list[dict], labels_field: str | None = None) -> str:
    """One line per example: qid, category (and the label, marked when it differs), answer."""
    head = f"{'qid':>8}  {'category':10}" + (f"  {labels_field:10}" if labels_field else "")
    lines = [head + "  answer"]
    differs = False
    for row, rec in zip(rows, records, strict=True):
        line = f"{str(rec['qid']):>8}  {str(rec['category']):10}"
        if labels_field:
            label = row.get(labels_field)
            mark = "" if label is None or label == rec["category"] else " *"
            differs = differs or bool(mark)
            line += f"  {str(label) + mark:10}"
        answer = " ".join(row["gen_answer"].split())
        lines.append(f"{line}  {answer[:70] + '...' if len(answer) > 70 else answer}")
    if differs:
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
        # Each share of 4% or more written in the middle of its segment.
        ax.bar_label(
            bars, [f"{v:.0f}" if v >= 4 else "" for v in values], label_type="center", fontsize=8
        )
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_ylabel("% of answers")
    ax.set_ylim(0, 100)
    ax.set_title("Answer categories")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def system_names(paths: list[Path], given: list[str] | None = None) -> list[str]:
    """The name of each results file in every table, the plot, the page and the comparison.

    Names given with --name are used as they are (one per file, all different). Otherwise a
    file's stem (`mistral.gold`), with as many of its folders in front as it takes to tell files
    of the same stem apart (`runs-a/answers`, `runs-b/answers`); the same file given twice is
    numbered (`answers (2)`).

    Raises:
        ValueError: --name given a number of times other than the number of files, or twice
            the same name, an empty one, or one with a line break or control character.
    """
    if given:
        if len(given) != len(paths):
            raise ValueError(
                f"--name was given {len(given)} times for {len(paths)} results files: give one "
                "name per file, in the same order"
            )
        if any(not n.strip() for n in given):
            raise ValueError("--name must not be empty")
        broken = next((n for n in given if not n.isprintable()), None)
        if broken is not None:  # a line break would split the printed table's header
            raise ValueError(f"--name {broken!r}: a name must be one line of printable text")
        repeated = [n for n, c in Counter(given).items() if c > 1]
        if repeated:
            raise ValueError(f"--name {repeated[0]!r} names two files: give each its own")
        return list(given)
    # A stem's line breaks and other control characters are folded to spaces: names are
    # printed in tables one line each.
    parts = [
        tuple(
            _printable(x)
            for x in (*p.parent.parts, p.name.removesuffix(".jsonl").removesuffix(".json"))
        )
        for p in paths
    ]
    distinct = list(dict.fromkeys(parts))  # the same file twice is told apart by a number
    names = ["/".join(p[-1:]) for p in distinct]
    for depth in range(2, max(map(len, distinct)) + 1):
        if len(set(names)) == len(names):
            break
        names = [
            "/".join(p[-depth:]) if names.count(n) > 1 else n
            for p, n in zip(distinct, names, strict=True)
        ]
    by_parts = dict(zip(distinct, names, strict=True))
    seen: Counter = Counter()
    out = []
    for name in (by_parts[p] for p in parts):
        seen[name] += 1
        out.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return out


def _printable(text: str) -> str:
    return " ".join("".join(c if c.isprintable() else " " for c in text).split()) or "_"


def folder_names(names: list[str]) -> list[str]:
    """Each system's subfolder of --output-dir: its name made a safe, unique path component
    (`generation.io.outputs.unique_names`), never one of the command's own files."""
    return unique_names([name.replace("/", "_") for name in names], reserved=OUTPUT_FILES)


# --- command line ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    return run_command(PROG, DESCRIPTION, [EvaluateOptions], run, argv)


def run(args: EvaluateOptions) -> int:
    """The command: read, join, score, write, print (errors: the shared boundary's one line).

    Everything runs under --output-dir's lock and is written into a staging folder that
    replaces it as a whole (`report.outputs.evaluation_folder`): a second run on the folder is
    refused at once, and after any run the folder holds one run's files."""
    names = system_names(args.paths, args.name)
    with evaluation_folder(args.out) as staging:
        loaded = load_inputs(args)
        _check_labels_field(args, loaded)
        # This process keeps the rows to the end: spare every later collection the walk.
        gc.freeze()
        # Lexical scores first, for every file: forking workers is safe before torch loads.
        scored = [
            _score_file(p, rows, args, name)
            for p, rows, name in zip(args.paths, loaded, names, strict=True)
        ]
        qa, qa_absent = _qa_model(args)
        columns = _write_scores(args, staging, names, loaded, scored, qa, qa_absent)
        systems = {n: (rows, s[0]) for n, rows, s in zip(names, loaded, scored, strict=True)}
        written = write_report_files(staging, columns, systems, args)
        if args.plot:
            written.append(staging / "categories.png")
            plot_categories(columns, written[-1])
        # Named where they are after the swap, not in the staging folder.
        written = [args.out / p.relative_to(staging) for p in written]
    print("\n" + format_table(columns))
    notes = dict.fromkeys(
        f"{name}: {note}" if len(columns) > 1 and note != NO_ANSWER_RULE else note
        for name, s in columns.items()
        for note in s["notes"]
    )
    print("\n" + "\n".join(f"Note: {note}" for note in notes))
    print("wrote " + ", ".join(str(p) for p in written))
    print(f"\nscores written to {args.out}/")
    return 0


def load_inputs(args: EvaluateOptions) -> list[list[dict]]:
    """Each results file's rows, joined with the data set when one is named
    (`generation.report.predictions`). The files are read first, so that a bad file is
    reported before a data set is loaded."""
    records = [read_predictions(path) for path in args.paths]
    dataset = None
    if args.data_dir or args.config or args.dataset:
        dataset = load_split_rows(
            data_dir=args.data_dir,
            config=args.config,
            dataset=args.dataset,
            split=args.split or "test",
        )
    return [
        join_predictions(
            recs,
            dataset,
            answer_field=args.answer_field,
            subset=args.subset,
            allow_duplicate_qids=args.allow_duplicate_qids,
            source=str(path),
        )
        for path, recs in zip(args.paths, records, strict=True)
    ]


def _check_labels_field(args: EvaluateOptions, loaded: list[list[dict]]) -> None:
    """A --labels-field that no row holds is a typo, not a result: refuse it before scoring.
    So is a label that is not a category name: it could never agree, and would only lower the
    agreement and kappa printed."""
    field = args.labels_field
    if not field:
        return
    if not any(row.get(field) is not None for rows in loaded for row in rows):
        files = ", ".join(args.results)
        raise ValueError(f"--labels-field {field!r}: no row of {files} has that field")
    for path, rows in zip(args.paths, loaded, strict=True):
        for i, row in enumerate(rows):
            label = row.get(field)
            if label is not None and label not in CATEGORIES:
                raise ValueError(
                    f"{path}: row {i} (qid {row.get('qid')}): --labels-field {field!r} holds "
                    f"{label!r}, not a category ({', '.join(CATEGORIES)})"
                )


def _score_file(path: Path, rows: list[dict], args: EvaluateOptions, name: str):
    try:
        return evaluate_rows(
            rows, args.score_documents, args.workers, not args.allow_duplicate_qids, name
        )
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def _qa_model(args: EvaluateOptions):
    """(QA model, None) or (None, why it is absent). The default model may be absent, one line
    saying why (torch and transformers, the `df1` extra, are not installed, or the Hub cannot be
    reached and the model is not in the local cache); a model the user named must load and be
    a question-answering model: QAModelError (an OSError) or MissingExtraError (a ValueError)
    ends the command in one line."""
    if not args.df1:
        return None, "--no-df1 was given"
    from generation.extras import MissingExtraError, require
    from metric.ambigdocs_metric.qa_loading import QAModelError, load_qa_extractor

    options = {
        k: getattr(args, f"qa_{k}") for k in ("batch_size", "batch_tokens", "padding", "dtype")
    }
    if args.qa_model is not None:
        require("df1", what=f"--qa-model {args.qa_model}")
        return load_qa_extractor(args.qa_model, **options), None
    try:
        require("df1", what="the QA model")
        return load_qa_extractor(DEFAULT_QA_MODEL, **options), None
    except MissingExtraError as err:
        print(f"Disambig-F1 skipped: {err}", file=sys.stderr)
        return None, str(err)
    except QAModelError as err:
        if not err.unreachable:
            raise
        print(
            f"Disambig-F1 skipped: the QA model {DEFAULT_QA_MODEL!r} is not in the local cache "
            "and the Hub cannot be reached. Use --qa-model PATH for a local copy, or --no-df1.",
            file=sys.stderr,
        )
        return None, "the Hub cannot be reached and the QA model is not in the local cache"


def _write_scores(args, out_dir, names, loaded, scored, qa, qa_absent) -> dict[str, dict]:
    """Disambig-F1 (when a QA model is there), notes, label agreement, intervals and
    provenance; writes each file's per_example.jsonl and summary.json; returns the summaries
    by system name."""
    qa_record = qa_model_record(args.qa_model or DEFAULT_QA_MODEL, qa, qa_absent)
    single = len(args.results) == 1
    columns: dict[str, dict] = {}
    folders = folder_names(names)
    for name, folder, path, rows, (records, summary) in zip(
        names, folders, args.paths, loaded, scored, strict=True
    ):
        if qa is not None:
            add_disambig_f1(rows, records, summary, qa, args.score_documents)
        summary["system"] = name
        summary["notes"] = summary_notes(summary, args.bootstrap)
        if args.labels_field:
            labels = [row.get(args.labels_field) for row in rows]
            categories = [r["category"] for r in records]
            summary["labels"] = label_agreement(categories, labels, args.labels_field)
        annotate_summary(summary, rows, records, path, qa_record, args)
        out = out_dir if single else out_dir / folder
        answered = [
            {**r, "answer": row["gen_answer"]} for row, r in zip(rows, records, strict=True)
        ]
        lines = jsonl_bytes(answered)  # exact beyond 64 bits
        atomic_write_binary(out / "per_example.jsonl", lambda f, lines=lines: f.write(lines))
        atomic_write_json(out / "summary.json", summary)
        columns[name] = summary
        if args.show_examples:
            print(f"\n{name}:")
            print(format_examples(rows, records, args.labels_field))
        if args.labels_field:
            print(f"\n{name}: automatic categories against {args.labels_field!r}")
            print(format_agreement(summary["labels"]))
    if not single:
        atomic_write_json(out_dir / "summary.json", columns)
    return columns


# `ambigdocs answer --evaluate-args` checks its options here, before it answers.
__all__ = ["check_extra_args", "evaluate_rows", "join_predictions", "load_results", "main", "run"]

if __name__ == "__main__":
    sys.exit(main())
