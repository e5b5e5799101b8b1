"""Greedy, batched generation with a transformers encoder-decoder model (T5).

The entailment check of the data pipeline (`generation.datagen.entailment`: the question converter
and the TRUE NLI model) runs on it. Loading goes through `generation.backends.loading`, the same
home as the causal back-end's, and batches group inputs of similar token length as that back-end
does (`generation.backends.hf.in_length_batches`).
"""

from __future__ import annotations

from collections.abc import Sequence

from generation.backends.hf import in_length_batches
from generation.backends.loading import (
    GREEDY,
    check_model_path,
    load_model,
    load_tokenizer,
    pick_device,
    pick_dtype,
)


class Seq2SeqGenerator:
    """Greedy, batched generation with a seq2seq model.

    Args:
        model: a local folder or Hub id of a seq2seq model and its tokenizer.
        batch_size: inputs per `generate` call; batches group inputs of similar length.
        dtype: `auto` (bfloat16/float16 on accelerators, float32 on CPU) or a dtype name.
        device: `cuda`, `cpu`, ...; default the first available.
        show_progress: a tqdm bar over batches.

    Raises:
        ValueError: batch_size < 1 or an unknown dtype.
    """

    def __init__(
        self,
        model: str,
        *,
        batch_size: int = 16,
        dtype: str | None = "auto",
        device: str | None = None,
        show_progress: bool = False,
    ):
        import torch
        from transformers import AutoModelForSeq2SeqLM

        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        check_model_path(model, "model")
        self.model_name = str(model)
        self.batch_size = batch_size
        self.show_progress = show_progress
        self.device = pick_device(device)
        # Encoder inputs are padded on the right (T5 was trained so; the mask hides the pads).
        self.tokenizer = load_tokenizer(self.model_name, padding_side="right")
        self.model = load_model(
            AutoModelForSeq2SeqLM,
            self.model_name,
            dtype=pick_dtype(dtype, self.device),
            device=self.device,
        )
        self._torch = torch

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids per text, with the tokenizer's special tokens (T5 appends `</s>`)."""
        return [self.tokenizer(t)["input_ids"] for t in texts]

    def generate_ids(self, encoded: Sequence[list[int]], max_new_tokens: int) -> list[str]:
        """Greedy outputs for already tokenised inputs, decoded, in input order."""

        def run_batch(batch_ids: list[list[int]]) -> list[str]:
            padded = self.tokenizer.pad({"input_ids": batch_ids}, padding=True, return_tensors="pt")
            with self._torch.inference_mode():
                out = self.model.generate(
                    input_ids=padded["input_ids"].to(self.device),
                    attention_mask=padded["attention_mask"].to(self.device),
                    max_new_tokens=max_new_tokens,
                    **GREEDY,
                )
            return [t.strip() for t in self.tokenizer.batch_decode(out, skip_special_tokens=True)]

        desc = f"generate ({self.model_name})" if self.show_progress else None
        return in_length_batches(encoded, self.batch_size, run_batch, desc)

    def generate(self, texts: Sequence[str], max_new_tokens: int) -> list[str]:
        """Greedy outputs for `texts`, decoded without special tokens, in input order."""
        return self.generate_ids(self.encode(texts), max_new_tokens)
