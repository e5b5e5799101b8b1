"""The files of an `ambigdocs answer` run: OUTPUT (the answers, JSONL), each process's shard
`OUTPUT.part<rank>.jsonl` (merged into OUTPUT at the end) and the settings `OUTPUT.meta.json`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from generation.io.records import ResumableJsonl, atomic_write_jsonl, iter_jsonl
from generation.io.resume import meta_path

# A row is finished only with all of these (a line cut to `{"qid": 1020}` is not).
FINISHED_FIELDS = ("qid", "question", "docs", "gen_answer", "setting", "model", "seed")


def part_path(output: Path, rank: int) -> Path:
    return output.with_name(f"{output.name}.part{rank}.jsonl")


def existing_parts(output: Path) -> list[Path]:
    return sorted(output.parent.glob(f"{output.name}.part*.jsonl"))


def has_work(output: Path) -> bool:
    """Whether finished work may exist: a non-empty output or any shard."""
    return (output.is_file() and output.stat().st_size > 0) or bool(existing_parts(output))


def discard_output(output: Path) -> None:
    """Deletes the output, its settings and its shards (`--overwrite`).

    Raises:
        ValueError: the output path is a folder (it is never deleted).
    """
    if output.is_dir():
        raise ValueError(f"--output {output}: is a folder; --overwrite deletes files only")
    for path in [output, meta_path(output), *existing_parts(output)]:
        path.unlink(missing_ok=True)


def _qid_or_none(record) -> object:
    return record.get("qid") if isinstance(record, dict) else None


def repair(output: Path) -> None:
    """Cuts torn last lines left by a killed run from OUTPUT and its shards."""
    for path in [output, *existing_parts(output)]:
        if path.exists():
            ResumableJsonl(path, key=_qid_or_none).close()


def is_finished(record: dict) -> bool:
    """Whether an output line is a whole answer (all `FINISHED_FIELDS`, a string answer)."""
    return all(k in record for k in FINISHED_FIELDS) and isinstance(record["gen_answer"], str)


def read_done(output: Path) -> list[dict]:
    """The finished rows in OUTPUT and all its shards (the first finished one of a qid wins);
    unfinished lines are left out, so their examples are answered again.

    Raises:
        ValueError: a line that is not an object with a string or integer `qid` (the file is
            not an output of this command); names the file and line.
    """
    rows, seen = [], set()
    for path in [output, *existing_parts(output)]:
        if not path.exists():
            continue
        for n, row in enumerate(iter_jsonl(path), 1):
            qid = _qid_or_none(row)
            if isinstance(qid, bool) or not isinstance(qid, (str, int)):
                raise ValueError(
                    f"{path} line {n}: no string or integer 'qid', so it is not an output of "
                    "`ambigdocs answer`; choose another --output or pass --overwrite"
                )
            if qid not in seen and is_finished(row):
                seen.add(qid)
                rows.append(row)
    return rows


def merge_output(output: Path, order: Sequence) -> int:
    """Rewrites OUTPUT atomically with all finished rows in data order (rows of qids not in
    `order`, e.g. after a later run with a smaller --limit, after the others), then drops the
    shards; returns the number of rows."""
    rows = read_done(output)
    rank = {qid: i for i, qid in enumerate(order)}
    rows.sort(key=lambda r: rank.get(r["qid"], len(rank)))
    atomic_write_jsonl(output, rows)
    for path in existing_parts(output):
        path.unlink()
    return len(rows)


def write_results_json(output: Path, export: str) -> None:
    """The authors' results JSON: a JSON list of the output's rows."""
    from generation.io.records import atomic_write_json

    atomic_write_json(export, list(iter_jsonl(output)))
