"""The resumable work file of a model-calling stage (`questions`, `filter`, `expand`).

While a stage runs, each finished batch is appended to `<output>.partial.jsonl` (through
`generation.io.records.ResumableJsonl`, so a crash loses at most the batch in flight). A rerun with
the same settings skips the keys already there. Once the stage has written its output (atomically,
with `write_stage`) the work file is deleted.

The settings a run was started with are saved next to it (`<output>.partial.settings.json`): a
rerun with different settings (another model, threshold, ...) would otherwise mix two runs in one
output, so it is refused with a message that says which setting changed. The identity of the
input files (path, size, modification time) is saved too: work done on an input that has since
changed (a rerun of an earlier stage) is stale, so it is discarded, with a note, and the stage
starts again.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from generation.io.records import ResumableJsonl, atomic_write_json


def partial_path(output: str | os.PathLike) -> Path:
    """Where a stage keeps its finished batches until it writes `output`."""
    return Path(f"{output}.partial.jsonl")


def _settings_path(output: str | os.PathLike) -> Path:
    return Path(f"{output}.partial.settings.json")


def file_identity(path: str | os.PathLike) -> list:
    """What tells one version of a file from another: its absolute path, size and mtime."""
    stat = Path(path).stat()
    return [str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns]


def open_progress(
    output: str | os.PathLike,
    key: Callable[[dict], Any],
    settings: Mapping[str, Any],
    *,
    restart: bool = False,
    inputs: Sequence[str | os.PathLike] = (),
) -> ResumableJsonl:
    """Opens (or creates) the work file of the stage that writes `output`.

    Args:
        output: the stage's output file.
        key: the record key (e.g. the surface name).
        settings: JSON-serialisable settings that decide the results (model, prompt, ...).
        restart: discard an existing work file instead of resuming it.
        inputs: the files the results are computed from; work done on other versions of them
            is discarded.

    Returns:
        The `ResumableJsonl`; its `done` holds the finished keys.

    Raises:
        ValueError: a work file from a run with other settings exists (and not `restart`).
    """
    work, saved_path = partial_path(output), _settings_path(output)
    settings = json.loads(json.dumps(dict(settings)))  # normalise (tuples -> lists, ...)
    identity = [file_identity(p) for p in inputs]
    if restart:
        work.unlink(missing_ok=True)
        saved_path.unlink(missing_ok=True)
    if work.exists() and not work.stat().st_size:
        work.unlink()  # an interrupted run that finished nothing: nothing to resume or protect
    if work.exists() and saved_path.exists():
        saved = json.loads(saved_path.read_text(encoding="utf-8"))
        if saved.pop("_inputs", identity) != identity:
            print(f"{work}: its input files changed since; discarding that work", file=sys.stderr)
            work.unlink()
            saved = settings
        changed = sorted(k for k in set(saved) | set(settings) if saved.get(k) != settings.get(k))
        if changed:
            raise ValueError(
                f"{work} holds an interrupted run with other settings ({', '.join(changed)} "
                "changed); rerun with the old settings to resume it, or pass --restart"
            )
    atomic_write_json(saved_path, {**settings, "_inputs": identity})
    return ResumableJsonl(work, key=key)


def discard_progress(output: str | os.PathLike) -> None:
    """Deletes a work file (and its settings) that will not be resumed."""
    partial_path(output).unlink(missing_ok=True)
    _settings_path(output).unlink(missing_ok=True)


def finish_progress(output: str | os.PathLike, progress: ResumableJsonl) -> None:
    """Closes and deletes the work file once `output` has been written."""
    progress.close()
    discard_progress(output)


def chunks(items: list, size: int) -> list[list]:
    """`items` cut into consecutive lists of `size` (the last may be shorter).

    Raises:
        ValueError: size < 1.
    """
    if size < 1:
        raise ValueError(f"chunk size must be >= 1, got {size}")
    return [items[i : i + size] for i in range(0, len(items), size)]
