"""The one reader of JSON/JSONL (metric/ambigdocs_metric/json_files.py) and the one parser of rows
and documents (scoring.parse_row / parse_documents), as every command meets them.

Hostile files: nesting 100,000 deep, a qid of 2**70, `NaN`/`Infinity`/`1e400`, a key given twice,
a lone surrogate, a 5,000-digit integer; each must end in one line naming the file (and line),
exit status 2, by both routes (`ambigdocs X` in process, `python -m ...` in a new interpreter).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from generation.cli import main as ambigdocs_main
from generation.io.records import iter_jsonl, jsonl_bytes, read_json, read_records
from metric.ambigdocs_metric import scoring

DEEP = 100_000


def sample_row(qid=1, **extra) -> dict:
    return {
        "qid": qid,
        "ambiguous_entity": "Michael Jordan",
        "question": "Who is Michael Jordan?",
        "documents": [
            {
                "title": "Michael Jordan (basketball)",
                "text": "He played.",
                "pid": "1",
                "answer": "a basketball player",
            },
            {
                "title": "Michael I. Jordan",
                "text": "He teaches.",
                "pid": "2",
                "answer": "a professor",
            },
        ],  # fmt: skip
        **extra,
    }


# name: (the text of one element, what the one line must say)
HOSTILE = {
    "deep array": ("[" * DEEP + "]" * DEEP, "nested too deeply"),
    "deep object": ('{"a":' * DEEP + "1" + "}" * DEEP, "nested too deeply"),
    "deep field": ('{"x": ' + "[" * DEEP + "]" * DEEP + "}", "nested too deeply"),
    "NaN": ('{"qid": NaN}', "NaN is not a JSON number"),
    "Infinity": ('{"qid": -Infinity}', "-Infinity is not a JSON number"),
    "huge float": ('{"x": 1e400}', "too large for a float"),
    "duplicate key": ('{"qid": 1, "qid": 2}', "key 'qid' appears twice"),
    "5000 digits": ('{"qid": ' + "7" * 5000 + "}", "digits"),
    "lone surrogate": ('{"question": "a\\ud800b"}', "lone UTF-16 surrogate"),
}


@pytest.mark.parametrize("case", HOSTILE)
@pytest.mark.parametrize("layout", ["json", "jsonl"])
def test_the_reader_refuses_hostile_json_naming_file_and_line(tmp_path, case, layout):
    element, fragment = HOSTILE[case]
    good = json.dumps(sample_row(5))
    path = tmp_path / f"rows.{layout}"
    if layout == "json":
        path.write_text(f"[{good},\n{element}]")
    else:
        path.write_text(f"{good}\n{element}\n")
    with pytest.raises(ValueError) as caught:
        read_records(path)
    message = str(caught.value)
    assert str(path) in message and fragment in message and "\n" not in message, message
    if layout == "jsonl":
        assert f"{path}, line 2" in message, message


def test_no_recursion_error_escapes_any_reader(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * DEEP + "]" * DEEP)
    for read in (read_records, read_json, lambda p: list(iter_jsonl(p))):
        with pytest.raises(ValueError, match="nested too deeply"):
            read(path)


def test_numbers_stay_exact_and_are_written_back_exactly(tmp_path):
    big = 2**70
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(sample_row(big)) + "\n" + json.dumps(sample_row(-(2**80))) + "\n")
    rows = read_records(path)
    assert rows[0]["qid"] == big and type(rows[0]["qid"]) is int
    assert rows[1]["qid"] == -(2**80)
    # orjson refuses integers beyond 64 bits: the writer falls back, exactly, for that record.
    lines = jsonl_bytes([{"qid": 3, "x": "é"}, {"qid": big}]).decode().splitlines()
    assert json.loads(lines[0]) == {"qid": 3, "x": "é"}
    assert lines[1] == '{"qid":1180591620717411303424}'
    assert str(big) == "1180591620717411303424"  # the literal above, derived independently


def test_a_bom_and_crlf_are_still_read(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(sample_row(1)).encode() + b"\r\n")
    assert read_records(path)[0]["qid"] == 1


# --- the one parser -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: r.pop("question"), "'question' is missing"),
        (lambda r: r.update(qid=2**70), "'qid' is outside int64"),
        (lambda r: r.update(qid="0x10"), "'qid' must be an integer, got str"),
        (lambda r: r["documents"][1].update(answer=None), "'documents[1].answer' must be a string"),
        (lambda r: r["documents"][0].pop("text"), "'documents[0].text' is missing"),
        (lambda r: r.update(documents={"title": ["a"], "text": "b"}), "'documents' must be a list"),
    ],
)  # fmt: skip
def test_the_builder_the_scorer_and_answer_share_one_parser(change, field):
    row = sample_row(7)
    change(row)
    with pytest.raises(ValueError, match=r"x, row 3: field " + _escape(field)):
        scoring.parse_row(row, "x, row 3", release=True)
    import ambigdocs

    with pytest.raises(ValueError, match=r"x, row 3: field " + _escape(field)):
        ambigdocs.parse_row(row, source="x", index=3)


def _escape(text: str) -> str:
    import re

    return re.escape(text)


def test_the_scorer_takes_what_the_release_refuses_and_scores_alike():
    # A string qid, an int pid and the dict-of-lists layout: the scorer's looser reading.
    row = sample_row("q-1")
    row["documents"][0]["pid"] = 1
    loose = scoring.parse_reference(row)
    assert loose.qid == "q-1" and loose.documents[0].pid == "1"
    old = dict(row, documents={k: [d[k] for d in row["documents"]] for k in row["documents"][0]})
    assert scoring.parse_reference(old) == loose
    with pytest.raises(ValueError, match="'qid' must be an integer"):
        scoring.parse_row(row, "x", release=True)


def test_the_builder_imports_nothing_from_generation(repo_root):
    code = (
        "import sys, ambigdocs; print(sorted(m for m in sys.modules if m.startswith('generation')))"
    )
    env = {**os.environ, "PYTHONPATH": str(repo_root)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_the_reader_layer_imports_no_scorer(repo_root):
    code = (
        "import sys, generation.io.records; print('metric.ambigdocs_metric.scoring' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(repo_root)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout.strip() == "False", done.stderr


# --- the commands, by both routes -----------------------------------------------------------------


def _run(route: str, argv: list[str], module: str, repo_root: Path, capsys) -> tuple[int, str]:
    if route == "cli":
        capsys.readouterr()
        status = ambigdocs_main(argv)
        return status, capsys.readouterr().err
    env = {**os.environ, "PYTHONPATH": str(repo_root), "HF_HUB_OFFLINE": "1"}
    rest = argv[2:] if argv[0] == "build" else argv[1:]
    done = subprocess.run(
        [sys.executable, "-m", module, *rest], capture_output=True, text=True, env=env
    )
    return done.returncode, done.stderr


def assert_one_line(status: int, err: str, *fragments) -> None:
    # datasets' progress bars ("Generating test split: ...") are not error lines.
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith("Generating ")]
    assert status == 2 and len(lines) == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert str(fragment) in lines[0], (fragment, lines[0])


def _deep_file(folder: Path, name: str) -> Path:
    path = folder / name
    path.write_text("[" * DEEP + "]" * DEEP)
    return path


@pytest.mark.parametrize("route", ["cli", "module"])
def test_evaluate_refuses_deep_json_in_one_line(tmp_path, repo_root, capsys, route):
    deep = _deep_file(tmp_path, "answers.json")
    argv = ["evaluate", str(deep), "--output-dir", str(tmp_path / "out"), "--no-df1"]
    status, err = _run(route, argv, "generation.report.evaluate", repo_root, capsys)
    assert_one_line(status, err, deep, "nested too deeply")


@pytest.mark.parametrize("route", ["cli", "module"])
def test_split_refuses_deep_json_in_one_line(tmp_path, repo_root, capsys, route):
    deep = tmp_path / "expanded.jsonl"
    deep.write_text('{"surface_name": "x", "d": ' + "[" * DEEP + "]" * DEEP + "}\n")
    argv = ["build", "split", "--input", str(deep), "--output-dir", str(tmp_path / "r"),
            "--no-progress"]  # fmt: skip
    status, err = _run(route, argv, "generation.datagen.split", repo_root, capsys)
    assert_one_line(status, err, f"{deep}, line 1", "nested too deeply")


@pytest.mark.parametrize("route", ["cli", "module"])
def test_export_refuses_deep_json_in_one_line(tmp_path, repo_root, capsys, route):
    raw = tmp_path / "raw"
    raw.mkdir()
    deep = _deep_file(raw, "test.json")
    argv = ["export", "--data-dir", str(raw), "--cache-dir", str(tmp_path / "c"),
            str(tmp_path / "export")]  # fmt: skip
    status, err = _run(route, argv, "generation.hub.export", repo_root, capsys)
    assert_one_line(status, err, deep, "nested too deeply")


@pytest.mark.parametrize("route", ["cli", "module"])
def test_push_refuses_deep_json_in_one_line(tmp_path, repo_root, capsys, route):
    deep = _deep_file(tmp_path, "test.json")
    argv = ["push", str(deep), "--repo-id", "me/x", "--split", "test", "--dry-run"]
    status, err = _run(route, argv, "generation.hub.push", repo_root, capsys)
    assert_one_line(status, err, deep, "nested too deeply")


@pytest.mark.parametrize("route", ["cli", "module"])
def test_evaluate_keeps_a_qid_beyond_64_bits(tmp_path, repo_root, capsys, route):
    big = 2**70
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps(sample_row(big, gen_answer="a professor")) + "\n")
    out = tmp_path / "out"
    argv = ["evaluate", str(answers), "--output-dir", str(out), "--no-df1", "--bootstrap", "0"]
    status, err = _run(route, argv, "generation.report.evaluate", repo_root, capsys)
    assert status == 0, err
    (record,) = read_records(out / "per_example.jsonl")
    assert record["qid"] == big


@pytest.mark.parametrize("route", ["cli", "module"])
def test_answer_refuses_a_duplicate_key_naming_the_line(tmp_path, repo_root, capsys, route):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(sample_row(1)) + "\n" + '{"qid": 2, "qid": 3}\n')
    argv = ["answer", "--model", "nobody/none", "--backend", "openai", "--dataset", str(rows),
            "--output", str(tmp_path / "o.jsonl"), "--dry-run"]  # fmt: skip
    status, err = _run(route, argv, "generation.answering.answer", repo_root, capsys)
    assert_one_line(status, err, f"{rows}, line 2", "key 'qid' appears twice")
