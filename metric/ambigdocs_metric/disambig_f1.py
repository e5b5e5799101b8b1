"""Disambig-F1: the model-based part of the AmbigDocs metric (metric.md, "Disambig-F1").

For each scored gold document, an extractive QA model trained on SQuAD 2.0 (the paper:
`deepset/roberta-base-squad2`) reads the model's answer y as context and the disambiguated
question (sn replaced by the entity's title) as question; the extracted span is compared with the
gold answer by token F1. The authors ran transformers' `run_qa.py` example
(`--version_2_with_negative --max_seq_length 384 --null_score_diff_threshold 0`); transformers 5
no longer has the question-answering pipeline, whose defaults differed anyway, so the model is run
directly, batched, and `run_qa`'s post-processing is reimplemented exactly (`postprocess_example`).

torch and transformers are imported here only, and only when a QA model is used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .scoring import (
    clean_prediction,
    parse_reference,
    scored_documents,
    surface_name,
    token_f1,
    tokens,
)

DEFAULT_QA_MODEL = "deepset/roberta-base-squad2"
# run_qa.py settings the authors used, and its defaults for the rest.
MAX_SEQ_LENGTH = 384
DOC_STRIDE = 128
N_BEST_SIZE = 20
MAX_ANSWER_LENGTH = 30
NULL_SCORE_DIFF_THRESHOLD = 0.0


def disambiguate_question(question: str, sn: str, title: str) -> str:
    """q_i: the first case-insensitive occurrence of sn in q replaced by the title, as written.

    As the authors' code does it: the position is found in the lower-cased question and the
    original question is cut there (`q.lower().find(sn)`), so an empty sn puts the title in
    front, and q is unchanged when sn does not occur.
    """
    idx = question.lower().find(sn)
    if idx == -1:
        return question
    return question[:idx] + title + question[idx + len(sn) :]


# --- run_qa post-processing ------------------------------------------------------------------------


@dataclass
class _Candidate:
    offsets: tuple[int, int]
    score: Any
    start_logit: Any
    end_logit: Any
    text: str = ""


def postprocess_example(
    context: str,
    windows: Sequence[tuple[Any, Any, Sequence[tuple[int, int] | None]]],
    n_best_size: int = N_BEST_SIZE,
    max_answer_length: int = MAX_ANSWER_LENGTH,
    null_score_diff_threshold: float = NULL_SCORE_DIFF_THRESHOLD,
) -> str:
    """The answer `run_qa.py` (SQuAD v2 mode) extracts for one example.

    Args:
        context: the text the offsets point into (the cleaned long-form answer).
        windows: per window of the example, (start logits, end logits, offsets), the logits as
            numpy arrays (float32, as the model gives them: sums and differences are computed in
            that precision, as run_qa did), offsets a (start, end) pair per token or None for a
            token outside the context.
        n_best_size, max_answer_length, null_score_diff_threshold: run_qa's options.

    Returns:
        The extracted span, or "" when the null answer wins.
    """
    import numpy as np

    prelim: list[_Candidate] = []
    min_null: _Candidate | None = None
    for start_logits, end_logits, offsets in windows:
        null = start_logits[0] + end_logits[0]
        if min_null is None or min_null.score > null:
            min_null = _Candidate((0, 0), null, start_logits[0], end_logits[0])
        # Highest first; np.argsort as run_qa calls it, so that ties order the same way.
        starts = np.argsort(start_logits)[-1 : -n_best_size - 1 : -1].tolist()
        ends = np.argsort(end_logits)[-1 : -n_best_size - 1 : -1].tolist()
        for s in starts:
            for e in ends:
                if s >= len(offsets) or e >= len(offsets):
                    continue
                if offsets[s] is None or len(offsets[s]) < 2:
                    continue
                if offsets[e] is None or len(offsets[e]) < 2:
                    continue
                if e < s or e - s + 1 > max_answer_length:
                    continue
                prelim.append(
                    _Candidate(
                        (offsets[s][0], offsets[e][1]),
                        start_logits[s] + end_logits[e],
                        start_logits[s],
                        end_logits[e],
                    )
                )
    if min_null is None:
        return ""
    prelim.append(min_null)
    null_score = min_null.score
    # sorted(reverse=True) is stable, as in run_qa.
    predictions = sorted(prelim, key=lambda c: c.score, reverse=True)[:n_best_size]
    if not any(c.offsets == (0, 0) for c in predictions):
        predictions.append(min_null)
    for c in predictions:
        c.text = context[c.offsets[0] : c.offsets[1]]
    if not predictions or (len(predictions) == 1 and predictions[0].text == ""):
        predictions.insert(0, _Candidate((0, 0), 0.0, 0.0, 0.0, "empty"))
    best = next(c for c in predictions if c.text != "")
    score_diff = null_score - best.start_logit - best.end_logit
    return "" if score_diff > null_score_diff_threshold else best.text


# --- the QA model ----------------------------------------------------------------------------------


class QAExtractor:
    """An extractive QA model run as `run_qa.py` ran it, batched (GPU when present).

    Args:
        qa_model: a local path or Hub id, or a (model, tokenizer) pair already loaded.
        batch_size: windows per forward pass.
        device: torch device; default CUDA when available, else CPU.
    """

    def __init__(self, qa_model: Any = DEFAULT_QA_MODEL, batch_size: int = 64, device: Any = None):
        import torch

        if isinstance(qa_model, (tuple, list)):
            self.model, self.tokenizer = qa_model
        else:
            from transformers import AutoModelForQuestionAnswering, AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(qa_model)
            self.model = AutoModelForQuestionAnswering.from_pretrained(qa_model)
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.model.to(self.device).eval()
        self.batch_size = batch_size
        self.max_length = min(MAX_SEQ_LENGTH, self.tokenizer.model_max_length)

    def extract(
        self, questions: Sequence[str], contexts: Sequence[str], progress: bool = False
    ) -> list[str]:
        """The span run_qa would extract for each (question, context) pair."""
        import numpy as np
        import torch

        if not questions:
            return []
        # run_qa puts the question first when padding is on the right (and truncates the context).
        pad_on_right = self.tokenizer.padding_side == "right"
        qs = [q.lstrip() for q in questions]
        enc = self.tokenizer(
            qs if pad_on_right else list(contexts),
            list(contexts) if pad_on_right else qs,
            truncation="only_second" if pad_on_right else "only_first",
            max_length=self.max_length,
            stride=DOC_STRIDE,
            return_overflowing_tokens=True,
            return_offsets_mapping=True,
            padding="max_length",
        )
        context_index = 1 if pad_on_right else 0
        sample_of = enc["overflow_to_sample_mapping"]
        offsets = [
            [o if enc.sequence_ids(i)[k] == context_index else None for k, o in enumerate(offs)]
            for i, offs in enumerate(enc["offset_mapping"])
        ]
        import inspect

        accepted = inspect.signature(self.model.forward).parameters
        keys = [
            k
            for k in ("input_ids", "attention_mask", "token_type_ids")
            if k in enc and k in accepted
        ]
        starts, ends = [], []
        batches = range(0, len(sample_of), self.batch_size)
        if progress:
            from tqdm.auto import tqdm

            batches = tqdm(batches, desc="Disambig-F1", unit="batch")
        with torch.inference_mode():
            for b in batches:
                inputs = {
                    k: torch.tensor(enc[k][b : b + self.batch_size], device=self.device)
                    for k in keys
                }
                out = self.model(**inputs)
                starts.append(out.start_logits.float().cpu().numpy())
                ends.append(out.end_logits.float().cpu().numpy())
        start_logits = np.concatenate(starts)
        end_logits = np.concatenate(ends)
        windows: list[list] = [[] for _ in questions]
        for i, j in enumerate(sample_of):
            windows[j].append((start_logits[i], end_logits[i], offsets[i]))
        return [postprocess_example(c, w) for c, w in zip(contexts, windows, strict=True)]


# --- Disambig-F1 -----------------------------------------------------------------------------------


def disambig_f1(
    predictions: Sequence[str],
    references: Sequence[Mapping],
    qa: QAExtractor,
    contexts: Sequence[Sequence[Mapping] | None] | None = None,
    score_documents: str = "first5",
    progress: bool = False,
) -> list[float | None]:
    """Per-example Disambig-F1: the mean over scored documents of F1(extracted span, a_i).

    All (question, answer) pairs of all examples go through the QA model in one batched pass;
    identical pairs are computed once.

    Returns:
        One score per example (None when no gold document is scored, score_documents='shown').
    """
    parsed = [
        r if not isinstance(r, Mapping) else parse_reference(r, i) for i, r in enumerate(references)
    ]
    if contexts is None:
        contexts = [None] * len(parsed)
    pairs: dict[tuple[str, str], int] = {}
    per_example: list[list[tuple[int, str]]] = []
    for pred, ref, shown in zip(predictions, parsed, contexts, strict=True):
        y = clean_prediction(pred)
        sn = surface_name(ref.ambiguous_entity)
        items = []
        for doc in scored_documents(ref, shown, score_documents):
            key = (disambiguate_question(ref.question, sn, doc.title), y)
            items.append((pairs.setdefault(key, len(pairs)), doc.answer))
        per_example.append(items)
    unique = list(pairs)
    spans = qa.extract([q for q, _ in unique], [c for _, c in unique], progress=progress)
    out: list[float | None] = []
    for items in per_example:
        if not items:
            out.append(None)
            continue
        f1s = [token_f1(tokens(spans[k]), tokens(answer)) for k, answer in items]
        out.append(sum(f1s) / len(f1s))
    return out
