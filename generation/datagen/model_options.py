"""The model options of the stages that call a model (`questions`, `expand`): one definition of
the options and of the back-end they describe.

`backend_option` is a list of `KEY=VALUE` strings; a YAML mapping in `build all` is turned into
the same strings, so both routes record and check one form.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from generation.backends.base import BACKENDS, LazyBackend, parse_backend_options, result_options
from generation.boundary import one_line
from generation.options import check_at_least, option


@dataclass(kw_only=True)
class ModelOptions:
    backend: str = option(help="model back-end: hf, vllm or openai")
    model: str = option(help="model id or folder (hf, vllm), or the API model name (openai)")
    adapter: str | None = option(None, help="PEFT adapter folder (hf, vllm)")
    batch_size: int | None = option(None, help="back-end batch size (hf, vllm)")
    backend_option: list[str] = option(
        [],
        help="extra back-end options KEY=VALUE, e.g. dtype=bfloat16 or base_url=...; repeatable",
        metavar="KEY=VALUE",
    )

    def __post_init__(self):
        if isinstance(self.backend_option, Mapping):  # a YAML mapping
            self.backend_option = [f"{k}={_yaml_scalar(v)}" for k, v in self.backend_option.items()]
        check_at_least(self, 1, "batch_size")
        check_model_options(self)


def _yaml_scalar(value) -> str:
    """A value as `parse_backend_options` reads it back unchanged (YAML; JSON where needed)."""
    import yaml

    if isinstance(value, str):
        try:
            if yaml.safe_load(value) == value:
                return value
        except yaml.YAMLError:
            pass
    return json.dumps(value)


def backend_options(model: ModelOptions) -> dict:
    """The keyword options `load_backend` receives (batch size and adapter included)."""
    options = parse_backend_options(model.backend_option)
    if model.batch_size is not None:
        options["batch_size"] = model.batch_size
    if model.adapter:
        options["adapter"] = model.adapter
    return options


def check_model_options(model: ModelOptions) -> None:
    """Checks the back-end name and that the back-end takes every option given, without
    loading anything (the back-end's module is imported; its heavy imports are deferred).

    Raises:
        ValueError: an unknown back-end, a malformed `KEY=VALUE`, or an option the back-end
            does not take (naming it and the ones it takes).
    """
    if not isinstance(model.backend, str) or model.backend not in BACKENDS:
        raise ValueError(f"option 'backend': {model.backend!r} is not one of {sorted(BACKENDS)}")
    if not isinstance(model.backend_option, list) or not all(
        isinstance(p, str) for p in model.backend_option
    ):
        raise ValueError(
            f"option 'backend_option': {model.backend_option!r} is not a list of KEY=VALUE "
            "strings (or, in YAML, a mapping)"
        )
    from generation.backends.base import _backend_class

    options = backend_options(model)
    parameters = inspect.signature(_backend_class(model.backend)).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    taken = sorted(name for name in parameters if name != "model")
    for key in options:
        if key not in taken:
            flag = {"adapter": "--adapter", "batch_size": "--batch-size"}.get(key)
            flag = flag or f"--backend-option {key}=..."
            raise ValueError(
                f"{flag}: the {model.backend} back-end takes no option {key!r}; it takes {taken}"
            )


class StageBackend(LazyBackend):
    """The back-end of a stage, loaded on first use (a stage checks its input first, and a
    resume with nothing left to do loads no model); a model that cannot be loaded is bad input
    (one line, exit status 2), not a crash."""

    @property
    def loaded(self):
        try:
            return super().loaded
        except (OSError, ImportError) as err:
            kind, name, _ = self._args
            raise ValueError(f"{kind} model {name!r}: cannot load it ({one_line(err)})") from err


def make_backend(model: ModelOptions, defaults: Mapping | None = None) -> StageBackend:
    """The back-end the options name, loaded on first use.

    Args:
        model: the model options.
        defaults: back-end options the stage chose (e.g. a decoding's); `--backend-option`
            values given by the user take precedence.
    """
    return StageBackend(
        model.backend, model.model, **{**(defaults or {}), **backend_options(model)}
    )


def has_chat_template(model: ModelOptions, backend: LazyBackend | None = None) -> bool:
    """Whether the model renders chat messages, the rule of `ambigdocs answer`'s default prompt
    format. For hf and vllm it is read from the tokenizer alone (no weights are loaded, and a
    model that is not there is reported before any work); openai models are chat models; a
    plug-in back-end is asked after loading.

    Raises:
        ValueError: the tokenizer cannot be loaded (names the model).
    """
    if model.backend == "openai":
        return True
    if model.backend in ("hf", "vllm"):
        return _tokenizer_has_chat_template(model)
    loaded = (backend or make_backend(model)).loaded
    return bool(getattr(loaded, "has_chat_template", False))


def _tokenizer_has_chat_template(model: ModelOptions) -> bool:
    from transformers import AutoTokenizer

    options = parse_backend_options(model.backend_option)
    source = str(options.get("tokenizer") or model.model)
    local = Path(source).expanduser()
    if (local.is_absolute() or source.startswith((".", "~"))) and not local.is_dir():
        raise ValueError(f"--model {source!r}: no such model folder")
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            source, trust_remote_code=bool(options.get("trust_remote_code", False))
        )
    except (OSError, ValueError) as err:
        raise ValueError(
            f"--model {source!r}: cannot load its tokenizer ({one_line(err)})"
        ) from None
    return bool(getattr(tokenizer, "chat_template", None))


def check_model_loadable(model: ModelOptions) -> None:
    """Loads the tokenizer of an hf/vllm model (no weights), so that a model that is not there
    is reported before a long input scan rather than after it.

    Raises:
        ValueError: the tokenizer cannot be loaded (names the model).
    """
    if model.backend in ("hf", "vllm"):
        _tokenizer_has_chat_template(model)


def model_settings(model: ModelOptions) -> dict:
    """The model options that decide a stage's outputs (checked when a run resumes)."""
    return {
        "backend": model.backend,
        "model": model.model,
        "adapter": model.adapter,
        "backend_options": result_options(parse_backend_options(model.backend_option)),
    }


def check_prompt_format(prompt_format: str, formats: Sequence[str], exemplars) -> None:
    """Refuses a prompt format not in `formats`, and `--exemplars` with the `authors` format."""
    if prompt_format not in formats:
        raise ValueError(f"prompt_format must be one of {formats}, got {prompt_format!r}")
    if exemplars is not None and prompt_format == "authors":
        raise ValueError("the authors prompt format has fixed exemplars; drop --exemplars")


def no_chat_template(model: ModelOptions, instead: str) -> ValueError:
    """The error for `--prompt-format chat` asked of a model without a chat template."""
    return ValueError(
        f"--prompt-format chat: the model {model.model!r} has no chat template; "
        f"use --prompt-format {instead}"
    )


def prompt_field(prompt) -> dict:
    """A dry run's record of a model input: `prompt` (a string) or `messages` (chat messages)."""
    return {"prompt" if isinstance(prompt, str) else "messages": prompt}
