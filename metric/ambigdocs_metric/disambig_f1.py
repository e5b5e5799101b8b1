"""Disambig-F1: the model-based part of the AmbigDocs metric (docs/metric.md §9).

For each scored gold document, an extractive QA model trained on SQuAD 2.0 reads the answer y
with the disambiguated question, and its span is compared with the gold answer by token F1. The
model is run directly and `run_qa.py`'s post-processing is reimplemented exactly
(`postprocess_example`); windows go in batches of similar length (`QAExtractor`). torch and
transformers are imported here only, and only when a QA model is used.
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
        # run_qa's filters: both ends inside the context, in order, at most max_answer_length.
        inside = {
            k
            for k in (*starts, *ends)
            if k < len(offsets) and offsets[k] is not None and len(offsets[k]) >= 2
        }
        for s in starts:
            for e in ends:
                if s not in inside or e not in inside or not s <= e < s + max_answer_length:
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

PADDINGS = ("longest", "max_length")
DTYPES = ("float32", "bfloat16", "float16")
# Padded tokens per forward pass (windows x the batch's longest window): the memory of a batch
# grows with its tokens, not with its windows, so long answers get smaller batches.
DEFAULT_BATCH_TOKENS = 8192


@dataclass
class _Windows:
    """The tokenized windows of all (question, context) pairs, unpadded."""

    input_ids: list[list[int]]
    extra: dict[str, list[list[int]]]  # attention_mask / token_type_ids, as the model takes them
    offsets: list[list[tuple[int, int] | None]]  # None outside the context
    sample_of: list[int]


class QAExtractor:
    """An extractive QA model run as `run_qa.py` ran it, batched (GPU when present).

    Every window of every pair is scored by the model and run_qa's post-processing picks each
    pair's span (docs/metric.md §9.2). padding="longest" (default) batches windows of similar
    length, each batch padded only to its longest window; padding="max_length" pads every window
    to 384 in input order, as run_qa did (the reference; a left-padding tokenizer always takes
    it). The spans are the same (tests/test_disambig_f1.py, benchmarks/bench_df1.py).

    Args:
        qa_model: a local path or Hub id, or a (model, tokenizer) pair already loaded.
        batch_size: at most this many windows per forward pass.
        device: torch device; default CUDA when available, else CPU.
        padding: "longest" or "max_length" (see above).
        batch_tokens: at most this many padded tokens per forward pass (a single longer
            window still goes alone).
        dtype: "float32" (as run_qa ran it; the default for a model loaded here), or
            "bfloat16"/"float16": faster where the hardware has it, but the logits change, so
            spans can differ from float32's. None leaves a passed model's dtype as it is.
    """

    def __init__(
        self,
        qa_model: Any = DEFAULT_QA_MODEL,
        batch_size: int = 64,
        device: Any = None,
        padding: str = "longest",
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
        dtype: str | None = None,
    ):
        import torch

        if padding not in PADDINGS:
            raise ValueError(f"padding: {padding!r} is not one of {', '.join(PADDINGS)}")
        if dtype is not None and dtype not in DTYPES:
            raise ValueError(f"dtype: {dtype!r} is not one of {', '.join(DTYPES)}")
        if batch_size < 1 or batch_tokens < 1:
            raise ValueError("batch_size and batch_tokens must be at least 1")
        if isinstance(qa_model, (tuple, list)):
            self.model, self.tokenizer = qa_model
        else:
            from transformers import AutoModelForQuestionAnswering, AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(qa_model)
            # float32 whatever the checkpoint stores, as run_qa loaded it.
            self.model = AutoModelForQuestionAnswering.from_pretrained(
                qa_model, dtype=torch.float32
            )
            dtype = dtype or "float32"
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.model.to(self.device).eval()
        if dtype is not None:
            self.model.to(getattr(torch, dtype))
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.padding = padding
        self.max_length = min(MAX_SEQ_LENGTH, self.tokenizer.model_max_length)

    def extract(
        self, questions: Sequence[str], contexts: Sequence[str], progress: bool = False
    ) -> list[str]:
        """The span run_qa would extract for each (question, context) pair."""
        if not questions:
            return []
        windows = self._tokenize(questions, contexts)
        logits = self._logits(windows, progress)
        per_pair: list[list] = [[] for _ in questions]
        for i, j in enumerate(windows.sample_of):
            per_pair[j].append(logits[i])
        return [postprocess_example(c, w) for c, w in zip(contexts, per_pair, strict=True)]

    def _tokenize(self, questions: Sequence[str], contexts: Sequence[str]) -> _Windows:
        """run_qa's windows (question first when padding is on the right), unpadded."""
        import inspect

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
        )
        context_index = 1 if pad_on_right else 0
        offsets = [
            [o if enc.sequence_ids(i)[k] == context_index else None for k, o in enumerate(offs)]
            for i, offs in enumerate(enc["offset_mapping"])
        ]
        accepted = inspect.signature(self.model.forward).parameters
        extra = {
            k: enc[k] for k in ("attention_mask", "token_type_ids") if k in enc and k in accepted
        }
        return _Windows(enc["input_ids"], extra, offsets, list(enc["overflow_to_sample_mapping"]))

    def _batches(self, lengths: Sequence[int]) -> list[tuple[list[int], int]]:
        """(window indices, padded width) per forward pass, within both batch limits."""
        if self.padding == "max_length" or self.tokenizer.padding_side != "right":
            order, width_of = list(range(len(lengths))), lambda _: self.max_length
        else:
            # Longest first, so that the largest batch (the memory peak) comes at once; stable,
            # so that a run is deterministic.
            order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
            width_of = lengths.__getitem__
        batches: list[tuple[list[int], int]] = []
        for i in order:
            if batches:
                members, width = batches[-1]
                fits = (len(members) + 1) * width <= self.batch_tokens
                if fits and len(members) < self.batch_size:
                    members.append(i)
                    continue
            batches.append(([i], width_of(i)))
        return batches

    def _logits(self, windows: _Windows, progress: bool) -> list[tuple[Any, Any, list]]:
        """(start logits, end logits, offsets) per window, in input order, float32 numpy.

        In the max_length route each triple covers the padded window (run_qa ranked padding
        positions too; their offsets are None); otherwise only the window's own tokens.
        """
        import torch

        lengths = [len(ids) for ids in windows.input_ids]
        batches = self._batches(lengths)
        keep_padding = self.padding == "max_length" or self.tokenizer.padding_side != "right"
        left = self.tokenizer.padding_side == "left"
        out: list[tuple[Any, Any, list] | None] = [None] * len(lengths)
        if progress:
            from tqdm.auto import tqdm

            batches = tqdm(batches, desc="Disambig-F1", unit="batch")
        with torch.inference_mode():
            for members, width in batches:
                result = self.model(**self._padded(windows, members, width))
                starts = result.start_logits.float().cpu().numpy()
                ends = result.end_logits.float().cpu().numpy()
                for row, i in enumerate(members):
                    offsets = windows.offsets[i]
                    if keep_padding:
                        pad = [None] * (width - lengths[i])
                        out[i] = (starts[row], ends[row], pad + offsets if left else offsets + pad)
                    else:  # right padding: the window's tokens come first
                        out[i] = (starts[row, : lengths[i]], ends[row, : lengths[i]], offsets)
        return out

    def _padded(self, windows: _Windows, members: Sequence[int], width: int) -> dict:
        """The batch's tensors, padded to `width` as the tokenizer pads."""
        import torch

        fill = {
            "input_ids": self.tokenizer.pad_token_id,
            "attention_mask": 0,
            "token_type_ids": self.tokenizer.pad_token_type_id,
        }
        left = self.tokenizer.padding_side == "left"
        columns = {"input_ids": windows.input_ids, **windows.extra}
        batch = {}
        for key, rows in columns.items():
            padded = [
                [fill[key]] * (width - len(rows[i])) + rows[i]
                if left
                else rows[i] + [fill[key]] * (width - len(rows[i]))
                for i in members
            ]
            batch[key] = torch.tensor(padded, device=self.device)
        return batch


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
