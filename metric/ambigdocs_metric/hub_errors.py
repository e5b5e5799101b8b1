"""Telling "the Hugging Face Hub cannot be reached" apart from other failures, in one line.

Loading a model or a file from the Hub fails in many layers (httpx, huggingface_hub,
transformers, datasets), each wrapping the one below, so the user sees a long chain of
exceptions. `hub_unreachable` finds out whether the root of such a chain is a network failure or
offline mode (as opposed to, say, a malformed file), and `root_cause` says what happened in one
line. Light on purpose: no heavy import, usable from the command line and the `evaluate` module.
"""

from __future__ import annotations

import importlib
import socket


def _network_error_types() -> tuple[type, ...]:
    types: list[type] = [ConnectionError, TimeoutError, socket.gaierror]
    # The HTTP clients the Hugging Face libraries use, whichever are installed.
    for module, names in (
        ("httpx2", ("TransportError",)),
        ("httpx", ("TransportError",)),
        ("requests.exceptions", ("ConnectionError", "Timeout")),
        # Offline mode, and "not in the cache and the Hub could not be asked".
        ("huggingface_hub.errors", ("OfflineModeIsEnabled", "LocalEntryNotFoundError")),
    ):
        try:
            found = importlib.import_module(module)
        except ImportError:
            continue
        types += [getattr(found, n) for n in names if hasattr(found, n)]
    return tuple(types)


def _chain(err: BaseException):
    """`err`, then what caused it, down to the root (each exception once)."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        yield err
        err = err.__cause__ or err.__context__


def hub_unreachable(err: BaseException) -> bool:
    """Whether `err` (or anything in its chain of causes) is a network failure or offline mode.

    Args:
        err: the exception raised while loading something from the Hub.

    Returns:
        True when the Hub (or the endpoint in `HF_ENDPOINT`) could not be reached, or offline
        mode (`HF_HUB_OFFLINE=1`) forbade asking it and the local cache did not have the files.
    """
    network = _network_error_types()
    return any(isinstance(e, network) for e in _chain(err))


def root_cause(err: BaseException, limit: int = 200) -> str:
    """`Type: message` of the root cause of `err`, on one line, at most `limit` characters.

    The root cause says what actually failed (`ConnectError: [Errno 111] Connection refused`);
    the layers above it only repeat it in other words.
    """
    root = list(_chain(err))[-1]
    text = " ".join(str(root).split()) or "no details"
    line = f"{type(root).__name__}: {text}"
    return line if len(line) <= limit else line[: limit - 3] + "..."
