"""Fakes shared by the build-stage tests (no tests here): a scripted back-end and NLI check."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from generation.backends.base import Generation
from generation.datagen.entailment import EntailmentItem, EntailmentResult


class ScriptedBackend:
    """A `Backend` whose continuation for each prompt is `reply(prompt)`; records every call."""

    name = "scripted"

    def __init__(
        self, reply: Callable[[object], str], score: Callable[[object], float] | None = None
    ):
        self.reply = reply
        self.score = score
        self.calls: list[dict] = []
        self.closed = False

    def generate(self, prompts, *, max_new_tokens, return_scores=False):
        self.calls.append(
            {
                "prompts": list(prompts),
                "max_new_tokens": max_new_tokens,
                "return_scores": return_scores,
            }
        )
        out = []
        for p in prompts:
            text = self.reply(p)
            nll = self.score(p) if (return_scores and self.score) else None
            out.append(Generation(text=text, num_tokens=len(text.split()), mean_nll=nll))
        return out

    def close(self):
        self.closed = True


class ScriptedChecker:
    """An `EntailmentChecker` that says `decide(item)`; records the items it was asked about."""

    def __init__(self, decide: Callable[[EntailmentItem], bool]):
        self.decide = decide
        self.batches: list[list[EntailmentItem]] = []

    def check(self, items: Sequence[EntailmentItem]) -> list[EntailmentResult]:
        self.batches.append(list(items))
        return [
            EntailmentResult(entailed=self.decide(it), statement=f"{it.question} -> {it.answer}")
            for it in items
        ]


def _last_query(prompt) -> tuple[str, list[str]]:
    """(surface name, [passage 1 text, passage 2 text]) of the query block of a Figure 9 prompt."""
    text = prompt if isinstance(prompt, str) else prompt[-1]["content"]
    block = text.split("Entity: ")[-1]
    lines = block.split("\n")
    texts = [line.split(" | ", 1)[1] for line in lines[1:3]]
    return lines[0], texts


def make_question_backend(model: str, **options) -> ScriptedBackend:
    """A back-end factory for `load_backend` (registered by tests as a plug-in kind): asks about
    the surface name and answers with each passage's last word, in the Figure 9 format."""

    def reply(prompt):
        sn, texts = _last_query(prompt)
        a1, a2 = (t.split()[-1] for t in texts)
        return f"What is {sn} known for?\nAnswer to Passage 1: {a1}\nAnswer to Passage 2: {a2}"

    backend = ScriptedBackend(reply)
    backend.options = options
    return backend


def make_tiny_t5(path):
    """A random tiny T5 (seq2seq) with the tiny tokenizer, saved under `path`; returns the path."""
    import torch
    from tiny_models import make_tiny_tokenizer
    from transformers import T5Config, T5ForConditionalGeneration

    tok = make_tiny_tokenizer()
    config = T5Config(
        vocab_size=len(tok), d_model=32, d_ff=64, d_kv=8, num_layers=2, num_heads=2,
        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
        decoder_start_token_id=tok.pad_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    T5ForConditionalGeneration(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def sample_filter_records(sample_dir) -> list[dict]:
    """`build filter`-style lines with status ok: the bundled sample's rows as seed pairs, each
    with its first two documents and their answers (training data for the distillation tests)."""
    import json
    from pathlib import Path

    rows = json.loads((Path(sample_dir) / "test.json").read_text())
    return [
        {
            "status": "ok",
            "surface_name": row["ambiguous_entity"],
            "documents": [{"title": d["title"], "text": d["text"]} for d in row["documents"][:2]],
            "question": row["question"],
            "answers": [d["answer"] for d in row["documents"][:2]],
        }
        for row in rows
    ]
