"""Training examples for `ambigdocs distill`: filtered question records -> prompt/completion pairs.

The status-ok records of `ambigdocs build filter` become the instruction-format prompt and its
target (`generation.prompts.render_question_training_text`, the template the `questions` stage
uses). Tokenisation is done here, not by trl: the prompt is tokenised alone, as at generation
time (docs/distillation.md, the `--tokenization` option).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from generation.prompts import render_question_training_text
from metric.ambigdocs_metric.scoring import parse_documents, parse_string

logger = logging.getLogger(__name__)

OK_STATUS = "ok"


def validate_record(record: Mapping, index: int) -> None:
    """Checks that a filtered record holds what distillation needs.

    Args:
        record: one line of the `build filter` output.
        index: its position in the file, for the error message.

    Raises:
        ValueError: a needed field is missing or malformed (names the record and the field).
    """
    for name in ("surface_name", "question"):
        parse_string(record.get(name), f"record {index}", name, non_empty=True)
    documents = parse_documents(record.get("documents"), f"record {index}", ("title", "text"))
    answers = record.get("answers")
    listed = isinstance(answers, Sequence) and not isinstance(answers, str)
    if not listed or not all(isinstance(a, str) and a.strip() for a in answers):
        raise ValueError(f"record {index}: field 'answers' must be a list of non-empty strings")
    if len(answers) != len(documents):
        raise ValueError(
            f"record {index}: field 'answers' has {len(answers)} answers for {len(documents)} "
            "documents (one answer per passage)"
        )


def select_ok_records(records: Sequence[Mapping], source: str = "input") -> list[Mapping]:
    """The records of a `build filter` output (file `source`) with `status == "ok"`, validated,
    in order.

    Raises:
        ValueError: a record has no `status`, a kept record lacks a needed field, or no record is
            kept.
    """
    kept = []
    for index, record in enumerate(records):
        if "status" not in record:
            raise ValueError(
                f"record {index} of {source}: field 'status' is missing; distillation reads the "
                "output of `ambigdocs build filter`, whose every line has a status"
            )
        if record["status"] != OK_STATUS:
            continue
        validate_record(record, index)
        kept.append(record)
    if not kept:
        raise ValueError(f"{source}: no record has status {OK_STATUS!r} ({len(records)} records)")
    logger.info("%s: %d of %d records have status ok", source, len(kept), len(records))
    return kept


def to_prompt_completion(records: Sequence[Mapping]) -> list[dict[str, str]]:
    """trl's prompt-completion format, one row per record, from the shared prompt module."""
    rows = []
    for r in records:
        docs = [{"title": d["title"], "text": d["text"]} for d in r["documents"]]
        prompt, completion = render_question_training_text(
            r["surface_name"], docs, r["question"], list(r["answers"])
        )
        rows.append({"prompt": prompt, "completion": completion})
    return rows


def tokenize_example(prompt: str, completion: str, tokenizer) -> dict[str, list[int]]:
    """Token ids and completion mask of one example, aligned with generation-time tokenisation.

    The prompt is tokenised alone with the tokenizer's default special tokens (what a generation
    back-end feeds the model); the completion's tokens (no special tokens) and EOS follow, so the
    model learns to write the target and then stop.

    Args:
        prompt: the instruction-format prompt (ends with `Question: `).
        completion: the target.
        tokenizer: a Hugging Face tokenizer with an EOS token.

    Returns:
        `input_ids` and `completion_mask` (0 on the prompt, 1 on completion and EOS).

    Raises:
        ValueError: the tokenizer has no EOS token.
    """
    if tokenizer.eos_token_id is None:
        raise ValueError("the tokenizer has no eos_token; the model could not learn to stop")
    prompt_ids = tokenizer(prompt)["input_ids"]
    completion_ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
    completion_ids = completion_ids + [tokenizer.eos_token_id]
    return {
        "input_ids": prompt_ids + completion_ids,
        "completion_mask": [0] * len(prompt_ids) + [1] * len(completion_ids),
    }


def tokenize_authors(prompt: str, completion: str, tokenizer) -> dict[str, list[int]]:
    """`input_ids` of one example as the authors' old-trl run built them: prompt + completion
    tokenised as one text, BOS first (added when the tokenizer does not add it), no EOS (removed
    when the tokenizer appends one); no completion mask, the loss is on every token."""
    ids = list(tokenizer(prompt + completion)["input_ids"])
    bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
    if bos is not None and ids[:1] != [bos]:
        ids.insert(0, bos)
    if eos is not None and eos != bos and len(ids) > 1 and ids[-1] == eos:
        ids.pop()
    return {"input_ids": ids}


TOKENIZERS = {"inference": tokenize_example, "authors": tokenize_authors}


def drop_too_long(
    rows: Sequence[Mapping[str, str]],
    tokenizer,
    max_length: int | None,
    source: str = "input",
    tokenization: str = "inference",
) -> list[Mapping[str, str]]:
    """The examples whose tokens (prompt, target, EOS when the tokenisation adds one) fit in
    `max_length`.

    trl would cut longer ones at `max_length`, which removes the end of the target (the answers
    and EOS) and teaches the model to stop mid-answer; they are dropped instead, with a warning.

    Raises:
        ValueError: no example fits.
    """
    if max_length is None:
        return list(rows)
    kept = []
    longest = 0
    tokenize = TOKENIZERS.get(tokenization, tokenize_example)  # trl's joint one: as `inference`
    for r in rows:
        n = len(tokenize(r["prompt"], r["completion"], tokenizer)["input_ids"])
        longest = max(longest, n)
        if n <= max_length:
            kept.append(r)
    if len(kept) < len(rows):
        logger.warning(
            "%s: %d of %d examples are longer than --max_length %d tokens (longest %d) and are "
            "left out",
            source,
            len(rows) - len(kept),
            len(rows),
            max_length,
            longest,
        )
    if not kept:
        raise ValueError(
            f"{source}: no example fits in --max_length {max_length} tokens (shortest needs more; "
            f"longest {longest}); raise --max_length"
        )
    return kept


def build_dataset(rows: Sequence[Mapping[str, str]], tokenizer, tokenization: str):
    """A `datasets.Dataset` for SFTTrainer.

    Args:
        rows: prompt/completion pairs from `to_prompt_completion`.
        tokenizer: the base model's tokenizer.
        tokenization: `inference` (pre-tokenised here, see the module docstring), `authors`
            (pre-tokenised here, `tokenize_authors`) or `trl` (prompt/completion text; trl
            tokenises).

    Returns:
        The data set: columns `input_ids`, `completion_mask` (inference), `input_ids`
        (authors) or `prompt`, `completion` (trl).

    Raises:
        ValueError: unknown tokenization.
    """
    from datasets import Dataset

    if tokenization == "trl":
        return Dataset.from_list([dict(r) for r in rows])
    if tokenization in TOKENIZERS:
        tokenize = TOKENIZERS[tokenization]
        return Dataset.from_list([tokenize(r["prompt"], r["completion"], tokenizer) for r in rows])
    raise ValueError(f"tokenization must be 'inference', 'authors' or 'trl', got {tokenization!r}")
