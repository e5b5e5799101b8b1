"""Resume re-checks every kept row against the run (generation/io/resume.check_kept_rows).

The recorded settings vouch for an output as a whole; a kept row whose own `model`, `setting`,
`seed` or prompt format contradicts the run, or whose qid is not in the data, means the file
mixes runs. It is refused (one line naming the file, qid, field and both values, exit 2) by both
routes; an unfinished row is still answered again; an honest resume still works.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from generation.cli import main as ambigdocs_main  # noqa: E402
from generation.io.records import atomic_write_jsonl, iter_jsonl  # noqa: E402
from generation.io.resume import ResumeRefused, check_kept_rows  # noqa: E402

RUN = {"model": "m", "setting": "gold-only", "seed": 0, "prompt_format": "plain"}


def test_rows_that_agree_are_kept_and_missing_fields_contradict_nothing():
    rows = [{"qid": 1, **RUN}, {"qid": 2, "model": "m"}, {"qid": 3}]
    check_kept_rows(rows, RUN, {1, 2, 3}, key="qid", what="out.jsonl")


@pytest.mark.parametrize(
    ("field", "value"),
    [("model", "other/model"), ("setting", "retrieved-only"), ("seed", 1), ("seed", "0"),
     ("prompt_format", "chat")],
)  # fmt: skip
def test_a_row_that_contradicts_the_run_is_refused(field, value):
    rows = [{"qid": 1, **RUN}, {"qid": 2, **RUN, field: value}]
    with pytest.raises(ResumeRefused) as caught:
        check_kept_rows(rows, RUN, {1, 2}, key="qid", what="out.jsonl")
    message = str(caught.value)
    assert message.startswith("out.jsonl: kept row qid 2 ")
    assert f"{field} {value!r}, not this run's {RUN[field]!r}" in message
    assert "--overwrite" in message


def test_a_row_whose_qid_is_not_in_the_data_is_refused():
    with pytest.raises(ResumeRefused, match=r"out\.jsonl: kept row qid 99 is not in the data"):
        check_kept_rows([{"qid": 99, **RUN}], RUN, {1, 2}, key="qid", what="out.jsonl")
    # A qid of another type is another qid: "1" is not 1.
    with pytest.raises(ResumeRefused, match="qid '1' is not in the data"):
        check_kept_rows([{"qid": "1", **RUN}], RUN, {1}, key="qid", what="out.jsonl")


# --- `ambigdocs answer`, by both routes ----------------------------------------------------------


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory, sample_dir):
    rows = json.loads((sample_dir / "test.json").read_text())[:3]
    for i, row in enumerate(rows):
        row["qid"] = 500 + i
    folder = tmp_path_factory.mktemp("data")
    (folder / "test.json").write_text(json.dumps(rows))
    return folder


def _argv(model, data_dir, out, *extra):
    return ["answer", "--model", str(model), "--backend", "hf", "--data-dir", str(data_dir),
            "--split", "test", "--setting", "gold-only", "--batch-size", "2",
            "--max-new-tokens", "4", "--seed", "0", "--output", str(out), *extra]  # fmt: skip


def _run(route, argv, repo_root, capsys):
    if route == "cli":
        capsys.readouterr()
        status = ambigdocs_main(argv)
        return status, capsys.readouterr().err
    env = {**os.environ, "PYTHONPATH": str(repo_root), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "generation.answering.answer", *argv[1:]],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    return done.returncode, done.stderr


@pytest.fixture(scope="module")
def answered(tiny_llama_dir, data_dir, tmp_path_factory):
    """Two of the three examples answered (--limit 2): an output to resume."""
    out = tmp_path_factory.mktemp("answered") / "a.jsonl"
    assert ambigdocs_main(_argv(tiny_llama_dir, data_dir, out, "--limit", "2")) == 0
    rows = list(iter_jsonl(out))
    assert [r["qid"] for r in rows] == [500, 501]
    return out, rows


def _copy(answered, tmp_path, rows=None):
    out, original = answered
    dest = tmp_path / "a.jsonl"
    atomic_write_jsonl(dest, original if rows is None else rows)
    (tmp_path / "a.jsonl.meta.json").write_bytes(out.with_name("a.jsonl.meta.json").read_bytes())
    return dest


@pytest.mark.parametrize("route", ["cli", "module"])
def test_answer_refuses_a_kept_row_of_another_model(
    answered, tiny_llama_dir, data_dir, tmp_path, repo_root, capsys, route
):
    rows = [dict(r) for r in answered[1]]
    rows[1]["model"] = "someone/else"
    out = _copy(answered, tmp_path, rows)
    status, err = _run(route, _argv(tiny_llama_dir, data_dir, out), repo_root, capsys)
    lines = [x for x in err.splitlines() if x.strip()]
    assert status == 2 and len(lines) == 1, err
    assert f"{out}: kept row qid 501 was made with model 'someone/else'" in lines[0]
    assert [r["model"] for r in iter_jsonl(out)] == [rows[0]["model"], "someone/else"]


@pytest.mark.parametrize("route", ["cli", "module"])
def test_answer_refuses_a_kept_row_not_in_the_data(
    answered, tiny_llama_dir, data_dir, tmp_path, repo_root, capsys, route
):
    rows = [dict(r) for r in answered[1]] + [{**answered[1][0], "qid": 777}]
    out = _copy(answered, tmp_path, rows)
    status, err = _run(route, _argv(tiny_llama_dir, data_dir, out), repo_root, capsys)
    assert status == 2 and "kept row qid 777 is not in the data" in err, err


def test_an_honest_resume_still_extends_the_output(answered, tiny_llama_dir, data_dir, tmp_path):
    out = _copy(answered, tmp_path)
    assert ambigdocs_main(_argv(tiny_llama_dir, data_dir, out)) == 0
    rows = list(iter_jsonl(out))
    assert [r["qid"] for r in rows] == [500, 501, 502]
    assert rows[:2] == answered[1]  # the kept rows, unchanged


def test_an_unfinished_row_is_answered_again(answered, tiny_llama_dir, data_dir, tmp_path):
    rows = [dict(r) for r in answered[1]]
    del rows[1]["gen_answer"]  # a line that is not a whole answer: not kept, not refused
    out = _copy(answered, tmp_path, rows)
    assert ambigdocs_main(_argv(tiny_llama_dir, data_dir, out, "--limit", "2")) == 0
    assert list(iter_jsonl(out)) == answered[1]
