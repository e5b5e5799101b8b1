"""Resuming long jobs: one rule for every resumable command (docs/pipeline.md §7). The settings
that decide the results and fingerprints of the inputs are saved beside the work; a rerun with
other ones is refused, naming every difference; `--overwrite` starts again. `open_work` /
`finish_work` wrap the rule for jobs whose work file sits beside their output.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from generation.boundary import one_line
from generation.io.records import ResumableJsonl, atomic_write_json, read_json

# Files up to this size are fingerprinted by content (SHA-256); larger ones (the 13 GB passage
# file) by size and modification time, which is what a rewrite changes in practice.
DIGEST_MAX_BYTES = 256 * 2**20
# Files of a model folder read in full; the (large) weights are fingerprinted by size and time.
MODEL_METADATA_SUFFIXES = (".json", ".txt", ".model", ".py")


class ResumeRefused(ValueError):
    """Work on disk was made with other settings (or on other inputs) than this run's."""


def file_fingerprint(path: str | os.PathLike) -> str:
    """What tells one version of a file from another: its content digest, or size and mtime.

    Folders (a local model) get the digest of their small metadata files and the size and mtime
    of everything else, so that replaced weights at the same path are noticed.
    """
    path = Path(path)
    if path.is_dir():
        parts = [
            f"{child.relative_to(path)}={_one_file_fingerprint(child, small_only=True)}"
            for child in sorted(p for p in path.rglob("*") if p.is_file())
        ]
        return "dir-sha256:" + hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return _one_file_fingerprint(path)


def _one_file_fingerprint(path: Path, small_only: bool = False) -> str:
    stat = path.stat()
    readable = path.suffix in MODEL_METADATA_SUFFIXES if small_only else True
    if readable and stat.st_size <= DIGEST_MAX_BYTES:
        return "sha256:" + sha256_file(path)
    return f"size:{stat.st_size},mtime_ns:{stat.st_mtime_ns}"


def sha256_file(path: str | os.PathLike) -> str:
    """The hex SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(2**20):
            digest.update(block)
    return digest.hexdigest()


def records_digest(records: Iterable[Any]) -> str:
    """A digest of JSON-serialisable records (e.g. the data rows a run answers), order included."""
    digest = hashlib.sha256()
    for record in records:
        digest.update(json.dumps(record, sort_keys=True, ensure_ascii=False, default=str).encode())
        digest.update(b"\n")
    return "sha256:" + digest.hexdigest()


def settings_differences(saved: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """One `name: saved -> now` line per setting that differs (missing counts as None)."""
    keys = sorted(set(saved) | set(current))
    return [
        f"{key}: {saved.get(key)!r} -> {current.get(key)!r}"
        for key in keys
        if saved.get(key) != current.get(key)
    ]


def normalise(settings: Mapping[str, Any]) -> dict:
    """Settings as JSON round-trips them (tuples become lists), so that saved == current compares."""
    return json.loads(json.dumps(dict(settings), default=str))


def check_settings(
    settings_file: str | os.PathLike,
    settings: Mapping[str, Any],
    *,
    has_work: bool,
    what: str,
    defaults: Mapping[str, Any] | None = None,
    restart: str = "pass --overwrite to start again",
    record_to: str | os.PathLike | None = None,
) -> bool:
    """Decides whether existing work may be resumed, and records this run's settings.

    Args:
        settings_file: where the settings of the work are kept.
        settings: this run's settings (JSON-serialisable), input fingerprints included.
        has_work: whether finished work exists (an output, shards, a work file); the result.
        what: the work, as the message names it (usually the output path).
        defaults: values of settings that older work files did not record.
        restart: how the message says to start again instead.
        record_to: where this run's settings are recorded (default: `settings_file`).

    Raises:
        ResumeRefused: work exists and its settings are missing or differ; the message names
            each differing setting and `restart`.
    """
    settings_file, settings = Path(settings_file), normalise(settings)
    if has_work:
        if not settings_file.exists():
            raise ResumeRefused(
                f"{what} exists but records no settings ({settings_file.name} is missing), so "
                f"it cannot be resumed safely; {restart}"
            )
        saved = {**(defaults or {}), **read_saved_json(settings_file, "the recorded settings")}
        changed = settings_differences(saved, settings)
        if changed:
            raise ResumeRefused(
                f"{what} was made with other settings or inputs ({'; '.join(changed)}); rerun "
                f"with the old ones to resume it, or {restart}"
            )
    atomic_write_json(record_to or settings_file, settings)
    return has_work


def read_saved_json(
    path: str | os.PathLike, what: str, fields: Mapping[str, type | tuple[type, ...]] | None = None
) -> dict:
    """A JSON object a job saved beside its work (settings, a shard's or an index's record),
    with `fields` of the given types; one that cannot vouch for the work is refused, so the work
    is neither resumed nor silently redone.

    Raises:
        ResumeRefused: one line naming the file (`what` it holds) and `--overwrite`.
    """
    path = Path(path)
    try:
        saved = read_json(path)
    except ValueError as err:  # not UTF-8, not JSON, a lone surrogate, too deep
        raise unreadable_state(path, what, one_line(err)) from None
    if not isinstance(saved, dict):
        raise unreadable_state(path, what, f"not a JSON object but {type(saved).__name__}")
    for key, kind in (fields or {}).items():
        value = saved.get(key)
        # JSON true/false are Python ints: a count or a width that is a boolean is not one.
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
            raise unreadable_state(path, what, f"{key!r} is missing or not {_kind_name(kind)}")
    return saved


def unreadable_state(path: str | os.PathLike, what: str, why: str) -> ResumeRefused:
    """The one-line refusal for a saved state file that cannot vouch for its work."""
    return ResumeRefused(
        f"{path}: {what} cannot be read ({why}), so the work cannot be resumed safely; pass "
        "--overwrite to start again"
    )


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {dict: "a JSON object", list: "a JSON list", str: "a string", int: "an integer"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def check_kept_rows(
    rows: Iterable[Mapping],
    run: Mapping[str, Any],
    known: Collection,
    *,
    key: str,
    what: str,
) -> None:
    """Re-checks every kept row of resumed work against `run` (the run's own values of the fields
    each row records) and `known` (every `key` of the data, not only this run's `--limit`): a row
    that contradicts them (a file two runs wrote into) is refused, not silently kept or dropped,
    since which rows are stale cannot be told from one row. A field the row does not record
    contradicts nothing.

    Raises:
        ResumeRefused: one line naming the file (`what`), the row's key, the field and both values.
    """
    run = normalise(run)
    for row in rows:
        if row[key] not in known:
            raise ResumeRefused(
                f"{what}: kept row {key} {row[key]!r} is not in the data, so the file is not "
                "this data's work; pass --overwrite to start again"
            )
        for field, value in run.items():
            if field in row and normalise({field: row[field]})[field] != value:
                raise ResumeRefused(
                    f"{what}: kept row {key} {row[key]!r} was made with {field} "
                    f"{row[field]!r}, not this run's {value!r}, so the file mixes runs; pass "
                    "--overwrite to start again"
                )


def partial_path(output: str | os.PathLike) -> Path:
    """Where a job keeps its finished batches until it writes `output`."""
    return Path(f"{output}.partial.jsonl")


def meta_path(output: str | os.PathLike) -> Path:
    """The settings file `ambigdocs answer` keeps beside its output (`OUTPUT.meta.json`), which
    `ambigdocs evaluate` reads back for its provenance."""
    output = Path(output)
    return output.with_name(output.name + ".meta.json")


def _settings_path(output: str | os.PathLike) -> Path:
    return Path(f"{output}.partial.settings.json")


def open_work(
    output: str | os.PathLike,
    key: Callable[[dict], Any],
    settings: Mapping[str, Any],
    *,
    overwrite: bool = False,
    inputs: Sequence[str | os.PathLike] = (),
    defaults: Mapping[str, Any] | None = None,
) -> ResumableJsonl:
    """Opens (or creates) the work file of the job that writes `output`, by the rule of
    `check_settings`: `settings` (JSON-serialisable, what decides the results) and the
    fingerprints of the `inputs` files must match the work file's; `overwrite` discards it
    instead; `defaults` fills settings older work files did not record (only those this run
    records). The result's `done` holds the finished keys (`key` of each record).

    Raises:
        ResumeRefused: a work file from a run with other settings or inputs exists.
    """
    work = partial_path(output)
    if overwrite:
        discard_work(output)
    if work.exists() and not work.stat().st_size:
        work.unlink()  # an interrupted run that finished nothing: nothing to resume or protect
    fingerprints = {f"input {p}": file_fingerprint(p) for p in inputs}
    check_settings(
        _settings_path(output),
        {**settings, **fingerprints},
        has_work=work.exists(),
        what=str(work),
        defaults={k: v for k, v in (defaults or {}).items() if k in settings},
    )
    return ResumableJsonl(work, key=key)


def discard_work(output: str | os.PathLike) -> None:
    """Deletes a work file (and its settings) that will not be resumed."""
    partial_path(output).unlink(missing_ok=True)
    _settings_path(output).unlink(missing_ok=True)


def finish_work(output: str | os.PathLike, work: ResumableJsonl) -> None:
    """Closes and deletes the work file once `output` has been written."""
    work.close()
    discard_work(output)


def chunks(items: list, size: int) -> list[list]:
    """`items` cut into consecutive lists of `size` (the last may be shorter).

    Raises:
        ValueError: size < 1.
    """
    if size < 1:
        raise ValueError(f"chunk size must be >= 1, got {size}")
    return [items[i : i + size] for i in range(0, len(items), size)]
