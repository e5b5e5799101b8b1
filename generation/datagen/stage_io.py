"""Stage files of the data pipeline: JSONL or Parquet by extension, written atomically, with
their statistics (`<output>.stats.json`); the resumable chunk runner and the stages' `main`.
"""

from __future__ import annotations

import operator
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from generation.io.outputs import check_output_file, hold_lock, refuse_unsafe_output, release_lock
from generation.io.records import _atomic_write, atomic_write_json, atomic_write_jsonl, read_records
from generation.io.resume import chunks, finish_work, open_work
from generation.options import run_command
from metric.ambigdocs_metric.scoring import parse_string


def _is_parquet(path: str | os.PathLike) -> bool:
    return str(path).endswith(".parquet")


def read_stage(path: str | os.PathLike) -> list[dict]:
    """Reads a stage file (`.parquet`, or JSONL / a JSON array) into a list of dicts."""
    if _is_parquet(path):
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    return read_records(path)


def check_output(path: str | os.PathLike, option: str = "--output") -> None:
    """Checks, before any work, that a stage can write its output file (and the files beside
    it) at `path`: not a folder, not a symbolic link, and no file where a folder of the path
    should be; then takes the output's lock until `write_stage` (one run per output).

    Raises:
        ValueError: names the option and the path.
        OutputBusy: another run is writing this output.
    """
    path = Path(path)
    refuse_unsafe_output(path, f"{option} {path}")
    check_output_file(path, f"{option} {path}")
    hold_lock(path, f"{option} {path}")


# Settings added to the model stages' work files later, and what the toolkit did before them.
SETTINGS_ADDED_LATER = {"backend_options": {}, "decoding": "greedy"}


@contextmanager
def chunked_work(
    output: str | os.PathLike,
    rows: Sequence[Mapping],
    work_for: Callable[[list], Callable[[list], list[dict]]],
    settings: Mapping,
    inputs: Sequence[str | os.PathLike],
    desc: str,
    *,
    chunk_size: int,
    overwrite: bool,
    show_progress: bool,
) -> Iterator[list[dict]]:
    """The resumable part of a model stage: yields each row's output record, in `rows` order.

    `work_for(todo)`, called only when an interrupted run left rows to do, gives the function
    (rows -> records keyed by `surface_name`) run over consecutive chunks of `chunk_size`; every
    finished chunk is appended to the work file (`generation.io.resume.open_work`, resumed only
    with the same `settings` and unchanged `inputs`), which is deleted when the `with` block
    (that writes the output) ends without error. `desc` labels the tqdm bar of `show_progress`.

    Raises:
        ValueError: chunk_size < 1 while there is work to do.
        ResumeRefused: the work file was made with other settings or inputs.
    """
    work = open_work(
        output,
        operator.itemgetter("surface_name"),
        settings,
        overwrite=overwrite,
        inputs=inputs,
        defaults=SETTINGS_ADDED_LATER,  # only the settings this run records are filled in
    )
    todo = [r for r in rows if r["surface_name"] not in work.done]
    run = work_for(todo) if todo else None
    batches = chunks(todo, chunk_size) if todo else []
    if show_progress:
        from tqdm.auto import tqdm

        batches = tqdm(batches, desc=desc, unit="chunk")
    for batch in batches:
        work.append(run(batch))
    by_key = {r["surface_name"]: r for r in work.records}
    yield [by_key[r["surface_name"]] for r in rows]
    finish_work(output, work)


def call_stage(run: Callable, options: Sequence) -> Any:
    """Calls a stage's `run`: with the fields of its one option dataclass, or with several."""
    return run(**asdict(options[0])) if len(options) == 1 else run(*options)


def stage_main(name: str, module: str) -> Callable[..., int]:
    """The `main(argv) -> int` of the build stage `name` defined in `module` (its `__name__`,
    `__main__` too): parses `argv` into the module's `OPTIONS` (its `DESCRIPTION` in `--help`)
    and calls its `run`, all looked up at the call, inside the error boundary."""

    def main(argv: Sequence[str] | None = None) -> int:
        stage = sys.modules[module]

        def call(*options):
            return call_stage(stage.run, options)

        prog = f"ambigdocs build {name}"
        return run_command(prog, stage.DESCRIPTION, stage.OPTIONS, call, argv)

    return main


def stats_path(path: str | os.PathLike) -> Path:
    return Path(f"{path}.stats.json")


def write_stage(
    path: str | os.PathLike, records: Iterable[Mapping], stats: Mapping[str, object], stage: str
) -> dict:
    """Writes a stage's output and its statistics atomically, and prints the statistics.

    Args:
        path: output file; `.parquet` writes Parquet, anything else JSONL.
        records: the output rows.
        stats: counts to save and print (e.g. {"ok": 10, "not_ambiguous": 2}).
        stage: the stage's name, for the printout.

    Returns:
        The statistics as saved (with `stage` and `output` added).
    """
    records = list(records)
    # The statistics file is written last and marks the output complete: drop the old one first,
    # so that a crash between the two writes never pairs a new output with old statistics.
    stats_path(path).unlink(missing_ok=True)
    if _is_parquet(path):
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist([dict(r) for r in records])
        _atomic_write(path, lambda f: pq.write_table(table, f), mode="wb")
    else:
        atomic_write_jsonl(path, records)
    saved = {"stage": stage, "output": str(path), **stats}
    atomic_write_json(stats_path(path), saved)
    release_lock(path)  # taken by check_output
    print(format_stats(saved))
    return saved


def status_counts(records: Iterable[Mapping], field: str = "status") -> dict[str, int]:
    """Counts of each value of `field`, with fractions, in first-seen order."""
    counts = Counter(r[field] for r in records)
    total = sum(counts.values())
    out: dict[str, object] = {"total": total}
    for status, n in counts.items():
        out.update({status: n, f"{status}_fraction": n / total})
    return out


def format_stats(stats: Mapping[str, object]) -> str:
    """A small aligned table of a stage's statistics."""
    width = max(map(len, stats))
    shown = {
        k: f"{v:.1%}" if k.endswith("_fraction") and isinstance(v, float) else v
        for k, v in stats.items()
    }
    return "\n".join(f"  {k.ljust(width)}  {v}" for k, v in shown.items())


def keyed_rows(rows: Sequence[Mapping], source: str) -> Iterator[tuple[Mapping, str]]:
    """Each row with its place for messages (`source: row i ('name')`), after checking that the
    rows are keyed by page: at least one row, every `surface_name` a non-empty string, none twice.

    Raises:
        ValueError: names the file and the row.
    """
    if not rows:
        raise ValueError(f"{source}: holds no rows")
    seen = set()
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise ValueError(f"{source}: row {i}: a {type(row).__name__}, not an object")
        sn = parse_string(row.get("surface_name"), f"{source}: row {i}", "surface_name", True)
        where = f"{source}: row {i} ({sn!r})"
        if sn in seen:
            raise ValueError(f"{where}: field 'surface_name' occurs twice")
        seen.add(sn)
        yield row, where
