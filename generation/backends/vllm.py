"""The vLLM back-end (optional, imported only when chosen): every call hands vLLM all prompts at
once as token ids, tokenised by `generation.backends.hf.encode_prompt` exactly as the hf
back-end does."""

from __future__ import annotations

import math
from collections.abc import Sequence

from generation.backends.base import Generation
from generation.backends.hf import encode_prompt, tokenizer_has_chat_template
from generation.extras import require
from generation.prompts import Prompt


def sampling_kwargs(max_new_tokens: int, return_scores: bool, seed: int | None = 0) -> dict:
    """Greedy decoding in vLLM's terms; `logprobs=0` returns only the chosen tokens' logprobs.

    Raises:
        ValueError: max_new_tokens < 1.
    """
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    kwargs = {"temperature": 0.0, "top_p": 1.0, "max_tokens": max_new_tokens}
    if seed is not None:
        kwargs["seed"] = seed
    if return_scores:
        kwargs["logprobs"] = 0
    return kwargs


def mean_nll(token_ids: Sequence[int], logprobs) -> float | None:
    """Mean of -log p over the generated `token_ids`, from vLLM's per-step `logprobs` (dicts of
    token id -> `Logprob` or float; None when not requested).

    Raises:
        ValueError: a step lacks the logprob of its chosen token.
    """
    if logprobs is None:
        return None
    if not token_ids:
        return 0.0
    values = []
    for step, (tok, table) in enumerate(zip(token_ids, logprobs, strict=True)):
        if tok not in table:
            raise ValueError(f"vllm output step {step}: no logprob for the chosen token {tok}")
        entry = table[tok]
        values.append(float(getattr(entry, "logprob", entry)))
    return -math.fsum(values) / len(values)


class VLLMBackend:
    """Greedy generation with vLLM, optionally with a PEFT LoRA `adapter` (vLLM's LoRA support).

    Args:
        dtype: `auto` (vLLM picks), `float16`, `bfloat16`, `float32`.
        tensor_parallel_size: GPUs per model.
        gpu_memory_utilization: share of GPU memory vLLM may take.
        max_model_len: context length cap (default the model's).
        max_lora_rank: the largest adapter rank vLLM reserves room for.
        seed: vLLM's engine and request seed (greedy does not depend on it).
        batch_size: ignored (vLLM batches itself); accepted for a uniform CLI.
        **engine_kwargs: passed to `vllm.LLM` as they are (e.g. `enforce_eager=True`).

    Raises:
        MissingExtraError: vllm is not installed (names the extra to install).
    """

    name = "vllm"

    def __init__(
        self,
        model: str,
        *,
        adapter: str | None = None,
        dtype: str | None = "auto",
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        max_model_len: int | None = None,
        max_lora_rank: int = 64,
        seed: int = 0,
        batch_size: int | None = None,
        trust_remote_code: bool = False,
        **engine_kwargs,
    ):
        # Built directly (not by `load_backend`): the same one-line missing-extra error.
        require("vllm", what="the vllm back-end")
        import vllm

        self.model_name = str(model)
        self.seed = seed
        self._vllm = vllm
        kwargs = {
            "model": str(model),
            "dtype": dtype or "auto",
            "tensor_parallel_size": tensor_parallel_size,
            "gpu_memory_utilization": gpu_memory_utilization,
            "seed": seed,
            "trust_remote_code": trust_remote_code,
        }
        if max_model_len is not None:
            kwargs["max_model_len"] = max_model_len
        self.lora_request = None
        if adapter:
            from vllm.lora.request import LoRARequest

            kwargs.update(enable_lora=True, max_lora_rank=max_lora_rank)
            self.lora_request = LoRARequest("adapter", 1, str(adapter))
        kwargs.update(engine_kwargs)
        self.llm = vllm.LLM(**kwargs)
        self.tokenizer = self.llm.get_tokenizer()

    @property
    def has_chat_template(self) -> bool:
        return tokenizer_has_chat_template(self.tokenizer)

    def generate(
        self, prompts: Sequence[Prompt], *, max_new_tokens: int, return_scores: bool = False
    ) -> list[Generation]:
        """Greedy continuations, one per prompt, in input order (vLLM keeps the order)."""
        if not prompts:
            return []
        params = self._vllm.SamplingParams(
            **sampling_kwargs(max_new_tokens, return_scores, self.seed)
        )
        inputs = [
            {"prompt_token_ids": encode_prompt(self.tokenizer, p, self.model_name)} for p in prompts
        ]
        outputs = self.llm.generate(inputs, params, lora_request=self.lora_request)
        return [
            Generation(
                text=best.text,
                num_tokens=len(best.token_ids),
                mean_nll=mean_nll(list(best.token_ids), best.logprobs) if return_scores else None,
            )
            for best in (out.outputs[0] for out in outputs)
        ]

    def close(self) -> None:
        """Drops the engine and frees GPU memory."""
        self.llm = None
        try:
            import gc

            import torch

            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass
