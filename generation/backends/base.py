"""The interface every model back-end implements, and the loader that picks one.

A back-end turns prompts (plain strings or chat messages, see `generation.prompts`) into greedy
continuations. The runner (`ambigdocs answer`) and the data pipeline (`ambigdocs build
questions|expand`) use only this interface, so the three back-ends are interchangeable.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from generation.prompts import Prompt


@dataclass
class Generation:
    """One continuation.

    Attributes:
        text: the decoded new tokens only (no prompt), special tokens removed.
        num_tokens: how many new tokens were generated (None when the back-end cannot tell).
        mean_nll: the length-normalised negative log-likelihood of the generated tokens
            (mean over tokens of -log p), when `return_scores=True` was asked; used by answer
            expansion (docs/pipeline.md section 4).
    """

    text: str
    num_tokens: int | None = None
    mean_nll: float | None = None


@runtime_checkable
class Backend(Protocol):
    """What `ambigdocs answer` and `ambigdocs build` need from a model."""

    name: str

    def generate(
        self, prompts: Sequence[Prompt], *, max_new_tokens: int, return_scores: bool = False
    ) -> list[Generation]:
        """Greedy continuations, one per prompt, in input order."""
        ...

    def close(self) -> None:
        """Releases the model (GPU memory, HTTP sessions)."""
        ...


# kind -> "module:factory"; the factory takes (model, **options) and returns a Backend.
BACKENDS = {
    "hf": "generation.backends.hf:HFBackend",
    "vllm": "generation.backends.vllm:VLLMBackend",
    "openai": "generation.backends.openai:OpenAIBackend",
}
# back-end -> (the extra that installs it, the modules it imports): generation/extras.py
BACKEND_EXTRAS = {
    "hf": ("answer", ("torch", "transformers", "accelerate")),
    "vllm": ("vllm", ("vllm",)),
    "openai": ("answer", ("openai",)),
}


def _backend_factory(kind: str):
    """The back-end's class, after checking that its extra is installed.

    Raises:
        ValueError: unknown kind; `MissingExtraError` (a ValueError) when its extra is missing.
    """
    if kind not in BACKENDS:
        raise ValueError(f"unknown backend {kind!r}; choose one of {sorted(BACKENDS)}")
    from generation.extras import require

    extra, modules = BACKEND_EXTRAS[kind]
    require(extra, *modules, what=f"the {kind} back-end")
    module_name, factory = BACKENDS[kind].split(":")
    return getattr(importlib.import_module(module_name), factory)


class LazyBackend:
    """A back-end that is created on its first `generate`: a stage can check its input, or find
    that every item is already done, before paying for loading a model.

    Args:
        kind, model, **options: as for `load_backend`.
    """

    def __init__(self, kind: str, model: str, **options):
        if kind not in BACKENDS:
            raise ValueError(f"unknown backend {kind!r}; choose one of {sorted(BACKENDS)}")
        self.name = kind
        self._args = (kind, model, options)
        self._backend: Backend | None = None

    @property
    def loaded(self) -> Backend:
        if self._backend is None:
            kind, model, options = self._args
            self._backend = load_backend(kind, model, **options)
        return self._backend

    def generate(
        self, prompts: Sequence[Prompt], *, max_new_tokens: int, return_scores: bool = False
    ) -> list[Generation]:
        return self.loaded.generate(
            prompts, max_new_tokens=max_new_tokens, return_scores=return_scores
        )

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None


def parse_backend_options(pairs: Sequence[str]) -> dict:
    """`--backend-option KEY=VALUE` strings to keyword options for `load_backend`; values are
    read as YAML scalars (8 -> int, true -> bool, 1e-3 -> float, else the string), dashes in
    keys become underscores.

    Raises:
        ValueError: a pair without `=` or without a key.
    """
    import yaml

    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--backend-option {pair!r}: expected KEY=VALUE")
        options[key.strip().replace("-", "_")] = yaml.safe_load(value)
    return options


def load_backend(kind: str, model: str, **options) -> Backend:
    """Creates a back-end by name, importing only that back-end's module.

    Args:
        kind: `hf`, `vllm` or `openai`.
        model: a local path or Hub id (hf, vllm), or the API model name (openai).
        **options: back-end specific (batch size, adapter, dtype, base URL, concurrency, ...).

    Raises:
        ValueError: unknown kind, or its extra is not installed (`MissingExtraError`).
    """
    return _backend_factory(kind)(model, **options)


def check_backend_options(kind: str, options: dict) -> None:
    """Refuses option names the back-end does not take, before anything is loaded.

    A back-end whose constructor takes `**kwargs` (vllm passes them to `vllm.LLM`) accepts any.

    Raises:
        ValueError: an unknown kind or option (the message lists the known options), or the
            back-end's extra is not installed (`MissingExtraError`).
    """
    params = inspect.signature(_backend_factory(kind)).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    known = sorted(name for name, p in params.items() if p.kind is p.KEYWORD_ONLY)
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(
            f"unknown --backend-option {', '.join(unknown)} for the {kind} back-end; "
            f"it takes: {', '.join(known)}"
        )


# --- secrets -------------------------------------------------------------------------------

SECRET_WORDS = ("secret", "password", "passwd", "credential")

# Things that look like credentials in free text: OpenAI/Anthropic-style `sk-...` keys, Hugging
# Face `hf_...` tokens, bearer tokens, and `key=value` pairs whose name says key/token/secret.
_KEY_LIKE = re.compile(
    r"(?:\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}|\bhf_[A-Za-z0-9]{8,}"
    r"|(?i:bearer)\s+[A-Za-z0-9._~+/\-]{8,}=*"
    r"|(?i:(?:api[_-]?key|token|secret|password|passwd)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;&]{4,})"
)

# The password of a URL's user info: `scheme://user:PASSWORD@host`.
_URL_PASSWORD = re.compile(r"(://[^/\s:@]+:)[^@\s/]+@")


def looks_secret(key: str) -> bool:
    """Whether an option name looks like a credential (`api_key`, `hf_token`, `*secret*`, ...)."""
    key = key.lower()
    return key.endswith(("key", "token")) or any(word in key for word in SECRET_WORDS)


def mask_secrets(text: str, secrets=()) -> str:
    """`text` with the given secrets and anything key-like replaced by `***`.

    Args:
        text: a message about to be printed or written.
        secrets: values known to be secret (the configured API key); empty ones are ignored.
    """
    for secret in sorted(
        {str(s) for s in secrets if s and len(str(s)) >= 4}, key=len, reverse=True
    ):
        text = text.replace(secret, "***")

    def _mask(match: re.Match) -> str:
        found = match.group(0)
        # Keep a `name=` prefix readable; mask the value.
        prefix = re.match(
            r"(?i:(?:api[_-]?key|token|secret|password|passwd)[\"']?\s*[:=]\s*[\"']?)", found
        )
        return (prefix.group(0) if prefix else "") + "***"

    text = _URL_PASSWORD.sub(r"\1***@", text)
    return _KEY_LIKE.sub(_mask, text)


def strip_url_credentials(url: str | None) -> str | None:
    """A URL without user name and password (`http://user:pw@host` -> `http://host`) and with
    the values of key-like query parameters masked, safe to write to a settings file."""
    if not url:
        return url
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, "***" if looks_secret(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
