"""Commands that need the Hub, without it: one line, exit status 2, no traceback.

Run as a user runs them (`python -m generation.cli ...` in a fresh process), once with the
Hub on a closed loopback port and `HF_HUB_OFFLINE` unset, once with `HF_HUB_OFFLINE=1`.
Checks that need no Hub (names, rows, the card) come first, before any network call.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from test_builder import make_row, write_json
from unreachable_hub import CLOSED_ENDPOINT, unreachable_hub_env

from generation import cli
from generation.hub import push, push_metric

UNREACHABLE = CLOSED_ENDPOINT


def _env(tmp_path, offline: bool) -> dict:
    env = unreachable_hub_env(tmp_path, HF_TOKEN="hf_not_a_real_one")
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return env


def _run(args, tmp_path, offline, repo_root):
    run = subprocess.run(
        [sys.executable, "-m", "generation.cli", *args],
        cwd=repo_root,
        env=_env(tmp_path, offline),
        capture_output=True,
        text=True,
        timeout=300,
    )
    # Progress bars of datasets may come before it; the error itself is the one last line.
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    return run, lines[-1] if lines else ""


COMMANDS = {
    "export": (
        ["export", "{tmp}/out"],
        "ambigdocs export: error: cannot download the AmbigDocs release",
    ),
    "push": (
        ["push", "{sample}", "--repo-id", "me/ambig", "--split", "test"],
        "ambigdocs push: error: cannot reach the Hugging Face Hub at " + UNREACHABLE,
    ),
    "push --dry-run": (
        ["push", "{sample}", "--repo-id", "me/ambig", "--split", "test", "--dry-run"],
        "ambigdocs push: error: cannot reach the Hugging Face Hub at " + UNREACHABLE,
    ),
    "push-metric": (
        ["push-metric", "--repo-id", "me/ambig_metric"],
        "ambigdocs push-metric: error: cannot reach the Hugging Face Hub at " + UNREACHABLE,
    ),
    "push-metric --dry-run": (
        ["push-metric", "--repo-id", "me/ambig_metric", "--dry-run"],
        "ambigdocs push-metric: error: cannot reach the Hugging Face Hub at " + UNREACHABLE,
    ),
}


@pytest.mark.parametrize("offline", [False, True], ids=["no-network", "HF_HUB_OFFLINE"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_hub_commands_without_the_hub_end_in_one_line(
    command, offline, tmp_path, repo_root, sample_dir
):
    args, expected = COMMANDS[command]
    args = [a.format(tmp=tmp_path, sample=sample_dir / "test.json") for a in args]
    run, last = _run(args, tmp_path, offline, repo_root)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr + run.stdout
    assert last.startswith(expected)
    assert ("HF_HUB_OFFLINE is set" in last) == offline
    assert "hf_not_a_real_one" not in run.stderr + run.stdout
    if command.endswith("--dry-run"):
        # What could be checked offline was, and is shown: the plan for a new repository.
        assert "checked offline, as a new" in run.stdout and "README.md would be:" in run.stdout
    else:
        assert run.stdout == ""


@pytest.mark.slow
def test_evaluate_with_an_unreachable_qa_model_asked_for(tmp_path, repo_root, sample_dir):
    # huggingface_hub retries a refused connection for about 25 s before giving up.
    args = [
        "evaluate",
        str(sample_dir / "answers.json"),
        "--allow-duplicate-qids",
        "--output-dir",
        str(tmp_path / "scores"),
        "--qa-model",
        "someone/qa-model",
    ]
    run, last = _run(args, tmp_path, False, repo_root)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert last.startswith(
        "ambigdocs evaluate: error: cannot load the QA model 'someone/qa-model' for Disambig-F1 "
        "(the Hub cannot be reached and it is not in the local cache; "
    )


class _NoHub:
    """An HfApi stand-in that fails the test on any call."""

    def __getattr__(self, name):
        raise AssertionError(f"the Hub was called ({name}) before the offline checks")


@pytest.mark.parametrize(
    ("split", "config", "repo_id", "message"),
    [
        ("bad-name", "default", "me/ambig", "split name 'bad-name'"),
        ("all", "default", "me/ambig", "split name 'all'"),
        ("test", "data", "me/ambig", "config name 'data'"),
        ("test", "default", "no-namespace", "repo id 'no-namespace'"),
        ("test", "default", "a/b/c", "repo id 'a/b/c'"),
    ],
)
def test_push_names_are_checked_before_any_hub_call(
    split, config, repo_id, message, tmp_path, capsys
):
    source = write_json(tmp_path / "t.json", [make_row(1)])
    with pytest.raises(ValueError, match=message):
        push.push_split(source, repo_id, split, config, api=_NoHub(), dry_run=True)
    argv = [str(source), "--repo-id", repo_id, "--split", split, "--config", config, "--dry-run"]
    assert push.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ambigdocs push: error: {message}") and len(err.splitlines()) == 1


def test_push_rows_are_checked_before_any_hub_call(tmp_path, capsys):
    bad = make_row(1)
    del bad["question"]
    source = write_json(tmp_path / "t.json", [make_row(2), bad])
    assert push.main([str(source), "--repo-id", "me/ambig", "--split", "test", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "row 1: field 'question' is missing" in err and len(err.splitlines()) == 1


def test_push_metric_checks_name_and_python_before_any_hub_call(repo_root, tmp_path):
    with pytest.raises(ValueError, match="NAME must be letters"):
        push_metric.push_metric("me/bad-name", api=_NoHub(), dry_run=True)
    with pytest.raises(ValueError, match="expected NAMESPACE/NAME"):
        push_metric.push_metric("a space/name", api=_NoHub(), dry_run=True)
    # A module that imports a helper missing from the folder would only fail on the Hub.
    folder = tmp_path / "m"
    shutil.copytree(repo_root / "metric" / "ambigdocs_metric", folder)
    (folder / "stopwords.py").unlink()
    with pytest.raises(ValueError, match=r"imports \.stopwords, but stopwords\.py is not"):
        push_metric.push_metric("me/ambig_metric", metric_dir=folder, api=_NoHub(), dry_run=True)
    shutil.copy(repo_root / "metric" / "ambigdocs_metric" / "stopwords.py", folder)
    (folder / "scoring.py").write_text("def broken(:\n")
    with pytest.raises(ValueError, match=r"scoring\.py, line 1: does not compile"):
        push_metric.check_space_folder(folder)


def test_any_command_failing_on_an_unreachable_hub_is_one_line(monkeypatch, capsys):
    """The dispatcher turns an unreachable-Hub failure of any command into one line, status 2."""
    from huggingface_hub.errors import LocalEntryNotFoundError

    def failing_main(argv):
        # The chain transformers builds when a model is neither reachable nor cached.
        try:
            try:
                raise ConnectionRefusedError(111, "Connection refused")
            except ConnectionRefusedError as refused:
                raise LocalEntryNotFoundError("not in the local cache") from refused
        except LocalEntryNotFoundError as missing:
            raise OSError("We couldn't connect to load the files") from missing

    fake = type(sys)("fake_command")
    fake.main = failing_main
    monkeypatch.setitem(sys.modules, "fake_command", fake)
    monkeypatch.setitem(cli.COMMANDS, "fake", ("fake_command", "a command that loads a model"))
    assert cli.main(["fake"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("ambigdocs fake: error: cannot reach the Hugging Face Hub")
        and err.count("\n") == 1
    )

    def buggy_main(argv):
        raise KeyError("a bug, not the network")

    fake.main = buggy_main
    with pytest.raises(KeyError, match="a bug, not the network"):
        cli.main(["fake"])


@pytest.mark.slow
def test_answer_with_a_hub_model_offline_is_one_line(tmp_path, repo_root):
    """A command that loads a model by Hub id (here `answer`), offline: one line naming the model
    (`answer` says it itself; the dispatcher catches what a command does not)."""
    args = ["answer", "--model", "someone/some-model", "--config", "sample"]
    args += ["--output", str(tmp_path / "answers.jsonl"), "--limit", "1"]
    for extra in ([], ["--prompt-format", "plain"]):  # the tokenizer first, or the model
        run, last = _run(args + extra, tmp_path, True, repo_root)
        assert run.returncode == 2 and "Traceback" not in run.stderr
        assert last.startswith("ambigdocs answer: ") and "someone/some-model" in last
