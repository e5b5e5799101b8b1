"""AmbigDocs rewards for trl's GRPO: the scorer's per-example values, one float per completion.

trl calls each reward as `f(prompts=..., completions=..., **columns, ...)`, the columns being
those of `ambigdocs answer --dry-run` rows. The values are those `ambigdocs evaluate` writes in
per_example.jsonl (the first five gold documents scored), computed once per batch by the
scorer's batched path. docs/training.md, section 2, has the rewards and their values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from metric.ambigdocs_metric.scoring import (
    ExampleScores,
    gc_paused,
    score_parsed,
    validate_inputs,
)

# The columns every reward needs (k_precision also needs `docs`).
REQUIRED_COLUMNS = ("question", "ambiguous_entity", "documents")

# The value of each answer category (docs/training.md, "Category values", says why).
CATEGORY_VALUES = {
    "complete": 1.0,
    "partial": 0.5,
    "no_answer": 0.0,
    "ambiguous": -0.25,
    "merged": -0.5,
}

# The batch scored last, without and with the shown documents (`docs`, K-Precision's only
# input): trl calls every reward on the same batch, so the later rewards reuse the scores. The
# key holds copies (the texts, the parsed rows, the shown documents), so lists changed in place
# can never give stale scores; comparing it costs a small fraction of scoring.
_last: dict[bool, tuple] = {}

# The `length` penalty's budget: words per scored gold document (an entity's name, its answer,
# 8.5 words on average in the release, and a few words to join them).
WORDS_PER_DOCUMENT = 15


def _where(index: int, ids: Sequence) -> str:
    qid = ids[index] if index < len(ids) else None
    return f"example {index}" + (f" (qid {qid})" if qid is not None else "")


def completion_text(completion, index: int = 0, ids: Sequence = ()) -> str:
    """The answer in one completion: the string, or the content of the last assistant message.

    Raises:
        ValueError: neither a string nor a list of messages with an assistant message whose
            content is a string; names the example.
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, (list, tuple)):
        for message in reversed(completion):
            if isinstance(message, Mapping) and message.get("role") == "assistant":
                if isinstance(message.get("content"), str):
                    return message["content"]
                break
    raise ValueError(
        f"{_where(index, ids)}: field 'completion' must be a string or a list of chat messages "
        f"ending in an assistant message with text content, got {completion!r:.100}"
    )


def score_completions(
    completions: Sequence,
    question: Sequence | None = None,
    ambiguous_entity: Sequence | None = None,
    documents: Sequence | None = None,
    docs: Sequence | None = None,
    qid: Sequence | None = None,
    **_ignored,
) -> list[ExampleScores]:
    """The scorer's per-example scores of a batch of completions (trl's keyword arguments).

    Args:
        completions: strings, or lists of chat messages.
        question, ambiguous_entity, documents: the rows' columns (one value per completion).
        docs: the documents shown, or None; only K-Precision reads them.
        qid: the rows' ids, named in errors.
        **_ignored: trl's other arguments (`prompts`, `completion_ids`, `trainer_state`, ...).

    Returns:
        One `ExampleScores` per completion, as `ambigdocs evaluate` computes them.

    Raises:
        ValueError: a column missing or of the wrong length, a bad row or completion; names
            the example and the field.
    """
    ids = list(qid) if qid is not None else [None] * len(completions)
    columns = {"question": question, "ambiguous_entity": ambiguous_entity, "documents": documents}
    for name, values in {**columns, "docs": docs, "qid": qid}.items():
        if values is None and name in REQUIRED_COLUMNS:
            raise ValueError(
                f"{_where(0, ids)}: no field {name!r}; the AmbigDocs rewards read the columns "
                f"{', '.join(REQUIRED_COLUMNS)} (the rows of `ambigdocs answer --dry-run`)"
            )
        if values is not None and len(values) != len(completions):
            raise ValueError(
                f"field {name!r} has {len(values)} values for {len(completions)} completions"
            )
    texts = [completion_text(c, i, ids) for i, c in enumerate(completions)]
    rows = [
        {"question": q, "ambiguous_entity": e, "documents": d, "qid": i}
        for q, e, d, i in zip(question, ambiguous_entity, documents, ids, strict=True)
    ]
    with gc_paused():  # many small objects and no cycles (see scoring.gc_paused)
        parsed = validate_inputs(texts, rows, docs)
        shown = None if docs is None else [None if d is None else list(map(dict, d)) for d in docs]
        key = (texts, parsed, shown)
        hit = _last.get(docs is not None)
        if hit is None or hit[0] != key:
            hit = _last[docs is not None] = (key, score_parsed(texts, parsed, docs))
    return hit[1]


def _lexical(completions: Sequence, columns: dict) -> list[ExampleScores]:
    """The scores without K-Precision: the shown documents are left out (nothing else reads
    them with the authors' first five gold documents), which halves the cost."""
    return score_completions(completions, **{**columns, "docs": None})


def answer_recall(completions: Sequence, **columns) -> list[float]:
    """Answer recall: the mean token recall of the scored gold answers."""
    return [s.answer_recall for s in _lexical(completions, columns)]


def entity_recall(completions: Sequence, **columns) -> list[float]:
    """Entity recall: the mean token recall of the scored entities' names."""
    return [s.entity_recall for s in _lexical(completions, columns)]


def entity_answer_recall(completions: Sequence, **columns) -> list[float]:
    """Entity-answer recall: per document, answer recall times entity recall, averaged."""
    return [s.entity_answer_recall for s in _lexical(completions, columns)]


def category(completions: Sequence, **columns) -> list[float]:
    """The answer category's value in `CATEGORY_VALUES` (complete 1.0 ... merged -0.5)."""
    return [CATEGORY_VALUES[s.category] for s in _lexical(completions, columns)]


def k_precision(completions: Sequence, **columns) -> list[float]:
    """K-Precision: the share of the answer's tokens found in the prompt (the shown documents).

    Raises:
        ValueError: a row without `docs` (the documents shown); names the example.
    """
    docs = columns.get("docs")
    ids = columns.get("qid") or [None] * len(completions)
    for i, shown in enumerate(docs if docs is not None else [None]):
        if shown is None:
            raise ValueError(
                f"{_where(i, ids)}: no field 'docs' (the documents shown), which k_precision needs"
            )
    return [s.k_precision for s in score_completions(completions, **columns)]


def length(completions: Sequence, **columns) -> list[float]:
    """A length penalty: 0 up to `WORDS_PER_DOCUMENT` words per scored gold document, then minus
    the excess as a fraction of that budget, down to -1 at twice the budget.

    The words are the scorer's `answer_length` (whitespace-separated, as in Table 2).
    """
    out = []
    for s in _lexical(completions, columns):
        budget = WORDS_PER_DOCUMENT * s.n_scored
        out.append(max(-1.0, min(0.0, (budget - s.answer_length) / budget)))
    return out
