"""`ambigdocs build filter`: the three filters of docs/pipeline.md §3.2 (paper B.2, Table 5).

Every line is kept with its `status` (not formatted / not ambiguous / not entailed, or ok) and
`filter_reason`; the rules and options: docs/building-stages.md, "filter".
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from generation.datagen.entailment import (
    CONVERTER_MAX_NEW_TOKENS,
    DEFAULT_CONVERTER,
    DEFAULT_NLI,
    MAX_NLI_TOKENS,
    EntailmentChecker,
    EntailmentItem,
    LazyEntailmentChecker,
    entailment_item,
)
from generation.datagen.stage_io import (
    check_output,
    chunked_work,
    keyed_rows,
    read_stage,
    stage_main,
    status_counts,
    write_stage,
)
from generation.io.resume import discard_work
from generation.options import check_at_least, option
from generation.prompts import strip_disambiguation

STATUSES = ("ok", "not_formatted", "not_ambiguous", "not_entailed")
QUESTION_PROMPT_WORDS = ("mention", "entity", "context", "passage")
ANSWER_PROMPT_WORDS = ("passage", "mention")
MAX_ANSWER_PIECES = 4
MAX_ANSWER_IOU = 0.75
DEFAULT_NLI_DTYPE = "float32"  # the authors' converter and NLI models ran in float32
# How a trailing "(disambiguation)" is stripped from the surface name: `exact` (only that
# lower-case spelling, the authors' filter and expansion scripts) or `any-case`.
SUFFIX_RULES = ("exact", "any-case")


def too_many_sentences(answer: str, max_pieces: int = MAX_ANSWER_PIECES) -> bool:
    """Whether `answer.split('.')` gives more than `max_pieces` pieces (the authors' rule)."""
    return len(answer.split(".")) > max_pieces


def word_iou(a: str, b: str) -> float:
    """Intersection over union of the lower-cased answers' word sets, split on single spaces as
    the authors did (`"".split(" ")` is `[""]`, so the union is never empty)."""
    sa, sb = set(a.lower().split(" ")), set(b.lower().split(" "))
    return len(sa & sb) / len(sa | sb)


def format_problem(question, answers) -> str | None:
    """The first filter: the reason a line is not formatted, or None.

    Returns:
        `unparsed` (no question or not two answers) or `answer_too_long`, or None.
    """
    two = isinstance(answers, list) and len(answers) == 2
    if not isinstance(question, str) or not two or not all(isinstance(a, str) for a in answers):
        return "unparsed"
    if any(too_many_sentences(a) for a in answers):
        return "answer_too_long"
    return None


def ambiguity_problem(
    question: str,
    answers: Sequence[str],
    surface_name: str,
    titles: Sequence[str],
    *,
    suffix_rule: str = "exact",
) -> str | None:
    """The second filter: the reason the question is not ambiguous, or None.

    Args:
        question: the generated question.
        answers: the two answers.
        surface_name: the page title (a trailing `(disambiguation)` is dropped here).
        titles: the two passage titles (the disambiguated entities).
        suffix_rule: `exact` or `any-case` (see `SUFFIX_RULES`).

    Returns:
        One of `names_both_entities`, `names_an_entity`, `question_prompt_word`,
        `answer_prompt_word`, `answer_contains_other`, `answers_too_similar`; or None.
    """
    q = question.lower()
    sn = strip_disambiguation(surface_name, case_sensitive=suffix_rule == "exact").lower()
    lowered = [t.lower() for t in titles]
    if sn in q:
        if sn not in lowered and any(t in q for t in lowered):
            return "names_an_entity"
    elif all(t in q for t in lowered):
        return "names_both_entities"
    if any(w in q for w in QUESTION_PROMPT_WORDS):
        return "question_prompt_word"
    a1, a2 = (a.lower() for a in answers)
    if any(w in a for a in (a1, a2) for w in ANSWER_PROMPT_WORDS):
        return "answer_prompt_word"
    if a1 in a2 or a2 in a1:
        return "answer_contains_other"
    if word_iou(answers[0], answers[1]) > MAX_ANSWER_IOU:
        return "answers_too_similar"
    return None


def entailment_items(row: Mapping, suffix_rule: str = "exact") -> list[EntailmentItem]:
    """The two (q_DE, answer, passage) checks of one line."""
    q, sn = row["question"], row["surface_name"]
    return [
        entailment_item(q, sn, doc["title"], doc["text"], answer, suffix_rule)
        for doc, answer in zip(row["documents"], row["answers"], strict=True)
    ]


def _validate(rows: Sequence[Mapping], source: str) -> None:
    for row, where in keyed_rows(rows, source):
        if "question" not in row or "answers" not in row:
            raise ValueError(
                f"{where}: fields 'question' and 'answers' missing (not a questions file?)"
            )
        docs = row.get("documents")
        if not isinstance(docs, list) or len(docs) != 2:
            raise ValueError(f"{where}: field 'documents' must be a list of two passages")
        for k, doc in enumerate(docs):
            for field in ("title", "text"):
                if not isinstance(doc, Mapping) or not isinstance(doc.get(field), str):
                    raise ValueError(f"{where}: field 'documents[{k}].{field}' missing")


def classify_without_entailment(row: Mapping, suffix_rule: str = "exact") -> tuple[str, str | None]:
    """(status, reason) after the first two filters; `ok` means the line goes on to the third."""
    reason = format_problem(row["question"], row["answers"])
    if reason:
        return "not_formatted", reason
    titles = [d["title"] for d in row["documents"]]
    reason = ambiguity_problem(
        row["question"], row["answers"], row["surface_name"], titles, suffix_rule=suffix_rule
    )
    if reason:
        return "not_ambiguous", reason
    return "ok", None


def filter_questions(
    input_path: str,
    output_path: str,
    *,
    checker: EntailmentChecker | None,
    settings: Mapping | None = None,
    suffix_rule: str = "exact",
    chunk_size: int = 64,
    overwrite: bool = False,
    show_progress: bool = True,
) -> dict:
    """Gives every line of `input_path` a status and writes them all to `output_path`.

    Args:
        input_path: the questions stage's output.
        output_path: this stage's output (JSONL, or Parquet by extension).
        checker: the entailment check; None skips the third filter (`--no-entailment`).
        suffix_rule: how `(disambiguation)` leaves the surface name (`SUFFIX_RULES`).
        chunk_size: lines per entailment step; each finished step is saved.
        overwrite: discard an interrupted run's saved steps instead of resuming them.
        settings: what decides the entailment results (model ids, ...), checked on resume.
        show_progress: a tqdm bar over entailment steps.

    Returns:
        The saved statistics.

    Raises:
        ValueError: a bad input line (naming it and the field), or resuming with other settings.
    """
    if suffix_rule not in SUFFIX_RULES:
        raise ValueError(f"suffix_rule must be one of {SUFFIX_RULES}, got {suffix_rule!r}")
    rows = read_stage(input_path)
    _validate(rows, str(input_path))
    out = []
    for row in rows:
        status, reason = classify_without_entailment(row, suffix_rule)
        out.append({**row, "status": status, "filter_reason": reason, "entailment": None})
    pending = [r for r in out if r["status"] == "ok"]
    if checker is None or not pending:
        # Nothing to check: an interrupted run's work file has no use (and would make `build
        # all` think this stage unfinished).
        discard_work(output_path)
        return _write(output_path, out, checker)

    def check(batch: list[dict]) -> list[dict]:
        items = [item for row in batch for item in entailment_items(row, suffix_rule)]
        results = checker.check(items)
        if len(results) != len(items):
            raise ValueError(f"entailment checker returned {len(results)} results for {len(items)}")
        return [
            {
                "surface_name": row["surface_name"],
                "entailment": [
                    {"statement": r.statement, "entailed": r.entailed, "too_long": r.too_long}
                    for r in results[2 * k : 2 * k + 2]
                ],
            }
            for k, row in enumerate(batch)
        ]

    settings = {**dict(settings or {}), "suffix_rule": suffix_rule}
    work = dict(chunk_size=chunk_size, overwrite=overwrite, show_progress=show_progress)
    with chunked_work(
        output_path, pending, lambda _: check, settings, [input_path], "entailment", **work
    ) as done:
        for row, record in zip(pending, done, strict=True):
            row["entailment"] = record["entailment"]
            if not all(e["entailed"] for e in row["entailment"]):
                row["status"] = "not_entailed"
                too_long = any(e["too_long"] for e in row["entailment"])
                row["filter_reason"] = "nli_input_too_long" if too_long else "not_entailed"
        return _write(output_path, out, checker)


def _write(output_path: str, out: list[dict], checker: EntailmentChecker | None) -> dict:
    stats = status_counts(out)
    stats["reasons"] = dict(Counter(r["filter_reason"] for r in out if r["filter_reason"]))
    stats["entailment"] = "skipped" if checker is None else "checked"
    return write_stage(output_path, out, stats, stage="filter")


@dataclass(kw_only=True)
class FilterOptions:
    input: str = option(help="questions stage output")
    output: str = option(help="output file (.jsonl or .parquet)")
    chunk_size: int = option(64, help="lines saved per entailment step")
    overwrite: bool = option(False, help="discard an interrupted run's work")
    progress: bool = option(True, help="show a progress bar (--no-progress hides it)")

    def __post_init__(self):
        check_at_least(self, 1, "chunk_size")


@dataclass(kw_only=True)
class EntailmentOptions:
    """The converter + NLI options shared by `filter` and `expand`."""

    converter_model: str = option(DEFAULT_CONVERTER, help="question converter")
    nli_model: str = option(DEFAULT_NLI, help="TRUE NLI model")
    max_nli_tokens: int = option(
        MAX_NLI_TOKENS, help="longer NLI inputs count as not entailed (0: no limit)"
    )
    converter_max_new_tokens: int = option(
        CONVERTER_MAX_NEW_TOKENS, help="the converter's generation budget"
    )
    nli_batch_size: int = option(16, help="inputs per converter/NLI call")
    nli_dtype: Literal["float32", "auto", "float16", "bfloat16"] = option(
        DEFAULT_NLI_DTYPE,
        help="float32 (default, the authors), auto (bfloat16 on GPUs), float16 or bfloat16",
    )
    strip_disambiguation: Literal["exact", "any-case"] = option(
        "exact",
        help="drop a trailing '(disambiguation)' from the surface name only in lower case "
        "(exact, the authors' scripts) or in any case",
    )
    nli_device: str | None = option(None, help="cuda, cpu, ... (default: the first available)")
    entailment: bool = option(
        True, help="run the entailment check (--no-entailment skips it; not the authors' default)"
    )

    def __post_init__(self):
        check_at_least(self, 1, "nli_batch_size", "converter_max_new_tokens")
        check_at_least(self, 0, "max_nli_tokens")


def entailment_settings(options: EntailmentOptions) -> dict:
    """The options that decide entailment results (checked when a run resumes)."""
    return {
        "converter_model": options.converter_model,
        "nli_model": options.nli_model,
        "max_nli_tokens": options.max_nli_tokens or None,
        "converter_max_new_tokens": options.converter_max_new_tokens,
        "nli_dtype": options.nli_dtype,  # bf16 and fp32 verdicts may differ
        "suffix_rule": options.strip_disambiguation,
    }


def make_checker(options: EntailmentOptions) -> EntailmentChecker | None:
    """The converter + NLI check the options name (the models load on first use), or None with
    `--no-entailment`."""
    if not options.entailment:
        return None
    return LazyEntailmentChecker(
        converter_model=options.converter_model,
        nli_model=options.nli_model,
        max_nli_tokens=options.max_nli_tokens or None,
        converter_max_new_tokens=options.converter_max_new_tokens,
        batch_size=options.nli_batch_size,
        dtype=options.nli_dtype,
        device=options.nli_device,
    )


def run(options: FilterOptions, entailment: EntailmentOptions) -> dict:
    """Runs the filter stage from its options (the command line, or `build all`).

    Returns:
        The saved statistics.
    """
    check_output(options.output)
    return filter_questions(
        options.input,
        options.output,
        checker=make_checker(entailment),
        suffix_rule=entailment.strip_disambiguation,
        chunk_size=options.chunk_size,
        overwrite=options.overwrite,
        settings=entailment_settings(entailment),
        show_progress=options.progress,
    )


OPTIONS = (FilterOptions, EntailmentOptions)
DESCRIPTION = "not formatted / not ambiguous / not entailed (docs/pipeline.md section 3)."
main = stage_main("filter", __name__)

if __name__ == "__main__":
    sys.exit(main())
