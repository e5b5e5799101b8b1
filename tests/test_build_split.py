"""The split stage (docs/pipeline.md §5): 60/10/30, whole passage groups, the release's raw layout."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ambigdocs import load_ambigdocs
from generation.datagen import split


def _row(i, pids, status=None, sn=None):
    row = {
        "surface_name": sn or f"Name {i} (disambiguation)",
        "question": f"What is Name {i} known for?",
        "documents": [
            {"pid": p, "title": f"Name {i} ({p})", "text": f"text of {p}", "answer": f"a{p}"}
            for p in pids
        ],
        "raw_output": "ignored",
    }
    if status is not None:
        row["status"] = status
    return row


def _rows(n=60, shared_every=7, rng_seed=0):
    rng = random.Random(rng_seed)
    rows = []
    for i in range(n):
        pids = [f"p{i}a", f"p{i}b"]
        if i % shared_every == 0 and i:
            pids.append(f"p{rng.randrange(i)}a")  # shares a passage with an earlier example
        rows.append(_row(i, pids))
    return rows


def _pids(rows):
    return {d["pid"] for r in rows for d in r["documents"]}


def test_groups_follow_shared_passages():
    rows = [
        _row(0, ["a", "b"]),
        _row(1, ["c"]),
        _row(2, ["b", "d"]),
        _row(3, ["d"]),
        _row(4, ["e"]),
    ]
    assert split.passage_groups(rows) == [[0, 2, 3], [1], [4]]


def test_fractions_and_seed():
    groups = [[i] for i in range(100)]
    out = split.assign_splits(groups, seed=3)
    assert [len(out[s]) for s in split.SPLITS] == [60, 10, 30]
    assert out == split.assign_splits(groups, seed=3)
    assert out != split.assign_splits(groups, seed=4)
    with pytest.raises(ValueError, match="fractions"):
        split.assign_splits(groups, fractions=(0.5, 0.1, 0.1))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 40), min_size=1, max_size=3), max_size=40), st.integers(0, 5)
)
def test_no_passage_in_two_splits(pid_lists, seed):
    rows = [{"documents": [{"pid": str(p)} for p in pids]} for pids in pid_lists]
    out = split.assign_splits(split.passage_groups(rows), seed=seed)
    seen = {}
    for name, indices in out.items():
        for i in indices:
            for d in rows[i]["documents"]:
                assert seen.setdefault(d["pid"], name) == name
    assert sorted(i for ix in out.values() for i in ix) == list(range(len(rows)))


def test_stage_writes_the_release_layout(tmp_path, capsys):
    from generation.cli import main

    rows = _rows()
    rows.insert(5, _row(99, ["x"], status="not_entailed"))
    rows[7]["documents"][0]["pid"] = 12345  # an int pid is written as a string
    src = tmp_path / "expanded.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "data"
    assert (
        main(["build", "split", "--input", str(src), "--output-dir", str(out), "--no-progress"])
        == 0
    )

    stats = json.loads((out / "split.stats.json").read_text())
    assert stats["examples"] == 60 and stats["skipped_not_entailed"] == 1
    assert "passage_groups" in capsys.readouterr().out
    files = {
        name: json.loads((out / f).read_text())
        for name, f in [("train", "train.json"), ("validation", "dev.json"), ("test", "test.json")]
    }
    assert sum(map(len, files.values())) == 60
    assert abs(len(files["train"]) - 36) <= 3 and abs(len(files["test"]) - 18) <= 3
    qids = sorted(r["qid"] for rs in files.values() for r in rs)
    assert qids == list(range(60))
    # docs/pipeline.md §5: rows within a split are in qid order, as written (no sort here)
    for rs in files.values():
        in_file = [r["qid"] for r in rs]
        assert all(a < b for a, b in zip(in_file, in_file[1:], strict=False)), in_file
    # the groups are dealt shuffled, so the qid order is the writer's doing, not the input's
    assert [r["qid"] for r in files["train"]] != list(range(len(files["train"])))
    by_qid = {r["qid"]: r for rs in files.values() for r in rs}
    assert by_qid[0]["ambiguous_entity"] == "Name 0"
    assert by_qid[6]["documents"][0]["pid"] == "12345"  # input row 7 is qid 6 (row 5 skipped)
    assert set(by_qid[0]) == {"qid", "ambiguous_entity", "question", "documents"}
    assert set(by_qid[0]["documents"][0]) == {"title", "text", "pid", "answer"}
    names = list(files)
    for a in range(3):
        for b in range(a + 1, 3):
            assert not _pids(files[names[a]]) & _pids(files[names[b]])

    ds = load_ambigdocs(data_dir=out, cache_dir=str(tmp_path / "cache"))
    assert {k: len(v) for k, v in ds.items()} == {k: len(v) for k, v in files.items()}
    assert ds["test"][0]["documents"][0]["pid"] == files["test"][0]["documents"][0]["pid"]

    # Same seed, same files; the qids do not depend on the seed.
    out2 = tmp_path / "data2"
    split.run(src, out2, progress=False)
    assert (out2 / "train.json").read_text() == (out / "train.json").read_text()
    out3 = tmp_path / "data3"
    split.run(src, out3, seed=1, progress=False)
    assert (out3 / "train.json").read_text() != (out / "train.json").read_text()


def test_bad_rows_name_the_row_and_field(tmp_path):
    src = tmp_path / "bad.jsonl"
    rows = [_row(0, ["a"]), _row(1, ["b"])]
    del rows[1]["documents"][0]["answer"]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match=r"row 1: field 'documents\[0\]\.answer'"):
        split.run(src, tmp_path / "o", progress=False)
    rows[1] = {"question": "q?", "documents": []}
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match=r"row 1: field 'surface_name'"):
        split.run(src, tmp_path / "o", progress=False)


def _write_rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("rows", "fractions", "empty"),
    [
        ([_row(0, ["a"])], (0.6, 0.1, 0.3), "validation"),  # one example
        ([_row(i, ["shared", f"p{i}"]) for i in range(20)], (0.6, 0.1, 0.3), "validation"),
        (_rows(30), (0.0, 0.0, 1.0), "train"),  # the user's fractions give train nothing: fine
        ([], (0.6, 0.1, 0.3), "train"),  # nothing passed the filters
    ],
)
def test_an_empty_split_is_an_error_unless_its_fraction_is_zero(tmp_path, rows, fractions, empty):
    from generation.cli import main

    src = _write_rows(tmp_path / "e.jsonl", rows)
    out = tmp_path / "data"
    if fractions[0] == 0:
        split.run(src, out, fractions=fractions, progress=False)
        assert json.loads((out / "train.json").read_text()) == []
        return
    with pytest.raises(ValueError, match=f"the {empty} split comes out empty"):
        split.run(src, out, fractions=fractions, progress=False)
    assert not out.exists()
    argv = ["build", "split", "--input", str(src), "--output-dir", str(out)]
    assert main([*argv, "--no-progress"]) == 2


def test_the_folder_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    src = _write_rows(tmp_path / "e.jsonl", _rows(60))
    out = tmp_path / "data"
    split.run(src, out, progress=False)
    old = {p.name: p.read_bytes() for p in out.iterdir()}

    # A run killed while writing the new set (here: after its first file) leaves the old set.
    real_write = split.atomic_write_json
    written = []

    def dies_after_one_file(path, obj, **kw):
        if written:
            raise KeyboardInterrupt  # as a kill would stop it
        written.append(path)
        real_write(path, obj, **kw)

    monkeypatch.setattr(split, "atomic_write_json", dies_after_one_file)
    with pytest.raises(KeyboardInterrupt):
        split.run(src, out, seed=1, progress=False)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == old
    monkeypatch.setattr(split, "atomic_write_json", real_write)

    # A leftover staging folder (a SIGKILL leaves it) is cleaned on the next run.
    (tmp_path / ".data.tmp-leftover").mkdir()
    split.run(src, out, seed=1, progress=False)
    assert not list(tmp_path.glob(".data.tmp-*"))
    assert (out / "train.json").read_bytes() != old["train.json"]


def test_the_output_folder_follows_the_umask_and_keeps_other_files(tmp_path):
    import os

    src = _write_rows(tmp_path / "e.jsonl", _rows(60))
    out = tmp_path / "data"
    previous = os.umask(0o022)
    try:
        split.run(src, out, progress=False)
    finally:
        os.umask(previous)
    assert out.stat().st_mode & 0o777 == 0o755
    assert (out / "train.json").stat().st_mode & 0o777 == 0o644
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"holds other files than a split's \(notes\.txt\)"):
        split.run(src, out, progress=False)
    assert (out / "notes.txt").read_text() == "mine"
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        split.run(src, not_a_folder, progress=False)
