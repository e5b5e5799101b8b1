"""Reading JSON and JSONL files: the one reader of the project, at its bottom layer.

Plain Python, so that the builder, the metric and `generation/` read files alike: integers of
any size stay exact; `NaN`, `Infinity`, numbers too large for a float, a key given twice, text
that is not UTF-8 or holds a lone UTF-16 surrogate, and nesting deeper than the parser can follow
are refused, each in one line naming the file, the line (and column, byte or field) where it can.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def gc_paused():
    """Pauses the cyclic garbage collector for a bulk job (reading or scoring many rows).

    Such jobs make hundreds of thousands of small objects and no cycles; with a large data set in
    memory, the collections these allocations trigger would walk it again and again (about half
    the scoring time).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def check_utf8(path: str | os.PathLike, data: bytes, first_line: int = 1) -> None:
    """Raises a ValueError naming the file, line and byte where `data` stops being UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        line_start = data.rfind(b"\n", 0, err.start) + 1
        line = first_line + data.count(b"\n", 0, err.start)
        raise ValueError(
            f"{path}, line {line}, byte {err.start - line_start + 1}: not valid UTF-8 "
            f"({data[err.start : err.end]!r})"
        ) from None


def check_text(value: Any, where: str, field: str = "") -> None:
    """The one check for text that is not text: a lone UTF-16 surrogate anywhere in `value`.

    Walks dicts and lists without recursion (deep values cannot overflow the stack).

    Args:
        value: a decoded JSON value (or any str/dict/list nest).
        where: the place, as messages name it (`file, line 3`, `example 2`).
        field: the value's own field name, when it has one.

    Raises:
        ValueError: naming `where` and the field (`documents[1].title`).
    """
    stack = [(value, field)]
    while stack:
        item, name = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(
                    f"{where}: field {name or '(value)'!r} holds a lone UTF-16 surrogate "
                    f"({item[:40]!r}), which is not text"
                ) from None
        elif isinstance(item, dict):
            for key, child in item.items():
                stack.append((key, name))
                stack.append((child, f"{name}.{key}" if name else str(key)))
        elif isinstance(item, list):
            stack.extend((child, f"{name}[{i}]") for i, child in enumerate(item))


# A JSON escape of a UTF-16 surrogate: only such an escape can make text that is not UTF-8.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:40]} is too large for a float")
    return value


def _one_key_once(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"key {key[:60]!r} appears twice in one object")
    return obj


_DECODER = json.JSONDecoder(
    object_pairs_hook=_one_key_once, parse_constant=_refuse_constant, parse_float=_finite_float
)


def loads(data: bytes | str, where: str) -> Any:
    """One JSON text (bytes must be UTF-8) decoded by the rules above; `where` is the file (and
    line), as messages name it.

    Raises:
        ValueError: not valid JSON, or against a rule above; names `where`, line and column.
    """
    text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as err:
        line = "" if ", line " in where else f", line {err.lineno}"
        raise ValueError(f"{where}{line}, column {err.colno}: not valid JSON ({err.msg})") from None
    except RecursionError:
        raise ValueError(
            f"{where}: JSON nested too deeply (more levels than the parser can follow)"
        ) from None
    except ValueError as err:  # a rule above; an integer of more than 4300 digits
        raise ValueError(f"{where}: {err}") from None


def read_json(path: str | os.PathLike) -> Any:
    """The JSON value a file holds, read by the rules of this module.

    Raises:
        ValueError: see `loads`; also text that is not UTF-8 or holds a lone surrogate.
    """
    data = Path(path).read_bytes()
    check_utf8(path, data)
    value = loads(data, str(path))
    if _SURROGATE_ESCAPE.search(data):
        check_text(value, str(path))
    return value


def read_records(path: str | os.PathLike) -> list[dict]:
    """The records, in file order, of a JSON array of objects or a JSONL file (one object a
    line), whichever it holds.

    Raises:
        ValueError: the file is not UTF-8, is neither format, or an element/line is not a JSON
            object or breaks a rule of this module; the message names the file and the line
            (and byte, column or field) or the element.
    """
    data = Path(path).read_bytes()
    check_utf8(path, data)
    if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"["):
        with gc_paused():  # many new dicts, no cycles: a collection would only walk them
            rows = loads(data, str(path))
        if not isinstance(rows, list):
            raise ValueError(f"{path}: expected a JSON array of objects or JSONL")
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise ValueError(f"{path}: element {i} is a {type(row).__name__}, not an object")
        if _SURROGATE_ESCAPE.search(data):
            for i, row in enumerate(rows):
                check_text(row, f"{path}: element {i}")
        return rows
    with gc_paused():
        return list(parse_jsonl_lines(path, data.splitlines()))


def iter_jsonl(path: str | os.PathLike) -> Iterator[dict]:
    """Yields the objects of a JSONL file, streaming; blank lines are skipped.

    Raises:
        ValueError: a line is not UTF-8, not a JSON object, or breaks a rule of this module (the
            message names the file and line number).
    """
    with Path(path).open("rb") as f:
        yield from parse_jsonl_lines(path, f)


def parse_jsonl_lines(path: str | os.PathLike, lines: Iterable[bytes]) -> Iterator[dict]:
    """The objects of JSONL `lines` (bytes, numbered from 1) read from `path`."""
    for lineno, line in enumerate(lines, 1):
        line = line.rstrip(b"\r\n")  # so that the parser's column is the line's column
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8-sig")
        except UnicodeDecodeError:
            check_utf8(path, line, first_line=lineno)
            raise
        row = loads(text, f"{path}, line {lineno}")
        if not isinstance(row, dict):
            raise ValueError(f"{path}, line {lineno}: a {type(row).__name__}, not an object")
        if _SURROGATE_ESCAPE.search(line):
            check_text(row, f"{path}, line {lineno}")
        yield row
