"""Telling "the Hugging Face Hub cannot be reached" apart from other failures, in one line.

`hub_unreachable` finds whether the root of a chain of library exceptions is a network failure
or offline mode, `root_cause` says what happened in one line. Without a network huggingface_hub
retries for half a minute; `fail_fast_without_network` puts one short connection attempt in
front of its requests, so that cached files still load and everything else fails in seconds.
Light on purpose: no heavy import, usable from the command line and the `evaluate` module.
"""

from __future__ import annotations

import importlib
import os
import socket
import time
import urllib.parse
import urllib.request

# How long the one connection attempt may take: a reachable endpoint answers in well under a
# second; a refused port or an unknown host fails at once.
CONNECT_TIMEOUT_S = 3.0
# A result is trusted this long: a network that comes back is noticed (a notebook outlives a
# dropped connection), and a job does not pay one attempt per request.
RECHECK_S = 30.0
_checked: dict[tuple[str, int], tuple[float, str | None]] = {}


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
    """`err`, then what caused it, down to the root (each exception once). An exception
    raised `from None` ends the chain: it already says what went wrong, in its own words."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        yield err
        err = err.__cause__ or (None if err.__suppress_context__ else err.__context__)


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


def _connect_target(url: str) -> tuple[str, int]:
    """(host, port) of the first hop to `url`: the proxy when one applies, else its host."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if proxy and not urllib.request.proxy_bypass(host):
        proxied = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        return proxied.hostname or "", proxied.port or 8080
    return host, parts.port or (443 if parts.scheme == "https" else 80)


def unreachable_reason(url: str | None = None) -> str | None:
    """Why `url`'s host cannot be reached (one connection attempt, remembered for
    `RECHECK_S` seconds), or None when a connection could be made.

    Args:
        url: an address; default the Hub's (`HF_ENDPOINT` when set).
    """
    if url is None:
        from huggingface_hub import constants

        url = constants.ENDPOINT
    target = _connect_target(url)
    now = time.monotonic()
    seen = _checked.get(target)
    if seen is None or now - seen[0] > RECHECK_S:
        try:
            socket.create_connection(target, timeout=CONNECT_TIMEOUT_S).close()
            seen = (now, None)
        except OSError as err:  # refused, unknown host, no route, timed out
            detail = " ".join(str(err).split()) or "no details"
            seen = (
                now,
                f"cannot connect to {target[0]}:{target[1]} ({type(err).__name__}: {detail})",
            )
        _checked[target] = seen
    return seen[1]


def _before_request(request) -> None:
    """huggingface_hub's first request hook: refuses a request to a host that cannot be
    reached, as offline mode would (never retried; the local cache is tried instead)."""
    why = unreachable_reason(str(request.url))
    if why is not None:
        from huggingface_hub.errors import OfflineModeIsEnabled

        raise OfflineModeIsEnabled(f"{why}; not retried")


def fail_fast_without_network() -> None:
    """Puts the connection check in front of every request huggingface_hub makes in this
    process (transformers and datasets go through it too); installed once, kept by later
    calls. A reachable Hub costs one connection a minute; an unreachable one fails in seconds.
    """
    if os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE"):
        return  # offline mode: no request is made, and nothing need be imported for it
    import huggingface_hub
    from huggingface_hub.utils import _http

    current = getattr(_http, "_GLOBAL_CLIENT_FACTORY", _http.default_client_factory)
    if getattr(current, "fails_fast", False):
        return

    def factory():
        client = current()
        client.event_hooks = {
            **client.event_hooks,
            "request": [_before_request, *client.event_hooks.get("request", [])],
        }
        return client

    factory.fails_fast = True
    huggingface_hub.set_client_factory(factory)
