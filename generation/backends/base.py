"""The interface every model back-end implements, and the loader that picks one.

A back-end turns prompts (plain strings or chat messages, see `generation.prompts`) into greedy
continuations. The runner (`ambigdocs answer`) and the data pipeline (`ambigdocs build
questions|expand`) use only this interface, so the three back-ends are interchangeable.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from generation.prompts import Prompt


@dataclass
class Generation:
    """One continuation: `text`, the decoded new tokens only (no prompt, no special tokens);
    `num_tokens`, how many new tokens were generated (None when the back-end cannot tell);
    `mean_nll`, the mean over them of -log p when `return_scores=True` was asked (answer
    expansion, docs/pipeline.md section 4)."""

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


def _backend_class(kind: str):
    """The back-end's class; importing its module imports no heavy library yet.

    Raises:
        ValueError: unknown kind.
    """
    if kind not in BACKENDS:
        raise ValueError(f"unknown backend {kind!r}; choose one of {sorted(BACKENDS)}")
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
        ValueError: a pair without `=` or without a key, or a value that is not YAML (named by
            its key only: the value may be a secret).
    """
    import yaml

    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--backend-option {pair!r}: expected KEY=VALUE")
        try:
            options[key.strip().replace("-", "_")] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ValueError(
                f"--backend-option {key.strip()}: the value does not parse as YAML (quote it)"
            ) from None
    return options


def load_backend(kind: str, model: str, **options) -> Backend:
    """Creates a back-end by name (`hf`, `vllm`, `openai`), importing only that back-end's
    module; `model` and the back-end specific `options` are its class's arguments.

    Raises:
        ValueError: unknown kind, or its extra is not installed (`MissingExtraError`).
    """
    backend = _backend_class(kind)
    if kind in BACKEND_EXTRAS:  # a plug-in kind (tests, user code) brings its own imports
        from generation.extras import require

        extra, modules = BACKEND_EXTRAS[kind]
        require(extra, *modules, what=f"the {kind} back-end")
    return backend(model, **options)


def check_backend_options(kind: str, options: dict) -> None:
    """Refuses (a ValueError listing the known ones) option names the back-end does not take,
    before anything is loaded; a back-end whose constructor takes `**kwargs` (vllm) accepts any.
    A missing extra is `load_backend`'s to report: a dry run needs none."""
    params = inspect.signature(_backend_class(kind)).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    known = sorted(name for name, p in params.items() if p.kind is p.KEYWORD_ONLY)
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(
            f"unknown --backend-option {', '.join(unknown)} for the {kind} back-end; "
            f"it takes: {', '.join(known)}"
        )


# Back-end options that do not change the outputs (speed, retries, progress, placement), or that
# must never be written to disk (credentials): left out of the settings a resume checks.
NON_RESULT_OPTIONS = frozenset(
    {
        "api_key",
        "max_concurrency",
        "max_retries",
        "backoff_base",
        "backoff_max",
        "batch_size",
        "show_progress",
        "timeout",
        "gpu_memory_utilization",
        "device",
    }
)


def result_options(options: dict) -> dict:
    """The back-end options that may change a model's outputs, JSON-safe and sorted: what a
    resumed run must repeat (`NON_RESULT_OPTIONS` and credential-like keys are left out;
    credentials inside the values, such as a URL's password, are masked)."""
    from generation import secrets
    from generation.io.resume import normalise

    kept = {
        key: options[key]
        for key in sorted(options)
        if key not in NON_RESULT_OPTIONS and not secrets.is_secret_key(key)
    }
    # YAML scalars may be dates etc.: record what JSON round-trips, so old == new compares.
    return secrets.scrub(normalise(kept))
