"""Hostile input to the `ambigdocs` commands: every case ends in one error line and exit status 2.

The commands run in-process through the dispatcher (`generation.cli.main`), as the console
script does; `run_cli` checks the exit status, that nothing on stderr is a traceback, and that
the error is one line naming what was wrong.
"""

from __future__ import annotations

import json
import sys

import pytest

from generation.cli import main

SAMPLE_ANSWERS = "generation/resources/sample/answers.json"
DOC = {"title": "a", "text": "b", "pid": "1", "answer": "c"}
ROW = {"qid": 0, "ambiguous_entity": "x", "question": "q", "documents": [DOC]}


def run_cli(capsys, argv: list[str]) -> tuple[int, str]:
    """(exit status, stderr) of `ambigdocs ARGV`; a SystemExit from argparse counts too."""
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], err


def write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return str(path)


# --- ambigdocs answer (dry run on the openai back-end: no model is loaded) ---------------------


def _answer(capsys, tmp_path, *extra: str) -> tuple[int, str]:
    argv = ["answer", "--model", "gpt-4", "--backend", "openai", "--dry-run", "--overwrite"]
    return run_cli(capsys, argv + ["--output", str(tmp_path / "out.jsonl"), *extra])


@pytest.mark.parametrize("content", ["", "[]\n", "\n\n"])
def test_answer_refuses_a_dataset_without_rows(capsys, tmp_path, content):
    data = write(tmp_path / "rows.json", content)
    code, err = _answer(capsys, tmp_path, "--dataset", data)
    assert_one_line_error(code, err, f"--dataset {data}", "no rows")
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("value", [5, ["q"], {"text": "q"}])
def test_answer_names_a_question_that_is_not_text(capsys, tmp_path, value):
    data = write(tmp_path / "rows.json", json.dumps([{**ROW, "question": value}]))
    code, err = _answer(capsys, tmp_path, "--dataset", data)
    assert_one_line_error(code, err, "example 0", "'question' must be a string")


def test_answer_still_names_an_empty_question(capsys, tmp_path):
    data = write(tmp_path / "rows.json", json.dumps([{**ROW, "question": "  "}]))
    code, err = _answer(capsys, tmp_path, "--dataset", data)
    assert_one_line_error(code, err, "example 0", "'question' is empty")


def test_answer_dry_run_of_well_formed_rows_still_succeeds(capsys, tmp_path):
    data = write(tmp_path / "rows.json", json.dumps([ROW]))
    code, _ = _answer(capsys, tmp_path, "--dataset", data)
    assert code == 0
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 1


# --- ambigdocs evaluate -----------------------------------------------------------------------


def test_evaluate_refuses_a_labels_field_no_row_holds(capsys, tmp_path):
    out = tmp_path / "scores"
    argv = ["evaluate", SAMPLE_ANSWERS, "--no-df1", "--allow-duplicate-qids"]
    code, err = run_cli(capsys, argv + ["--labels-field", "nope", "--output-dir", str(out)])
    assert_one_line_error(code, err, "--labels-field 'nope'", SAMPLE_ANSWERS)
    assert not (out / "summary.json").exists()


def test_evaluate_labels_field_the_rows_hold_still_compares(capsys, tmp_path):
    out = tmp_path / "scores"
    argv = ["evaluate", SAMPLE_ANSWERS, "--no-df1", "--allow-duplicate-qids", "--bootstrap", "0"]
    code = main(argv + ["--labels-field", "paper_label", "--output-dir", str(out)])
    assert code == 0
    assert "Cohen's kappa" in capsys.readouterr().out


# --- ambigdocs export, and the builder behind it -----------------------------------------------


def test_export_names_the_file_and_byte_of_invalid_utf8(capsys, tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "test.json").write_bytes(b'[{"qid": 1, "question": "\xff\xfe"}]')
    code, err = run_cli(capsys, ["export", "--data-dir", str(raw), str(tmp_path / "out")])
    lines = [line for line in err.splitlines() if line.startswith("ambigdocs export")]
    assert code == 2 and len(lines) == 1, err
    assert f"{raw / 'test.json'}, line 1, byte 26: not valid UTF-8" in lines[0]
    assert not (tmp_path / "out").exists()


def test_export_refuses_a_repo_id_the_card_could_not_use(capsys, tmp_path):
    out = tmp_path / "out"
    argv = ["export", "--config", "sample", "--repo-id", "bad id!!", str(out)]
    code, err = run_cli(capsys, argv)
    assert_one_line_error(code, err, "repo id 'bad id!!'")
    assert not out.exists()


# --- shared helpers: outputs (generation/io/records.py) and passages (generation/io/passages.py)


def test_an_output_under_a_file_names_that_file(tmp_path):
    from generation.io.records import atomic_write_json

    blocker = tmp_path / "afile"
    blocker.write_text("x")
    for target in (blocker / "out.json", blocker / "deeper" / "out.json"):
        with pytest.raises(NotADirectoryError) as caught:
            atomic_write_json(target, {})
        assert caught.value.filename == str(blocker)


def test_an_output_that_is_a_folder_is_named(tmp_path):
    from generation.io.records import ResumableJsonl, atomic_write_json

    with pytest.raises(IsADirectoryError) as caught:
        atomic_write_json(tmp_path, {})
    assert caught.value.filename == str(tmp_path)
    with pytest.raises(IsADirectoryError, match="is a folder; give a file path"):
        ResumableJsonl(tmp_path, key=lambda r: r["qid"])
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def _seed(capsys, tmp_path, passages: str, output: str) -> tuple[int, str]:
    mapping = write(tmp_path / "map.json", json.dumps({"A": ["A (x)", "A (y)"]}))
    argv = ["build", "seed", "--passages", passages, "--disambiguation", mapping]
    return run_cli(capsys, argv + ["--output", output, "--no-progress"])


def test_build_seed_output_under_a_file_ends_in_one_line(capsys, tmp_path):
    passages = write(tmp_path / "p.tsv", "id\ttext\ttitle\n1\thello\tA (x)\n")
    blocker = write(tmp_path / "afile", "x")
    code, err = _seed(capsys, tmp_path, passages, f"{blocker}/seeds.jsonl")
    assert_one_line_error(code, err, blocker, "is a file")


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"", "no passages"),
        (b"id\ttext\ttitle\n", "no passages"),
        (b"id\ttext\ttitle\n1\t\xff\xfe\tA (x)\n", "not valid UTF-8"),
    ],
)
def test_passages_without_passages_or_not_utf8_are_named(tmp_path, content, needle):
    from generation.io.passages import collect_passages

    path = tmp_path / "p.tsv"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=needle) as caught:
        collect_passages(path, {"A (x)"}, 20, False)
    assert str(path) in str(caught.value)


def test_build_seed_refuses_an_empty_passage_file(capsys, tmp_path):
    passages = write(tmp_path / "p.tsv", "")
    code, err = _seed(capsys, tmp_path, passages, str(tmp_path / "seeds.jsonl"))
    assert_one_line_error(code, err, passages, "no passages")
    assert not (tmp_path / "seeds.jsonl").exists()


# --- the dispatcher's net: a path error a command lets through still ends in one line ---------


def test_build_filter_missing_input_ends_in_one_line(capsys, tmp_path):
    missing = str(tmp_path / "missing.jsonl")
    argv = ["build", "filter", "--input", missing, "--output", str(tmp_path / "f.jsonl")]
    code, err = run_cli(capsys, argv + ["--no-entailment"])
    assert_one_line_error(code, err, "ambigdocs build filter: error:", missing)


def test_build_gather_dump_that_is_a_folder_ends_in_one_line(capsys, tmp_path):
    argv = ["build", "gather", "--dump", str(tmp_path), "--output", str(tmp_path / "map.json")]
    code, err = run_cli(capsys, argv)
    assert_one_line_error(code, err, "ambigdocs build gather: error:", str(tmp_path))


def test_build_split_output_dir_under_a_file_ends_in_one_line(capsys, tmp_path):
    rows = [
        {
            "surface_name": f"X{i}",
            "ambiguous_entity": "X",
            "question": "q?",
            "documents": [{"title": f"t{i}", "text": "x", "pid": str(i), "answer": "a"}],
        }
        for i in range(10)
    ]
    data = write(tmp_path / "expanded.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    blocker = write(tmp_path / "afile", "x")
    argv = ["build", "split", "--input", data, "--output-dir", f"{blocker}/release"]
    code, err = run_cli(capsys, argv + ["--no-progress"])
    assert_one_line_error(code, err, "ambigdocs build split: error:", blocker)


def test_the_dispatcher_still_raises_a_file_error_without_a_path(monkeypatch):
    import types

    from generation import cli

    def fail(argv):
        raise FileNotFoundError("no path attached")

    monkeypatch.setitem(cli.COMMANDS, "boom", ("boom_module", "test"))
    monkeypatch.setitem(sys.modules, "boom_module", types.SimpleNamespace(main=fail))
    with pytest.raises(FileNotFoundError, match="^no path attached$"):
        cli.main(["boom"])


# --- answer --evaluate-args: checked before any answering, not after it --------------------------


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ("--bogus", "unrecognized arguments: --bogus"),
        ("--bootstrap abc", "invalid int value"),
        ("'--no-df1", "No closing quotation"),
        ("--help", "not an option to pass on"),
    ],
)
def test_answer_refuses_evaluate_args_evaluate_would_refuse(capsys, tmp_path, extra, needle):
    code, err = _answer(
        capsys, tmp_path, "--config", "sample", "--evaluate", f"--evaluate-args={extra}"
    )
    assert_one_line_error(code, err, "--evaluate-args", needle)
    assert not (tmp_path / "out.jsonl").exists()


def test_answer_takes_evaluate_args_evaluate_takes(capsys, tmp_path):
    argv = ["--config", "sample", "--evaluate", "--evaluate-args=--no-df1 --bootstrap 0"]
    code, _ = _answer(capsys, tmp_path, *argv)
    assert code == 0


# --- python -m generation.lm_eval_tasks.samples ---------------------------------------------------


@pytest.mark.parametrize("content", ["", "\n\n"])
def test_lm_eval_samples_refuses_an_empty_file(capsys, tmp_path, content):
    from generation.lm_eval_tasks.samples import main as samples_main

    samples = write(tmp_path / "samples.jsonl", content)
    code = samples_main([samples, "--output", str(tmp_path / "answers.jsonl")])
    err = capsys.readouterr().err
    assert_one_line_error(code, err, samples, "no samples")
    assert not (tmp_path / "answers.jsonl").exists()


def test_lm_eval_samples_missing_file_is_one_line_without_errno(capsys, tmp_path):
    from generation.lm_eval_tasks.samples import main as samples_main

    missing = str(tmp_path / "missing.jsonl")
    code = samples_main([missing, "--output", str(tmp_path / "answers.jsonl")])
    err = capsys.readouterr().err
    assert_one_line_error(code, err, f"error: {missing}: No such file")
    assert "[Errno" not in err


def test_lm_eval_samples_refuses_a_boolean_doc_id(tmp_path):
    from generation.lm_eval_tasks.samples import samples_to_answers

    sample = {"doc_id": True, "doc": {"docs": []}, "filtered_resps": ["x"]}
    path = write(tmp_path / "samples.jsonl", json.dumps(sample) + "\n")
    with pytest.raises(ValueError, match="'doc_id' must be an integer"):
        samples_to_answers(path)


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--bootstrap-seed", "-2"),
        ("--workers", "0"),
        ("--workers", "-2"),
        ("--qa-batch-size", "0"),
        ("--qa-batch-tokens", "0"),
    ],
)
def test_evaluate_names_a_number_out_of_range(capsys, tmp_path, flag, value):
    out = tmp_path / "scores"
    argv = ["evaluate", SAMPLE_ANSWERS, "--allow-duplicate-qids", "--output-dir", str(out)]
    code, err = run_cli(capsys, [*argv, flag, value])
    assert_one_line_error(code, err, f"{flag} must be")
    assert not (out / "summary.json").exists()


# --- resuming: recorded settings that cannot be read (generation/io/resume.py) -----------------


@pytest.mark.parametrize("content", [b"{", b"[]", b"5", b"\xff"])
def test_unreadable_recorded_settings_refuse_the_resume_naming_the_file(tmp_path, content):
    from generation.io.resume import ResumeRefused, check_settings

    settings_file = tmp_path / "out.jsonl.meta.json"
    settings_file.write_bytes(content)
    with pytest.raises(ResumeRefused, match="--overwrite") as caught:
        check_settings(settings_file, {"model": "m"}, has_work=True, what="out.jsonl")
    assert str(settings_file) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_build_seed_with_a_cut_settings_file_ends_in_one_line(capsys, tmp_path):
    from generation.io.resume import partial_path

    passages = write(tmp_path / "p.tsv", "id\ttext\ttitle\n1\thello\tA (x)\n")
    output = tmp_path / "seeds.jsonl"
    partial_path(output).write_text('{"surface_name": "A"}\n')  # finished work to resume
    settings = tmp_path / "seeds.jsonl.partial.settings.json"
    settings.write_text("{")
    code, err = _seed(capsys, tmp_path, passages, str(output))
    assert_one_line_error(code, err, str(settings), "--overwrite")


# --- options named in the errors about them -----------------------------------------------------


def test_answer_unknown_split_names_the_option(capsys, tmp_path):
    code, err = _answer(capsys, tmp_path, "--config", "sample", "--split", "bogus")
    assert_one_line_error(code, err, "--split bogus", "Unknown split")


def test_answer_exemplars_that_are_a_folder_are_named_as_one(capsys, tmp_path):
    code, err = _answer(capsys, tmp_path, "--config", "sample", "--exemplars", str(tmp_path))
    assert_one_line_error(code, err, f"--exemplars {tmp_path}: a folder, not a file")


def test_answer_data_dir_without_the_files_names_the_option(capsys, tmp_path):
    (tmp_path / "data").mkdir()
    code, err = _answer(capsys, tmp_path, "--data-dir", str(tmp_path / "data"))
    assert_one_line_error(code, err, f"--data-dir {tmp_path / 'data'}: none of the release's")


def test_push_unknown_source_config_is_named(capsys, tmp_path):
    export = tmp_path / "exp"
    assert main(["export", "--config", "sample", str(export)]) == 0
    capsys.readouterr()
    argv = ["push", str(export), "--repo-id", "me/x", "--split", "test", "--dry-run"]
    code, err = run_cli(capsys, [*argv, "--source-config", "bogus"])
    assert_one_line_error(code, err, "--source-config bogus", "no such config", "['sample']")


# --- answer: the files named by options, and checks made before hours of answering --------------


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("", "no rows"),
        ('{"qid": 0, "retrieved": []}\n{"qid": "0", "retrieved": []}\n', "line 2 repeats qid"),
        ("{\n", "not valid JSON"),
        ("5\n", "not an object"),
    ],
)
def test_answer_retrieved_file_problems_name_the_option(capsys, tmp_path, content, needle):
    retrieved = write(tmp_path / "r.jsonl", content)
    extra = ["--config", "sample", "--setting", "retrieved-only", "--retrieved", retrieved]
    code, err = _answer(capsys, tmp_path, *extra)
    assert_one_line_error(code, err, f"--retrieved {retrieved}", needle)


@pytest.mark.parametrize(("content", "needle"), [(b"5\n", "not an object"), (b"\xff", "UTF-8")])
def test_answer_exemplars_file_problems_name_the_option(capsys, tmp_path, content, needle):
    exemplars = tmp_path / "ex.json"
    exemplars.write_bytes(content)
    code, err = _answer(capsys, tmp_path, "--config", "sample", "--exemplars", str(exemplars))
    assert_one_line_error(code, err, f"--exemplars {exemplars}", needle)


@pytest.mark.parametrize(
    ("args", "needle"),
    [("--bootstrap -1", "--bootstrap must be between 0 and"), ("--workers 0", "--workers must be")],
)
def test_answer_evaluate_args_out_of_range_are_refused_first(capsys, tmp_path, args, needle):
    code, err = _answer(
        capsys, tmp_path, "--config", "sample", "--evaluate", "--evaluate-args", args
    )
    assert_one_line_error(code, err, "--evaluate-args", needle)
    assert not (tmp_path / "out.jsonl").exists()


def test_answer_evaluate_dir_that_is_a_file_is_refused_first(capsys, tmp_path):
    afile = write(tmp_path / "afile", "x")
    code, err = _answer(
        capsys, tmp_path, "--config", "sample", "--evaluate", "--evaluate-dir", afile
    )
    assert_one_line_error(code, err, f"--evaluate-dir {afile}: a file, not a folder")
    assert not (tmp_path / "out.jsonl").exists()


# --- evaluate, export, push-metric: folders and files where the other was expected ---------------


def test_evaluate_output_dir_under_a_file_names_the_file(capsys, tmp_path):
    afile = write(tmp_path / "afile", "x")
    argv = ["evaluate", SAMPLE_ANSWERS, "--allow-duplicate-qids", "--no-df1", "--bootstrap", "0"]
    code, err = run_cli(capsys, [*argv, "--output-dir", f"{afile}/scores"])
    assert_one_line_error(code, err, f"--output-dir {afile}/scores: {afile} is a file")


def test_evaluate_results_that_are_a_folder_are_named_as_one(capsys, tmp_path):
    argv = ["evaluate", str(tmp_path), "--no-df1", "--output-dir", str(tmp_path / "scores")]
    code, err = run_cli(capsys, argv)
    assert_one_line_error(code, err, f"{tmp_path}: a folder, not a results file")


def test_export_data_dir_without_the_files_names_the_option(capsys, tmp_path):
    (tmp_path / "raw").mkdir()
    argv = ["export", "--data-dir", str(tmp_path / "raw"), str(tmp_path / "out")]
    code, err = run_cli(capsys, argv)
    assert_one_line_error(code, err, "ambigdocs export: error:", f"--data-dir {tmp_path / 'raw'}")


@pytest.mark.parametrize(
    ("name", "kind"), [("afile", "a file, not a folder"), ("nowhere", "no such")]
)
def test_push_metric_dir_that_is_not_a_folder_is_named(capsys, tmp_path, name, kind):
    write(tmp_path / "afile", "x")
    argv = ["push-metric", "--repo-id", "me/m", "--dry-run", "--metric-dir", str(tmp_path / name)]
    code, err = run_cli(capsys, argv)
    assert_one_line_error(
        code, err, "ambigdocs push-metric: error:", f"--metric-dir {tmp_path / name}: {kind}"
    )


@pytest.mark.parametrize("label", ["bogus", ["complete"], {"x": 1}, 3])
def test_evaluate_refuses_a_label_that_is_not_a_category(capsys, tmp_path, label):
    rows = json.loads(open(SAMPLE_ANSWERS, encoding="utf-8").read())
    rows[3]["paper_label"] = label
    results = write(tmp_path / "answers.json", json.dumps(rows))
    argv = ["evaluate", results, "--allow-duplicate-qids", "--no-df1", "--bootstrap", "0"]
    code, err = run_cli(
        capsys, [*argv, "--labels-field", "paper_label", "--output-dir", str(tmp_path / "o")]
    )
    assert_one_line_error(code, err, f"{results}: row 3", "'paper_label'", "not a category")


@pytest.mark.parametrize("damage", ["readme-not-utf8", "empty-parquet"])
def test_push_damaged_export_folder_is_named(capsys, tmp_path, damage):
    export = tmp_path / "exp"
    assert main(["export", "--config", "sample", str(export)]) == 0
    capsys.readouterr()
    if damage == "readme-not-utf8":
        (export / "README.md").write_bytes(b"---\n\xff\n")
        needle = f"{export / 'README.md'}, line 2, byte 1: not valid UTF-8"
    else:
        for shard in export.rglob("*.parquet"):
            shard.write_bytes(b"")
        needle = "test-00000-of-00001.parquet: not a readable Parquet file"
    argv = ["push", str(export), "--repo-id", "me/x", "--split", "test", "--dry-run"]
    code, err = run_cli(capsys, argv)
    lines = [line for line in err.splitlines() if line.startswith("ambigdocs push")]
    assert code == 2 and len(lines) == 1 and needle in lines[0], err


@pytest.mark.parametrize("source", ["file", "raw-folder"])
def test_push_source_config_for_a_raw_source_is_refused(capsys, tmp_path, source):
    rows = json.dumps([ROW | {"qid": 1, "documents": [DOC, {**DOC, "pid": "2"}]}])
    (tmp_path / "raw").mkdir()
    raw = write(tmp_path / "raw" / "test.json", rows)
    src = raw if source == "file" else str(tmp_path / "raw")
    argv = ["push", src, "--repo-id", "me/x", "--split", "test", "--dry-run"]
    code, err = run_cli(capsys, [*argv, "--source-config", "sample"])
    assert_one_line_error(code, err, "--source-config sample", "not an export folder")


@pytest.mark.parametrize("limit", ["0", "-1"])
def test_answer_limit_below_one_is_refused(capsys, tmp_path, limit):
    # --limit 0 would "succeed" with an empty output that evaluate then refuses.
    code, err = _answer(capsys, tmp_path, "--config", "sample", "--limit", limit)
    assert_one_line_error(code, err, "option 'limit' must be >= 1", f"got {limit}")
    assert not (tmp_path / "out.jsonl").exists()


def test_export_cache_dir_that_is_a_file_is_named(capsys, tmp_path):
    afile = write(tmp_path / "afile", "x")
    argv = ["export", str(tmp_path / "out"), "--config", "sample", "--cache-dir", afile]
    code, err = run_cli(capsys, argv)
    assert_one_line_error(code, err, f"--cache-dir {afile}: a file, not a folder")
