"""`ambigdocs answer --dry-run`: the exact model inputs of a run (`prompt`, and `prompt_text` for
chat messages to an open model), without a model or a request; only the tokenizer may load, for
chat prompts. The rows: docs/answering.md, "Dry run: the exact model inputs"."""

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
    """What the back-end receives for one prompt, as `prompt`: for openai the messages sent (a
    string as one user turn); for hf/vllm the text, or chat messages (after the move of a system
    turn the template rejects, so that trl can render them with the same template) with
    `prompt_text` the text the chat template renders.

    Raises:
        ValueError: chat messages for an open model without a tokenizer or chat template.
    """
    if backend_kind == "openai":
        from generation.backends.openai import to_messages

        return {"prompt": to_messages(prompt)}
    if isinstance(prompt, str):
        return {"prompt": prompt}
    if tokenizer is None:
        raise ValueError("chat prompts for an open model need its tokenizer (chat template)")
    from generation.backends.hf import render_chat

    text, messages = render_chat(tokenizer, prompt, model_name or "the model")
    return {"prompt": messages, "prompt_text": text}


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
    """One dry-run record per row, in data order: the row's fields (without `retrieved`, as in
    an answer output: `qid`, `question`, `ambiguous_entity`, the gold `documents`, ...), `docs`
    (the documents shown, in that order: `title`, `text`, `pid`), the model input (`prompt`, and
    `prompt_text` for chat messages to an open model; see `model_input`) and `extra`."""
    out = []
    for row in rows:
        qid = row["qid"]
        record = {k: v for k, v in row.items() if k != "retrieved"}
        record["docs"] = shown[qid]
        record.update(model_input(prompts[qid], backend_kind, tokenizer, model_name))
        record.update(extra or {})
        out.append(record)
    return out
