"""The ways a user loads AmbigDocs with plain `datasets.load_dataset`, and what they give.

Each form promised in the README and docs/datasets.md is run with the real `datasets` and
compared row for row with `load_ambigdocs`, the toolkit's builder.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
from test_builder import expected_row, make_row, write_json
from test_hub_push import FakeHub
from unreachable_hub import unreachable_hub_env

import ambigdocs
from ambigdocs import FEATURES, ReleaseDownloadError, load_ambigdocs
from generation.hub import export, push

# Not part of a fresh clone (or not needed by `load_dataset`): left out of the copy.
_NOT_IN_A_CLONE = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", "*.egg-info", ".pytest_cache", "demo-output", ".ruff_cache"
)


def _load(path, *args, cache, **kwargs):
    return datasets.load_dataset(str(path), *args, cache_dir=str(cache), **kwargs)


def _sample_rows(sample_dir) -> list[dict]:
    return json.loads((sample_dir / "test.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def clone(repo_root, tmp_path_factory) -> Path:
    """A copy of the repository in a folder named as the README clones it (not `ambigdocs`)."""
    folder = tmp_path_factory.mktemp("clones") / "ambigdocs-toolkit"
    shutil.copytree(repo_root, folder, ignore=_NOT_IN_A_CLONE)
    return folder


def test_the_clone_loads_as_the_bundled_sample(clone, tmp_path):
    # The design's top-level builder module; a folder of any other name loads its YAML config.
    assert (clone / "ambigdocs.py").is_file() and not (clone / "ambigdocs").exists()
    ds = _load(clone, cache=tmp_path / "c")
    sample = load_ambigdocs(config="sample")
    assert list(ds) == ["test"]
    assert ds["test"].features == FEATURES
    assert ds["test"].to_list() == sample["test"].to_list()
    assert _load(clone, "sample", split="test", cache=tmp_path / "c").to_list() == (
        sample["test"].to_list()
    )


def test_the_current_folder_loads_given_as_a_full_path(clone, tmp_path, monkeypatch):
    # `load_dataset(".")` fails in datasets 5 for any folder (it takes the data set's name from
    # the folder's name, and "." has none); the full path of the same folder works.
    monkeypatch.chdir(clone)
    ds = _load(os.getcwd(), split="test", cache=tmp_path / "c")
    assert list(ds["qid"]) == list(load_ambigdocs("test", config="sample")["qid"])


def _release_layout(folder: Path, rows: list[dict]) -> Path:
    """The raw files as on the Hub release `yoonsanglee/AmbigDocs`: JSON arrays at the root."""
    folder.mkdir()
    write_json(folder / "train.json", rows[:2])
    write_json(folder / "dev.json", rows[2:3])
    write_json(folder / "test.json", rows[3:])
    return folder


def test_release_layout_gives_the_builders_rows_with_plain_load_dataset(sample_dir, tmp_path):
    folder = _release_layout(tmp_path / "AmbigDocs", _sample_rows(sample_dir))
    plain = _load(folder, cache=tmp_path / "c1")
    built = load_ambigdocs(data_dir=folder, cache_dir=str(tmp_path / "c2"))
    # `dev.json` is the validation split for both (a datasets naming rule, and the builder's).
    assert list(plain) == list(built) == ["train", "validation", "test"]
    for split in built:
        assert plain[split].features == built[split].features == FEATURES
        assert plain[split].to_list() == built[split].to_list()


def test_plain_load_dataset_differs_only_as_documented(tmp_path):
    """docs/datasets.md: plain `load_dataset` reads the raw files as they are (no checks or
    conversions); the builder turns integer pids into text and drops fields outside the schema."""
    raw = make_row(1, pid_as_int=True)
    raw["gen_answer"] = "an extra field"
    folder = tmp_path / "raw"
    folder.mkdir()
    write_json(folder / "test.json", [raw])
    (plain,) = _load(folder, split="test", cache=tmp_path / "c1").to_list()
    (built,) = load_ambigdocs("test", data_dir=folder, cache_dir=str(tmp_path / "c2")).to_list()
    assert built == expected_row({k: v for k, v in raw.items() if k != "gen_answer"})
    assert plain["gen_answer"] == "an extra field" and "gen_answer" not in built
    assert [d["pid"] for d in plain["documents"]] == [1000, 1001]
    assert [d["pid"] for d in built["documents"]] == ["1000", "1001"]

    # A qid written as text stays text; a missing field is filled with None, without a word.
    text_qid = make_row(8)
    text_qid["qid"] = "8"
    no_question = make_row(9)
    no_question["qid"] = "9"
    del no_question["question"]
    write_json(folder / "test.json", [text_qid, no_question])
    plain = _load(folder, split="test", cache=tmp_path / "c3")
    assert list(plain["qid"]) == ["8", "9"] and plain["question"][1] is None
    with pytest.raises(ValueError, match=r"row 1: field 'question' is missing"):
        load_ambigdocs("test", data_dir=folder, cache_dir=str(tmp_path / "c4"))


def test_export_never_writes_a_loading_script(sample_dir, tmp_path):
    # An export folder named like the data set is the case datasets refuses if NAME.py is there.
    out = tmp_path / "ambigdocs"
    written = export.export_dataset({"default": load_ambigdocs(config="sample")}, out)
    assert not [f for f in written if f.endswith(".py")]
    assert not list(out.rglob("*.py"))
    ds = _load(out, split="test", cache=tmp_path / "c")
    assert ds.to_list() == [expected_row(r) for r in _sample_rows(sample_dir)]


def test_bare_name_loads_an_export_named_ambigdocs(sample_dir, tmp_path, monkeypatch):
    # README, Install: `ambigdocs export ambigdocs ...`, then `load_dataset("ambigdocs")` in the
    # same folder (a bare name is a folder of that name in the current folder).
    monkeypatch.chdir(tmp_path)
    assert export.main(["ambigdocs", "--config", "sample"]) == 0
    ds = datasets.load_dataset("ambigdocs", split="test", cache_dir=str(tmp_path / "c"))
    assert ds.features == FEATURES
    assert ds.to_list() == [expected_row(r) for r in _sample_rows(sample_dir)]


def test_a_clone_named_ambigdocs_is_refused_as_the_readme_says(clone, tmp_path):
    # Why the README clones into `ambigdocs-toolkit`: a folder holding `<its name>.py` is refused.
    named = tmp_path / "ambigdocs"
    shutil.copytree(clone, named)
    with pytest.raises(RuntimeError, match="Dataset scripts are no longer supported"):
        _load(named, cache=tmp_path / "c")


def test_push_never_uploads_a_loading_script_and_refuses_a_repo_holding_one(tmp_path):
    hub = FakeHub(tmp_path / "downloads")
    rows = [make_row(q) for q in (1, 2)]
    source = write_json(tmp_path / "new.json", rows)
    push.push_split(source, "me/ambigdocs", "test", api=hub)
    (commit,) = hub.commits()
    assert not [op.path_in_repo for op in commit["operations"] if op.path_in_repo.endswith(".py")]
    repo = hub.materialize("me/ambigdocs", tmp_path / "repo" / "ambigdocs")
    assert _load(repo, split="test", cache=tmp_path / "c").to_list() == [
        expected_row(r) for r in rows
    ]

    # A repository that already holds `ambigdocs.py` cannot be loaded at all: refused, unchanged.
    files = hub.files("me/ambigdocs")
    hub.seed("me/ambigdocs", "dataset", {**files, "ambigdocs.py": b"# an old loading script"})
    with pytest.raises(ValueError, match=r"holds ambigdocs\.py, a loading script"):
        push.push_split(source, "me/ambigdocs", "validation", api=hub)
    assert len(hub.commits()) == 1


def test_release_download_failure_is_one_exception_offline(tmp_path):
    # Tests run with HF_HUB_OFFLINE=1: the download of the release is refused.
    with pytest.raises(ReleaseDownloadError) as caught:
        load_ambigdocs(cache_dir=str(tmp_path / "c"))
    err = caught.value
    assert isinstance(err, ConnectionError)
    assert err.__cause__ is None and err.__suppress_context__
    message = str(err)
    assert "cannot download the AmbigDocs release (yoonsanglee/AmbigDocs on " in message
    assert "HF_HUB_OFFLINE is set" in message and 'config="sample"' in message
    assert "\n" not in message


def test_release_download_failure_is_one_exception_without_network(repo_root, tmp_path):
    code = "from ambigdocs import load_ambigdocs\nload_ambigdocs()\n"
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=repo_root,
        env=unreachable_hub_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "ambigdocs.ReleaseDownloadError: cannot download the AmbigDocs release "
        "(yoonsanglee/AmbigDocs on http://127.0.0.1:9: "
    )
    assert "Connection refused" in last  # the root cause, as the socket reported it
    # One exception: no chain ("During handling of ...", "The above exception ..."), and a
    # traceback that ends in load_ambigdocs rather than deep inside datasets and httpx.
    assert "During handling" not in run.stderr and "The above exception" not in run.stderr
    assert len(run.stderr.strip().splitlines()) <= 8


def test_release_urls_follow_hf_endpoint(repo_root, tmp_path):
    code = "import ambigdocs\nprint(ambigdocs.RELEASE_URLS['validation'])\n"
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=repo_root,
        env=unreachable_hub_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.stdout.strip() == (
        "http://127.0.0.1:9/datasets/yoonsanglee/AmbigDocs/resolve/main/dev.json"
    )
    from huggingface_hub import constants

    assert ambigdocs.RELEASE_URLS["validation"] == (
        f"{constants.ENDPOINT}/datasets/yoonsanglee/AmbigDocs/resolve/main/dev.json"
    )


def test_readme_first_code_block_runs_in_any_folder(repo_root, tmp_path):
    """The README's first code block, pasted as it is, in a folder other than the clone."""
    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    language, code = re.search(r"```(\w*)\n(.*?)```", readme, re.DOTALL).groups()
    assert language == "python"
    env = dict(os.environ)  # offline, as every test
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo_root), env.get("PYTHONPATH")]))
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    question, result = run.stdout.strip().splitlines()[-2:]
    assert question.startswith("What is the state where Judge Day was born?")
    result = ast.literal_eval(result)
    # The values the block's comment states.
    assert {k: round(v, 3) for k, v in result.items() if k.endswith("recall")} == {
        "answer_recall": 0.667,
        "entity_recall": 0.833,
        "entity_answer_recall": 0.667,
    }
    assert result["partial"] == 1.0
