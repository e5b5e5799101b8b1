"""`ambigdocs build questions`: a question and two answers per seed pair (docs/pipeline.md §3.1).

Prompt formats, decoding, parse rules and the output: docs/building-stages.md, "questions".
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from generation.backends.base import Backend, LazyBackend
from generation.backends.openai import decoding_options, resolve_decoding
from generation.datagen.model_options import (
    ModelOptions,
    check_model_loadable,
    check_prompt_format,
    has_chat_template,
    make_backend,
    model_settings,
    no_chat_template,
    prompt_field,
)
from generation.datagen.stage_io import (
    check_output,
    chunked_work,
    keyed_rows,
    read_stage,
    stage_main,
    write_stage,
)
from generation.io.records import atomic_write_jsonl, read_records
from generation.options import check_at_least, option
from generation.prompts import render_question_prompt
from metric.ambigdocs_metric.scoring import parse_documents

PROMPT_FORMATS = ("chat", "instruction", "plain", "authors")
PARSE_RULES = ("auto", "lines", "markers")
_ANSWER_1 = "Answer to Passage 1: "
_ANSWER_2 = "Answer to Passage 2: "
DISTILLED_MAX_NEW_TOKENS = 150  # the authors' generate_llama.py
DEFAULT_MAX_NEW_TOKENS = 200  # the authors' GPT-4 calls set no limit; 200 fits every output


def parse_question_output(text: str) -> tuple[str, list[str]] | None:
    """The question and the two answers in a model output, as the authors' filter parses them.

    Args:
        text: what the model wrote after the prompt's `Question: `.

    Returns:
        (question, [a1, a2]) stripped (either may be empty: the later filters judge that), or
        None when the output lacks `Answer to Passage 1: ` or, after it, `Answer to Passage 2: `.
    """
    parts = text.split(_ANSWER_1)
    if len(parts) < 2:
        return None
    after = parts[1].split(_ANSWER_2)
    if len(after) < 2:
        return None
    answer_2 = after[1].split("</s>")[0].strip()
    lines = answer_2.split("\n")
    answer_2 = lines[0].strip() if len(lines) > 1 else answer_2.split(". ")[0].strip()
    return parts[0].strip(), [after[0].strip(), answer_2]


def parse_lines_output(text: str) -> tuple[str, list[str]] | None:
    """The question and the two answers as the authors' GPT-4 script reads them.

    Args:
        text: the model's reply (stripped here, as their script strips the API's content).

    Returns:
        (question, [a1, a2]): the first line, and the second and third lines without their
        first `len("Answer to Passage 1: ")` characters, each stripped; None when the reply has
        fewer than three lines.
    """
    lines = text.strip().split("\n")
    if len(lines) < 3:
        return None
    cut = len(_ANSWER_1)  # the same length as "Answer to Passage 2: " and "Answer to Article 1: "
    return lines[0].strip(), [lines[1][cut:].strip(), lines[2][cut:].strip()]


def resolve_parse_rule(prompt_format: str, parse_rule: str = "auto") -> str:
    """The parse rule `auto` stands for: `markers` for the distilled model's `instruction`
    format, `lines` for the few-shot formats GPT-4 ran with.

    Raises:
        ValueError: an unknown rule.
    """
    if parse_rule not in PARSE_RULES:
        raise ValueError(f"parse_rule must be one of {PARSE_RULES}, got {parse_rule!r}")
    if parse_rule != "auto":
        return parse_rule
    return "markers" if prompt_format == "instruction" else "lines"


def default_max_new_tokens(prompt_format: str) -> int:
    """150 for the distilled model's format (the authors' value), 200 otherwise."""
    return DISTILLED_MAX_NEW_TOKENS if prompt_format == "instruction" else DEFAULT_MAX_NEW_TOKENS


_PARSERS = {"lines": parse_lines_output, "markers": parse_question_output}


def validate_seed_rows(rows: Sequence[Mapping], source: str = "input") -> None:
    """Checks the fields this stage reads.

    Raises:
        ValueError: naming the row (index and surface name) and the field that is wrong, or a
            surface name that occurs twice (it is the resume key).
    """
    for row, where in keyed_rows(rows, source):
        docs = row.get("documents")
        if not isinstance(docs, list) or len(docs) != 2:
            raise ValueError(f"{where}: field 'documents' must be a list of two passages")
        parse_documents(docs, where, ("title", "text"))


def load_exemplars(path: str) -> list[dict]:
    """Reads a question exemplar file (JSON array or JSONL).

    Each exemplar: `surface_name`, `documents` (two, with `title` and `text`), `question`,
    `answers` (two strings), as in `generation.prompts.QUESTION_EXEMPLARS`.

    Raises:
        ValueError: an exemplar lacks a field (the message names the exemplar and the field).
    """
    exemplars = read_records(path)
    validate_seed_rows(exemplars, source=path)
    for i, ex in enumerate(exemplars):
        if not isinstance(ex.get("question"), str):
            raise ValueError(f"{path}: exemplar {i}: field 'question' must be a string")
        answers = ex.get("answers")
        if not isinstance(answers, list) or len(answers) != 2:
            raise ValueError(f"{path}: exemplar {i}: field 'answers' must be a list of two strings")
    return exemplars


def generate_questions(
    input_path: str,
    output_path: str,
    backend: Backend,
    *,
    prompt_format: str = "chat",
    exemplars: Sequence[Mapping] | None = None,
    max_new_tokens: int | None = None,
    parse_rule: str = "auto",
    chunk_size: int = 64,
    overwrite: bool = False,
    settings: Mapping | None = None,
    show_progress: bool = True,
) -> dict:
    """Generates a question and two answers for every seed pair of `input_path`.

    Args:
        input_path: the seed stage's output.
        output_path: this stage's output (JSONL, or Parquet by extension).
        backend: the model (any `generation.backends.Backend`).
        prompt_format: `chat`, `instruction` or `plain` (see `render_question_prompt`).
        exemplars: replace the paper's exemplar (not used by the `instruction` format).
        max_new_tokens: generation budget per seed pair (None: `default_max_new_tokens`).
        parse_rule: `auto`, `lines` or `markers` (docs/building-stages.md, "questions").
        chunk_size: seed pairs per back-end call; each finished chunk is saved.
        overwrite: discard an interrupted run's saved chunks instead of resuming them.
        settings: what else decides the outputs (model name, adapter, ...), checked on resume.
        show_progress: a tqdm bar over chunks.

    Returns:
        The saved statistics.

    Raises:
        ValueError: bad input rows, an unknown prompt format, or resuming with other settings.
    """
    _check_format(prompt_format, exemplars)
    rule = resolve_parse_rule(prompt_format, parse_rule)
    if max_new_tokens is None:
        max_new_tokens = default_max_new_tokens(prompt_format)
    rows = read_stage(input_path)
    validate_seed_rows(rows, source=str(input_path))
    run_settings = {
        "prompt_format": prompt_format,
        "exemplars": _digest(exemplars),
        "max_new_tokens": max_new_tokens,
        "parse_rule": rule,
        **dict(settings or {}),
    }

    def ask(batch: list[dict]) -> list[dict]:
        prompts = _prompts(batch, prompt_format, exemplars)
        generations = backend.generate(prompts, max_new_tokens=max_new_tokens)
        return [_with_question(r, g.text, rule) for r, g in zip(batch, generations, strict=True)]

    work = dict(chunk_size=chunk_size, overwrite=overwrite, show_progress=show_progress)
    with chunked_work(
        output_path, rows, lambda _: ask, run_settings, [input_path], "questions", **work
    ) as out:
        parsed = sum(r["question"] is not None for r in out)
        stats = {"total": len(out), "parsed": parsed, "unparsed": len(out) - parsed}
        return write_stage(output_path, out, stats, stage="questions")


def _prompts(rows: Sequence[Mapping], prompt_format: str, exemplars) -> list:
    return [
        render_question_prompt(
            r["surface_name"], r["documents"], prompt_format=prompt_format, exemplars=exemplars
        )
        for r in rows
    ]


def _check_format(prompt_format: str, exemplars: Sequence[Mapping] | None) -> None:
    check_prompt_format(prompt_format, PROMPT_FORMATS, exemplars)
    if exemplars is not None and prompt_format == "instruction":
        # The distilled model's format has no exemplars: it learnt the format in training.
        print("questions: --exemplars is not used by the instruction format", file=sys.stderr)


def _dry_run(input_path: str, output_path: str, prompt_format: str, exemplars) -> int:
    """Writes the exact model input of every seed pair (one JSONL line each: `surface_name`,
    `docs` shown in order with `title`, `text`, `pid`, and `prompt` or `messages`); returns how
    many."""
    _check_format(prompt_format, exemplars)
    rows = read_stage(input_path)
    validate_seed_rows(rows, source=str(input_path))
    shown = [
        [{"title": d["title"], "text": d["text"], "pid": d.get("pid")} for d in row["documents"]]
        for row in rows
    ]
    out = [
        {"surface_name": row["surface_name"], "docs": docs, **prompt_field(p)}
        for row, docs, p in zip(rows, shown, _prompts(rows, prompt_format, exemplars), strict=True)
    ]
    atomic_write_jsonl(output_path, out)
    return len(out)


def _with_question(row: Mapping, text: str, parse_rule: str) -> dict:
    question, answers = _PARSERS[parse_rule](text) or (None, None)
    return {**row, "question": question, "answers": answers, "raw_output": text}


def _digest(obj) -> str | None:
    """A short fingerprint of the exemplars, so that a resume notices a changed exemplar file."""
    if obj is None:
        return None
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def resolve_prompt_format(
    prompt_format: str | None,
    model: ModelOptions,
    backend: LazyBackend | None = None,
    dry_run: bool = False,
) -> str:
    """The prompt format a run uses, decided before any weights load.

    Unset, it is `instruction` with `--adapter` (the distilled model); otherwise the rule of
    `ambigdocs answer`: `chat` when the model has a chat template (openai models always do),
    else `plain`. An explicit `chat` on an hf/vllm model without a chat template is refused
    here, not after loading the weights. A dry run checks no tokenizer when the format is given.

    Raises:
        ValueError: `chat` asked of a model without a chat template, or a tokenizer that
            cannot be loaded (names the model).
    """
    if prompt_format is None and model.adapter:
        return "instruction"
    if prompt_format is not None and (dry_run or prompt_format != "chat"):
        if not dry_run:
            check_model_loadable(model)
        return prompt_format
    if prompt_format == "chat" and model.backend not in ("hf", "vllm"):
        return prompt_format  # openai models are chat models; a plug-in renders what it takes
    chat = has_chat_template(model, backend)
    if prompt_format is None:
        return "chat" if chat else "plain"
    if not chat:
        raise no_chat_template(model, "plain (or leave it unset)")
    return prompt_format


@dataclass(kw_only=True)
class QuestionsOptions:
    input: str = option(help="seed stage output (JSONL or Parquet)")
    output: str = option(help="output file (.jsonl or .parquet)")
    exemplars: str | None = option(
        None, help="JSON/JSONL exemplar file replacing the paper's exemplar"
    )
    prompt_format: Literal["chat", "instruction", "plain", "authors"] | None = option(
        None,
        help="default: instruction with --adapter (the distilled model); otherwise chat when "
        "the model has a chat template (openai: always), else plain (as `ambigdocs answer`)",
    )
    max_new_tokens: int | None = option(
        None,
        help="default: 150 for the instruction format (the authors' distilled model), else 200",
    )
    parse_rule: Literal["auto", "lines", "markers"] = option(
        "auto",
        help="lines (the authors' GPT-4 script), markers (their Llama script); auto: markers "
        "for the instruction format, lines otherwise",
    )
    decoding: Literal["greedy", "authors"] | None = option(
        None,
        help="openai: greedy (temperature 0, --max-new-tokens) or authors (no temperature and "
        "no token limit sent: the API's defaults, as the authors' GPT-4 script). Default: "
        "authors with --prompt-format authors, else greedy. Open models always decode greedily",
    )
    dry_run: bool = option(
        False, help="write the exact model inputs to --output (JSONL); load no model, send nothing"
    )
    chunk_size: int = option(64, help="seed pairs saved per step")
    overwrite: bool = option(False, help="discard an interrupted run's work")
    progress: bool = option(True, help="show a progress bar (--no-progress hides it)")

    def __post_init__(self):
        check_at_least(self, 1, "chunk_size", "max_new_tokens")


def run(options: QuestionsOptions, model: ModelOptions) -> dict | None:
    """Runs the questions stage from its options (the command line, or `build all`).

    Every option, the exemplar file and the prompt format (which may need the tokenizer, never
    the weights) are checked before the input is read; the model loads on the first chunk.

    Returns:
        The saved statistics (None for a dry run).
    """
    check_output(options.output)
    if options.exemplars and options.prompt_format == "authors":
        _check_format("authors", options.exemplars)  # refused before the file is read
    exemplars = load_exemplars(options.exemplars) if options.exemplars else None
    # Decided by the options alone: only openai models have a choice, and their default prompt
    # format is chat, so no tokenizer is needed to know it.
    decoding = resolve_decoding(model.backend, options.prompt_format, options.decoding)
    backend = make_backend(model, decoding_options(decoding))
    try:
        prompt_format = resolve_prompt_format(
            options.prompt_format, model, backend, dry_run=options.dry_run
        )
        if options.dry_run:
            n = _dry_run(options.input, options.output, prompt_format, exemplars)
            print(f"questions: wrote {n} model inputs to {options.output} (dry run)")
            return None
        return generate_questions(
            options.input,
            options.output,
            backend,
            prompt_format=prompt_format,
            exemplars=exemplars,
            max_new_tokens=options.max_new_tokens,
            parse_rule=options.parse_rule,
            chunk_size=options.chunk_size,
            overwrite=options.overwrite,
            settings={**model_settings(model), "decoding": decoding},
            show_progress=options.progress,
        )
    finally:
        backend.close()


OPTIONS = (QuestionsOptions, ModelOptions)
DESCRIPTION = "A question and two answers per seed pair (docs/pipeline.md section 3)."
main = stage_main("questions", __name__)

if __name__ == "__main__":
    sys.exit(main())
