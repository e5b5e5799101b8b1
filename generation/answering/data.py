"""The examples a run answers and the few-shot exemplars it shows, read and validated."""

from __future__ import annotations

from pathlib import Path

from generation.io.data_sources import load_split_rows, with_flag
from generation.io.records import check_text, iter_jsonl, read_records
from metric.ambigdocs_metric.scoring import parse_documents, parse_qid, parse_string


def read_rows(
    *,
    data_dir: str | None = None,
    config: str | None = None,
    dataset: str | None = None,
    split: str = "test",
    retrieved: str | None = None,
    limit: int | None = None,
) -> list[dict]:
    """The split's rows of one of `data_dir`, `config`, `dataset` as plain dicts, in data order,
    validated; `retrieved` (`ambigdocs retrieve` output) joins them by qid; `limit` keeps the first
    N rows (after all are validated).

    Raises:
        ValueError: no rows, a row lacks `qid`/`question`/`documents`, a qid is not a string
            or integer, or qids repeat (the message names the example and field); limit < 1.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be >= 1 (it keeps the first N examples), got {limit}")
    rows = load_split_rows(data_dir=data_dir, config=config, dataset=dataset, split=split)
    validate_rows(rows)
    if retrieved:
        attach_retrieved(rows, retrieved, split)
    return rows if limit is None else rows[:limit]


def validate_rows(rows: list) -> None:
    """Raises ValueError naming the first bad example and field (see `read_rows`); the fields
    are checked by the project's one row parser (`scoring`), the text by its one text check."""
    seen = set()
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"example {i}: not an object")
        for field in ("qid", "question", "documents"):
            if row.get(field) is None:
                raise ValueError(f"example {i}: missing field {field!r}")
        qid = parse_qid(row["qid"], f"example {i}")
        where = f"example {i} (qid={qid!r})"
        check_text(row, where)
        parse_string(row["question"], where, "question", non_empty=True)
        if qid in seen:
            raise ValueError(f"example {i}: field 'qid' repeats qid={qid!r}")
        seen.add(qid)


def attach_retrieved(rows: list[dict], path: str, split: str) -> None:
    """Adds `retrieved` (by qid) from `ambigdocs retrieve` output: a folder or a JSONL file.

    Raises:
        ValueError: the file is missing, or a line of it has no `qid`.
    """
    path = Path(path)
    if path.is_dir():
        path = path / f"{split}.jsonl"
    if not path.is_file():
        raise ValueError(f"--retrieved {path}: no such file")
    by_qid = {}
    try:
        for n, record in enumerate(iter_jsonl(path), 1):
            if not isinstance(record, dict) or "qid" not in record:
                raise ValueError(f"--retrieved {path}: line {n} has no 'qid'")
            if str(record["qid"]) in by_qid:  # which of the two lists is meant? say so
                raise ValueError(f"--retrieved {path}: line {n} repeats qid {record['qid']!r}")
            by_qid[str(record["qid"])] = record.get("retrieved")
    except ValueError as err:
        raise with_flag("--retrieved", err) from None
    if not by_qid:
        raise ValueError(f"--retrieved {path}: no rows")
    for row in rows:
        if str(row["qid"]) in by_qid:
            row["retrieved"] = by_qid[str(row["qid"])]
            check_text(row["retrieved"], f"--retrieved {path} (qid={row['qid']!r})", "retrieved")


def data_source(data_dir: str | None, config: str | None, dataset: str | None) -> str:
    """A description of the input for the run's settings file."""
    if data_dir:
        return f"data_dir:{Path(data_dir).resolve()}"
    if config:
        return f"config:{config}"
    ds = Path(dataset)
    return f"dataset:{ds.resolve() if ds.exists() else dataset}"


def load_exemplars(path: str) -> list[dict]:
    """Few-shot exemplars from a JSON/JSONL file, validated; `docs` as a list of dicts.

    Raises:
        ValueError: no exemplars, or an exemplar without a string `question`/`answer` or with
            `docs` that are not a list of documents with string `title` and `text` (the message
            names the exemplar index and the field).
    """
    if not Path(path).is_file():
        kind = "a folder, not a file" if Path(path).is_dir() else "no such file"
        raise ValueError(f"--exemplars {path}: {kind}")
    try:
        records = read_records(path)
    except ValueError as err:
        raise with_flag("--exemplars", err) from None
    if not records:
        raise ValueError(f"--exemplars {path}: no exemplars")
    exemplars = []
    for i, ex in enumerate(records):
        where = f"--exemplars {path}: exemplar {i}"
        if not isinstance(ex, dict):
            raise ValueError(f"{where} is not an object")
        for field in ("question", "answer"):
            if not isinstance(ex.get(field), str):
                raise ValueError(f"{where}: field {field!r} must be a string")
        if ex.get("docs") is None:
            raise ValueError(f"{where}: missing field 'docs'")
        docs = parse_documents(ex["docs"], where, ("title", "text"), field="docs")
        exemplars.append({**ex, "docs": docs})
    return exemplars
