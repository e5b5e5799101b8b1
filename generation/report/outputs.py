"""The report steps of `ambigdocs evaluate` after scoring: intervals, slices and provenance in
each summary; then the tables, the paired comparison and `report.html`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from generation.io.outputs import check_replaceable, output_lock, replace_folder
from generation.io.records import atomic_write_json, atomic_write_text
from generation.report.bootstrap import LEVEL, bootstrap_ci, summary_keys
from generation.report.layout import OUTPUT_FILES
from generation.report.provenance import answer_run_settings, build_provenance
from generation.report.slices import compute_slices
from generation.report.tables import write_tables

if TYPE_CHECKING:
    from generation.report.options import EvaluateOptions

# A folder holding anything but these (and system subfolders of them) is the user's: never
# replaced.
EVALUATE_FILES = frozenset(OUTPUT_FILES)


def _evaluate_entry(path: Path) -> bool:
    return path.name in EVALUATE_FILES or (
        path.is_dir()
        and not path.is_symlink()
        and all(c.name in EVALUATE_FILES for c in path.iterdir())
    )


@contextlib.contextmanager
def evaluation_folder(out_dir: Path) -> Iterator[Path]:
    """The one write path of `ambigdocs evaluate`: yields the folder to write every output in.

    Holds the lock of `out_dir` (a second run on it is refused in one line) and writes into a
    staging folder that replaces `out_dir` as a whole when the block ends normally: the folder
    then holds exactly this run's files (no earlier report.html beside a new summary); after a
    failure it keeps the previous run's, untouched. Messages should name `out_dir`, not the
    staging folder.

    Raises:
        ValueError: `out_dir` is a link or a file, or holds files evaluate does not write.
        OutputBusy: another run is writing `out_dir`.
    """
    what = f"--output-dir {out_dir}"
    check_replaceable(out_dir, _evaluate_entry, what)  # before the lock file is made beside it
    with output_lock(out_dir, what), replace_folder(out_dir, _evaluate_entry, what) as staging:
        yield staging


def annotate_summary(
    summary: dict,
    rows: list[dict],
    records: list[dict],
    results: Path,
    qa_model: dict,
    options: EvaluateOptions,
) -> dict:
    """Adds `ci95`, `slices` and `provenance` to one file's summary (in place) and returns it.

    Raises:
        ValueError: a malformed meta file beside the results file.
    """
    answer_run = answer_run_settings(results)
    seed = options.bootstrap_seed
    summary["ci95"] = bootstrap_ci(records, summary_keys(summary), options.bootstrap, seed)
    run_setting = answer_run.get("setting") if answer_run else None
    summary["slices"] = compute_slices(rows, records, run_setting)
    bootstrap = {
        "resamples": options.bootstrap,
        "seed": seed,
        "level": LEVEL,
        "method": "percentile bootstrap over examples",
    }
    summary["provenance"] = build_provenance(
        results, options.score_documents, qa_model, bootstrap, answer_run
    )
    return summary


def write_report_files(
    out_dir: Path,
    columns: dict[str, dict],
    systems: dict[str, tuple[list[dict], list[dict]]],
    options: EvaluateOptions,
) -> list[Path]:
    """Writes the tables, the comparison (two or more files) and, if asked, report.html, from
    the annotated summaries {name: summary} and {name: (rows, per-example records)}; returns
    the paths written.

    Raises:
        ValueError: the files cannot be compared (missing or repeated qids).
    """
    paths = write_tables(columns, out_dir, options.table_ci)
    comparison = None
    if len(systems) > 1:
        from generation.report.compare import compare_files, format_comparison_markdown

        records = {name: recs for name, (_, recs) in systems.items()}
        comparison = compare_files(records, options.bootstrap, options.bootstrap_seed)
        atomic_write_json(out_dir / "comparison.json", comparison)
        atomic_write_text(out_dir / "comparison.md", format_comparison_markdown(comparison))
        paths += [out_dir / "comparison.json", out_dir / "comparison.md"]
    if options.report:
        from generation.report.html import render_report

        page = render_report(
            columns=columns,
            systems=systems,
            comparison=comparison,
            slices={n: s["slices"] for n, s in columns.items()},
            provenance={n: s["provenance"] for n, s in columns.items()},
            score_documents=options.score_documents,
        )
        atomic_write_text(out_dir / "report.html", page)
        paths.append(out_dir / "report.html")
    return paths
