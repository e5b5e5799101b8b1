"""Greedy, batched generation with a transformers encoder-decoder model (T5): the entailment check
of the data pipeline (`generation.datagen.entailment`: the question converter and the TRUE NLI
model) runs on it, loaded and batched as the causal back-end is (`generation.backends.hf`).
"""

from __future__ import annotations

from collections.abc import Sequence

from generation.backends.hf import GREEDY, PretrainedGenerator


class Seq2SeqGenerator(PretrainedGenerator):
    """Greedy, batched generation with a seq2seq model (its options: those of `HFBackend`).

    Raises:
        ValueError: batch_size < 1 or an unknown dtype.
    """

    auto_class = "AutoModelForSeq2SeqLM"
    # Encoder inputs are padded on the right (T5 was trained so; the mask hides the pads).
    padding_side = "right"

    def __init__(
        self,
        model: str,
        *,
        batch_size: int = 16,
        dtype: str | None = "auto",
        device: str | None = None,
        show_progress: bool = False,
    ):
        super().__init__(
            model, batch_size=batch_size, dtype=dtype, device=device, show_progress=show_progress
        )

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

        return self.in_batches(encoded, run_batch, f"generate ({self.model_name})")

    def generate(self, texts: Sequence[str], max_new_tokens: int) -> list[str]:
        """Greedy outputs for `texts`, decoded without special tokens, in input order."""
        return self.generate_ids(self.encode(texts), max_new_tokens)
