"""The examples a run answers and the few-shot exemplars it shows, read and validated."""

from __future__ import annotations

from pathlib import Path

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
    """The split's rows as plain dicts, in data order, validated (give one of `data_dir`,
    `config`, `dataset`).

    Args:
        data_dir: a folder with the release's raw files.
        config: `sample` for the paper's worked examples.
        dataset: a JSON/JSONL file of rows, a `save_to_disk` folder, or a Hub dataset id.
        split: the split.
        retrieved: `ambigdocs retrieve` output (folder or JSONL) whose `retrieved` lists join
            the rows by qid.
        limit: keep only the first N rows (after validation of all).

    Raises:
        ValueError: no rows, a row lacks `qid`/`question`/`documents`, a qid is not a string
            or integer, or qids repeat (the message names the example and field); limit < 1.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be >= 1 (it keeps the first N examples), got {limit}")
    rows = _load(data_dir, config, dataset, split)
    if not rows:
        # An empty file or `[]` would otherwise "succeed" with an empty output.
        source = f"--data-dir {data_dir}" if data_dir else f"--config {config}" if config else None
        raise ValueError(f"{source or f'--dataset {dataset}'}, split {split!r}: no rows")
    validate_rows(rows)
    if retrieved:
        attach_retrieved(rows, retrieved, split)
    return rows if limit is None else rows[:limit]


def _load(data_dir, config, dataset, split) -> list[dict]:
    if data_dir or config:
        from ambigdocs import load_ambigdocs

        if data_dir and not Path(data_dir).is_dir():
            raise ValueError(f"--data-dir {data_dir}: not a folder")
        try:
            ds = load_ambigdocs(split, config=config or "default", data_dir=data_dir)
        except ValueError as err:
            raise _name_the_option(err, split, data_dir) from None
        return [dict(r) for r in ds]
    if Path(dataset).is_file():
        try:
            return read_records(dataset)
        except ValueError as err:
            raise _with_flag("--dataset", dataset, err) from None
    import datasets

    try:
        if Path(dataset).is_dir() and (Path(dataset) / "dataset_info.json").exists():
            ds = datasets.load_from_disk(dataset)
            ds = ds[split] if isinstance(ds, datasets.DatasetDict) else ds
        else:
            ds = datasets.load_dataset(dataset, split=split)
    except Exception as err:  # noqa: BLE001 - datasets raises many kinds; all mean "cannot load"
        cause = err.__cause__ or err
        reason = (str(cause).strip().splitlines() or [type(cause).__name__])[0][:300]
        raise ValueError(f"--dataset {dataset}: cannot be loaded ({reason})") from None
    return [dict(r) for r in ds]


def _name_the_option(err: ValueError, split: str, data_dir: str | None) -> ValueError:
    """The loader's error with the option it is about: `--split` for a split the data does not
    have (datasets says only 'Unknown split'), `--data-dir` for a folder without the files."""
    message = str(err)
    if message.startswith("Unknown split"):
        return ValueError(f"--split {split}: {message}")
    if data_dir and message.startswith(f"{data_dir}:"):
        return ValueError(f"--data-dir {message}")
    return err


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
        raise _with_flag("--retrieved", path, err) from None
    if not by_qid:
        raise ValueError(f"--retrieved {path}: no rows")
    for row in rows:
        if str(row["qid"]) in by_qid:
            row["retrieved"] = by_qid[str(row["qid"])]
            check_text(row["retrieved"], f"--retrieved {path} (qid={row['qid']!r})", "retrieved")


def _with_flag(flag: str, path: str | Path, err: ValueError) -> ValueError:
    """A file's error (which names the file, line and field) with the option that gave it."""
    message = str(err)
    return ValueError(message if message.startswith(flag) else f"{flag} {message}")


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
        raise _with_flag("--exemplars", path, err) from None
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
