"""`ambigdocs answer` on hostile input and changed inputs: a one-line error and exit status 2
(never a traceback), and no resume that would keep stale work."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from generation.answering.answer import main as answer_main  # noqa: E402
from generation.io.records import iter_jsonl  # noqa: E402


@pytest.fixture
def rows_path(tmp_path, sample_dir):
    rows = json.loads((sample_dir / "test.json").read_text())[:3]
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows))
    return path


def _args(model, rows_path, output, *extra):
    return ["--model", str(model), "--dataset", str(rows_path), "--max-new-tokens", "2",
            "--batch-size", "2", "--output", str(output), *extra]  # fmt: skip


def _cli(repo_root, argv):
    """Runs `ambigdocs answer` in a fresh interpreter: (status, stderr)."""
    cmd = [sys.executable, "-m", "generation.cli", "answer", *map(str, argv)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    res = subprocess.run(cmd, cwd=repo_root, env=env, capture_output=True, text=True, timeout=300)
    return res.returncode, res.stderr


def _one_line_error(status, stderr, *needles):
    assert status == 2, stderr[-2000:]
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("ambigdocs answer: error:")]
    assert len(errors) == 1, stderr[-2000:]
    for needle in needles:
        assert needle in errors[0], errors[0]


def test_an_edited_question_at_the_same_path_is_refused(
    tiny_llama_dir, rows_path, tmp_path, capsys
):
    out = tmp_path / "a.jsonl"
    assert answer_main(_args(tiny_llama_dir, rows_path, out, "--limit", "1")) == 0
    rows = json.loads(rows_path.read_text())
    rows[0]["question"] = rows[0]["question"] + " (edited)"
    rows_path.write_text(json.dumps(rows))
    capsys.readouterr()
    assert answer_main(_args(tiny_llama_dir, rows_path, out, "--limit", "2")) == 2
    err = capsys.readouterr().err
    assert "data_rows" in err and "--overwrite" in err
    assert answer_main(_args(tiny_llama_dir, rows_path, out, "--limit", "2", "--overwrite")) == 0
    assert next(iter_jsonl(out))["question"].endswith("(edited)")


def test_changed_weights_at_the_same_model_path_are_refused(
    tiny_llama_dir, rows_path, tmp_path, capsys
):
    model = tmp_path / "model"
    shutil.copytree(tiny_llama_dir, model)
    out = tmp_path / "a.jsonl"
    assert answer_main(_args(model, rows_path, out, "--limit", "1")) == 0
    weights = next(p for p in model.iterdir() if p.suffix in (".safetensors", ".bin"))
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # rewritten in place
    capsys.readouterr()
    assert answer_main(_args(model, rows_path, out, "--limit", "2")) == 2
    assert "model_files" in capsys.readouterr().err
    # A larger --limit with unchanged inputs still extends the run.
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert answer_main(_args(model, rows_path, out, "--limit", "2")) == 0
    assert len(list(iter_jsonl(out))) == 2


def test_an_unfinished_last_line_is_answered_again(tiny_llama_dir, rows_path, tmp_path):
    out = tmp_path / "a.jsonl"
    assert answer_main(_args(tiny_llama_dir, rows_path, out, "--limit", "2")) == 0
    lines = out.read_text().splitlines()
    qid = json.loads(lines[1])["qid"]
    out.write_text(lines[0] + "\n" + json.dumps({"qid": qid}) + "\n")  # valid JSON, unfinished
    assert answer_main(_args(tiny_llama_dir, rows_path, out, "--limit", "2")) == 0
    rows = list(iter_jsonl(out))
    assert [r["qid"] for r in rows] == [json.loads(lines[0])["qid"], qid]
    assert isinstance(rows[1]["gen_answer"], str) and rows[1]["docs"]


def test_bad_input_ends_in_one_line(tiny_llama_dir, rows_path, tmp_path, repo_root):
    base = _args(tiny_llama_dir, rows_path, tmp_path / "o.jsonl", "--limit", "1")
    # A line without qid in an output being resumed.
    assert answer_main(base) == 0
    with (tmp_path / "o.jsonl").open("a") as f:
        f.write('{"question": "no qid"}\n')
    _one_line_error(*_cli(repo_root, [*base[:-2], "--limit", "2"]), "line 2", "'qid'")
    # --output under a file; --output a folder, with --overwrite (the folder is kept).
    blocker = tmp_path / "file"
    blocker.write_text("x")
    _one_line_error(
        *_cli(repo_root, _args(tiny_llama_dir, rows_path, blocker / "o.jsonl")), "is a file"
    )
    folder = tmp_path / "folder"
    (folder / "keep").mkdir(parents=True)
    status, err = _cli(repo_root, _args(tiny_llama_dir, rows_path, folder, "--overwrite"))
    _one_line_error(status, err, "is a folder")
    assert (folder / "keep").is_dir()
    # A local --model that does not exist; an unknown --backend-option.
    missing = tmp_path / "no" / "model"
    _one_line_error(
        *_cli(repo_root, _args(missing, rows_path, tmp_path / "m.jsonl")), "no such folder"
    )
    _one_line_error(
        *_cli(repo_root, _args("./nothing-here", rows_path, tmp_path / "m.jsonl")), "no such folder"
    )
    status, err = _cli(
        repo_root, [*_args(tiny_llama_dir, rows_path, tmp_path / "u.jsonl"),
                    "--backend-option", "temprature=0"],
    )  # fmt: skip
    _one_line_error(status, err, "unknown --backend-option temprature")
    # A qid that is a list.
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"qid": [1, 2], "question": "q?", "documents": []}]))
    _one_line_error(
        *_cli(repo_root, _args(tiny_llama_dir, bad, tmp_path / "q.jsonl")),
        "example 0", "'qid'",
    )  # fmt: skip
    # No data source, and two of them.
    _one_line_error(*_cli(repo_root, ["--model", "m", "--output", tmp_path / "x"]), "exactly one")


def test_args_file(tiny_llama_dir, rows_path, tmp_path, capsys):
    from generation.answering.options import parse_answer_args

    conf = tmp_path / "answer.yaml"
    conf.write_text(f"model: {tiny_llama_dir}\ndataset: {rows_path}\nseed: 4\nfew_shot: true\n")
    args = parse_answer_args(["--args-file", str(conf), "--output", "o.jsonl", "--seed", "5"])
    assert args.model == str(tiny_llama_dir) and args.few_shot is True
    assert args.seed == 5  # the command line wins
    conf.write_text("modle: x\n")
    assert answer_main(["--args-file", str(conf), "--output", "o.jsonl"]) == 2
    assert (
        "--args-file" in (err := capsys.readouterr().err) and "unknown option(s) ['modle']" in err
    )
    conf.write_text("seed: many\n")
    assert answer_main(["--args-file", str(conf), "--output", "o.jsonl"]) == 2
    assert "option 'seed': 'many' is not" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"qid": 1, "question": "q?", "documents": {"title": 1, "text": 2}}],
         "field 'documents.title' must be a list (documents as a dict of lists), got int"),
        ([{"qid": 1, "question": "q?", "documents": 5}], "field 'documents' must be a list"),
        ([{"qid": 1, "question": "q\ud800?", "documents": [{"title": "t", "text": "x"}]}],
         "field 'question' holds"),
        ([{"qid": True, "question": "q?", "documents": []}], "example 0: field 'qid'"),
        ([{"qid": 1, "question": "q?", "documents": [{"title": "t"}]}],
         "field 'documents[0].text' is missing"),
        ([3], "element 0"),
    ],
)  # fmt: skip
def test_malformed_rows_name_the_example_and_field(tmp_path, capsys, rows, message):
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows))  # lone surrogates are written as \ud800 escapes
    argv = ["--model", "nobody/none", "--dataset", str(path), "--output", str(tmp_path / "o"),
            "--dry-run", "--prompt-format", "authors"]  # fmt: skip
    assert answer_main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_unreadable_inputs_are_named(tmp_path, capsys, rows_path):
    base = ["--model", "nobody/none", "--output", str(tmp_path / "o"), "--dry-run",
            "--prompt-format", "authors"]  # fmt: skip
    folder = tmp_path / "not-a-dataset"
    folder.mkdir()
    (folder / "a.json").write_text('[{"x": 1}]')
    (folder / "b.json").write_text('[{"y": "z"}]')
    assert answer_main([*base, "--dataset", str(folder)]) == 2
    assert f"--dataset {folder}: cannot be loaded" in capsys.readouterr().err
    assert (
        answer_main([*base, "--dataset", str(rows_path), "--few-shot", "--exemplars", "nope"]) == 2
    )
    assert "--exemplars nope: no such file" in capsys.readouterr().err
    assert answer_main([*base, "--dataset", str(rows_path), "--retrieved", "nope"]) == 2
    assert "--retrieved nope: no such file" in capsys.readouterr().err


def test_a_model_that_cannot_be_loaded_is_named(tmp_path, capsys, rows_path):
    # Tests run offline: a Hub id cannot be fetched; no prompt format needs its tokenizer first.
    argv = ["--model", "nobody/none", "--dataset", str(rows_path), "--prompt-format", "authors",
            "--output", str(tmp_path / "o.jsonl")]  # fmt: skip
    assert answer_main(argv) == 2
    err = capsys.readouterr().err
    assert "--model nobody/none: cannot be loaded" in err and err.count("\n") == 1
