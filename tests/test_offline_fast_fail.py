"""No network and no offline switch: every Hub request gives up after one connection attempt.

The Hub's endpoint is a closed loopback port and `HF_HUB_OFFLINE` is unset, as on a machine
whose network is down. Without the check in `metric/ambigdocs_metric/hub_errors.py`,
huggingface_hub retries each request five times with pauses of up to 8 s (half a minute or
more per command, and one "Retrying in ..." line per pause); with it, the commands and the
metric end at once with their usual one line. No timing is asserted: the retry lines are what
the retries leave behind.
"""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from unreachable_hub import unreachable_hub_env


@pytest.fixture(scope="module")
def closed_endpoint():
    """An address on loopback where nothing listens (a port just bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _run(args, tmp_path, endpoint, repo_root):
    return subprocess.run(
        [sys.executable, *args],
        cwd=repo_root,
        env=unreachable_hub_env(tmp_path, endpoint),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _no_retries(run) -> None:
    text = run.stdout + run.stderr
    assert "Retrying in" not in text and "Retry 1/" not in text, text[-2000:]
    assert "Traceback" not in text, text[-2000:]


ROUTES = ("ambigdocs", "python -m")


def _command(route, command, module):
    return ["-m", "generation.cli", command] if route == "ambigdocs" else ["-m", module]


@pytest.mark.parametrize("route", ROUTES)
def test_evaluate_skips_the_default_qa_model_without_retries(
    route, tmp_path, closed_endpoint, repo_root, sample_dir
):
    args = _command(route, "evaluate", "generation.report.evaluate")
    args += [sample_dir / "answers.json", "--allow-duplicate-qids", "--bootstrap", "0"]
    run = _run(
        [*map(str, args), "--output-dir", str(tmp_path / "o")], tmp_path, closed_endpoint, repo_root
    )
    assert run.returncode == 0, run.stderr
    _no_retries(run)
    assert run.stderr.strip().splitlines() == [
        "Disambig-F1 skipped: the QA model 'deepset/roberta-base-squad2' is not in the local "
        "cache and the Hub cannot be reached. Use --qa-model PATH for a local copy, or --no-df1."
    ]


@pytest.mark.parametrize("route", ROUTES)
def test_evaluate_with_a_hub_data_set_ends_in_one_line(route, tmp_path, closed_endpoint, repo_root):
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"qid": 0, "answer": "Ohio"}\n')
    args = _command(route, "evaluate", "generation.report.evaluate")
    args += [
        preds,
        "--dataset",
        "someone/ambigdocs-copy",
        "--no-df1",
        "--output-dir",
        tmp_path / "out",
    ]
    run = _run(list(map(str, args)), tmp_path, closed_endpoint, repo_root)
    assert run.returncode == 2
    _no_retries(run)
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith("ambigdocs evaluate: error:") and "someone/ambigdocs-copy" in line


@pytest.mark.parametrize("route", ROUTES)
def test_answer_dry_run_with_a_hub_tokenizer_ends_in_one_line(
    route, tmp_path, closed_endpoint, repo_root, sample_dir
):
    args = _command(route, "answer", "generation.answering.answer")
    args += ["--model", "someone/chat-model", "--data-dir", sample_dir, "--split", "test"]
    args += ["--setting", "gold-only", "--output", tmp_path / "dry.jsonl", "--dry-run"]
    run = _run(list(map(str, args)), tmp_path, closed_endpoint, repo_root)
    assert run.returncode == 2
    _no_retries(run)
    last = run.stderr.strip().splitlines()[-1]  # datasets' progress bar may come first
    assert last.startswith("ambigdocs answer: error:") and "someone/chat-model" in last


def test_metric_with_a_hub_qa_model_raises_at_once(tmp_path, closed_endpoint, repo_root):
    code = (
        "import json, ambigdocs\n"
        "metric = ambigdocs.load_metric()\n"
        "rows = json.load(open('generation/resources/sample/answers.json'))[:2]\n"
        "try:\n"
        "    metric.compute(predictions=[r['gen_answer'] for r in rows], references=rows,\n"
        "                   qa_model='someone/qa-model')\n"
        "except ambigdocs.QAModelError as err:\n"
        "    print('unreachable' if err.unreachable else 'other', err)\n"
    )
    run = _run(["-c", code], tmp_path, closed_endpoint, repo_root)
    assert run.returncode == 0, run.stderr[-2000:]
    _no_retries(run)
    assert run.stdout.startswith("unreachable cannot load the QA model 'someone/qa-model'")
    assert "the Hub cannot be reached and it is not in the local cache" in run.stdout
    assert "Connection refused" in run.stdout or "ConnectionRefusedError" in run.stdout


def test_connection_check_is_remembered_and_offline_mode_skips_it(monkeypatch):
    from metric.ambigdocs_metric import hub_errors

    attempts = []

    def refuse(address, timeout):
        attempts.append(address)
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(hub_errors.socket, "create_connection", refuse)
    monkeypatch.setattr(hub_errors, "_checked", {})
    for proxy in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    url = "http://127.0.0.1:1/api/models/x"
    first = hub_errors.unreachable_reason(url)
    assert first == (
        "cannot connect to 127.0.0.1:1 (ConnectionRefusedError: [Errno 111] Connection refused)"
    )
    assert hub_errors.unreachable_reason(url) == first and attempts == [("127.0.0.1", 1)]
    # Through a proxy, the proxy is what must answer.
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    hub_errors.unreachable_reason("https://huggingface.co/api")
    assert attempts[-1] == ("proxy.example", 3128)


def _cache_as_downloaded(model_dir, hf_home, repo_id: str) -> None:
    """Puts a saved model into the Hub cache's layout, as a download of `repo_id` would."""
    import shutil

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = hf_home / "hub" / f"models--{repo_id.replace('/', '--')}"
    shutil.copytree(model_dir, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)


def test_a_cached_qa_model_still_loads_without_a_network(tmp_path, closed_endpoint, repo_root):
    from qa_models import save_qa_model

    _cache_as_downloaded(save_qa_model(tmp_path / "qa"), tmp_path / "hf", "someone/cached-qa")
    args = ["-m", "generation.cli", "evaluate", "generation/resources/sample/answers.json"]
    args += ["--allow-duplicate-qids", "--bootstrap", "0", "--qa-model", "someone/cached-qa"]
    run = _run([*args, "--output-dir", str(tmp_path / "o")], tmp_path, closed_endpoint, repo_root)
    assert run.returncode == 0, run.stderr[-2000:]
    _no_retries(run)
    summary = (tmp_path / "o" / "summary.json").read_text()
    assert '"disambig_f1"' in summary
