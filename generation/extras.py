"""What an optional part of the toolkit needs installed (the extras of pyproject.toml), and the
one error when it is missing: `require` raises `MissingExtraError`, a ValueError the error
boundary reports in one line naming the extra to install.
"""

from __future__ import annotations

import importlib.util
import sys

# extra -> the import names it provides that the toolkit's code imports (pyproject.toml lists
# the distributions; tests/test_install.py checks the two agree).
EXTRAS: dict[str, tuple[str, ...]] = {
    "df1": ("torch", "transformers"),
    "answer": ("torch", "transformers", "accelerate", "jinja2", "openai"),
    "vllm": ("vllm",),
    "retrieval": ("torch", "accelerate", "sentence_transformers", "faiss"),
    "build": ("mwxml", "mwparserfromhell", "wikipediaapi"),
    "distill": ("torch", "transformers", "trl", "peft", "bitsandbytes"),
    "lm-eval": ("lm_eval",),
    "train": ("trl", "torch", "transformers", "peft"),  # peft: the recipes' LoRA
}


class MissingExtraError(ValueError):
    """A part of the toolkit needs modules that are not installed.

    Attributes:
        extra: the pyproject.toml extra that installs them.
        missing: the import names that were not found.
    """

    def __init__(self, what: str, extra: str, missing: list[str]):
        super().__init__(
            f"{what} needs {', '.join(missing)}, not installed: pip install 'ambigdocs[{extra}]'"
        )
        self.extra = extra
        self.missing = missing


def missing_modules(modules: tuple[str, ...] | list[str]) -> list[str]:
    """The names among `modules` that cannot be imported (found without importing them)."""
    return [m for m in modules if not _installed(m)]


def _installed(name: str) -> bool:
    if sys.modules.get(name) is not None:  # imported already (or a stand-in put there)
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # ValueError: `sys.modules[name] = None` blocks it
        return False


def require(extra: str, *modules: str, what: str | None = None) -> None:
    """Checks that the modules of `extra` (or only `modules`, a part of it) are installed.

    Raises:
        MissingExtraError: one or more are missing; the message names `what` needs them and the
            extra to install.
        KeyError: `extra` is not an extra, or `modules` not in it (a programming error).
    """
    needed = modules or EXTRAS[extra]
    if not set(needed) <= set(EXTRAS[extra]):
        raise KeyError(f"{sorted(set(needed) - set(EXTRAS[extra]))} not in the {extra!r} extra")
    missing = missing_modules(needed)
    if missing:
        raise MissingExtraError(what or extra, extra, missing)
