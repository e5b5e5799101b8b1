"""Telling "the Hugging Face Hub cannot be reached" apart from other failures, in one line.

Loading a model or a file from the Hub fails in many layers (httpx, huggingface_hub,
transformers, datasets), each wrapping the one below, so the user sees a long chain of
exceptions. `hub_unreachable` finds out whether the root of such a chain is a network failure or
offline mode (as opposed to, say, a malformed file), and `root_cause` says what happened in one
line. Light on purpose: no heavy import, usable from the command line and the `evaluate` module.

Without a network, the libraries retry every request with growing pauses (half a minute and a
screenful of "Retrying in 8s" lines before the same failure). `offline_unless_reachable`, called
once before the first Hub request of a job, tries one short TCP connection to the endpoint (or
to the proxy that would carry the request); when none can be made it switches this process to
offline mode, so that cached files still load and everything else fails at once, with the
error `hub_unreachable` recognises.
"""

from __future__ import annotations

import importlib
import os
import socket
import urllib.parse
import urllib.request

# How long the one connection attempt may take: a reachable endpoint answers in well under a
# second; a refused port or an unknown host fails at once.
CONNECT_TIMEOUT_S = 3.0
_checked: dict[str, str | None] = {}  # endpoint -> why it cannot be reached (None: it can)


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


def _connect_target(endpoint: str) -> tuple[str, int]:
    """(host, port) of the first hop to `endpoint`: the proxy when one applies, else itself."""
    url = urllib.parse.urlsplit(endpoint)
    host = url.hostname or ""
    proxies = urllib.request.getproxies()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if proxy and not urllib.request.proxy_bypass(host):
        proxied = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        return proxied.hostname or "", proxied.port or 8080
    return host, url.port or (443 if url.scheme == "https" else 80)


def unreachable_reason(endpoint: str | None = None) -> str | None:
    """Why the Hub endpoint cannot be reached (one connection attempt, remembered per endpoint
    for the life of the process), or None when a connection could be made.

    Args:
        endpoint: the Hub's address; default huggingface_hub's (`HF_ENDPOINT` when set).
    """
    if endpoint is None:
        from huggingface_hub import constants

        endpoint = constants.ENDPOINT
    if endpoint not in _checked:
        host, port = _connect_target(endpoint)
        try:
            socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
            _checked[endpoint] = None
        except OSError as err:  # refused, unknown host, no route, timed out
            _checked[endpoint] = f"{type(err).__name__}: {' '.join(str(err).split())}"
    return _checked[endpoint]


def offline_unless_reachable() -> str | None:
    """Switches this process to offline mode when the Hub cannot be reached; call it before
    the first Hub request of a job (loading a model, a tokenizer, a data set by id).

    Offline mode (`HF_HUB_OFFLINE=1`) makes huggingface_hub, transformers and datasets read the
    local cache only: a cached model still loads, and a missing one fails at once instead of
    after a minute of retries. Nothing is checked when offline mode is already on.

    Returns:
        Why the Hub cannot be reached (one line), or None when it can or offline mode was on.
    """
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return None
    why = unreachable_reason(constants.ENDPOINT)
    if why is not None:
        go_offline()
    return why


def go_offline() -> None:
    """Offline mode for this process and its children, in every Hugging Face library (each
    reads its own copy of the setting: huggingface_hub's constant, which transformers asks;
    datasets' config; the environment for what is imported later)."""
    import sys

    from huggingface_hub import constants

    os.environ["HF_HUB_OFFLINE"] = "1"
    constants.HF_HUB_OFFLINE = True
    config = sys.modules.get("datasets.config")
    if config is not None:
        config.HF_HUB_OFFLINE = config.HF_DATASETS_OFFLINE = True
