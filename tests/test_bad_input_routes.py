"""Bad input to the build stages and `distill` ends alike by either route: through the
`ambigdocs` dispatcher and through the stage's own `main` (what `python -m generation.datagen.X`
runs): exit status 2, exactly one error line naming the place, no traceback, no `[Errno N]`.
Numeric options out of range are refused when the options are made, before anything loads.
"""

from __future__ import annotations

import errno
import importlib
import json
import os
import subprocess
import sys

import pytest
import yaml

from generation.cli import main as ambigdocs_main
from generation.datagen import pipeline
from generation.options import run_command

STAGES = ("gather", "seed", "questions", "filter", "expand", "split")


def run_route(capsys, route: str, stage: str, argv: list) -> tuple[int, str]:
    """(exit status, stderr) of one stage by `route`: `cli` (`ambigdocs build STAGE`) or
    `module` (the stage module's own `main`). An uncaught exception fails the test by itself."""
    argv = [str(a) for a in argv]
    capsys.readouterr()
    if route == "cli":
        status = ambigdocs_main(["build", stage, *argv])
    else:
        status = importlib.import_module(f"generation.datagen.{stage}").main(argv)
    return status, capsys.readouterr().err


def assert_one_line_error(status: int, err: str, *fragments: str) -> None:
    assert status == 2, err
    assert "Traceback" not in err and "[Errno" not in err, err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "error:" in lines[0], err
    for fragment in fragments:
        assert str(fragment) in lines[0], (fragment, lines[0])


def write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


EXPANDED = {
    "surface_name": "X (disambiguation)",
    "question": "q?",
    "documents": [{"title": "t", "text": "x", "pid": "1", "answer": "a"}],
}
MODEL = ["--backend", "openai", "--model", "gpt-4", "--dry-run"]


def _argv_for(stage: str, tmp, data, out) -> list:
    """Arguments that run `stage` on input `data` to output `out` (no model is loaded)."""
    return {
        "gather": ["--dump", data, "--output", out, "--no-progress"],
        "seed": ["--passages", data, "--disambiguation", data, "--output", out, "--no-progress"],
        "questions": ["--input", data, "--output", out, *MODEL, "--no-progress"],
        "filter": ["--input", data, "--output", out, "--no-entailment", "--no-progress"],
        "expand": [
            "--input",
            data,
            "--output",
            out,
            "--passages",
            data,
            "--disambiguation",
            data,
            *MODEL,
            "--no-progress",
        ],  # fmt: skip
        "split": ["--input", data, "--output-dir", out, "--no-progress"],
    }[stage]


@pytest.mark.parametrize("route", ["cli", "module"])
@pytest.mark.parametrize("stage", STAGES)
def test_an_output_under_a_file_is_one_line_by_both_routes(tmp_path, capsys, route, stage):
    data = write(tmp_path / "data.jsonl", json.dumps(EXPANDED) + "\n")
    blocker = write(tmp_path / "afile", "x")
    status, err = run_route(capsys, route, stage, _argv_for(stage, tmp_path, data, blocker / "x"))
    assert_one_line_error(status, err, f"ambigdocs build {stage}: error:", blocker)


@pytest.mark.parametrize("route", ["cli", "module"])
@pytest.mark.parametrize("stage", STAGES)
def test_a_missing_input_is_named_without_errno_by_both_routes(tmp_path, capsys, route, stage):
    missing = tmp_path / "missing.jsonl"
    out = tmp_path / ("release" if stage == "split" else "out.jsonl")
    status, err = run_route(capsys, route, stage, _argv_for(stage, tmp_path, missing, out))
    assert_one_line_error(status, err, f"{missing}: No such file or directory")


def test_python_dash_m_split_with_an_output_folder_under_a_file(tmp_path, repo_root):
    """The real `python -m` route, as the trial ran it (a separate interpreter)."""
    data = write(tmp_path / "expanded.jsonl", json.dumps(EXPANDED) + "\n")
    blocker = write(tmp_path / "afile", "x")
    command = [sys.executable, "-m", "generation.datagen.split", "--input", str(data),
               "--output-dir", f"{blocker}/x", "--no-progress"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(repo_root)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert_one_line_error(done.returncode, done.stderr, blocker, "is a file, not a folder")


def test_run_command_ends_a_file_exists_error_in_one_line(capsys):
    """A folder to create where a file stands (FileExistsError) is bad input, not a crash."""
    from dataclasses import dataclass

    @dataclass
    class NoOptions:
        pass

    def run(options):
        raise FileExistsError(errno.EEXIST, "File exists", "afile")

    assert run_command("ambigdocs build x", "", (NoOptions,), run, []) == 2
    assert capsys.readouterr().err == "ambigdocs build x: error: afile: File exists\n"


# --- numbers out of range: refused when the options are made ----------------------------------


@pytest.mark.parametrize(
    ("stage", "extra", "fragment"),
    [
        ("questions", ["--batch-size", "-5"], "'batch_size' must be >= 1, got -5"),
        ("questions", ["--batch-size", "0"], "'batch_size' must be >= 1"),
        ("questions", ["--max-new-tokens", "0"], "'max_new_tokens' must be >= 1"),
        ("questions", ["--chunk-size", "0"], "'chunk_size' must be >= 1"),
        ("expand", ["--batch-size", "-1"], "'batch_size' must be >= 1"),
        ("expand", ["--threshold", "-0.5"], "'threshold' must be >= 0"),
        ("expand", ["--threshold", "nan"], "'threshold' must be >= 0, got nan"),
        ("expand", ["--max-passages", "-1"], "'max_passages' must be >= 0"),
        ("filter", ["--nli-batch-size", "0"], "'nli_batch_size' must be >= 1"),
        ("filter", ["--chunk-size", "-2"], "'chunk_size' must be >= 1"),
        ("seed", ["--num-proc", "0"], "'num_proc' must be >= 1"),
        ("seed", ["--max-passages", "0"], "'max_passages' must be >= 1"),
        ("seed", ["--min-entities", "-1"], "'min_entities' must be >= 0"),
        ("seed", ["--min-entities", "4", "--max-entities", "3"], "'max_entities' must be >= 4"),
        ("split", ["--fractions", "0.5", "0.5", "0.5"], "summing to 1"),
        ("split", ["--fractions", "0.5", "0.5", "nan"], "summing to 1"),
        ("split", ["--fractions", "1.5", "-0.5", "0"], "non-negative"),
        ("gather", ["--min-entities", "-1"], "need 0 <= min <= max"),
    ],
)
def test_numbers_out_of_range_are_refused_before_any_work(tmp_path, capsys, stage, extra, fragment):
    # The input is not there: the option must be refused before anything is read or loaded.
    missing = tmp_path / "missing.jsonl"
    argv = _argv_for(stage, tmp_path, missing, tmp_path / "out") + extra
    status, err = run_route(capsys, "module", stage, argv)
    assert_one_line_error(status, err, fragment)


def test_a_bad_batch_size_is_refused_before_an_hf_model_loads(tmp_path, capsys):
    # /nope/model is not there: had the model been looked at first, the error would name it.
    data = write(tmp_path / "s.jsonl", "{}\n")
    argv = ["--input", data, "--output", tmp_path / "q.jsonl", "--backend", "hf",
            "--model", "/nope/model", "--batch-size", "-5"]  # fmt: skip
    status, err = run_route(capsys, "cli", "questions", argv)
    assert_one_line_error(status, err, "'batch_size' must be >= 1, got -5")


@pytest.mark.parametrize(
    ("stage", "values", "fragment"),
    [
        ("questions", {"batch_size": -5}, "'batch_size' must be >= 1"),
        ("split", {"fractions": [0.2, 0.2, 0.2]}, "summing to 1"),
        ("seed", {"num_proc": 0}, "'num_proc' must be >= 1"),
    ],
)
def test_build_all_refuses_a_number_out_of_range_before_any_stage(tmp_path, capsys, stage, values,
                                                                  fragment):  # fmt: skip
    base = {
        "questions": {
            "input": "s.jsonl",
            "output": "q.jsonl",
            "backend": "openai",
            "model": "gpt-4",
        },  # fmt: skip
        "split": {"input": "e.jsonl", "output_dir": "release"},
        "seed": {"passages": "p.tsv", "disambiguation": "m.json", "output": "s.jsonl"},
    }[stage]
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"stages": {stage: {**base, **values}}}))
    capsys.readouterr()
    assert pipeline.main(["--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert_one_line_error(2, err, f"stage '{stage}'", fragment)


# --- distill: the flag the user typed; numbers checked before the base model loads ------------


def _distill(capsys, tmp_path, *extra: str) -> tuple[int, str]:
    train = write(tmp_path / "train.jsonl", "{}\n")
    capsys.readouterr()
    argv = ["distill", "--train", str(train), "--output-dir", str(tmp_path / "out"), *extra]
    return ambigdocs_main(argv), capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--base-model", "--model_name_or_path"])
def test_distill_names_the_base_model_flag_as_typed(tmp_path, capsys, flag):
    status, err = _distill(capsys, tmp_path, flag, "/nope/model")
    assert_one_line_error(status, err, flag, "/nope/model: no such folder")


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--learning_rate", "-1"], "--learning_rate must be >= 0, got -1"),
        (["--num_train_epochs", "-2"], "--num_train_epochs must be >= 0"),
        (["--max_steps", "-5"], "--max_steps must be >= -1"),
        (["--lora_r", "0"], "--lora_r must be >= 1"),
        (["--lora_alpha", "0"], "--lora_alpha must be >= 1"),
        (["--lora_dropout", "1.5"], "--lora_dropout must be between 0 and 1"),
        (["--per_device_train_batch_size", "0"], "--per_device_train_batch_size must be >= 1"),
        (["--gradient_accumulation_steps", "0"], "--gradient_accumulation_steps must be >= 1"),
        (["--max_length", "0"], "--max_length must be >= 1"),
    ],
)
def test_distill_numbers_out_of_range_are_refused_before_loading(
    tmp_path, capsys, monkeypatch, tiny_llama_dir, extra, fragment
):
    from generation.distill import train

    loaded = []
    original = train.load_base_model
    monkeypatch.setattr(
        train, "load_base_model", lambda *a, **k: loaded.append(a) or original(*a, **k)
    )
    status, err = _distill(capsys, tmp_path, "--base-model", str(tiny_llama_dir), *extra)
    assert_one_line_error(status, err, fragment)
    assert not loaded


def test_distill_missing_config_names_the_file_once(tmp_path, capsys):
    status, err = _distill(capsys, tmp_path, "--base-model", "m", "--config", "nope.yaml")
    assert_one_line_error(status, err, "--config nope.yaml: No such file or directory")
    assert err.count("nope.yaml") == 1
