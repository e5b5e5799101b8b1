"""`ambigdocs answer` and `ambigdocs evaluate` name their data the same way (`--data-dir`,
`--config`, `--dataset`): both accept the same sources, read the same rows from them, and word
the same error for the same bad source (one loader, `generation.io.data_sources`)."""

from __future__ import annotations

import json

import pytest

from generation.io.data_sources import load_split_rows

pytest.importorskip("torch")

from generation.answering.answer import main as answer_main  # noqa: E402
from generation.io.records import iter_jsonl  # noqa: E402
from generation.report.evaluate import main as evaluate_main  # noqa: E402

SOURCES = ("json-file", "jsonl-file", "save-to-disk", "save-to-disk-dict", "export", "data-dir")


@pytest.fixture
def sample_rows(sample_dir):
    """The sample's test split as its raw file holds it (read without the loader under test)."""
    return json.loads((sample_dir / "test.json").read_text())


def _source(kind, sample_rows, sample_dir, tmp_path) -> list[str]:
    """The options naming the sample's test split as a source of the kind given."""
    import datasets

    folder = tmp_path / kind
    if kind == "json-file":
        folder.with_suffix(".json").write_text(json.dumps(sample_rows))
        return ["--dataset", str(folder.with_suffix(".json"))]
    if kind == "jsonl-file":
        path = folder.with_suffix(".jsonl")
        path.write_text("".join(json.dumps(r) + "\n" for r in sample_rows))
        return ["--dataset", str(path)]
    if kind == "save-to-disk":
        datasets.Dataset.from_list(sample_rows).save_to_disk(str(folder))
        return ["--dataset", str(folder)]
    if kind == "save-to-disk-dict":
        datasets.DatasetDict({"test": datasets.Dataset.from_list(sample_rows)}).save_to_disk(
            str(folder)
        )
        return ["--dataset", str(folder)]
    if kind == "export":
        from generation.hub import export

        assert export.main(["--config", "sample", str(folder)]) == 0
        return ["--dataset", str(folder)]
    assert kind == "data-dir"
    return ["--data-dir", str(sample_dir)]


def _answer(source, tmp_path, name) -> tuple[int, list[dict] | None]:
    """`answer --dry-run` on a source: (status, the model inputs it wrote)."""
    output = tmp_path / "dry-runs" / f"{name}.jsonl"  # apart from the sources
    output.parent.mkdir(exist_ok=True)
    argv = ["--model", "nobody/none", *source, "--output", str(output), "--dry-run",
            "--prompt-format", "authors", "--setting", "gold-only"]  # fmt: skip
    code = answer_main(argv)
    return code, (list(iter_jsonl(output)) if code == 0 else None)


def _evaluate(source, tmp_path, name, sample_dir) -> tuple[int, list[dict] | None]:
    """`evaluate` of the paper's sample answers joined with a source: (status, per-example
    scores)."""
    answers = json.loads((sample_dir / "answers.json").read_text())
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps([{"qid": r["qid"], "answer": r["gen_answer"]} for r in answers]))
    out = tmp_path / f"eval-{name}"
    argv = [str(preds), *source, "--subset", "--allow-duplicate-qids", "--no-df1",
            "--bootstrap", "0", "--output-dir", str(out)]  # fmt: skip
    code = evaluate_main(argv)
    return code, (list(iter_jsonl(out / "per_example.jsonl")) if code == 0 else None)


def test_the_loader_reads_every_kind_of_source_alike(sample_rows, sample_dir, tmp_path):
    assert [r["qid"] for r in sample_rows] == [0, 1, 2, 3, 4]
    assert load_split_rows(config="sample") == sample_rows
    for kind in SOURCES:
        flag, value = _source(kind, sample_rows, sample_dir, tmp_path)
        option = {"--dataset": "dataset", "--data-dir": "data_dir"}[flag]
        assert load_split_rows(**{option: value}) == sample_rows, kind


def test_answer_and_evaluate_accept_the_same_sources(sample_rows, sample_dir, tmp_path, capsys):
    code, inputs = _answer(["--config", "sample"], tmp_path, "config")
    assert code == 0, capsys.readouterr().err
    assert [r["qid"] for r in inputs] == [r["qid"] for r in sample_rows]
    code, scores = _evaluate(["--config", "sample"], tmp_path, "config", sample_dir)
    assert code == 0, capsys.readouterr().err
    assert scores
    for kind in SOURCES:
        source = _source(kind, sample_rows, sample_dir, tmp_path)
        assert _answer(source, tmp_path, kind) == (0, inputs), kind
        assert _evaluate(source, tmp_path, kind, sample_dir) == (0, scores), kind


def _bad_source(kind, tmp_path) -> list[str]:
    if kind == "empty-file":
        (tmp_path / "empty.json").write_text("[]")
        return ["--dataset", str(tmp_path / "empty.json")]
    if kind == "malformed-file":
        (tmp_path / "bad.jsonl").write_text('{"qid": 0}\n{"qid": \n')
        return ["--dataset", str(tmp_path / "bad.jsonl")]
    if kind == "not-a-data-set":
        folder = tmp_path / "not-a-dataset"
        folder.mkdir()
        (folder / "a.json").write_text('[{"x": 1}]')
        (folder / "b.json").write_text('[{"y": "z"}]')
        return ["--dataset", str(folder)]
    if kind == "data-dir-a-file":
        (tmp_path / "afile").write_text("x")
        return ["--data-dir", str(tmp_path / "afile")]
    if kind == "data-dir-without-files":
        (tmp_path / "emptydir").mkdir()
        return ["--data-dir", str(tmp_path / "emptydir")]
    assert kind == "unknown-split"
    return ["--config", "sample", "--split", "bogus"]


@pytest.mark.parametrize(
    ("kind", "named"),
    [
        ("empty-file", ["empty.json", "split 'test': no rows"]),
        ("malformed-file", ["--dataset", "bad.jsonl", "line 2"]),
        ("not-a-data-set", ["--dataset", "not-a-dataset: cannot be loaded"]),
        ("data-dir-a-file", ["--data-dir", "afile: not a folder"]),
        ("data-dir-without-files", ["--data-dir", "emptydir"]),
        ("unknown-split", ["--split bogus", "Unknown split"]),
    ],
)
def test_the_same_bad_source_is_the_same_error(kind, named, sample_dir, tmp_path, capsys):
    source = _bad_source(kind, tmp_path)
    lines = []
    for run in (
        lambda: _answer(source, tmp_path, "a"),
        lambda: _evaluate(source, tmp_path, "e", sample_dir),
    ):
        code, _ = run()
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        lines.append(err.partition("error: ")[2])
    assert lines[0] == lines[1]
    assert all(part in lines[0] for part in named), lines[0]
