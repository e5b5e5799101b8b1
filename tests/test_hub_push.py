"""`ambigdocs push`: one split added or replaced, checked at the Hub client's boundary.

`FakeHub` stands in for `huggingface_hub.HfApi`: it keeps repositories as {path: bytes},
applies commits the way the Hub does (adds, deletes, parent-commit check) and records every call,
so the tests check the exact files and card that would be uploaded, then write the would-be
repository to a folder and open it with `datasets.load_dataset`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import datasets
import httpx2
import pytest
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, DatasetCard
from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError
from test_builder import expected_row, make_row, write_json, write_jsonl

from ambigdocs import FEATURES, load_ambigdocs
from generation.hub import export, push


def _http_error(cls, url):
    return cls("not found", response=httpx2.Response(404, request=httpx2.Request("GET", url)))


class FakeHub:
    """An in-memory Hub with the HfApi methods that `push` and `push-metric` call."""

    def __init__(self, download_dir: Path):
        self.download_dir = download_dir
        self.repos: dict[tuple[str, str], dict] = {}  # (type, id) -> {"branches", "private", "sdk"}
        self.calls: list[tuple[str, dict]] = []

    def _repo(self, repo_id, repo_type):
        key = (repo_type or "model", repo_id)
        if key not in self.repos:
            raise _http_error(RepositoryNotFoundError, f"https://hub/{repo_type}/{repo_id}")
        return self.repos[key]

    def _branch(self, repo, revision, repo_id):
        revision = revision or "main"
        for files in repo["branches"].values():  # a commit sha names that commit's files
            if files.get("__sha__") == revision:
                return files
        if revision not in repo["branches"]:
            raise _http_error(RevisionNotFoundError, f"https://hub/{repo_id}@{revision}")
        return repo["branches"][revision]

    @staticmethod
    def _sha(files):
        digest = hashlib.sha1()
        for path in sorted(p for p in files if p != "__sha__"):
            digest.update(path.encode() + b"\0" + files[path])
        return digest.hexdigest()

    def seed(self, repo_id, repo_type, files: dict[str, bytes], branch="main"):
        repo = self.repos.setdefault((repo_type, repo_id), {"branches": {}, "private": False})
        repo["branches"][branch] = {**files, "__sha__": self._sha(files)}

    # --- the HfApi surface ------------------------------------------------------------------
    def repo_info(self, repo_id, *, repo_type=None, revision=None, **kw):
        self.calls.append(("repo_info", {"repo_id": repo_id, "revision": revision}))
        files = self._branch(self._repo(repo_id, repo_type), revision, repo_id)
        return SimpleNamespace(sha=files["__sha__"])

    def list_repo_files(self, repo_id, *, repo_type=None, revision=None, **kw):
        self.calls.append(("list_repo_files", {"repo_id": repo_id, "revision": revision}))
        files = self._branch(self._repo(repo_id, repo_type), revision, repo_id)
        return sorted(p for p in files if p != "__sha__")

    def hf_hub_download(self, repo_id, filename, *, repo_type=None, revision=None, **kw):
        self.calls.append(("hf_hub_download", {"repo_id": repo_id, "filename": filename}))
        files = self._branch(self._repo(repo_id, repo_type), revision, repo_id)
        path = (
            self.download_dir / hashlib.sha1(f"{repo_id}{filename}{revision}".encode()).hexdigest()
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[filename])
        return str(path)

    def create_repo(self, repo_id, *, repo_type=None, private=None, exist_ok=False, **kw):
        self.calls.append(("create_repo", {"repo_id": repo_id, "private": private, **kw}))
        key = (repo_type or "model", repo_id)
        if key in self.repos and not exist_ok:
            raise FileExistsError(repo_id)
        self.repos.setdefault(
            key, {"branches": {"main": {"__sha__": "init"}}, "private": bool(private), **kw}
        )

    def create_branch(self, repo_id, *, branch, repo_type=None, exist_ok=False, **kw):
        self.calls.append(("create_branch", {"repo_id": repo_id, "branch": branch}))
        repo = self._repo(repo_id, repo_type)
        repo["branches"].setdefault(branch, dict(repo["branches"]["main"]))

    def create_commit(
        self,
        repo_id,
        operations,
        *,
        commit_message,
        repo_type=None,
        revision=None,
        create_pr=False,
        parent_commit=None,
        **kw,
    ):
        operations = list(operations)
        self.calls.append(
            (
                "create_commit",
                {
                    "repo_id": repo_id,
                    "operations": operations,
                    "revision": revision,
                    "create_pr": create_pr,
                    "parent_commit": parent_commit,
                    "message": commit_message,
                },
            )
        )
        repo = self._repo(repo_id, repo_type)
        base = dict(self._branch(repo, revision, repo_id))
        if parent_commit is not None and parent_commit != base["__sha__"]:
            raise RuntimeError("parent commit is not the head: the repository changed meanwhile")
        for op in operations:
            if isinstance(op, CommitOperationDelete):
                base.pop(op.path_in_repo)
            else:
                src = op.path_or_fileobj
                base[op.path_in_repo] = src if isinstance(src, bytes) else Path(src).read_bytes()
        base["__sha__"] = self._sha(base)
        target = f"refs/pr/{len(repo['branches'])}" if create_pr else (revision or "main")
        repo["branches"][target] = base
        return SimpleNamespace(
            commit_url=f"https://hub/{repo_id}/commit/{base['__sha__']}",
            pr_url=f"https://hub/{repo_id}/discussions/1" if create_pr else None,
        )

    # --- for the tests ------------------------------------------------------------------------
    def files(self, repo_id, repo_type="dataset", branch="main") -> dict[str, bytes]:
        files = self.repos[(repo_type, repo_id)]["branches"][branch]
        return {p: b for p, b in files.items() if p != "__sha__"}

    def materialize(self, repo_id, folder: Path, repo_type="dataset", branch="main") -> Path:
        for path, data in self.files(repo_id, repo_type, branch).items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_bytes(data)
        return folder

    def commits(self):
        return [kw for name, kw in self.calls if name == "create_commit"]


@pytest.fixture
def hub(tmp_path):
    return FakeHub(tmp_path / "downloads")


def _load(folder, *args, cache, **kwargs):
    return datasets.load_dataset(str(folder), *args, cache_dir=str(cache), **kwargs)


def _seed_from_export(hub, tmp_path, repo_id="me/ambig"):
    """A repository holding an export of the sample (config `default`, split `test`) + a note."""
    out = tmp_path / "seed-export"
    export.export_dataset({"default": load_ambigdocs(config="sample")}, out, repo_id=repo_id)
    files = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    files["notes/keep.txt"] = b"not data"
    hub.seed(repo_id, "dataset", files)
    return files


def test_push_new_split_to_new_repo(hub, tmp_path, capsys):
    raw = write_jsonl(tmp_path / "domain.jsonl", [make_row(q) for q in (3, 1, 2)])
    push.push_split(raw, "me/new", "test_sports", api=hub, private=True)
    assert [c[0] for c in hub.calls if c[0].startswith("create")] == [
        "create_repo",
        "create_commit",
    ]
    assert dict(hub.calls)["create_repo"]["private"] is True
    (commit,) = hub.commits()
    assert commit["parent_commit"] is None and commit["create_pr"] is False
    added = [op.path_in_repo for op in commit["operations"] if isinstance(op, CommitOperationAdd)]
    assert added == ["data/test_sports-00000-of-00001.parquet", "README.md"]
    card = DatasetCard(hub.files("me/new")["README.md"].decode())
    assert card.data["configs"] == [
        {
            "config_name": "default",
            "data_files": [{"split": "test_sports", "path": "data/test_sports-*"}],
        }
    ]
    assert "| default | test_sports | 3 |" in card.text
    ds = _load(
        hub.materialize("me/new", tmp_path / "repo"), split="test_sports", cache=tmp_path / "c"
    )
    assert ds.features == FEATURES
    assert ds.to_list() == [expected_row(make_row(q)) for q in (3, 1, 2)]
    assert "committed: https://hub/me/new/commit/" in capsys.readouterr().out


def test_replace_one_split_keeps_the_others_and_the_card_text(hub, tmp_path):
    seeded = _seed_from_export(hub, tmp_path)
    # Someone edited the card's prose on the Hub; a push must keep it.
    card = DatasetCard(seeded["README.md"].decode())
    card.text = card.text.replace("## Fields", "A maintainer's note.\n\n## Fields")
    hub.seed("me/ambig", "dataset", {**seeded, "README.md": str(card).encode()})
    # Add a train split, then replace the test split with a different one.
    write_json(tmp_path / "train.json", [make_row(q) for q in (100, 101)])
    push.push_split(tmp_path / "train.json", "me/ambig", "train", api=hub)
    new_test = [make_row(q, n_docs=3) for q in (7, 8, 9, 10)]
    write_json(tmp_path / "new_test.json", new_test)
    push.push_split(tmp_path / "new_test.json", "me/ambig", "test", api=hub)

    first, second = hub.commits()
    assert first["parent_commit"] is not None  # pinned to the commit that was read
    ops = [(type(op).__name__, op.path_in_repo) for op in second["operations"]]
    # The test shard is rewritten under the same name; nothing of train or the note is touched.
    assert ops == [
        ("CommitOperationAdd", "data/test-00000-of-00001.parquet"),
        ("CommitOperationAdd", "README.md"),
    ]
    files = hub.files("me/ambig")
    assert files["notes/keep.txt"] == b"not data"
    assert sorted(f for f in files if f.endswith(".parquet")) == [
        "data/test-00000-of-00001.parquet",
        "data/train-00000-of-00001.parquet",
    ]
    readme = files["README.md"].decode()
    assert "A maintainer's note." in readme
    assert "| default | test | 4 |" in readme and "| default | train | 2 |" in readme
    card = DatasetCard(readme)
    (info,) = [card.data["dataset_info"]]
    assert {s["name"]: s["num_examples"] for s in info["splits"]} == {"test": 4, "train": 2}

    ds = _load(hub.materialize("me/ambig", tmp_path / "repo"), cache=tmp_path / "c")
    assert ds["test"].to_list() == [expected_row(r) for r in new_test]
    assert ds["train"].to_list() == [expected_row(make_row(q)) for q in (100, 101)]


def test_fewer_shards_delete_the_old_ones(hub, tmp_path):
    out = tmp_path / "big"
    sample = load_ambigdocs(config="sample")
    export.export_dataset({"default": sample}, out, max_shard_bytes=1000)  # 3 test shards
    hub.seed(
        "me/ambig",
        "dataset",
        {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()},
    )
    push.push_split(write_json(tmp_path / "t.json", [make_row(1)]), "me/ambig", "test", api=hub)
    ops = [(type(op).__name__, op.path_in_repo) for op in hub.commits()[0]["operations"]]
    assert ("CommitOperationDelete", "data/test-00001-of-00003.parquet") in ops
    assert ("CommitOperationDelete", "data/test-00002-of-00003.parquet") in ops
    assert ("CommitOperationDelete", "data/test-00000-of-00003.parquet") in ops
    ds = _load(hub.materialize("me/ambig", tmp_path / "repo"), split="test", cache=tmp_path / "c")
    assert list(ds["qid"]) == [1]


def test_model_answers_go_to_their_own_config(hub, tmp_path):
    _seed_from_export(hub, tmp_path)
    rows = []
    for q in (0, 1):
        row = make_row(q)
        row["gen_answer"] = f"Answer {q}: two people share the name."
        row["docs"] = [{"title": d["title"], "text": d["text"]} for d in row["documents"]]
        rows.append(row)
    answers = write_json(tmp_path / "answers.json", rows)
    # Into `default` it does not fit: its features are the release's.
    with pytest.raises(ValueError, match="use another --config"):
        push.push_split(answers, "me/ambig", "test", api=hub)
    assert hub.commits() == []
    push.push_split(answers, "me/ambig", "test", config="llama2_7b", api=hub)
    files = hub.files("me/ambig")
    assert "llama2_7b/test-00000-of-00001.parquet" in files
    repo = hub.materialize("me/ambig", tmp_path / "repo")
    runs = _load(repo, "llama2_7b", split="test", cache=tmp_path / "c")
    assert list(runs["gen_answer"]) == [r["gen_answer"] for r in rows]
    assert runs.to_list()[1]["docs"] == rows[1]["docs"]
    assert {k: runs.features[k] for k in FEATURES} == dict(FEATURES)
    # The default config is unchanged.
    default = _load(repo, "default", split="test", cache=tmp_path / "c")
    assert default.to_list() == load_ambigdocs("test", config="sample").to_list()


def test_schema_is_validated_before_any_hub_call(hub, tmp_path):
    bad = make_row(5)
    bad["documents"][1]["answer"] = None
    src = write_json(tmp_path / "bad.json", [make_row(4), bad])
    with pytest.raises(ValueError, match=r"bad\.json, row 1: field 'documents\[1\]\.answer'"):
        push.push_split(src, "me/ambig", "test", api=hub)
    assert hub.calls == []
    dup = write_jsonl(tmp_path / "dup.jsonl", [make_row(4), make_row(4)])
    with pytest.raises(ValueError, match="repeats qid 4"):
        push.push_split(dup, "me/ambig", "test", api=hub)
    assert hub.calls == []


def test_dry_run_prints_files_and_card_and_uploads_nothing(hub, tmp_path, capsys, monkeypatch):
    _seed_from_export(hub, tmp_path)
    monkeypatch.setenv("HF_TOKEN", "hf_secret_token_value")
    raw = tmp_path / "raw"
    raw.mkdir()
    write_json(raw / "dev.json", [make_row(3), make_row(4)])
    # Through the CLI a dry run still reads the repository; offline it prints the plan checked
    # offline (as for a new repository), then fails in one line.
    rc = push.main(["--repo-id", "me/ambig", "--split", "validation", "--dry-run", str(raw)])
    captured = capsys.readouterr()
    assert rc == 2 and "cannot reach the Hugging Face Hub" in captured.err
    assert "checked offline, as a new repository" in captured.out
    assert "hf_secret_token_value" not in captured.err + captured.out
    push.push_split(raw, "me/ambig", "validation", api=hub, dry_run=True)
    out = capsys.readouterr().out
    assert "would push default/validation (2 rows) to me/ambig" in out
    assert "+ data/validation-00000-of-00001.parquet (" in out and "+ README.md (" in out
    assert "README.md would be:" in out and "path: data/validation-*" in out
    assert "hf_secret_token_value" not in out
    assert not [c for c in hub.calls if c[0].startswith("create")]


def test_main_uses_hfapi_and_never_prints_the_token(hub, tmp_path, capsys, monkeypatch):
    """The CLI goes through `huggingface_hub.HfApi`; intercept its methods at that boundary."""
    import huggingface_hub

    monkeypatch.setenv("HF_TOKEN", "hf_secret_token_value")
    for name in (
        "repo_info",
        "list_repo_files",
        "hf_hub_download",
        "create_repo",
        "create_branch",
        "create_commit",
    ):
        monkeypatch.setattr(
            huggingface_hub.HfApi, name, lambda self, *a, _n=name, **k: getattr(hub, _n)(*a, **k)
        )
    src = write_json(tmp_path / "t.json", [make_row(1)])
    argv = ["push", str(src), "--repo-id", "me/cli", "--split", "test", "--revision", "v2"]
    from generation.cli import main as cli_main

    assert cli_main(argv) == 0
    out, err = capsys.readouterr()
    assert "hf_secret_token_value" not in out + err
    assert "pushing default/test (1 rows) to me/cli@v2 (new)" in out
    names = [c[0] for c in hub.calls]
    assert names[-3:] == ["create_repo", "create_branch", "create_commit"]
    assert "README.md" in hub.files("me/cli", branch="v2")
    # A PR against it: committed to a PR ref, the branch is left as it was.
    assert cli_main(argv + ["--create-pr"]) == 0
    assert hub.commits()[-1]["create_pr"] is True
    assert "discussions" in capsys.readouterr().out


def test_repo_with_undeclared_data_is_refused(hub, tmp_path):
    hub.seed(
        "yoonsanglee/AmbigDocs",
        "dataset",
        {"README.md": b"# AmbigDocs\n", "train.json": b"[]", "test.json": b"[]"},
    )
    src = write_json(tmp_path / "t.json", [make_row(1)])
    with pytest.raises(ValueError, match="card has no `configs`"):
        push.push_split(src, "yoonsanglee/AmbigDocs", "test_new", api=hub)
    assert hub.commits() == []


def test_concurrent_change_fails_the_commit(hub, tmp_path):
    _seed_from_export(hub, tmp_path)
    real_commit = hub.create_commit

    def racing_commit(*args, **kwargs):
        hub.seed("me/ambig", "dataset", {**hub.files("me/ambig"), "other.txt": b"meanwhile"})
        return real_commit(*args, **kwargs)

    hub.create_commit = racing_commit
    with pytest.raises(RuntimeError, match="changed meanwhile"):
        push.push_split(write_json(tmp_path / "t.json", [make_row(1)]), "me/ambig", "test", api=hub)


def test_export_folder_as_source(hub, tmp_path):
    out = tmp_path / "exp"
    export.main(["--config", "sample", str(out)])
    push.push_split(out, "me/x", "test", config="sample", api=hub)
    assert "sample/test-00000-of-00001.parquet" in hub.files("me/x")
    card = DatasetCard(hub.files("me/x")["README.md"].decode())
    assert card.data["configs"][0]["config_name"] == "sample"
    ds = _load(
        hub.materialize("me/x", tmp_path / "repo"), "sample", split="test", cache=tmp_path / "c"
    )
    assert ds.to_list() == load_ambigdocs("test", config="sample").to_list()
    assert json.loads(json.dumps(ds.to_list()))  # plain JSON-able rows


def test_extra_fields_of_mixed_types_are_refused_before_any_hub_call(hub, tmp_path):
    a, b = make_row(1), make_row(2)
    a["gen_answer"], b["gen_answer"] = "an answer", 42
    src = write_json(tmp_path / "runs.json", [a, b])
    with pytest.raises(ValueError, match=r"runs\.json: the extra fields \['gen_answer'\]"):
        push.push_split(src, "me/x", "test", config="runs", api=hub)
    assert hub.calls == []


def _seed_with_configs(hub, tmp_path, repo_id, configs):
    """An export of the sample (split `test`) whose card declares its files as `configs`."""
    files = _seed_from_export(hub, tmp_path, repo_id)
    card = DatasetCard(files["README.md"].decode())
    card.data["configs"] = configs
    hub.seed(repo_id, "dataset", {**files, "README.md": str(card).encode()})


@pytest.mark.parametrize(
    "entry, form",
    [
        ({"data_files": "data/test-00000-of-00001.parquet"}, "'data/test-00000-of-00001.parquet'"),
        ({"data_files": ["data/test-*"]}, r"\['data/test-\*'\]"),
        ({"data_dir": "data"}, "data_dir 'data'"),
    ],
)
def test_configs_in_other_forms_are_refused_before_any_upload(hub, tmp_path, entry, form):
    _seed_with_configs(hub, tmp_path, "me/forms", [{"config_name": "default", **entry}])
    src = write_json(tmp_path / "t.json", [make_row(1)])
    with pytest.raises(
        ValueError, match=rf"me/forms: config 'default' declares its files as {form}"
    ):
        push.push_split(src, "me/forms", "train", api=hub, dry_run=True)
    assert not [c for c in hub.calls if c[0].startswith("create")]


def test_other_configs_in_other_forms_are_protected(hub, tmp_path):
    # Config `all` reads everything under data/ (data_dir, no data_files): pushing a `default`
    # split there would change `all`, so it is refused; another config's folder is fine.
    configs = [
        {"config_name": "default", "data_files": [{"split": "test", "path": "data/test-*"}]},
        {"config_name": "all", "data_dir": "data"},
    ]
    _seed_with_configs(hub, tmp_path, "me/forms", configs)
    src = write_json(tmp_path / "t.json", [make_row(1)])
    with pytest.raises(ValueError, match="also belongs to another split"):
        push.push_split(src, "me/forms", "train", api=hub)
    push.push_split(src, "me/forms", "train", config="extra", api=hub)
    assert "extra/train-00000-of-00001.parquet" in hub.files("me/forms")


def test_undeclared_shards_under_the_split_pattern_are_replaced(hub, tmp_path):
    files = _seed_from_export(hub, tmp_path)  # the card declares only `test`
    stale = "data/train-00000-of-00002.parquet"
    hub.seed("me/ambig", "dataset", {**files, stale: files["data/test-00000-of-00001.parquet"]})
    push.push_split(write_json(tmp_path / "t.json", [make_row(1)]), "me/ambig", "train", api=hub)
    ops = [(type(op).__name__, op.path_in_repo) for op in hub.commits()[0]["operations"]]
    assert ("CommitOperationDelete", stale) in ops
    repo = hub.materialize("me/ambig", tmp_path / "repo")
    assert list(_load(repo, split="train", cache=tmp_path / "c")["qid"]) == [1]


def test_pr_against_a_missing_branch_is_refused(hub, tmp_path):
    _seed_from_export(hub, tmp_path)
    src = write_json(tmp_path / "t.json", [make_row(1)])
    with pytest.raises(ValueError, match="--create-pr needs an existing --revision"):
        push.push_split(src, "me/ambig", "test", revision="v2", create_pr=True, api=hub)
    assert not [c for c in hub.calls if c[0].startswith("create")]


def test_new_branch_starts_at_the_commit_read(hub, tmp_path):
    _seed_from_export(hub, tmp_path)
    sha = hub.repos[("dataset", "me/ambig")]["branches"]["main"]["__sha__"]
    seen = {}
    real_create_branch = hub.create_branch

    def create_branch(repo_id, **kwargs):
        seen.update(kwargs)
        return real_create_branch(repo_id, **kwargs)

    hub.create_branch = create_branch
    push.push_split(
        write_json(tmp_path / "t.json", [make_row(1)]), "me/ambig", "test", revision="v2", api=hub
    )
    assert seen["branch"] == "v2" and seen["revision"] == sha
    assert hub.commits()[-1]["parent_commit"] == sha
    assert "data/test-00000-of-00001.parquet" in hub.files("me/ambig", branch="v2")
