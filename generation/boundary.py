"""The one error boundary: every expected failure of a command ends in one line and status 2, on
both routes (the `ambigdocs` dispatcher and `python -m`); what counts as expected:
docs/README.md, "The shared rules every command follows". It imports nothing of the commands'.
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable, Sequence
from typing import Any

from generation import secrets


class UsageError(ValueError):
    """The command line does not parse (unknown flag, missing value, bad choice)."""


class ServiceError(RuntimeError):
    """A remote service (an API server) failed for good after its retries. Finished work is
    kept, so the run can be resumed: one line and exit status 1 (not bad input)."""


# Errors that are never a bug of the toolkit: what the user gave, or the machine it runs on.
EXPECTED = (ValueError, OSError, RecursionError, OverflowError, ServiceError)


def one_line(err: BaseException) -> str:
    """An exception as one line: a file-system error names its file(s) and says what went wrong
    (the shared writers of `generation/io` name the real output, never their temporary file);
    line breaks are folded."""
    if isinstance(err, OSError) and (err.filename or err.errno):
        text = _os_message(err)
    elif isinstance(err, RecursionError):
        text = f"the input is nested too deeply to read ({err})"
    elif getattr(err, "problem_mark", None) is not None:  # YAML: where, and what (no snippet)
        mark = err.problem_mark
        text = f"line {mark.line + 1}, column {mark.column + 1}: not valid YAML ({err.problem})"
    else:
        text = str(err)
    return " ".join(text.split()) or type(err).__name__


def _os_message(err: OSError) -> str:
    reason = err.strerror or errno.errorcode.get(err.errno or 0) or str(err) or type(err).__name__
    files = [f for f in (err.filename, err.filename2) if f is not None]
    return f"{' -> '.join(map(str, files))}: {reason}" if files else reason


def expected(err: BaseException) -> bool:
    """Whether `err` is bad input or a broken environment (one line) rather than a bug.

    An `OSError` is expected when the operating system or a library raised it (it carries an
    errno or a file name, or is a library's subclass such as an HTTP error): a built-in one made
    up by code with neither is a bug.
    """
    if isinstance(err, OSError):
        library = type(err).__module__ != "builtins"
        return bool(err.errno or err.filename) or library or _hub_unreachable(err)
    if isinstance(err, EXPECTED):
        return True
    module = type(err).__module__ or ""
    return module.startswith("yaml") or _hub_unreachable(err)


def _unwrapped(err: BaseException) -> BaseException:
    """The error to judge: a `datasets` wrapper (`DatasetGenerationError`, raised from what the
    builder found wrong in a file) stands for the error it wraps."""
    while type(err).__module__.startswith("datasets.") and err.__cause__ is not None:
        err = err.__cause__
    return err


def _hub_unreachable(err: BaseException) -> bool:
    # A ValueError already says what is wrong in the command's words (it may wrap a network
    # error, say "--model X: cannot be loaded"); before huggingface_hub is imported nothing
    # could have tried the Hub.
    if isinstance(err, ValueError) or "huggingface_hub" not in sys.modules:
        return False
    from metric.ambigdocs_metric.hub_errors import hub_unreachable

    return hub_unreachable(err)


def report(prog: str, err: BaseException) -> int:
    """Prints the one line for an expected failure (secrets masked) and returns its status."""
    text = one_line(err)
    if _hub_unreachable(err):
        from huggingface_hub import constants

        from metric.ambigdocs_metric.hub_errors import root_cause

        detail = "HF_HUB_OFFLINE is set" if constants.HF_HUB_OFFLINE else root_cause(err)
        text = (
            f"cannot reach the Hugging Face Hub at {constants.ENDPOINT} ({detail}), and what it "
            "needs is not in the local cache; give a local path or download it first"
        )
    elif isinstance(err, ServiceError):
        text += " The finished work is kept; run the same command again to resume."
    print(f"{prog}: error: {secrets.mask(' '.join(text.split()))}", file=sys.stderr)
    return 1 if isinstance(err, ServiceError) else 2


def guard(prog: str, call: Callable[[], Any], argv: Sequence[str] = ()) -> int:
    """Runs `call()` (its result is the exit status when it is an int, else 0), ending an
    expected failure in one line that starts with `prog` (2; 1 for a `ServiceError`; 130 when
    interrupted), the secret values of `argv` masked. A bug is raised unchanged."""
    secrets.remember_options(list(argv))
    # Without a network, a Hub request fails in seconds rather than after a minute of retries
    # (the metric's home for it: its QA model loading uses the same check).
    from metric.ambigdocs_metric.hub_errors import fail_fast_without_network

    fail_fast_without_network()
    try:
        status = call()
    except KeyboardInterrupt:
        # Ctrl-C: every long job keeps its finished work (append-only outputs, atomic renames),
        # so say so in one line; 130 is the shell's status for an interrupt.
        print(
            f"{prog}: interrupted; the finished work is kept: run the same command again to resume",
            file=sys.stderr,
        )
        return 130
    except Exception as err:
        cause = _unwrapped(err)
        if not expected(cause):
            raise
        return report(prog, cause)
    return status if isinstance(status, int) else 0
