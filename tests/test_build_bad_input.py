"""Bad input of every `ambigdocs build` command ends with one line naming the place and exit
status 2, never a traceback; arguments are checked before any weights load. Also the typed stage
options: `--no-X` flags, `backend_option` from the command line and from YAML."""

from __future__ import annotations

import json

import pytest
import yaml
from test_build_filter import line
from test_build_questions import seed_rows, write_jsonl

from generation.cli import main as ambigdocs_main
from generation.datagen import pipeline
from generation.datagen.model_options import ModelOptions, backend_options
from generation.io.passages import write_passages_tsv
from generation.io.records import read_records


def build(capsys, *argv) -> tuple[int, str]:
    """`ambigdocs build ARGV` in process: (exit status, stderr). An uncaught exception (what
    would print a traceback) fails the test by itself."""
    capsys.readouterr()
    status = ambigdocs_main(["build", *map(str, argv)])
    err = capsys.readouterr().err
    return status, err


def assert_one_line_error(status: int, err: str, *fragments: str) -> None:
    assert status == 2, err
    assert "Traceback" not in err
    errors = [x for x in err.splitlines() if "error:" in x]
    assert len(errors) == 1, err
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])


# --- seed --------------------------------------------------------------------------------------


@pytest.fixture
def seed_inputs(tmp_path):
    mapping = {"Judge Day": ["A Day", "B Day"]}
    (tmp_path / "map.json").write_text(json.dumps(mapping))
    shared = "was born in the old town"
    write_passages_tsv(
        tmp_path / "psgs.tsv",
        [
            (str(k), f"p{k} a{k} b{k} c{k} d{k} e{k} f{k} g{k} {shared} x{k}", t)
            for k, t in enumerate(["A Day", "A Day", "B Day"] * 2)
        ],
    )
    return tmp_path


def seed_argv(d, passages="psgs.tsv", disambiguation="map.json", output="seeds.jsonl"):
    return [
        "seed", "--passages", d / passages, "--disambiguation", d / disambiguation,
        "--output", d / output, "--no-progress",
    ]  # fmt: skip


def test_seed_inputs_are_valid(seed_inputs, capsys):
    status, err = build(capsys, *seed_argv(seed_inputs))
    assert status == 0, err
    assert len(read_records(seed_inputs / "seeds.jsonl")) == 1


@pytest.mark.parametrize(
    ("write", "which", "fragments"),
    [
        (lambda p: p.mkdir(), "passages", ["is a folder, not the passage TSV"]),
        (lambda p: None, "passages", ["No such file"]),
        (
            lambda p: p.write_bytes(b"id\ttext\ttitle\n1\tgood\tA Day\n2\tbad \xff x\tB Day\n"),
            "passages",
            [", line 3, byte 7: not valid UTF-8"],
        ),
        (lambda p: p.write_bytes(b""), "passages", ["holds no passages"]),
        (lambda p: p.write_bytes(b"id\ttext\ttitle\n"), "passages", ["holds no passages"]),
        (
            lambda p: write_passages_tsv(p, [("1", "text", "Other Title")]),
            "passages",
            ["none of the 2 entity titles of the map is a title"],
        ),
        (lambda p: p.mkdir(), "disambiguation", ["is a folder, not the map JSON"]),
        (lambda p: p.write_bytes(b""), "disambiguation", ["the file is empty"]),
        (lambda p: p.write_bytes(b"{}"), "disambiguation", ["the map holds no page"]),
        (lambda p: p.write_bytes(b"[1, 2]"), "disambiguation", ["expected a JSON object", "list"]),
        (
            lambda p: p.write_bytes(b'{\n"P": ["A", \xff]}'),
            "disambiguation",
            [", line 2, byte 12: not valid UTF-8"],
        ),
        (
            lambda p: p.write_bytes(b'{\n"P": ["A",]}'),
            "disambiguation",
            [", line 2, column 11: not valid JSON"],
        ),
        (
            lambda p: p.write_text('{"P": ["A", "\\ud800"]}'),
            "disambiguation",
            ["field 'P[1]' holds a lone UTF-16 surrogate"],
        ),
        (
            lambda p: p.write_text('{"P": ["A"]}'),
            "disambiguation",
            ["none of its 1 pages has 2..10 entities"],
        ),
    ],
)
def test_seed_bad_inputs(seed_inputs, capsys, write, which, fragments):
    bad = seed_inputs / f"bad-{which}"
    write(bad)
    argv = seed_argv(seed_inputs, **{which: bad.name})
    status, err = build(capsys, *argv)
    assert_one_line_error(status, err, str(bad), *fragments)
    assert not (seed_inputs / "seeds.jsonl").exists()


@pytest.mark.parametrize("output", ["folder", "map.json/seeds.jsonl"])
def test_seed_output_that_cannot_be_written(seed_inputs, capsys, output):
    (seed_inputs / "folder").mkdir()
    status, err = build(capsys, *seed_argv(seed_inputs, output=output))
    assert_one_line_error(status, err, "--output")


def test_seed_without_any_pair_warns(tmp_path, capsys):
    (tmp_path / "map.json").write_text(json.dumps({"P": ["A", "B"]}))
    write_passages_tsv(tmp_path / "psgs.tsv", [("1", "one two", "A"), ("2", "three", "B")])
    status, err = build(capsys, *seed_argv(tmp_path))
    assert status == 0 and "warning: no page has a seed pair" in err
    assert read_records(tmp_path / "seeds.jsonl") == []


# --- gather ------------------------------------------------------------------------------------


def test_gather_dump_that_breaks_off(tmp_path, capsys, repo_root):
    dump = (repo_root / "tests/data/wiki/enwiki-mini.xml").read_bytes()
    cut = tmp_path / "cut.xml"
    cut.write_bytes(dump[: len(dump) // 2])
    status, err = build(capsys, "gather", "--dump", cut, "--output", tmp_path / "m.json")
    assert_one_line_error(status, err, str(cut), "the dump is not readable after")


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--min-entities", "5", "--max-entities", "2"], "need 0 <= min <= max"),
        (["--output", "{tmp}/m.json/x.json"], "is a file, not a folder"),
        (["--entity-rule", "links"], "invalid choice"),
        (["--templates", " "], "give at least one template name"),
    ],
)
def test_gather_bad_options(tmp_path, capsys, repo_root, extra, fragment):
    (tmp_path / "m.json").write_text("{}")
    dump = repo_root / "tests/data/wiki/enwiki-mini.xml"
    extra = [x.replace("{tmp}", str(tmp_path)) for x in extra]
    argv = ["gather", "--dump", dump, "--output", tmp_path / "out.json", *extra, "--no-progress"]
    status, err = build(capsys, *argv)
    assert_one_line_error(status, err, fragment)


# --- questions: the default prompt format, checks before the weights ----------------------------


@pytest.mark.parametrize(
    ("model_fixture", "key"), [("tiny_llama_dir", "prompt"), ("tiny_chat_llama_dir", "messages")]
)
def test_questions_default_format_follows_the_chat_template(
    tmp_path, capsys, request, model_fixture, key
):
    """As `ambigdocs answer`: chat with a chat template, plain without one (read from the
    tokenizer; the dry run loads no weights)."""
    model = request.getfixturevalue(model_fixture)
    src = write_jsonl(tmp_path / "seeds.jsonl", seed_rows(2))
    out = tmp_path / "dry.jsonl"
    argv = ["questions", "--input", src, "--output", out, "--backend", "hf", "--model", model]
    status, err = build(capsys, *argv, "--dry-run")
    assert status == 0, err
    assert all(key in r for r in read_records(out))


def test_questions_plain_default_runs_on_a_model_without_chat_template(
    tmp_path, capsys, tiny_llama_dir
):
    src = write_jsonl(tmp_path / "seeds.jsonl", seed_rows(2))
    out = tmp_path / "q.jsonl"
    status, err = build(
        capsys, "questions", "--input", src, "--output", out, "--backend", "hf",
        "--model", tiny_llama_dir, "--max-new-tokens", "4", "--backend-option", "dtype=float32",
        "--no-progress",
    )  # fmt: skip
    assert status == 0, err
    assert len(read_records(out)) == 2


@pytest.fixture
def no_weights(monkeypatch):
    """Loading any causal LM fails the test: the errors below must come first."""
    import transformers

    def refuse(*args, **kwargs):
        raise AssertionError("weights were loaded before the arguments were checked")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refuse)


@pytest.mark.parametrize(
    ("extra", "fragments"),
    [
        (["--prompt-format", "chat"], ["--prompt-format chat", "has no chat template"]),
        (["--backend-option", "colour=red"], ["takes no option 'colour'"]),
        (["--backend-option", "dtype"], ["expected KEY=VALUE"]),
        (["--chunk-size", "0"], ["'chunk_size' must be >= 1"]),
        (["--exemplars", "{tmp}"], ["Is a directory"]),
        (["--output", "{tmp}"], ["--output", "is a folder"]),
    ],
)
def test_questions_bad_arguments_before_weights(
    tmp_path, capsys, tiny_llama_dir, no_weights, extra, fragments
):
    src = write_jsonl(tmp_path / "seeds.jsonl", seed_rows(2))
    extra = [x.replace("{tmp}", str(tmp_path)) for x in extra]
    status, err = build(
        capsys, "questions", "--input", src, "--output", tmp_path / "q.jsonl",
        "--backend", "hf", "--model", tiny_llama_dir, *extra,
    )  # fmt: skip
    assert_one_line_error(status, err, *fragments)


@pytest.mark.parametrize("stage", ["questions", "expand"])
def test_missing_model_folder_is_reported_before_work(tmp_path, capsys, stage):
    src = write_jsonl(tmp_path / "in.jsonl", seed_rows(1))
    argv = [stage, "--input", src, "--output", tmp_path / "o.jsonl", "--backend", "hf"]
    if stage == "expand":
        # the passage file is a folder: only read after the model check
        argv += ["--passages", tmp_path, "--disambiguation", tmp_path / "map.json"]
    status, err = build(capsys, *argv, "--model", tmp_path / "no-model")
    assert_one_line_error(status, err, "no-model", "no such model folder")


@pytest.mark.parametrize("stage", ["questions", "filter", "expand"])
def test_empty_stage_input(tmp_path, capsys, stage):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    (tmp_path / "map.json").write_text('{"P": ["A", "B"]}')
    write_passages_tsv(tmp_path / "psgs.tsv", [("1", "t", "A")])
    argv = [stage, "--input", empty, "--output", tmp_path / "o.jsonl"]
    if stage in ("questions", "expand"):
        argv += ["--backend", "openai", "--model", "m", "--dry-run"]
    if stage == "expand":
        argv += ["--passages", tmp_path / "psgs.tsv", "--disambiguation", tmp_path / "map.json"]
    status, err = build(capsys, *argv, "--no-progress")
    assert_one_line_error(status, err, str(empty), "holds no rows")


def test_filter_entailment_model_that_cannot_load(tmp_path, capsys):
    src = write_jsonl(tmp_path / "q.jsonl", [line()])  # passes filters 1 and 2
    missing = tmp_path / "no-such-model"
    status, err = build(
        capsys, "filter", "--input", src, "--output", tmp_path / "f.jsonl",
        "--converter-model", missing, "--nli-model", missing, "--no-progress",
    )  # fmt: skip
    assert_one_line_error(status, err, "entailment models", "cannot load them")


def test_expand_passages_not_utf8(tmp_path, capsys):
    (tmp_path / "map.json").write_text('{"P": ["A", "B", "C"]}')
    (tmp_path / "psgs.tsv").write_bytes(b"id\ttext\ttitle\n1\t\xc3\x28\tC\n")
    row = {"surface_name": "P", "question": "Q?", "answers": ["x", "y"], "status": "ok",
           "documents": [{"pid": "1", "title": "A", "text": "a"},
                         {"pid": "2", "title": "B", "text": "b"}]}  # fmt: skip
    src = write_jsonl(tmp_path / "f.jsonl", [row])
    status, err = build(
        capsys, "expand", "--input", src, "--output", tmp_path / "e.jsonl",
        "--passages", tmp_path / "psgs.tsv", "--disambiguation", tmp_path / "map.json",
        "--backend", "openai", "--model", "m", "--dry-run", "--no-progress",
    )  # fmt: skip
    assert_one_line_error(status, err, "psgs.tsv, line 2, byte 3: not valid UTF-8")


# --- typed options: --no-X, backend_option ------------------------------------------------------


def test_backend_option_from_yaml_mapping_equals_the_command_line():
    from_yaml = ModelOptions(
        backend="hf", model="m",
        backend_option={"dtype": "float32", "trust_remote_code": True, "tokenizer": "123"},
    )  # fmt: skip
    from_cli = ModelOptions(
        backend="hf", model="m",
        backend_option=["dtype=float32", "trust_remote_code=true", 'tokenizer="123"'],
    )  # fmt: skip
    assert from_yaml == from_cli
    # types survive: a quoted number stays a string
    assert backend_options(from_yaml) == {
        "dtype": "float32", "trust_remote_code": True, "tokenizer": "123",
    }  # fmt: skip


def test_backend_option_is_repeatable_on_the_command_line():
    from generation.datagen import questions
    from generation.options import parse_argv

    argv = ["--input", "i", "--output", "o", "--backend", "hf", "--model", "m",
            "--backend-option", "dtype=float32", "--backend-option", "device=cpu",
            "--batch-size", "2", "--no-progress"]  # fmt: skip
    options, model = parse_argv("q", "", questions.OPTIONS, argv)
    assert backend_options(model) == {"dtype": "float32", "device": "cpu", "batch_size": 2}
    assert options.progress is False


@pytest.mark.parametrize(
    ("stage", "message"),
    [
        ({"no_progress": True}, "option 'no_progress' is now `progress: false`"),
        ({"backend_option": {"colour": "red"}}, "takes no option 'colour'"),
        ({"backend_option": 3}, "is not a list of KEY=VALUE"),
        ({"backend": "gpt"}, "option 'backend': 'gpt' is not one of"),
    ],
)
def test_build_all_bad_model_options(tmp_path, capsys, stage, message):
    config = {"stages": {"questions": {"input": "s.jsonl", "output": "q.jsonl", "backend": "hf",
                                        "model": "m", **stage}}}  # fmt: skip
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    capsys.readouterr()
    assert pipeline.main(["--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "stage 'questions'" in err and message in err


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"stages: [\n", "line 2, column 1: not valid YAML"),
        (b"stages:\n  seed: {output: \xff}\n", "line 2, byte 18: not valid UTF-8"),
    ],
)
def test_build_all_bad_config_file(tmp_path, capsys, content, fragment):
    path = tmp_path / "c.yaml"
    path.write_bytes(content)
    capsys.readouterr()
    assert pipeline.main(["--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and fragment in err and err.count("\n") == 1
