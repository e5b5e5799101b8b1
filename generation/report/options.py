"""The options of `ambigdocs evaluate`, parsed by the shared option parser
(`generation.options`), and their check for `ambigdocs answer --evaluate-args`."""

from __future__ import annotations

import dataclasses
import os
import shlex
from pathlib import Path
from typing import Literal

from generation.options import option, parse_argv
from generation.report.bootstrap import MAX_RESAMPLES
from metric.ambigdocs_metric.disambig_f1 import DEFAULT_QA_MODEL

DESCRIPTION = (
    "Score answered AmbigDocs examples (answer/entity/entity-answer recall, categories, "
    "K-Precision, Disambig-F1)."
)
PROG = "ambigdocs evaluate"


@dataclasses.dataclass
class EvaluateOptions:
    """The options of `ambigdocs evaluate` (parsed by `generation.options`)."""

    results: list[str] = option(
        help="predictions files (JSON list or JSONL of {qid, answer} records, lm-eval "
        "samples_*.jsonl, or whole rows with gen_answer)",
        positional=True,
    )
    output_dir: str = option(help="where to write the scores")
    data_dir: str | None = option(
        None, help="the data set: a folder of raw files (test.json, ...)", metavar="DIR"
    )
    config: Literal["sample", "default"] | None = option(
        None,
        help="the data set: the builder's config (sample: the bundled examples, offline; "
        "default: the release, downloaded)",
    )
    dataset: str | None = option(
        None,
        help="the data set: a Hub dataset id, an `ambigdocs export` folder, or any folder "
        "datasets.load_dataset reads",
        metavar="ID_OR_FOLDER",
    )
    split: str | None = option(None, help="the data set's split (default test)")
    subset: bool = option(
        False,
        help="score the questions the predictions answer; otherwise predictions that leave "
        "questions of the split unanswered are an error",
    )
    answer_field: str | None = option(
        None,
        help="the field holding the answer (default: the first of answer, prediction, "
        "response, output, gen_answer)",
    )
    name: list[str] = option(
        [],
        help="the name of a results file in the tables, the plot, the page and the "
        "comparison; once per file, in order (default: the file stems)",
        repeat=True,
        metavar="NAME",
    )
    df1: bool = option(True, help="compute Disambig-F1 (--no-df1: skip it, no QA model)")
    qa_model: str | None = option(
        None,
        help=f"QA model for Disambig-F1 (path or Hub id; default {DEFAULT_QA_MODEL}, skipped "
        "with a note when the Hub cannot be reached and it is not cached; a model named here "
        "that cannot be loaded, or that is not a question-answering model, is an error)",
    )
    qa_batch_size: int = option(64, help="at most this many windows per QA forward pass")
    qa_batch_tokens: int = option(8192, help="at most this many padded tokens per QA forward pass")
    qa_padding: Literal["longest", "max_length"] = option(
        "longest",
        help="pad each batch of similar-length windows to its longest, or every window to 384 "
        "tokens as run_qa did (same spans, slower)",
    )
    qa_dtype: Literal["float32", "bfloat16", "float16"] = option(
        "float32",
        help="QA model precision; float32 as the authors ran it, the others can change spans",
    )
    score_documents: Literal["first5", "shown", "all"] = option(
        "first5", help="gold documents scored: first5 (the authors), shown, or all"
    )
    workers: int = option(
        min(os.cpu_count() or 1, 8),
        help="processes for the lexical scores (the CPU count, at most 8)",
    )
    plot: bool = option(False, help="write categories.png (like Figure 4)")
    bootstrap: int = option(
        1000,
        help="bootstrap resamples for the 95% intervals and the comparison (0: none)",
        metavar="N",
    )
    bootstrap_seed: int = option(0, help="seed of the resampling")
    table_ci: bool = option(False, help="put the intervals in table.md/.csv/.tex")
    report: bool = option(
        False, help="write report.html: summary, comparison, slices and a per-example viewer"
    )
    show_examples: bool = option(False, help="print every example's category and answer")
    allow_duplicate_qids: bool = option(
        False,
        help="score rows that share a qid (several answers to one question, as in the bundled "
        "sample); otherwise a repeated qid is an error",
    )
    labels_field: str | None = option(
        None,
        help="a field of the rows holding reference categories (e.g. human labels): the "
        "confusion matrix and Cohen's kappa against the automatic categories (Figure 5), "
        "printed and written to summary.json and report.html",
    )

    def __post_init__(self):
        # Numbers out of range; also checked for `answer --evaluate-args`, before answering.
        if isinstance(self.bootstrap, int) and not 0 <= self.bootstrap <= MAX_RESAMPLES:
            # An unbounded count would run (and hold its resample means) without end.
            raise ValueError(
                f"--bootstrap must be between 0 and {MAX_RESAMPLES:,}, got {self.bootstrap}"
            )
        for flag, value, low in (
            ("--bootstrap-seed", self.bootstrap_seed, 0),  # numpy's own error names no flag
            ("--workers", self.workers, 1),
            ("--qa-batch-size", self.qa_batch_size, 1),
            ("--qa-batch-tokens", self.qa_batch_tokens, 1),
        ):
            if isinstance(value, int) and value < low:
                raise ValueError(f"{flag} must be {low} or more, got {value}")
        sources = [f for f in ("data_dir", "config", "dataset") if getattr(self, f)]
        if len(sources) > 1:
            flags = " and ".join("--" + f.replace("_", "-") for f in sources)
            raise ValueError(f"{flags} both name the data set: give one")
        if not sources:
            for flag, value in (("--split", self.split), ("--subset", self.subset)):
                if value:
                    raise ValueError(
                        f"{flag} needs a data set: --data-dir DIR, --config sample or --dataset ID"
                    )

    @property
    def paths(self) -> list[Path]:
        return [Path(p) for p in self.results]

    @property
    def out(self) -> Path:
        return Path(self.output_dir)


def check_extra_args(extra: list[str], flag: str) -> None:
    """Raises ValueError when `extra`, options for a later `ambigdocs evaluate` run (e.g.
    `ambigdocs answer --evaluate-args`), would not parse: found before hours of answering, not
    after.
    """
    try:
        parse_argv(PROG, DESCRIPTION, [EvaluateOptions], ["RESULTS", "--output-dir", "DIR", *extra])
    except SystemExit:  # --help would end the run there
        raise ValueError(f"{flag} {shlex.join(extra)!r}: not an option to pass on") from None
    except ValueError as err:
        raise ValueError(f"{flag} {shlex.join(extra)!r}: {err}") from None
