"""`ambigdocs build expand`: answers from the page's other entities (docs/pipeline.md §4).

For every other entity of the page and each of its passages, the QA model's answer is kept when
its mean NLL is under the threshold and it passes the entailment check; per entity the best
passage wins. Options, output and statistics: docs/building-stages.md, "expand".
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from generation.backends.base import Backend
from generation.datagen import model_options, stage_io
from generation.datagen import seed as seed_stage
from generation.datagen.entailment import EntailmentChecker, entailment_item
from generation.datagen.filter import (
    MAX_ANSWER_PIECES,
    EntailmentOptions,
    entailment_settings,
    make_checker,
    too_many_sentences,
)
from generation.datagen.model_options import ModelOptions
from generation.io.passages import collect_passages
from generation.io.records import atomic_write_jsonl, read_records
from generation.options import check_at_least, option
from generation.prompts import render_expansion_prompt
from metric.ambigdocs_metric.scoring import parse_documents

THRESHOLD = 0.2
MAX_NEW_TOKENS = 50
PROMPT_FORMATS = ("authors", "plain", "chat")
# The counts of each line's `expansion`, before `added` and the per-threshold counts.
_COUNTS = ("candidates", "unformatted", "above_threshold", "not_entailed")
# Thresholds whose effect the statistics report (inf: the authors' script, no threshold).
THRESHOLD_GRID = (0.05, 0.1, 0.2, 0.3, 0.5, 1.0, math.inf)


def clean_answer(text: str, max_pieces: int = MAX_ANSWER_PIECES) -> str | None:
    """The expansion answer in a generation, or None when it is dropped.

    The first line of the stripped text, with one final period removed; None when that is empty
    or splits on `.` into more than `max_pieces` pieces.
    """
    answer = text.strip().split("\n")[0].strip()
    if answer.endswith("."):
        answer = answer[:-1].strip()
    if not answer or too_many_sentences(answer, max_pieces):
        return None
    return answer


def other_entities(page_titles: Sequence[str], seed_titles: Sequence[str]) -> list[str]:
    """The page's entities other than the seed ones, in page order, each once."""
    seeds = set(seed_titles)
    return [title for title in dict.fromkeys(page_titles) if title not in seeds]


def _validate(rows: Sequence[Mapping], mapping: Mapping, source: str) -> None:
    for row, where in stage_io.keyed_rows(rows, source):
        if "status" not in row:
            raise ValueError(f"{where}: field 'status' missing (expand reads the filter output)")
        if row["status"] != "ok":
            continue
        if row["surface_name"] not in mapping:
            raise ValueError(f"{where}: field 'surface_name' is not a page of the map")
        if not isinstance(row.get("question"), str):
            raise ValueError(f"{where}: field 'question' must be a string")
        answers, docs = row.get("answers"), row.get("documents")
        if not isinstance(docs, list) or not isinstance(answers, list) or len(docs) != len(answers):
            raise ValueError(f"{where}: fields 'documents' and 'answers' must be lists of one size")
        for k, doc in enumerate(parse_documents(docs, where, ("title", "text"))):
            if "pid" not in doc:
                raise ValueError(f"{where}: field 'documents[{k}].pid' missing")
            if not isinstance(answers[k], str):
                raise ValueError(f"{where}: field 'answers[{k}]' must be a string")


def expansion_tasks(
    rows: Sequence[Mapping],
    page_entities: Mapping[str, Sequence[str]],
    passages: Mapping[str, Sequence[tuple[str, str]]],
) -> list[tuple[int, str, str, str]]:
    """(row index, entity, pid, text) for every passage of every other entity, in the order the
    authors' script visits them: rows, then the page's entities, then the passages in file order."""
    tasks = []
    for r, row in enumerate(rows):
        seeds = [d["title"] for d in row["documents"]]
        for entity in other_entities(page_entities[row["surface_name"]], seeds):
            for pid, text in passages.get(entity, ()):
                tasks.append((r, entity, pid, text))
    return tasks


def threshold_counts(
    scored: Sequence[tuple[str, float]], grid: Sequence[float] = THRESHOLD_GRID
) -> dict[str, dict[str, int]]:
    """For each threshold of `grid`, how many formatted candidates score below it, and how many
    entities have at least one such candidate.

    Args:
        scored: (entity, mean NLL) of every formatted candidate of one question.

    Returns:
        {"threshold_candidates": {str(t): n}, "threshold_entities": {str(t): n}}.
    """
    best: dict[str, float] = {}
    for entity, score in scored:
        best[entity] = min(score, best.get(entity, math.inf))
    return {
        "threshold_candidates": {str(t): sum(s < t for _, s in scored) for t in grid},
        "threshold_entities": {str(t): sum(s < t for s in best.values()) for t in grid},
    }


def expand_rows(
    rows: Sequence[Mapping],
    page_entities: Mapping[str, Sequence[str]],
    passages: Mapping[str, Sequence[tuple[str, str]]],
    backend: Backend,
    checker: EntailmentChecker | None,
    *,
    threshold: float = THRESHOLD,
    max_new_tokens: int = MAX_NEW_TOKENS,
    prompt_format: str = "authors",
    exemplars: Sequence[Mapping] | None = None,
    suffix_rule: str = "exact",
) -> list[dict]:
    """Expands the answer set of each row (one back-end call and one NLI call for all of them).

    Args:
        rows: filter lines with status ok.
        page_entities: page title -> entity titles (the disambiguation map).
        passages: entity title -> [(pid, text), ...] (already the seed stage's selection).
        backend: the QA model; must fill `mean_nll` when asked (`return_scores=True`).
        checker: the entailment check; None keeps every answer under the threshold.
        threshold: answers must score strictly below this mean NLL.
        max_new_tokens: generation budget per passage.
        prompt_format: `authors`, `plain` or `chat` (see `render_expansion_prompt`).
        exemplars: replace the Figure 10 exemplar (`title`, `text`, `question`, `answer`).
        suffix_rule: how `(disambiguation)` leaves the surface name in `q_DE`
            (`generation.datagen.filter.SUFFIX_RULES`).

    Returns:
        The output lines (docs/building-stages.md, "expand"), in the order of `rows`.

    Raises:
        ValueError: the back-end returned no score.
    """
    tasks = expansion_tasks(rows, page_entities, passages)
    prompts = _prompts(rows, tasks, prompt_format, exemplars)
    generations = backend.generate(prompts, max_new_tokens=max_new_tokens, return_scores=True)
    counts, scored, under = _score_candidates(len(rows), tasks, generations, threshold, backend)
    verdicts = _entailment_verdicts(rows, tasks, under, checker, suffix_rule)
    best: list[dict[str, tuple[float, str, str, str]]] = [{} for _ in rows]
    for (t, answer, score), entailed in zip(under, verdicts, strict=True):
        r, entity, pid, text = tasks[t]
        if not entailed:
            counts[r]["not_entailed"] += 1
        elif entity not in best[r] or score < best[r][entity][0]:
            best[r][entity] = (score, pid, text, answer)
    return _output_rows(rows, best, counts, scored)


def _prompts(rows, tasks, prompt_format: str, exemplars) -> list:
    return [
        render_expansion_prompt(
            entity, text, rows[r]["question"], prompt_format=prompt_format, exemplars=exemplars
        )
        for r, entity, _, text in tasks
    ]


def _score_candidates(num_rows: int, tasks, generations, threshold: float, backend: Backend):
    """Cleans and scores every candidate answer.

    Returns:
        (counts per row, [(entity, score) of each formatted candidate] per row, and the
        candidates under the threshold as (task index, answer, score)).

    Raises:
        ValueError: the back-end returned no score.
    """
    counts = [Counter(dict.fromkeys(_COUNTS, 0)) for _ in range(num_rows)]
    scored: list[list[tuple[str, float]]] = [[] for _ in range(num_rows)]
    under = []
    for t, ((r, entity, _, _), gen) in enumerate(zip(tasks, generations, strict=True)):
        counts[r]["candidates"] += 1
        if gen.mean_nll is None:
            raise ValueError(f"back-end {backend.name!r} returned no score (mean_nll)")
        answer = clean_answer(gen.text)
        if answer is None:
            counts[r]["unformatted"] += 1
            continue
        scored[r].append((entity, gen.mean_nll))
        if not gen.mean_nll < threshold:
            counts[r]["above_threshold"] += 1
        else:
            under.append((t, answer, gen.mean_nll))
    return counts, scored, under


def _entailment_verdicts(rows, tasks, under, checker, suffix_rule: str) -> list[bool]:
    """The entailment verdict of each candidate under the threshold (all True without a check)."""
    if checker is None or not under:
        return [True] * len(under)
    items = []
    for t, answer, _ in under:
        r, entity, _, text = tasks[t]
        q, sn = rows[r]["question"], rows[r]["surface_name"]
        items.append(entailment_item(q, sn, entity, text, answer, suffix_rule))
    return [res.entailed for res in checker.check(items)]


def _output_rows(
    rows: Sequence[Mapping],
    best: Sequence[Mapping[str, tuple[float, str, str, str]]],
    counts: Sequence[Counter],
    scored: Sequence[Sequence[tuple[str, float]]],
) -> list[dict]:
    """The output lines: seed answers first, then the kept answer of each entity in page order
    (the order of `best`, filled in the order the tasks visit the entities)."""
    out = []
    for r, row in enumerate(rows):
        documents = [
            {"pid": d["pid"], "title": d["title"], "text": d["text"], "answer": a}
            for d, a in zip(row["documents"], row["answers"], strict=True)
        ]
        scores: list[float | None] = [None] * len(documents)
        for entity, (score, pid, text, answer) in best[r].items():
            documents.append({"pid": pid, "title": entity, "text": text, "answer": answer})
            scores.append(score)
        counts[r]["added"] = len(documents) - len(row["documents"])
        out.append(
            {
                "surface_name": row["surface_name"],
                "question": row["question"],
                "documents": documents,
                "answer_scores": scores,
                "expansion": {**counts[r], **threshold_counts(scored[r])},
            }
        )
    return out


def expand_answers(
    input_path: str,
    output_path: str,
    backend: Backend,
    *,
    passages: str,
    disambiguation: str,
    checker: EntailmentChecker | None,
    settings: Mapping | None = None,
    suffix_rule: str = "exact",
    max_passages: int | None = None,
    drop_last_passage: bool = False,
    threshold: float = THRESHOLD,
    max_new_tokens: int = MAX_NEW_TOKENS,
    prompt_format: str = "authors",
    exemplars: Sequence[Mapping] | None = None,
    chunk_size: int = 16,
    overwrite: bool = False,
    show_progress: bool = True,
) -> dict:
    """Runs the expand stage (docs/building-stages.md, "expand").

    Args:
        input_path, output_path: the filter stage's output; this one's (JSONL, or Parquet).
        backend: the QA model.
        passages: the DPR passage TSV.
        disambiguation: the map JSON `{page: [entity titles]}`.
        checker: the entailment check (None: `--no-entailment`).
        threshold, max_new_tokens, prompt_format, exemplars, suffix_rule: see `expand_rows`
            (the paper's threshold 0.2; 50 new tokens and the `authors` prompt, as theirs).
        max_passages: entities with more passages have none (None, the authors: no limit).
        drop_last_passage: leave out each entity's last passage (the seed stage's rule).
        chunk_size: questions per step; each finished step is saved.
        overwrite: discard an interrupted run's saved steps instead of resuming them.
        settings: what else decides the outputs (model ids, ...), checked on resume.
        show_progress: progress bars.

    Returns:
        The saved statistics.

    Raises:
        ValueError: bad input lines (naming the line and field), or resuming with other settings.
    """
    model_options.check_prompt_format(prompt_format, PROMPT_FORMATS, exemplars)
    rows, mapping = _read_inputs(input_path, disambiguation)
    ok = [r for r in rows if r["status"] == "ok"]
    # what decides each answer, passed to `expand_rows` and checked when a run resumes
    rule = dict(threshold=threshold, max_new_tokens=max_new_tokens, prompt_format=prompt_format,
                exemplars=exemplars, suffix_rule=suffix_rule)  # fmt: skip
    run_settings = {
        **rule,
        "max_passages": max_passages,
        "drop_last_passage": drop_last_passage,
        "entailment": checker is not None,
        **dict(settings or {}),
    }

    def expander(todo: list[dict]):
        found = _needed_passages(
            todo, mapping, passages, max_passages, drop_last_passage, show_progress
        )
        return lambda batch: expand_rows(batch, mapping, found, backend, checker, **rule)

    work = dict(chunk_size=chunk_size, overwrite=overwrite, show_progress=show_progress)
    inputs = [input_path, passages, disambiguation]
    with stage_io.chunked_work(
        output_path, ok, expander, run_settings, inputs, "expand", **work
    ) as out:
        stats = _stats(rows, out)
        stats["entailment"] = "skipped" if checker is None else "checked"
        return stage_io.write_stage(output_path, out, stats, stage="expand")


def _read_inputs(input_path: str, disambiguation: str) -> tuple[list[dict], dict]:
    """The filter lines and the disambiguation map, checked against each other."""
    rows = stage_io.read_stage(input_path)
    mapping = seed_stage.read_disambiguation_map(disambiguation)
    _validate(rows, mapping, str(input_path))
    return rows, mapping


def _needed_passages(
    rows: Sequence[Mapping],
    mapping: Mapping[str, Sequence[str]],
    passages: str,
    max_passages: int | None,
    drop_last_passage: bool,
    show_progress: bool,
) -> dict[str, list[tuple[str, str]]]:
    """Streams the passage file once, keeping only the other entities of `rows`."""
    needed = set()
    for row in rows:
        seeds = [d["title"] for d in row["documents"]]
        needed.update(other_entities(mapping[row["surface_name"]], seeds))
    limit = math.inf if max_passages is None else max_passages
    collected, _ = collect_passages(passages, needed, limit, show_progress)
    return seed_stage.entity_passages(collected) if drop_last_passage else collected


def _dry_run(options: ExpandOptions, exemplars: Sequence[Mapping] | None) -> int:
    """Writes the exact prompt of every expansion candidate, in sending order (one JSONL line
    each: `surface_name`, `entity`, `pid`, `prompt` or `messages`); returns how many."""
    rows, mapping = _read_inputs(options.input, options.disambiguation)
    ok = [r for r in rows if r["status"] == "ok"]
    passage_rule = (options.max_passages, options.drop_last_passage, options.progress)
    found = _needed_passages(ok, mapping, options.passages, *passage_rule)
    tasks = expansion_tasks(ok, mapping, found)
    prompts = _prompts(ok, tasks, options.prompt_format, exemplars)
    out = [
        {
            "surface_name": ok[r]["surface_name"],
            "entity": entity,
            "pid": pid,
            **model_options.prompt_field(p),
        }
        for (r, entity, pid, _), p in zip(tasks, prompts, strict=True)
    ]
    atomic_write_jsonl(options.output, out)
    return len(out)


def _stats(rows: Sequence[Mapping], out: Sequence[Mapping]) -> dict:
    """Counts of the expansion, and the answers-per-question distribution (paper Table 1)."""
    totals = Counter()
    by_threshold = {"threshold_candidates": Counter(), "threshold_entities": Counter()}
    for r in out:
        expansion = dict(r["expansion"])
        for key, total in by_threshold.items():
            total.update(expansion.pop(key, {}))
        totals.update(expansion)
    per_question = Counter(len(r["documents"]) for r in out)
    return {
        "input_lines": len(rows),
        "skipped_not_ok": len(rows) - len(out),
        "questions": len(out),
        "answers": sum(len(r["documents"]) for r in out),
        **{f"expansion_{k}": totals[k] for k in (*_COUNTS, "added")},
        **{f"questions_with_{n}_answers": per_question[n] for n in sorted(per_question)},
        **{
            key: {str(t): total[str(t)] for t in THRESHOLD_GRID}
            for key, total in by_threshold.items()
        },
    }


def load_expansion_exemplars(path: str) -> list[dict]:
    """Reads an expansion exemplar file (JSON array or JSONL of `title`, `text`, `question`,
    `answer`).

    Raises:
        ValueError: an exemplar lacks one of the fields (naming the exemplar and the field).
    """
    exemplars = read_records(path)
    for i, ex in enumerate(exemplars):
        for field in ("title", "text", "question", "answer"):
            if not isinstance(ex.get(field), str):
                raise ValueError(f"{path}: exemplar {i}: field {field!r} must be a string")
    return exemplars


@dataclass(kw_only=True)
class ExpandOptions:
    input: str = option(help="filter stage output")
    output: str = option(help="output file (.jsonl or .parquet)")
    passages: str = option(help="DPR passage TSV (id, text, title)")
    disambiguation: str = option(help="map JSON {page: [entity titles]}")
    exemplars: str | None = option(
        None, help="JSON/JSONL exemplars (title, text, question, answer)"
    )
    prompt_format: Literal["authors", "plain", "chat"] = option(
        "authors",
        help="authors (default: the exact prompt of their expand.py), or the paper's Figure 10 "
        "laid out as one string (plain) or chat messages (chat)",
    )
    threshold: float = option(
        THRESHOLD,
        help="keep mean NLL below this (the paper: 0.2; inf: none, as the authors' script)",
    )
    max_new_tokens: int = option(MAX_NEW_TOKENS, help="generation budget per passage")
    max_passages: int | None = option(
        None,
        help="skip entities with more passages (default: no limit, as the authors; seed uses 20)",
    )
    drop_last_passage: bool = option(
        False, help="leave out each entity's last passage, as the seed stage does (not the authors)"
    )
    chunk_size: int = option(16, help="questions saved per step")
    overwrite: bool = option(False, help="discard an interrupted run's work")
    progress: bool = option(True, help="show progress bars (--no-progress hides them)")
    dry_run: bool = option(
        False, help="write the exact prompts to --output (JSONL); load no model, run no NLI"
    )

    def __post_init__(self):
        check_at_least(self, 1, "chunk_size", "max_new_tokens")
        check_at_least(self, 0, "max_passages", "threshold")


def run(options: ExpandOptions, model: ModelOptions, entailment: EntailmentOptions) -> dict | None:
    """Runs the expand stage from its options (the command line, or `build all`).

    The options, the exemplar file and the model's tokenizer (never its weights) are checked
    before the passage file is streamed; the models load on the first chunk.

    Returns:
        The saved statistics (None for a dry run).
    """
    stage_io.check_output(options.output)
    model_options.check_prompt_format(
        options.prompt_format, PROMPT_FORMATS, options.exemplars
    )  # before the file is read
    exemplars = load_expansion_exemplars(options.exemplars) if options.exemplars else None
    if options.dry_run:
        n = _dry_run(options, exemplars)  # loads no model, runs no NLI
        print(f"expand: wrote {n} prompts to {options.output} (dry run)")
        return None
    # A model that is not there, or `chat` asked of one without a chat template, is reported
    # before the passage file is streamed (from the tokenizer: no weights load).
    if options.prompt_format != "chat":
        model_options.check_model_loadable(model)
    elif model.backend in ("hf", "vllm", "openai") and not model_options.has_chat_template(model):
        raise model_options.no_chat_template(model, "plain or authors")
    settings = model_options.model_settings(model)
    if entailment.entailment:
        settings.update(entailment_settings(entailment))
    backend = model_options.make_backend(model)
    try:
        return expand_answers(
            options.input, options.output, backend, passages=options.passages,
            disambiguation=options.disambiguation, checker=make_checker(entailment),
            threshold=options.threshold, max_new_tokens=options.max_new_tokens,
            prompt_format=options.prompt_format, exemplars=exemplars,
            suffix_rule=entailment.strip_disambiguation, chunk_size=options.chunk_size,
            overwrite=options.overwrite, settings=settings, show_progress=options.progress,
            max_passages=options.max_passages, drop_last_passage=options.drop_last_passage,
        )  # fmt: skip
    finally:
        backend.close()


OPTIONS = (ExpandOptions, ModelOptions, EntailmentOptions)
DESCRIPTION = "Answer set expansion over the page's other entities (docs/pipeline.md section 4)."
main = stage_io.stage_main("expand", __name__)

if __name__ == "__main__":
    sys.exit(main())
