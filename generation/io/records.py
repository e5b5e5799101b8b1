"""Reading and writing the project's files, so that a crash (even SIGKILL) never loses finished
work nor leaves a half-written file: `atomic_write_*` write a temporary file beside the target,
fsync it and rename it over the target; `ResumableJsonl` appends and fsyncs batch by batch and
drops a torn last line on reopening. The reader itself is the metric's (re-exported here).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

# The writing rules (no symlinks, real names in errors), re-exported.
from generation.io.outputs import (  # noqa: F401
    current_umask,
    hidden_stem,
    make_parent,
    real_name_errors,
    refuse_unsafe_output,
)

# The one reader sits at the bottom layer, in the metric's folder, so that the builder reads
# files the same way without importing generation/.
from metric.ambigdocs_metric.json_files import (  # noqa: F401 (re-exported)
    check_text,
    check_utf8,
    gc_paused,
    iter_jsonl,
    loads,
    read_json,
    read_records,
)


def dumps_line(record: Any) -> str:
    """One JSONL line (with its newline); non-ASCII text is kept readable."""
    return json.dumps(record, ensure_ascii=False) + "\n"


def jsonl_bytes(records: Iterable[Any]) -> bytes:
    """JSONL of many records, fast (orjson), with exact numbers: a record orjson refuses (an
    integer beyond 64 bits) is written by the standard library instead."""
    import orjson

    def line(record: Any) -> bytes:
        try:
            return orjson.dumps(record) + b"\n"
        except orjson.JSONEncodeError:
            return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"

    return b"".join(map(line, records))


def _atomic_write(path: str | os.PathLike, write: Callable[[Any], None], mode: str = "w") -> None:
    """Writes through a temporary file beside `path`, then renames it over `path`.

    Raises:
        ValueError: `path` is a symbolic link (never written through, see io/outputs.py).
        OSError: naming `path`, never the temporary file (e.g. a full disk).
    """
    path = Path(path)
    refuse_unsafe_output(path)
    make_parent(path)
    with real_name_errors(path):
        # `.NAME.` + mkstemp's 8 characters + `.tmp`, cut to fit beside a long output name.
        prefix = hidden_stem(path.name, 1 + 8 + len(".tmp")) + "."
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=path.parent)
        try:
            # mkstemp makes the file 0600; the output gets the mode a plain open() would give.
            os.fchmod(fd, 0o666 & ~current_umask())
            with os.fdopen(fd, mode, **({"encoding": "utf-8"} if "b" not in mode else {})) as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Writes `text` to `path` atomically."""
    _atomic_write(path, lambda f: f.write(text))


def atomic_write_json(path: str | os.PathLike, obj: Any, indent: int | None = 2) -> None:
    """Writes `obj` as JSON to `path` atomically."""
    _atomic_write(
        path, lambda f: f.write(json.dumps(obj, ensure_ascii=False, indent=indent) + "\n")
    )


def atomic_write_binary(path: str | os.PathLike, write: Callable[[Any], None]) -> None:
    """Calls `write(f)` on a binary file that replaces `path` atomically once it returns."""
    _atomic_write(path, write, "wb")


def atomic_write_npy(path: str | os.PathLike, array: Any) -> None:
    """Saves a NumPy array (`np.save` format, never pickled) to `path` atomically."""
    import numpy as np

    _atomic_write(path, lambda f: np.save(f, array, allow_pickle=False), "wb")


def atomic_write_jsonl(path: str | os.PathLike, records: Iterable[Any]) -> None:
    """Writes `records` as JSONL to `path` atomically."""
    _atomic_write(path, lambda f: f.writelines(map(dumps_line, records)))


class ResumableJsonl:
    """An append-only JSONL output that survives crashes and resumes by key (`done`: the keys
    of the records already there); each `append` is durable before it returns.

    Args:
        path: the JSONL file; created (with its folder) if missing.
        key: maps a record to its key (qids, page titles, ...).
    """

    def __init__(self, path: str | os.PathLike, key: Callable[[dict], Any]):
        self.path = Path(path)
        self.key = key
        refuse_unsafe_output(self.path)  # appending would write into the link's target
        make_parent(self.path)
        self.records: list[dict] = self._load_and_repair()
        self.done: set = {key(r) for r in self.records}
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        self._file = os.fdopen(os.open(self.path, flags, 0o666), "a", encoding="utf-8")

    def _load_and_repair(self) -> list[dict]:
        """Reads what is there; cuts a torn last line so that appends start on a clean line."""
        if not self.path.exists():
            return []
        data = self.path.read_bytes()
        records, good_end, start = [], 0, 0
        while start < len(data):
            end = data.find(b"\n", start)
            if end == -1:  # no newline: the write of this line never finished
                break
            line = data[start:end]
            if line.strip():
                try:
                    records.append(loads(line, f"{self.path}, line {len(records) + 1}"))
                except ValueError:
                    # A complete line that is not JSON is not a crash artefact: refuse to guess.
                    if data.find(b"\n", end + 1) != -1 or data[end + 1 :].strip():
                        raise ValueError(
                            f"{self.path}: line {len(records) + 1} is not valid JSON; "
                            "fix or remove the file before resuming"
                        ) from None
                    break
            good_end = start = end + 1
        if good_end < len(data):
            with self.path.open("r+b") as f:
                f.truncate(good_end)
        return records

    def append(self, records: Iterable[dict]) -> None:
        """Appends records and makes them durable before returning."""
        records = list(records)
        with real_name_errors(self.path):
            self._file.writelines(map(dumps_line, records))
            self._file.flush()
            os.fsync(self._file.fileno())
        self.records.extend(records)
        self.done.update(self.key(r) for r in records)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ResumableJsonl:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
