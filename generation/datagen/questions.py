"""`ambigdocs build questions`: a question and two answers per seed pair (pipeline.md section 3).

    ambigdocs build questions --input seeds.jsonl --output questions.jsonl \\
        --backend openai --model gpt-4                        # Figure 9, chat, paper exemplar
    ambigdocs build questions --input seeds.jsonl --output questions.jsonl \\
        --backend hf --model meta-llama/Llama-2-13b-chat-hf --adapter distilled/  # instruction

Input (the `seed` stage's output), one line per surface name:
    {"surface_name": str, "documents": [{"pid", "title", "text"}, {...}], "overlap": str, ...}

Output: the input line, unchanged, plus
    "question":   str, or null when the model output does not parse,
    "answers":    [answer to passage 1, answer to passage 2], or null when it does not parse,
    "raw_output": the model's text as generated (after the prompt's `Question: `).
Lines keep the input order. Statistics (`<output>.stats.json`): total, parsed, unparsed.

Prompts: `generation.prompts.render_question_prompt` (Figure 9 with the paper's exemplar, or the
user's `--exemplars` file; `--prompt-format chat` for API/chat models, `instruction` for the
distilled model, `plain` for a base model). The default is `instruction` when `--adapter` is
given (the distilled model) and `chat` otherwise. The model calls go through the shared back-ends
(`generation.backends.load_backend`) in chunks of `--chunk-size` seed pairs; every finished chunk
is saved (`<output>.partial.jsonl`), so a rerun after a crash continues where it stopped.

Parsing (`parse_question_output`) is the authors' filter script's: the question is everything
before `Answer to Passage 1: `, the first answer what follows up to `Answer to Passage 2: `, the
second what follows that up to `</s>`, cut at its first newline, or, when it is one line, at its
first `. ` (a model without a stop word goes on to invent the next exemplar). An output without
both markers is not formatted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Mapping, Sequence

from generation.backends.base import (
    Backend,
)
from generation.datagen.model_options import add_model_options, backend_from_args, model_settings
from generation.datagen.stage_io import read_stage, write_stage
from generation.io.records import read_records
from generation.io.resume import chunks, finish_work, open_work
from generation.prompts import render_question_prompt

PROMPT_FORMATS = ("chat", "instruction", "plain")
_ANSWER_1 = "Answer to Passage 1: "
_ANSWER_2 = "Answer to Passage 2: "


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


def validate_seed_rows(rows: Sequence[Mapping], source: str = "input") -> None:
    """Checks the fields this stage reads.

    Raises:
        ValueError: naming the row (index and surface name) and the field that is wrong, or a
            surface name that occurs twice (it is the resume key).
    """
    seen = set()
    for i, row in enumerate(rows):
        where = f"{source}: row {i}"
        sn = row.get("surface_name")
        if not isinstance(sn, str) or not sn.strip():
            raise ValueError(f"{where}: field 'surface_name' must be a non-empty string")
        if sn in seen:
            raise ValueError(f"{where} ({sn!r}): field 'surface_name' occurs twice")
        seen.add(sn)
        docs = row.get("documents")
        if not isinstance(docs, list) or len(docs) != 2:
            raise ValueError(f"{where} ({sn!r}): field 'documents' must be a list of two passages")
        for k, doc in enumerate(docs):
            for field in ("title", "text"):
                if not isinstance(doc, Mapping) or not isinstance(doc.get(field), str):
                    raise ValueError(f"{where} ({sn!r}): field 'documents[{k}].{field}' missing")


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


def run(
    input_path: str,
    output_path: str,
    backend: Backend,
    *,
    prompt_format: str = "chat",
    exemplars: Sequence[Mapping] | None = None,
    max_new_tokens: int = 200,
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
        max_new_tokens: generation budget per seed pair.
        chunk_size: seed pairs per back-end call; each finished chunk is saved.
        overwrite: discard an interrupted run's saved chunks instead of resuming them.
        settings: what else decides the outputs (model name, adapter, ...), checked on resume.
        show_progress: a tqdm bar over chunks.

    Returns:
        The saved statistics.

    Raises:
        ValueError: bad input rows, an unknown prompt format, or resuming with other settings.
    """
    if prompt_format not in PROMPT_FORMATS:
        raise ValueError(f"prompt_format must be one of {PROMPT_FORMATS}, got {prompt_format!r}")
    if exemplars is not None and prompt_format == "instruction":
        # The distilled model's format has no exemplars: it learnt the format in training.
        print("questions: --exemplars is not used by the instruction format", file=sys.stderr)
    rows = read_stage(input_path)
    validate_seed_rows(rows, source=str(input_path))
    run_settings = {
        "prompt_format": prompt_format,
        "exemplars": _digest(exemplars),
        "max_new_tokens": max_new_tokens,
        **dict(settings or {}),
    }
    progress = open_work(
        output_path,
        lambda r: r["surface_name"],
        run_settings,
        overwrite=overwrite,
        inputs=[input_path],
    )
    todo = [r for r in rows if r["surface_name"] not in progress.done]
    batches = chunks(todo, chunk_size) if todo else []
    if show_progress:
        from tqdm.auto import tqdm

        batches = tqdm(batches, desc="questions", unit="chunk")
    for batch in batches:
        prompts = [
            render_question_prompt(
                r["surface_name"], r["documents"], prompt_format=prompt_format, exemplars=exemplars
            )
            for r in batch
        ]
        generations = backend.generate(prompts, max_new_tokens=max_new_tokens)
        progress.append(_with_question(r, g.text) for r, g in zip(batch, generations, strict=True))
    by_key = {r["surface_name"]: r for r in progress.records}
    out = [by_key[r["surface_name"]] for r in rows]
    parsed = sum(r["question"] is not None for r in out)
    stats = {"total": len(out), "parsed": parsed, "unparsed": len(out) - parsed}
    saved = write_stage(output_path, out, stats, stage="questions")
    finish_work(output_path, progress)
    return saved


def _with_question(row: Mapping, text: str) -> dict:
    parsed = parse_question_output(text)
    question, answers = parsed if parsed else (None, None)
    return {**row, "question": question, "answers": answers, "raw_output": text}


def _digest(obj) -> str | None:
    """A short fingerprint of the exemplars, so that a resume notices a changed exemplar file."""
    if obj is None:
        return None
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ambigdocs build questions",
        description="A question and two answers per seed pair (pipeline.md section 3).",
    )
    p.add_argument("--input", required=True, help="seed stage output (JSONL or Parquet)")
    p.add_argument("--output", required=True, help="output file (.jsonl or .parquet)")
    add_model_options(
        p,
        model_help="model id / folder, or the API model name",
        adapter_help="PEFT adapter of the distilled model (hf, vllm)",
    )
    p.add_argument("--exemplars", help="JSON/JSONL exemplar file replacing the paper's exemplar")
    p.add_argument(
        "--prompt-format",
        choices=PROMPT_FORMATS,
        help="default: instruction with --adapter (the distilled model), chat otherwise",
    )
    p.add_argument("--max-new-tokens", type=int, default=200)
    p.add_argument("--chunk-size", type=int, default=64, help="seed pairs saved per step")
    p.add_argument("--overwrite", action="store_true", help="discard an interrupted run's work")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    prompt_format = args.prompt_format or ("instruction" if args.adapter else "chat")
    exemplars = load_exemplars(args.exemplars) if args.exemplars else None
    backend = backend_from_args(args)
    try:
        run(
            args.input,
            args.output,
            backend,
            prompt_format=prompt_format,
            exemplars=exemplars,
            max_new_tokens=args.max_new_tokens,
            chunk_size=args.chunk_size,
            overwrite=args.overwrite,
            settings=model_settings(args),
            show_progress=not args.no_progress,
        )
    except ValueError as err:
        print(f"ambigdocs build questions: error: {err}", file=sys.stderr)
        return 2
    finally:
        backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
