"""The transformers back-end: batched greedy generation with left padding, prompts sorted by
token length into batches of similar length (little padding; results back in input order).
Why greedy answers do not depend on the batch size (and when they may): docs/answering.md,
"Batch-size independence of greedy answers".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from generation.backends import loading
from generation.backends.base import Generation
from generation.backends.loading import GREEDY, pick_dtype  # noqa: F401  (pick_dtype re-exported)
from generation.prompts import Prompt


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices cut into batches of similar length (ValueError: batch_size < 1), longest first,
    so that an out-of-memory error shows up in the first batch, not after an hour; stable, so equal
    lengths keep input order and the batching is deterministic."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


class PretrainedGenerator:
    """A transformers model (`auto_class`) and its tokenizer for batched greedy generation: what
    the hf back-end (its options are documented there) and the seq2seq models of the entailment
    check share; `generation.backends.loading` loads them."""

    auto_class = "AutoModelForCausalLM"
    padding_side = "left"  # every prompt ends where generation starts, so new tokens line up

    def __init__(
        self,
        model: str,
        *,
        batch_size: int = 8,
        adapter: str | None = None,
        dtype: str | None = "auto",
        device: str | None = None,
        tokenizer: str | None = None,
        trust_remote_code: bool = False,
        show_progress: bool = False,
        quantization: str = "auto",
    ):
        import torch
        import transformers

        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        for label, name in (("model", model), ("adapter", adapter), ("tokenizer", tokenizer)):
            if name:
                loading.check_model_path(name, label)
        quantization_config = loading.resolve_quantization(quantization, adapter)
        self.model_name = str(model)
        self.batch_size = batch_size
        self.show_progress = show_progress
        self.device = loading.pick_device(device)
        self.dtype = pick_dtype(dtype, self.device)
        self.tokenizer = loading.load_tokenizer(
            tokenizer or self.model_name,
            padding_side=self.padding_side,
            trust_remote_code=trust_remote_code,
        )
        self.model = loading.load_model(
            getattr(transformers, self.auto_class),
            self.model_name,
            dtype=self.dtype,
            device=self.device,
            quantization_config=quantization_config,
            adapter=adapter,
            trust_remote_code=trust_remote_code,
        )
        self._torch = torch

    def in_batches(self, encoded: Sequence[list[int]], run_batch: Callable, desc: str) -> list:
        """`run_batch` (token id lists -> one result each) over `length_sorted_batches` of
        `encoded`; the results in input order, with a tqdm bar labelled `desc` if asked."""
        results: list = [None] * len(encoded)
        batches = length_sorted_batches([len(x) for x in encoded], self.batch_size)
        if self.show_progress:
            from tqdm.auto import tqdm

            batches = tqdm(batches, desc=desc, unit="batch")
        for batch in batches:
            for i, out in zip(batch, run_batch([encoded[i] for i in batch]), strict=True):
                results[i] = out
        return results


def tokenizer_has_chat_template(tokenizer) -> bool:
    """Whether the tokenizer can render chat messages."""
    return bool(getattr(tokenizer, "chat_template", None))


def render_prompt(tokenizer, prompt: Prompt, model_name: str = "the model") -> str:
    """The text a model reads: a string as is; chat messages through the chat template, with
    the generation prompt, a system turn the template rejects moved into the first user turn.

    Raises:
        ValueError: chat messages but the tokenizer has no chat template.
        jinja2.exceptions.TemplateError: the template fails for another reason.
    """
    return prompt if isinstance(prompt, str) else render_chat(tokenizer, prompt, model_name)[0]


def render_chat(tokenizer, prompt: Prompt, model_name: str = "the model") -> tuple[str, list]:
    """Chat messages rendered as `render_prompt` does, and the messages rendered (after the
    move of a rejected system turn)."""
    if not tokenizer_has_chat_template(tokenizer):
        raise ValueError(
            f"{model_name}: the tokenizer has no chat template; use plain prompts "
            "(--prompt-format plain)"
        )
    from jinja2.exceptions import TemplateError

    messages = [dict(m) for m in prompt]
    try:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return text, messages
    except TemplateError:
        # Some templates (Gemma, older Mistral-Instruct) reject a system turn; docs/pipeline.md
        # section 6 allows the instruction in "the system or first user turn", so move it there.
        merged = merge_system_into_first_user(messages)
        if merged == messages:
            raise
        text = tokenizer.apply_chat_template(merged, tokenize=False, add_generation_prompt=True)
        return text, merged


def merge_system_into_first_user(messages: list[dict]) -> list[dict]:
    """The messages without system turns: their text goes before the first user message's
    content (`system + "\\n" + user`), as one user turn. Unchanged when there is no system turn.

    Raises:
        ValueError: system turns but no user turn to carry them.
    """
    system = [m["content"] for m in messages if m.get("role") == "system"]
    if not system:
        return messages
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    for m in rest:
        if m.get("role") == "user":
            m["content"] = "\n".join([*system, m["content"]])
            return rest
    raise ValueError("chat prompt has a system turn but no user turn to move it into")


def encode_prompt(tokenizer, prompt: Prompt, model_name: str = "the model") -> list[int]:
    """Token ids of one prompt. A plain string gets the tokenizer's special tokens (e.g. BOS); a
    rendered chat template already holds them, so none are added (no double BOS). The hf and
    vllm back-ends both tokenise through here, so they read the same ids."""
    text = render_prompt(tokenizer, prompt, model_name)
    return tokenizer(text, add_special_tokens=isinstance(prompt, str))["input_ids"]


class HFBackend(PretrainedGenerator):
    """Greedy generation with a transformers causal LM, optionally with a PEFT adapter.

    Args:
        model: a local folder or Hub id of a causal LM (and its tokenizer).
        batch_size: prompts per `generate` call; batches group prompts of similar token length.
        adapter: a PEFT adapter folder (e.g. `ambigdocs distill` output) loaded on top of the
            base model.
        dtype: `auto` (bfloat16/float16 on accelerators, float32 on CPU), `float32`, `float16`
            or `bfloat16`.
        device: `cuda`, `cuda:1`, `mps`, `cpu`...; default the first available of cuda, mps, cpu.
        tokenizer: a tokenizer folder or id when it differs from `model` (e.g. an adapter
            folder that saved its tokenizer).
        show_progress: a tqdm bar over batches inside one `generate` call.
        quantization: how the base model's weights are loaded. `auto`: as the adapter was
            trained (the settings `ambigdocs distill` records in the adapter folder),
            unquantised without them; `adapter`: the recorded settings, an error without them;
            `none`: unquantised (see `loading.resolve_quantization`).

    Prompts are tokenised by `encode_prompt`.
    """

    name = "hf"

    @property
    def has_chat_template(self) -> bool:
        """Whether the tokenizer can render chat messages."""
        return tokenizer_has_chat_template(self.tokenizer)

    def render(self, prompt: Prompt) -> str:
        """The text the model reads for one prompt (see `render_prompt`)."""
        return render_prompt(self.tokenizer, prompt, self.model_name)

    def encode(self, prompts: Sequence[Prompt]) -> list[list[int]]:
        """Token ids per prompt (see `encode_prompt`)."""
        return [encode_prompt(self.tokenizer, p, self.model_name) for p in prompts]

    def generate(
        self, prompts: Sequence[Prompt], *, max_new_tokens: int, return_scores: bool = False
    ) -> list[Generation]:
        """Greedy continuations of at most `max_new_tokens`, one per prompt (plain strings or chat
        message lists), in input order; with `return_scores`, `Generation.mean_nll` is the mean of
        -log p(token) under the model's raw (unprocessed) distribution over the generated tokens, up
        to and including the first EOS (later pads excluded)."""
        if not prompts:
            return []
        encoded = self.encode(prompts)
        for i, ids in enumerate(encoded):
            if not ids:
                raise ValueError(f"prompt {i}: empty after tokenisation")
        return self.in_batches(
            encoded,
            lambda ids: self._generate_batch(ids, max_new_tokens, return_scores),
            "generate",
        )

    def _generate_batch(
        self, batch_ids: list[list[int]], max_new_tokens: int, return_scores: bool
    ) -> list[Generation]:
        torch = self._torch
        padded = self.tokenizer.pad(
            {"input_ids": batch_ids}, padding=True, return_tensors="pt", padding_side="left"
        )
        input_ids = padded["input_ids"].to(self.device)
        attention_mask = padded["attention_mask"].to(self.device)
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                max_new_tokens=max_new_tokens,
                **GREEDY,
                pad_token_id=self.tokenizer.pad_token_id,
                return_dict_in_generate=True,
                output_logits=return_scores,
            )
        taken = out.sequences[:, input_ids.shape[1] :]
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        eos_ids = set(eos if isinstance(eos, (list, tuple)) else [eos]) - {None}
        nll = None
        if return_scores:
            # logits: one (batch, vocab) tensor per step; -log p of the token actually taken,
            # step by step so that no (batch, steps, vocab) copy is made.
            steps = [
                -torch.log_softmax(step.float(), dim=-1).gather(-1, taken[:, k : k + 1])[:, 0]
                for k, step in enumerate(out.logits)
            ]
            nll = torch.stack(steps, dim=1).tolist()
        results = []
        for row, tokens in enumerate(taken.tolist()):
            # The first EOS is generated (it counts and is scored) but is not text; what follows
            # it is padding.
            text_end = next((k for k, t in enumerate(tokens) if t in eos_ids), len(tokens))
            n = min(text_end + 1, len(tokens))
            text = self.tokenizer.decode(tokens[:text_end], skip_special_tokens=True)
            mean_nll = None if nll is None else (math.fsum(nll[row][:n]) / n if n else 0.0)
            results.append(Generation(text=text, num_tokens=n, mean_nll=mean_nll))
        return results

    def close(self) -> None:
        """Drops the model and frees accelerator memory."""
        self.model = None
        if self.device.startswith("cuda"):
            self._torch.cuda.empty_cache()
