"""The one error boundary (`generation/boundary.py`): every expected failure of a command ends in
one line naming the file or option and exit status 2, by both routes (the dispatcher, as the
console script runs it, and the module's own `main`, as `python -m` runs it); a bug keeps its
traceback.
"""

from __future__ import annotations

import errno
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from generation import boundary
from generation.cli import main as ambigdocs

ROOT = Path(__file__).resolve().parents[1]
ROUTES = ("cli", "module")


def run_stage(capsys, route: str, stage: str, argv: list) -> tuple[int, str]:
    """(exit status, stderr) of `ambigdocs build STAGE ARGV` by `route`."""
    argv = [str(a) for a in argv]
    capsys.readouterr()
    if route == "cli":
        code = ambigdocs(["build", stage, *argv])
    else:
        from generation.datagen import STAGES

        code = importlib.import_module(STAGES[stage][0]).main(argv)
    return code, capsys.readouterr().err


def one_line(code: int, err: str, *needles: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err and "[Errno" not in err, err
    for needle in needles:
        assert str(needle) in lines[0], (needle, lines[0])
    return lines[0]


def split_argv(tmp_path, data) -> list:
    return ["--input", data, "--output-dir", tmp_path / "release", "--no-progress"]


# --- file-system errors on real paths ------------------------------------------------------------


@pytest.mark.parametrize("route", ROUTES)
def test_a_symlink_loop_is_named(capsys, tmp_path, route):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)  # opening it: ELOOP
    argv = ["--passages", loop, "--disambiguation", loop, "--output", tmp_path / "o.jsonl"]
    code, err = run_stage(capsys, route, "seed", argv)
    one_line(code, err, "ambigdocs build seed: error: ", f"{loop}: ", "symbolic links")


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("which", ["input", "output"])
def test_a_300_character_file_name_is_named(capsys, tmp_path, route, which):
    dump = tmp_path / "dump.xml"
    dump.write_text("<mediawiki></mediawiki>", encoding="utf-8")
    long = tmp_path / ("n" * 300 + (".xml" if which == "input" else ".json"))
    argv = ["--dump", long if which == "input" else dump, "--output"]
    argv.append(tmp_path / "map.json" if which == "input" else long)
    code, err = run_stage(capsys, route, "gather", argv)
    one_line(code, err, f"{long}: File name too long")


@pytest.mark.parametrize("route", ROUTES)
def test_a_dangling_symlink_as_input_is_named(capsys, tmp_path, route):
    link = tmp_path / "rows.jsonl"
    link.symlink_to(tmp_path / "gone.jsonl")
    code, err = run_stage(capsys, route, "split", split_argv(tmp_path, link))
    one_line(code, err, "ambigdocs build split: error: ", link)


def test_python_m_ends_a_file_error_in_one_line(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    run = subprocess.run(
        [sys.executable, "-m", "generation.datagen.split", "--input", str(loop)]
        + ["--output-dir", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 2, run.stderr
    one_line(run.returncode, run.stderr, f"ambigdocs build split: error: {loop}")


# --- what the operating system says, whatever the command was doing -------------------------------


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "code", [errno.ENOSPC, errno.ENAMETOOLONG, errno.ELOOP, errno.EROFS, errno.EACCES, errno.EIO]
)
def test_any_os_error_with_a_file_is_one_line_naming_it(capsys, monkeypatch, tmp_path, route, code):
    from generation.datagen import split

    target = tmp_path / "release" / "test.json"

    def failing_run(**options):
        raise OSError(code, os.strerror(code), str(target))

    monkeypatch.setattr(split, "run", failing_run)
    status, err = run_stage(capsys, route, "split", split_argv(tmp_path, "rows.jsonl"))
    line = one_line(status, err, f"ambigdocs build split: error: {target}: {os.strerror(code)}")
    assert line.endswith(os.strerror(code))


@pytest.mark.parametrize("route", ROUTES)
def test_a_full_disk_is_one_line(capsys, monkeypatch, tmp_path, route):
    """A real ENOSPC (a write to /dev/full): the kernel names no file, the line is still one."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    from generation.datagen import split

    def failing_run(**options):
        with open("/dev/full", "w") as full:
            full.write("x" * 10)

    monkeypatch.setattr(split, "run", failing_run)
    status, err = run_stage(capsys, route, "split", split_argv(tmp_path, "rows.jsonl"))
    one_line(status, err, "error: ", "No space left on device")


@pytest.mark.parametrize("route", ROUTES)
def test_a_rename_error_names_both_files(capsys, monkeypatch, tmp_path, route):
    from generation.datagen import split

    def failing_run(**options):
        os.rename(tmp_path / "missing", tmp_path / "release")

    monkeypatch.setattr(split, "run", failing_run)
    status, err = run_stage(capsys, route, "split", split_argv(tmp_path, "rows.jsonl"))
    one_line(status, err, f"{tmp_path / 'missing'} -> {tmp_path / 'release'}: No such file")


# --- input the parsers cannot follow -----------------------------------------------------------


def _deep(tmp_path, depth: int = 100_000) -> Path:
    path = tmp_path / "deep.json"
    path.write_text("[" * depth + "]" * depth, encoding="utf-8")
    return path


@pytest.mark.parametrize("route", ROUTES)
def test_json_nested_100000_deep_is_one_line(capsys, tmp_path, route):
    code, err = run_stage(capsys, route, "split", split_argv(tmp_path, _deep(tmp_path)))
    one_line(code, err, "ambigdocs build split: error: ", "nested too deeply")


@pytest.mark.parametrize("route", ROUTES)
def test_push_of_json_nested_too_deeply_is_one_line(capsys, tmp_path, route):
    deep = tmp_path / "test.json"
    _deep(tmp_path).rename(deep)
    argv = [str(deep), "--repo-id", "me/ambig", "--split", "test", "--dry-run"]
    capsys.readouterr()
    if route == "cli":
        code = ambigdocs(["push", *argv])
    else:
        code = importlib.import_module("generation.hub.push").main(argv)
    one_line(code, capsys.readouterr().err, "ambigdocs push: error: ", "nested too deeply")


@pytest.mark.parametrize("route", ROUTES)
def test_a_number_out_of_range_is_one_line(capsys, monkeypatch, tmp_path, route):
    from generation.datagen import split

    def failing_run(**options):
        return float(10**400)  # OverflowError: int too large to convert to float

    monkeypatch.setattr(split, "run", failing_run)
    code, err = run_stage(capsys, route, "split", split_argv(tmp_path, "rows.jsonl"))
    one_line(code, err, "ambigdocs build split: error: ", "too large")


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("workdir: w\nstages:\n\tgather: {}\n", ", line 3, column 1: not valid YAML"),  # a tab
        ("stages: [unclosed\n", ": not valid YAML"),
        ("stages:\n  gather:\n    output: [a, {b: c]\n", ": not valid YAML"),
    ],
)
def test_a_config_yaml_cannot_read_is_one_line_naming_the_file(
    capsys, tmp_path, route, text, where
):
    config = tmp_path / "pipeline.yaml"
    config.write_text(text, encoding="utf-8")
    code, err = run_stage(capsys, route, "all", ["--config", config])
    one_line(code, err, f"ambigdocs build all: error: {config}", where)


@pytest.mark.parametrize("route", ROUTES)
def test_a_yaml_error_a_library_raises_is_one_line(capsys, monkeypatch, tmp_path, route):
    import yaml

    from generation.datagen import split

    def failing_run(**options):
        yaml.safe_load("a: [1, 2\nb: 3")

    monkeypatch.setattr(split, "run", failing_run)
    code, err = run_stage(capsys, route, "split", split_argv(tmp_path, "rows.jsonl"))
    one_line(code, err, "ambigdocs build split: error: line 2, column 2: not valid YAML (expected")


@pytest.mark.parametrize("route", ROUTES)
def test_json_that_does_not_parse_names_file_and_line(capsys, tmp_path, route):
    data = tmp_path / "rows.jsonl"
    data.write_text('{"a": 1}\n{"a": \n', encoding="utf-8")
    code, err = run_stage(capsys, route, "split", split_argv(tmp_path, data))
    one_line(code, err, f"{data}, line 2")


# --- bugs stay bugs ------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "bug",
    [KeyError("field"), TypeError("wrong call"), OSError("made up, no errno"), AssertionError()],
)
def test_a_bug_keeps_its_traceback(capsys, monkeypatch, tmp_path, route, bug):
    from generation.datagen import split

    def buggy_run(**options):
        raise bug

    monkeypatch.setattr(split, "run", buggy_run)
    with pytest.raises(type(bug)):
        run_stage(capsys, route, "split", split_argv(tmp_path, "rows.jsonl"))


def test_the_classification():
    assert boundary.expected(ValueError("x")) and boundary.expected(RecursionError())
    assert boundary.expected(OSError(errno.ENOSPC, "full")) and boundary.expected(OverflowError())
    assert boundary.expected(FileNotFoundError(errno.ENOENT, "missing", "f"))
    assert not boundary.expected(FileNotFoundError("made up"))  # no errno, no file: a bug
    assert not boundary.expected(RuntimeError("x")) and not boundary.expected(KeyError("x"))
    assert boundary.expected(boundary.ServiceError("HTTP 500"))


def test_one_line_folds_and_names():
    assert boundary.one_line(ValueError("a\n  b")) == "a b"
    err = OSError(errno.ENOSPC, "No space left on device", "/out/summary.json")
    assert boundary.one_line(err) == "/out/summary.json: No space left on device"
    assert boundary.one_line(OSError(errno.EIO, None)) == "EIO"
    assert boundary.one_line(ValueError("")) == "ValueError"


def test_a_service_error_is_status_1_and_says_the_work_is_kept(capsys):
    def call():
        raise boundary.ServiceError("prompt 3: HTTP 500: overloaded")

    assert boundary.guard("ambigdocs answer", call) == 1
    err = capsys.readouterr().err
    assert err.startswith("ambigdocs answer: error: prompt 3: HTTP 500: overloaded")
    assert "run the same command again to resume" in err and err.count("\n") == 1


def test_every_command_module_leaves_errors_to_the_boundary():
    """No command prints its own `error:` line or catches the input errors itself: the one
    printer is the boundary's (the dispatcher's usage line aside)."""
    offenders = []
    for path in (ROOT / "generation").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(ROOT).as_posix()
        if rel in ("generation/boundary.py", "generation/cli.py"):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if ": error: " in line and "print(" in line:
                offenders.append(f"{rel}:{n}")
    assert offenders == []


@pytest.mark.parametrize("route", ROUTES)
def test_json_from_a_stage_input_is_not_echoed_as_a_traceback(capsys, tmp_path, route):
    data = tmp_path / "rows.json"
    data.write_text(json.dumps({"rows": []}), encoding="utf-8")  # an object, not a list
    code, err = run_stage(capsys, route, "split", split_argv(tmp_path, data))
    one_line(code, err, str(data))


def run_command(capsys, route: str, command: str, module: str, argv: list) -> tuple[int, str]:
    argv = [str(a) for a in argv]
    capsys.readouterr()
    if route == "cli":
        code = ambigdocs([command, *argv])
    else:
        code = importlib.import_module(module).main(argv)
    return code, capsys.readouterr().err


@pytest.mark.parametrize("route", ROUTES)
def test_export_of_json_nested_too_deeply_is_one_line(capsys, tmp_path, route):
    """The builder's error reaches the boundary wrapped by `datasets`; the wrapped one counts."""
    raw = tmp_path / "raw"
    raw.mkdir()
    _deep(tmp_path).rename(raw / "test.json")
    argv = ["--data-dir", raw, "--cache-dir", tmp_path / "cache", tmp_path / "out"]
    code, err = run_command(capsys, route, "export", "generation.hub.export", argv)
    lines = [x for x in err.splitlines() if "error:" in x]  # after the progress bars
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("ambigdocs export: error: ") and "nested too deeply" in lines[0]


@pytest.mark.parametrize("route", ROUTES)
def test_push_metric_with_a_broken_card_names_the_card(capsys, tmp_path, route):
    import shutil

    folder = tmp_path / "metric"
    shutil.copytree(ROOT / "metric" / "ambigdocs_metric", folder)
    card = folder / "README.md"
    card.write_text(card.read_text(encoding="utf-8").replace("---\n", "---\ntitle: [x\n", 1))
    argv = ["--repo-id", "me/ambig_metric", "--metric-dir", folder, "--dry-run"]
    code, err = run_command(capsys, route, "push-metric", "generation.hub.push_metric", argv)
    one_line(code, err, f"ambigdocs push-metric: error: {card}: front matter line ", "YAML")


@pytest.mark.parametrize("route", ROUTES)
def test_an_output_in_a_folder_no_one_may_write_is_one_line(capsys, tmp_path, route):
    """/sys refuses new files even to root, which a chmod'ed folder does not."""
    if not Path("/sys").is_dir() or os.access("/sys", os.W_OK) and _sys_takes_files():
        pytest.skip("no folder here that refuses new files to this user")
    dump = ROOT / "tests" / "data" / "wiki" / "enwiki-mini.xml"
    argv = ["--dump", dump, "--output", "/sys/ambigdocs-map.json", "--no-progress"]
    code, err = run_stage(capsys, route, "gather", argv)
    one_line(code, err, "ambigdocs build gather: error: /sys/", "Permission denied")


def _sys_takes_files() -> bool:
    try:
        Path("/sys/.ambigdocs-probe").touch()
    except OSError:
        return False
    Path("/sys/.ambigdocs-probe").unlink()
    return True
