"""`ambigdocs answer` end to end on the tiny random Llama: batch-size independence, resume after
SIGKILL, refusal of mismatched outputs, data parallelism, export and scoring."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from launching import STANDALONE_NOTE, held_port

pytest.importorskip("torch")

from generation.answering.answer import main as answer_main  # noqa: E402
from generation.documents import select_documents  # noqa: E402
from generation.io.records import iter_jsonl  # noqa: E402

N_ROWS = 12


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory, sample_dir):
    """12 rows from the sample; some with 7 gold documents so that gold-only has to sample."""
    rows = json.loads((sample_dir / "test.json").read_text())
    out = []
    for i in range(N_ROWS):
        row = json.loads(json.dumps(rows[i % len(rows)]))
        row["qid"] = 1000 + i
        if i % 3 == 0:
            extra = [
                {**d, "pid": f"{d['pid']}-copy{k}", "title": f"{d['title']} ({k})"}
                for k in range(2)
                for d in row["documents"]
            ]
            row["documents"] = (row["documents"] + extra)[:7]
        out.append(row)
    folder = tmp_path_factory.mktemp("data")
    (folder / "test.json").write_text(json.dumps(out))
    return folder


def _args(model, data_dir, output, *extra, batch_size=4, max_new_tokens=8):
    return [
        "--model", str(model), "--backend", "hf", "--data-dir", str(data_dir), "--split", "test",
        "--setting", "gold-only", "--batch-size", str(batch_size),
        "--max-new-tokens", str(max_new_tokens), "--seed", "0", "--output", str(output), *extra,
    ]  # fmt: skip


def _rows(path):
    return list(iter_jsonl(path))


@pytest.fixture(scope="module")
def reference(tiny_llama_dir, data_dir, tmp_path_factory):
    """One uninterrupted run at batch size 1 (the authors' one-at-a-time loop)."""
    out = tmp_path_factory.mktemp("ref") / "answers.jsonl"
    assert answer_main(_args(tiny_llama_dir, data_dir, out, batch_size=1)) == 0
    return _rows(out)


def test_output_rows_schema_and_documents(reference, data_dir):
    source = {r["qid"]: r for r in json.loads((data_dir / "test.json").read_text())}
    assert [r["qid"] for r in reference] == sorted(source)  # data order
    for row in reference:
        src = source[row["qid"]]
        assert row["question"] == src["question"] and row["documents"] == src["documents"]
        assert row["setting"] == "gold-only" and row["seed"] == 0
        assert row["prompt_format"] == "plain" and row["few_shot"] is False
        assert isinstance(row["gen_answer"], str) and row["gen_answer"]
        assert row["num_new_tokens"] == 8
        assert len(row["docs"]) == min(5, len(src["documents"]))
        assert row["docs"] == select_documents(src, "gold-only", 0)
        assert "retrieved" not in row


def test_batch_size_does_not_change_answers_or_documents(
    tiny_llama_dir, data_dir, tmp_path, reference
):
    out = tmp_path / "b5.jsonl"
    assert answer_main(_args(tiny_llama_dir, data_dir, out, batch_size=5)) == 0
    assert _rows(out) == reference
    # --limit 1: the first example, identical to the full run's first row; then extend to 3.
    one = tmp_path / "one.jsonl"
    assert answer_main(_args(tiny_llama_dir, data_dir, one, "--limit", "1", batch_size=7)) == 0
    assert _rows(one) == reference[:1]
    assert answer_main(_args(tiny_llama_dir, data_dir, one, "--limit", "3", batch_size=2)) == 0
    assert _rows(one) == reference[:3]


def test_different_arguments_are_refused_and_overwrite_restarts(
    tiny_llama_dir, data_dir, tmp_path, capsys
):
    out = tmp_path / "a.jsonl"
    assert answer_main(_args(tiny_llama_dir, data_dir, out, "--limit", "2")) == 0
    meta = json.loads((tmp_path / "a.jsonl.meta.json").read_text())
    assert meta["seed"] == 0 and meta["setting"] == "gold-only" and meta["max_new_tokens"] == 8
    capsys.readouterr()
    args = _args(tiny_llama_dir, data_dir, out, "--limit", "2")
    args[args.index("--seed") + 1] = "1"
    assert answer_main(args) == 2
    err = capsys.readouterr().err
    assert "other settings or inputs" in err and "seed: 0 -> 1" in err and "--overwrite" in err
    assert answer_main([*args, "--overwrite"]) == 0
    assert {r["seed"] for r in _rows(out)} == {1}
    # An output this command did not write (no meta file) is refused too.
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"qid": 1}\n')
    assert answer_main(_args(tiny_llama_dir, data_dir, foreign)) == 2
    assert "foreign.jsonl.meta.json is missing" in capsys.readouterr().err


def test_bad_rows_name_the_example_and_field(tiny_llama_dir, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"qid": 1, "question": "q?", "documents": []}\n{"qid": 2, "documents": []}\n')
    args = _args(tiny_llama_dir, tmp_path, tmp_path / "o.jsonl")
    i = args.index("--data-dir")
    args[i : i + 2] = ["--dataset", str(bad)]
    assert answer_main(args) == 2
    assert "example 1: missing field 'question'" in capsys.readouterr().err


# The child of the SIGKILL test: `ambigdocs answer` whose back-end, once KILL_AFTER chunks are
# done, touches the file KILL_FLAG and blocks, so the parent kills it at that known point.
_KILLED_CHILD = """
import os, sys, threading
from pathlib import Path
from generation.backends import hf
from generation.cli import main
real, calls = hf.HFBackend.generate, []
def generate(self, prompts, **kw):
    if len(calls) == int(os.environ["KILL_AFTER"]):
        Path(os.environ["KILL_FLAG"]).touch()
        threading.Event().wait()  # blocks until killed
    calls.append(len(prompts))
    return real(self, prompts, **kw)
hf.HFBackend.generate = generate
sys.exit(main(sys.argv[1:]))
"""


def test_sigkill_then_resume_gives_the_uninterrupted_result(
    tiny_llama_dir, data_dir, tmp_path, repo_root, reference
):
    # One example a chunk; the run is killed while generating the fourth, its three rows saved.
    out, flag = tmp_path / "killed.jsonl", tmp_path / "blocked"
    cmd = [sys.executable, "-c", _KILLED_CHILD, "answer"]
    cmd += _args(tiny_llama_dir, data_dir, out, batch_size=1)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "KILL_AFTER": "3", "KILL_FLAG": str(flag)}
    proc = subprocess.Popen(cmd, cwd=repo_root, env=env, stderr=subprocess.PIPE)
    while not flag.exists():  # a condition, not a race: the child waits for the kill there
        if proc.poll() is not None:
            pytest.fail(f"the run ended before the kill point: {proc.stderr.read()[-2000:]!r}")
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    partial = out.read_bytes()
    n_done = partial.count(b"\n")
    assert n_done == 3 and partial.endswith(b"\n")  # the three finished chunks, whole
    # Simulate the worst moment of a kill too: a line cut in the middle of its write.
    with out.open("ab") as f:
        f.write(b'{"qid": 99999, "question": "torn')
    assert answer_main(_args(tiny_llama_dir, data_dir, out, batch_size=3)) == 0
    # the uninterrupted run at batch size 1 (the module's reference) gives the same rows
    assert _rows(out) == reference
    # The rows finished before the kill are kept as they were, not recomputed away.
    final_lines = set(out.read_bytes().splitlines())
    assert all(line in final_lines for line in partial.splitlines()[:n_done])


def test_export_json_and_evaluate(tiny_llama_dir, data_dir, tmp_path, reference):
    pytest.importorskip("metric.ambigdocs_metric.scoring")
    out = tmp_path / "e.jsonl"
    export = tmp_path / "results.json"
    args = _args(tiny_llama_dir, data_dir, out, "--export-json", str(export), "--evaluate")
    args += ["--evaluate-dir", str(tmp_path / "eval"), "--evaluate-args=--no-df1"]
    assert answer_main(args) == 0
    assert json.loads(export.read_text()) == reference
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert summary["n"] == N_ROWS
    assert 0.0 <= summary["answer_recall"] <= 1.0
    # The summary records the run's settings, read from the meta file beside the output.
    meta = json.loads(out.with_name(out.name + ".meta.json").read_text())
    assert summary["provenance"]["answer_run"] == meta and meta["model"] == str(tiny_llama_dir)
    assert list(summary["slices"]["setting"]) == [meta["setting"]]
    # And the CLI scorer reads the same JSONL directly.
    res = subprocess.run(
        [sys.executable, "-m", "generation.cli", "evaluate", str(out), "--no-df1",
         "--output-dir", str(tmp_path / "eval2")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "eval2" / "summary.json").read_text())["n"] == N_ROWS


def test_chat_default_and_few_shot(tiny_chat_llama_dir, data_dir, tmp_path):
    out = tmp_path / "c.jsonl"
    args = _args(tiny_chat_llama_dir, data_dir, out, "--limit", "2", "--few-shot")
    assert answer_main(args) == 0
    rows = _rows(out)
    assert {r["prompt_format"] for r in rows} == {"chat"} and rows[0]["few_shot"] is True
    plain = tmp_path / "p.jsonl"
    args = _args(tiny_chat_llama_dir, data_dir, plain, "--limit", "2", "--prompt-format", "plain")
    assert answer_main(args) == 0
    assert {r["prompt_format"] for r in _rows(plain)} == {"plain"}


@pytest.mark.skipif(
    shutil.which("accelerate") is None
    and not Path(sys.executable).with_name("accelerate").exists(),
    reason="accelerate CLI missing",
)
def test_accelerate_two_processes_match_one(
    tiny_llama_dir, data_dir, tmp_path, reference, repo_root
):
    out = tmp_path / "dp.jsonl"
    launcher = str(Path(sys.executable).with_name("accelerate"))
    # On a CPU-only machine `--multi_gpu` is what makes accelerate start N processes (torchrun);
    # the runner then forms a gloo group. `--cpu` would start a single process.
    cmd = [launcher, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
           "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "generation.answering.answer"]  # fmt: skip
    cmd += _args(tiny_llama_dir, data_dir, out, batch_size=3)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with held_port() as port:  # torchrun then binds its own port (tests/launching.py)
        cmd[3:3] = ["--main_process_port", str(port)]
        res = subprocess.run(
            cmd, cwd=repo_root, env=env, capture_output=True, text=True, timeout=300
        )
    assert res.returncode == 0, res.stderr[-3000:]
    assert STANDALONE_NOTE in res.stderr  # the port was left to torchrun
    assert "answer[0]" in res.stderr  # two shards, really
    assert _rows(out) == reference
    assert not list(tmp_path.glob("dp.jsonl.part*"))


def test_backend_options_that_change_answers_are_part_of_the_resume_check(
    tiny_llama_dir, data_dir, tmp_path, capsys
):
    from generation.answering.answer import parse_answer_args, run_meta

    out = tmp_path / "a.jsonl"
    assert answer_main(_args(tiny_llama_dir, data_dir, out, "--limit", "1")) == 0
    capsys.readouterr()
    changed = _args(
        tiny_llama_dir, data_dir, out, "--limit", "2",
        "--backend-option", f"tokenizer={tiny_llama_dir}",
    )  # fmt: skip
    assert answer_main(changed) == 2
    err = capsys.readouterr().err
    assert "other settings or inputs" in err and "backend_options: {} -> {'tokenizer'" in err
    # Options that only change speed or hold credentials neither block a resume nor get written.
    same = _args(
        tiny_llama_dir, data_dir, out, "--limit", "2",
        "--backend-option", "show_progress=true", "--backend-option", "batch_size=3",
    )  # fmt: skip
    assert answer_main(same) == 0 and len(_rows(out)) == 2
    argv = ["--model", "m", "--backend", "openai", "--config", "sample", "--output", "o.jsonl"]
    meta = run_meta(
        parse_answer_args(
            [*argv, "--base-url", "http://h/v1", "--backend-option", "api_key=sk-SECRET",
             "--backend-option", "max_tokens_param=max_completion_tokens",
             "--backend-option", "timeout=5"]
        ),
        "chat",
    )  # fmt: skip
    assert meta["base_url"] == "http://h/v1"
    assert meta["backend_options"] == {"max_tokens_param": "max_completion_tokens"}
    assert "sk-SECRET" not in json.dumps(meta)


def test_vllm_under_several_processes_is_refused(monkeypatch, tmp_path, capsys):
    from types import SimpleNamespace

    import generation.answering.answer as answer

    answer.check_process_layout("vllm", 1)
    answer.check_process_layout("hf", 4)
    with pytest.raises(ValueError, match="tensor_parallel_size=4"):
        answer.check_process_layout("vllm", 4)
    # The runner checks before anything else (no vllm needed to see the error).
    monkeypatch.setattr(answer, "process_state", lambda: SimpleNamespace(num_processes=2))
    argv = ["--model", "m", "--backend", "vllm", "--config", "sample", "--output",
            str(tmp_path / "v.jsonl")]  # fmt: skip
    assert answer_main(argv) == 2
    assert "tensor_parallel_size=2" in capsys.readouterr().err


def test_bad_exemplars_name_the_exemplar_and_field(tiny_llama_dir, data_dir, tmp_path, capsys):
    from generation.answering.answer import load_exemplars

    cases = {
        "no_answer.json": ([{"question": "q", "docs": []}], r"exemplar 0: field 'answer'"),
        "bad_doc.json": (
            [{"question": "q", "docs": [{"title": "t", "text": "x"}], "answer": "a"},
             {"question": "q", "docs": [{"title": "t"}], "answer": "a"}],
            r"exemplar 1: field 'docs\[0\]\.text' is missing",
        ),
        "no_docs.json": ([{"question": "q", "answer": "a"}], r"exemplar 0: missing field 'docs'"),
        "q_not_str.json": ([{"question": 3, "docs": [], "answer": "a"}], "exemplar 0.*'question'"),
    }  # fmt: skip
    for name, (records, message) in cases.items():
        path = tmp_path / name
        path.write_text(json.dumps(records))
        with pytest.raises(ValueError, match=message):
            load_exemplars(str(path))
    # Through the CLI: a clear error, not a KeyError.
    args = _args(tiny_llama_dir, data_dir, tmp_path / "o.jsonl", "--few-shot",
                 "--exemplars", str(tmp_path / "bad_doc.json"))  # fmt: skip
    assert answer_main(args) == 2
    assert "exemplar 1: field 'docs[0].text' is missing" in capsys.readouterr().err
    # A good file; docs as a dict of lists (datasets' shape) become a list of documents.
    good = tmp_path / "good.jsonl"
    ex = {"question": "q", "docs": {"title": ["A"], "text": ["a"]}, "answer": "x"}
    good.write_text(json.dumps(ex) + "\n")
    assert load_exemplars(str(good))[0]["docs"] == [{"title": "A", "text": "a"}]


def test_chunk_size_lets_openai_and_vllm_work_in_parallel():
    from generation.answering.answer import chunk_size, parse_answer_args

    def chunk(*extra):
        argv = ["--model", "m", "--config", "sample", "--output", "o.jsonl", *extra]
        return chunk_size(parse_answer_args(argv))

    assert chunk("--backend", "hf", "--batch-size", "2") == 2
    assert chunk("--backend", "openai", "--batch-size", "2") == 8  # the default concurrency
    assert chunk("--backend", "openai", "--batch-size", "2", "--max-concurrency", "32") == 32
    assert chunk("--backend", "openai", "--backend-option", "max_concurrency=16") == 16
    assert chunk("--backend", "openai", "--batch-size", "64", "--max-concurrency", "4") == 64
    assert chunk("--backend", "vllm", "--batch-size", "2") == 256
    assert chunk("--backend", "vllm", "--batch-size", "1000") == 1000
