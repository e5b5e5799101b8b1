"""The one filter for secrets in everything the toolkit prints (`mask`) or records (`scrub`),
knowing a secret by its name, its shape and its value (docs/README.md, "The shared rules every
command follows").
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

MASK = "***"

# Environment variables whose values are credentials (read when masking, never stored).
SECRET_ENVIRONMENT = ("OPENAI_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")

# A name is secret when it holds `key`, `token` (not `tokens`, `tokenizer`) or one of these
# words. Not "auth" alone: `authors` is the name of a prompt format.
_SECRET_NAME = re.compile(r"key|token(?!s|iz)|secret|passw|credential|authorization")

# A key-like name followed by `=` or `:` (optionally quoted), then its value (not a placeholder
# in capitals, as in `KEY=VALUE`).
_NAMED_VALUE = re.compile(
    r"(?i)\b([\w-]*(?:key|token|secret|password|passwd|credentials?|authorization))\b"
    r"(\"?'?\s*[:=]\s*\"?'?)(?-i:(?![A-Z]+\b))([^\s\"',;&})\]]+)"
)
# `scheme://user:password@host` or `scheme://token@host`: the whole user info.
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@\"']+@")
# HTTP credentials (`Authorization: Basic dXNlcjpwdw==`) and well-known key shapes.
_CREDENTIAL = re.compile(
    r"(?i:\b(basic|bearer)\s+)(?=\S*(?:[a-z]\S*[A-Z]|[0-9=+/]))[A-Za-z0-9._~+/\-]{8,}=*"
    r"|\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}|\bhf_[A-Za-z0-9]{8,}"
)

_remembered: set[str] = set()


def is_secret_key(name: object) -> bool:
    """Whether an option or key name names a credential (`api_key`, `hf-token`, `Password`)."""
    return bool(_SECRET_NAME.search(str(name).lower()))


def remember(value: object) -> None:
    """Masks this value wherever it appears from now on (a value given under a secret name)."""
    text = str(value) if value is not None else ""
    if len(text) >= 4:
        _remembered.add(text)


def remember_options(values: Any) -> None:
    """Remembers the secret values among options, at any depth: a mapping's values under
    secret names, `KEY=VALUE` items with a secret KEY (`--backend-option api_key=...`), and in
    a command line the value after a secret-named flag, known or not (a misspelt `--api-keyy`)."""
    if isinstance(values, Mapping):
        for key, value in values.items():
            if is_secret_key(key) and isinstance(value, (str, int)):
                remember(value)
            else:
                remember_options(value)
    elif isinstance(values, (list, tuple)):
        previous = ""
        for item in values:
            if not isinstance(item, str):
                remember_options(item)
                continue
            key, sep, value = item.partition("=")
            if sep and is_secret_key(key.lstrip("-")):
                remember(value)
            elif previous.startswith("-") and is_secret_key(previous.lstrip("-")):
                remember(item)
            previous = item


def mask(text: str) -> str:
    """`text` with every secret it holds replaced by `***`, for a message about to be printed:
    remembered values and the API keys of the environment, URL user info (a user name is kept:
    `http://bob:***@host`), HTTP credentials, key-shaped words, and the values of key-like
    `name=value` pairs."""
    known = _remembered | {v for v in map(os.environ.get, SECRET_ENVIRONMENT) if v}
    for value in sorted((v for v in known if len(v) >= 4), key=len, reverse=True):
        text = text.replace(value, MASK)
    text = _URL_USERINFO.sub(_mask_userinfo, text)
    text = _CREDENTIAL.sub(lambda m: f"{m.group(1)} {MASK}" if m.group(1) else MASK, text)
    return _NAMED_VALUE.sub(lambda m: m.group(1) + m.group(2) + MASK, text)


def _mask_userinfo(match: re.Match) -> str:
    user, sep, _ = match.group(0)[len(match.group(1)) : -1].partition(":")
    return f"{match.group(1)}{user}:{MASK}@" if sep else f"{match.group(1)}{MASK}@"


def strip_url(url: str | None) -> str | None:
    """A URL without its user info and with key-like query values masked, to be recorded
    (`http://user:pw@host/v1?api-key=x` -> `http://host/v1?api-key=***`)."""
    if not url:
        return url
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, MASK if is_secret_key(k) else v) for k, v in pairs], safe="*")
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def scrub(value: Any) -> Any:
    """A copy of settings (a mapping, list, string or scalar, at any depth) fit to record: values
    under secret names become `***`, URLs lose their user info, secrets in strings are masked."""
    if isinstance(value, Mapping):
        return {
            k: (MASK if is_secret_key(k) and v not in (None, "") else scrub(v))
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return type(value)(scrub(v) for v in value)
    if isinstance(value, str):
        if _URL_USERINFO.match(value) or ("://" in value and "?" in value):
            return mask(strip_url(value))
        return mask(value)
    return value
