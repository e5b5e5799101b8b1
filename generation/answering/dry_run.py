"""`ambigdocs answer --dry-run`: the exact model inputs of a run, without a model or a request.

Each example's row in the dry-run file holds what the back-end would receive: `prompt`, the
text an open model (hf, vllm) tokenises (its BOS is added by the tokenizer and is not part of the
text, except where a chat template writes it), or `messages`, the list the OpenAI API is sent.
Chat prompts for open models need the tokenizer (its chat template renders them); that is the
only thing a dry run may load, and only for `--prompt-format chat` (or no format given).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from generation.prompts import Prompt


def load_tokenizer(name: str, *, trust_remote_code: bool = False, why: str):
    """The tokenizer `name` (a folder or Hub id), or a one-line error saying why it is needed.

    Raises:
        ValueError: it cannot be loaded (missing, unreachable Hub, no tokenizer files).
    """
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(name), trust_remote_code=trust_remote_code)
    except Exception as err:  # noqa: BLE001 - any failure means the same thing to the user
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
        raise ValueError(
            f"{why} needs the tokenizer of {name} and it cannot be loaded here ({reason}); make "
            "it reachable, or pass --prompt-format plain or --prompt-format authors"
        ) from None


def model_input(prompt: Prompt, backend_kind: str, tokenizer=None, model_name: str = "") -> dict:
    """What the back-end receives for one prompt: `{"messages": [...]}` for openai (a string is
    sent as one user turn), `{"prompt": text}` for hf/vllm (chat messages rendered through the
    tokenizer's chat template with the generation prompt, as the back-ends do).

    Raises:
        ValueError: chat messages for an open model without a tokenizer or chat template.
    """
    if backend_kind == "openai":
        from generation.backends.openai import to_messages

        return {"messages": to_messages(prompt)}
    if isinstance(prompt, str):
        return {"prompt": prompt}
    if tokenizer is None:
        raise ValueError("chat prompts for an open model need its tokenizer (chat template)")
    from generation.backends.hf import render_prompt

    return {"prompt": render_prompt(tokenizer, prompt, model_name or "the model")}


def dry_run_rows(
    rows: Sequence[Mapping],
    shown: Mapping,
    prompts: Mapping,
    *,
    backend_kind: str,
    tokenizer=None,
    model_name: str = "",
    extra: Mapping | None = None,
) -> list[dict]:
    """One dry-run record per row, in data order: `qid`, `question`, `docs` (in the order
    shown: `title`, `text`, `pid`), the model input (`prompt` or `messages`) and `extra`."""
    out = []
    for row in rows:
        qid = row["qid"]
        record = {"qid": qid, "question": row["question"], "docs": shown[qid]}
        record.update(model_input(prompts[qid], backend_kind, tokenizer, model_name))
        record.update(extra or {})
        out.append(record)
    return out
