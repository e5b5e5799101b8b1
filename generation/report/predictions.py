"""Predictions as researchers hold them (`{qid, answer}` records), joined with their data set:
the one join that `ambigdocs evaluate` and notebooks use (README, "Scoring answers"). The joined
rows are what a full-row file would hold, so the scores are the same either way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from generation.io.records import read_json, read_records
from metric.ambigdocs_metric.scoring import parse_qid

# Where answers are found, in this order of preference.
ANSWER_FIELDS = ("answer", "prediction", "response", "output", "gen_answer")
# The fields of a data-set row that scoring reads; a record with all of them is a full row.
ROW_FIELDS = ("question", "ambiguous_entity", "documents")
# How many qids an error names.
SHOWN_QIDS = 5


def read_predictions(path: str | os.PathLike) -> list[dict]:
    """The records of a predictions or results file (JSON array or JSONL), or the answer rows of
    an lm-eval samples file.

    Raises:
        ValueError: a folder, a malformed file, one object wrapping the rows (names its keys),
            or a malformed lm-eval sample; the message names the file.
    """
    if Path(path).is_dir():
        raise ValueError(f"{path}: a folder, not a results file (JSON or JSONL)")
    try:
        records = read_records(path)
    except ValueError:
        try:  # one object over several lines, read by the one reader (bounded, exact numbers)
            whole = read_json(path)
        except ValueError:
            whole = None
        _refuse_wrapped(path, whole)
        raise
    if records and all(k in records[0] for k in ("doc_id", "doc", "filtered_resps")):  # lm-eval
        from generation.lm_eval_tasks.samples import samples_to_answers

        return samples_to_answers(path)
    if len(records) == 1:
        _refuse_wrapped(path, records[0])
    return records


def _refuse_wrapped(path: str | os.PathLike, obj: Any) -> None:
    """Refuses one object that holds the rows (`{"results": [...]}`) rather than being one."""
    if isinstance(obj, dict) and "qid" not in obj and not all(f in obj for f in ROW_FIELDS):
        raise ValueError(
            f"{path}: expected a list of rows (a JSON array or JSONL), got one object with "
            f"keys {sorted(obj)[:5]}; pass the list it holds"
        )


def _where(source: str, index: int, record: Mapping) -> str:
    return f"{source}: row {index} (qid {record.get('qid')})"


def answer_of(record: Mapping, where: str, answer_field: str | None = None) -> tuple[str, list]:
    """The answer text of one prediction, and the fields that hold it.

    Raises:
        ValueError: no answer field, two answer fields that disagree, or an answer that is not
            text (names `where` and the field).
    """
    fields = (answer_field,) if answer_field else ANSWER_FIELDS
    found = [f for f in fields if f in record]
    if not found:
        if answer_field:
            raise ValueError(f"{where} has no field {answer_field!r} (--answer-field)")
        raise ValueError(
            f"{where} has no answer: none of the fields {', '.join(map(repr, fields))}; "
            "name the field with --answer-field"
        )
    if len({str(record[f]) for f in found}) > 1:
        raise ValueError(
            f"{where} holds different answers in {', '.join(map(repr, found))}; choose one "
            "with --answer-field"
        )
    answer = record[found[0]]
    if not isinstance(answer, str):
        raise ValueError(f"{where}: field {found[0]!r} must be a string, got {answer!r:.60}")
    return answer, found


def check_unique_qids(records: Sequence[Mapping], source: str) -> None:
    """Refuses two records with the same qid: each would count twice in every mean.

    Raises:
        ValueError: names both rows and the option that allows it.
    """
    first: dict[str, int] = {}
    for i, record in enumerate(records):
        qid = record.get("qid")
        if qid is None:
            continue
        j = first.setdefault(str(qid), i)
        if j != i:
            raise ValueError(
                f"{source}: rows {j} and {i} both have qid {qid}; each question may be scored "
                "once (to score several answers to one question, pass --allow-duplicate-qids)"
            )


def _qids(values: Sequence, total: int) -> str:
    shown = ", ".join(map(str, values[:SHOWN_QIDS]))
    return shown + (", ..." if total > SHOWN_QIDS else "")


def join_predictions(
    predictions: str | os.PathLike | Sequence[Mapping],
    dataset: Any = None,
    *,
    answer_field: str | None = None,
    subset: bool = False,
    allow_duplicate_qids: bool = False,
    source: str | None = None,
) -> list[dict]:
    """Joins predictions with the data-set rows they answer; returns rows ready to score.

    Args:
        predictions: a predictions file (JSON, JSONL, lm-eval samples) or its records.
        dataset: the data set's rows (a `datasets.Dataset` or a list of row dicts), or None
            when each prediction is a whole row with its answer.
        answer_field: the field holding the answer (default: the first of `ANSWER_FIELDS`).
        subset: score the qids the predictions share with the data set; otherwise predictions
            that leave questions of the data set unanswered are refused.
        allow_duplicate_qids: accept several predictions for one qid.
        source: the name used in messages (default: the file's path).

    Returns:
        One row per prediction, in prediction order: the data set's row, the prediction's own
        fields (`docs`, `setting`, labels ...), and the answer as `gen_answer`.

    Raises:
        ValueError: a prediction without a qid or an answer, a qid the data set lacks, a
            repeated qid (unless allowed), or questions left unanswered (unless `subset`); the
            message names the source, the row and how many qids, with the first few.
    """
    if isinstance(predictions, (str, os.PathLike)):
        source = source or str(predictions)
        records = read_predictions(predictions)
    else:
        source = source or "predictions"
        records = list(predictions)
    if not records:
        raise ValueError(f"{source}: no predictions (the file is empty)")
    if not allow_duplicate_qids:
        check_unique_qids(records, source)
    answers = []
    for i, record in enumerate(records):
        answer, fields = answer_of(record, _where(source, i, record), answer_field)
        answers.append(answer)
        # The answer travels as `gen_answer` only, as in a full row.
        records[i] = {k: v for k, v in record.items() if k not in fields}
    if dataset is None:
        return [
            _full_row(r, a, source, i)
            for i, (r, a) in enumerate(zip(records, answers, strict=True))
        ]
    data = dataset.to_list() if hasattr(dataset, "to_list") else list(dataset)
    by_qid = index_by_qid(data, "the data set", "matching predictions")
    rows = []
    unknown = []
    for i, (record, answer) in enumerate(zip(records, answers, strict=True)):
        # The one parser's rule (an integer or a string; not a boolean or a float), then
        # matched as text, so that `"7"` from a tool that writes qids as strings finds 7.
        qid = parse_qid(record.get("qid"), _where(source, i, record))
        if qid is None:
            raise ValueError(f"{_where(source, i, record)} has no field 'qid'")
        row = by_qid.get(str(qid))
        if row is None:
            unknown.append(qid)
            continue
        own = {k: v for k, v in record.items() if k not in row and k not in ROW_FIELDS}
        rows.append({**row, **own, "gen_answer": answer})
    if unknown:
        raise ValueError(
            f"{source}: {len(unknown)} of {len(records)} qids are not in the data set (qids "
            f"{_qids(unknown, len(unknown))}): another split or data set?"
        )
    answered = {str(r.get("qid")) for r in records}
    missing = [row["qid"] for key, row in by_qid.items() if key not in answered]
    if missing and not subset:
        raise ValueError(
            f"{source}: answers {len(by_qid) - len(missing)} of the data set's {len(by_qid)} "
            f"questions; {len(missing)} missing (qids {_qids(missing, len(missing))}); "
            "score the shared questions with --subset"
        )
    return rows


def _full_row(record: Mapping, answer: str, source: str, index: int) -> dict:
    absent = [f for f in ROW_FIELDS if f not in record]
    if absent:
        raise ValueError(
            f"{_where(source, index, record)} has no {', '.join(map(repr, absent))}: a "
            "prediction of only a qid and an answer needs its data set (--data-dir DIR, "
            "--config sample or --dataset ID_OR_FOLDER)"
        )
    return {**record, "gen_answer": answer}


def index_by_qid(records: Sequence[Mapping], name: str, purpose: str) -> dict[str, dict]:
    """The records keyed by qid (as text); messages name them (`name`: a file, "the data set")
    and what needs the qids (`purpose`: "comparison").

    Raises:
        ValueError: a record without a qid, a qid seen twice, or no record at all.
    """
    out: dict[str, dict] = {}
    for i, rec in enumerate(records):
        qid = rec.get("qid")
        if qid is None:
            raise ValueError(f"{name}: example {i} has no field 'qid'; {purpose} needs qids")
        if str(qid) in out:
            raise ValueError(f"{name}: qid {qid} appears twice; {purpose} needs unique qids")
        out[str(qid)] = dict(rec)
    if not out:
        raise ValueError(f"{name}: no rows; {purpose} needs some")
    return out
