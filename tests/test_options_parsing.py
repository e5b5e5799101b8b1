"""The one option parser (`generation/options.py`) and the dispatcher's help and usage lines.

Each command's flags come from its option dataclasses: choices from `Literal`, required options
shown as required, booleans as `--flag/--no-flag` (never `--flag [FLAG]`), `--num-proc` and
`--num_proc` alike, a YAML file that sets defaults under the flags, and unknown flags named
without the value after them. Checked by both routes: the dispatcher (`generation.cli.main`,
what the console script runs) and the module itself (`python -m`).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest

from generation.cli import main as ambigdocs
from generation.options import UsageError, build_parser, option, parse_argv

ROOT = Path(__file__).resolve().parents[1]


def run_module(*argv: str) -> subprocess.CompletedProcess:
    """`python -m ARGV...` from the repository root, offline."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", *argv], capture_output=True, text=True, env=env, cwd=ROOT
    )


def run_cli(capsys, argv: list[str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `ambigdocs ARGV` in-process (`--help` exits 0)."""
    capsys.readouterr()
    try:
        code = ambigdocs(argv)
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


@dataclasses.dataclass
class Toy:
    path: str = option(help="a required path")
    mode: Literal["fast", "slow"] = option("fast", help="how")
    num_proc: int = option(1, help="workers")
    dry_run: bool = option(False, help="do nothing")
    progress: bool = option(True, help="show progress")
    items: list[str] = option([], help="several")
    rate: float | None = option(None, help="a rate")


def parse(*argv: str) -> Toy:
    return parse_argv("toy", "", [Toy], list(argv))[0]


# --- the parser ---------------------------------------------------------------------------------


def test_values_are_typed_and_defaults_filled():
    toy = parse("--path", "p", "--mode", "slow", "--num-proc", "3", "--rate", "0.5")
    assert toy == Toy(path="p", mode="slow", num_proc=3, rate=0.5)
    assert parse("--path", "p") == Toy(path="p")


@pytest.mark.parametrize("flag", ["--num-proc", "--num_proc"])
def test_dash_and_underscore_spellings_are_one_flag(flag):
    assert parse("--path", "p", flag, "4").num_proc == 4
    assert parse("--path", "p", f"{flag}=5").num_proc == 5


@pytest.mark.parametrize(
    ("argv", "dry_run", "progress"),
    [
        ([], False, True),
        (["--dry-run"], True, True),
        (["--no-progress"], False, False),
        (["--dry-run", "false", "--progress", "no"], False, False),
        (["--dry_run=true", "--progress=0"], True, False),
        (["--no_dry_run", "--progress"], False, True),
    ],
)
def test_booleans(argv, dry_run, progress):
    toy = parse("--path", "p", *argv)
    assert (toy.dry_run, toy.progress) == (dry_run, progress)


def test_a_boolean_with_a_word_that_is_not_one_is_refused():
    with pytest.raises(UsageError, match="--dry-run: expected true or false, got 'maybe'"):
        parse("--path", "p", "--dry-run=maybe")


def test_a_list_takes_several_values_and_repeats_add_up():
    assert parse("--path", "p", "--items", "a", "b", "--items", "c").items == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "the following arguments are required: --path"),
        (["--path", "p", "--mode", "medium"], "invalid choice: 'medium'"),
        (["--path", "p", "--num-proc", "two"], "invalid int value: 'two'"),
        (["--path", "p", "--num-proc", "9" * 5000], "invalid int value"),  # no huge-int crash
        (["--path", "p", "--rate"], "expected one argument"),
    ],
)
def test_bad_command_lines_are_usage_errors(argv, message):
    with pytest.raises(UsageError, match=message):
        parse(*argv)


def test_an_unknown_flag_is_named_but_its_value_never_shown():
    with pytest.raises(UsageError) as err:
        parse("--path", "p", "--api-keyy", "plain-value-0042", "--modes=slow")
    text = str(err.value)
    assert "--api-keyy" in text and "--modes" in text
    assert "plain-value-0042" not in text and "slow" not in text
    assert "did you mean" in text  # a close known flag is suggested


def test_the_parser_does_not_import_transformers():
    # `ambigdocs evaluate` must parse its options without paying for transformers.
    code = (
        "import sys\n"
        "from generation.options import parse_argv\n"
        "from generation.answering.options import AnswerArguments\n"
        "(a,) = parse_argv('x', '', [AnswerArguments], ['--model', 'm', '--output', 'o'])\n"
        "assert a.model == 'm'\n"
        "print(sorted(m for m in ('transformers', 'torch', 'datasets') if m in sys.modules))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


# --- a YAML file sets defaults; a flag on the command line always wins --------------------------


def _args_file(tmp_path, text: str) -> str:
    path = tmp_path / "args.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_flag_given_at_its_default_value_wins_over_the_file(tmp_path):
    from generation.answering.options import parse_answer_args

    conf = _args_file(tmp_path, "model: m\nseed: 7\nfew_shot: true\nsetting: retrieved-only\n")
    argv = ["--args-file", conf, "--output", "o.jsonl"]
    args = parse_answer_args(argv + ["--seed", "0", "--no-few-shot", "--setting", "gold-only"])
    # 0, False and gold-only are the defaults: the file used to win over them.
    assert (args.seed, args.few_shot, args.setting) == (0, False, "gold-only")
    from_file = parse_answer_args(argv)
    assert (from_file.seed, from_file.few_shot, from_file.setting) == (7, True, "retrieved-only")
    assert from_file.model == "m" and from_file.output == "o.jsonl"


def test_a_list_flag_replaces_the_files_list(tmp_path):
    from generation.answering.options import parse_answer_args

    conf = _args_file(tmp_path, "backend_option: [dtype=float16, timeout=5]\n")
    base = ["--args-file", conf, "--model", "m", "--output", "o"]
    assert parse_answer_args(base).backend_option == ["dtype=float16", "timeout=5"]
    given = parse_answer_args(base + ["--backend-option", "dtype=bfloat16"])
    assert given.backend_option == ["dtype=bfloat16"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("seed: [1\n", "line 2, column 1: not valid YAML"),
        ("model: m\n\tseed: 1\n", "line 2, column 1: not valid YAML (found character"),  # a tab
        ("- a\n- b\n", "expected a YAML mapping"),
        ("sead: 1\n", "unknown option(s) ['sead']"),
        ("seed: one\n", "option 'seed': 'one' is not a int"),
    ],
)
def test_a_bad_args_file_is_one_line_by_both_routes(capsys, tmp_path, text, message):
    from generation.answering import answer

    conf = _args_file(tmp_path, text)
    argv = ["--args-file", conf, "--model", "m", "--output", str(tmp_path / "o.jsonl")]
    for route in ("cli", "module"):
        capsys.readouterr()
        code = ambigdocs(["answer", *argv]) if route == "cli" else answer.main(argv)
        err = capsys.readouterr().err
        lines = err.splitlines()
        assert code == 2 and len(lines) == 1, (route, err)
        assert lines[0].startswith("ambigdocs answer: error: --args-file " + conf), err
        assert message in lines[0], err


# --- help texts ---------------------------------------------------------------------------------


def _help(prog: str, types) -> str:
    return build_parser(prog, "", types).format_help()


def test_help_shows_booleans_as_flag_pairs_and_required_options():
    text = _help("toy", [Toy])
    assert "--dry-run, --no-dry-run" in text and "--progress, --no-progress" in text
    assert "[DRY_RUN]" not in text and "[PROGRESS]" not in text
    assert "--path PATH" in text and "[--path" not in text  # required: no brackets in usage
    assert "a required path (required)" in text
    assert "how (default: fast)" in text


def test_a_literal_percent_in_a_help_text_prints():
    @dataclasses.dataclass
    class Share:
        share: float = option(0.5, help="50% of the rows (a %s stays literal)")

    assert "50% of the rows (a %s stays literal) (default: 0.5)" in _help("s", [Share])


def test_a_list_default_shows_as_typed_on_the_command_line():
    @dataclasses.dataclass
    class Configs:
        config: list[str] = option(["default", "sample"], help="configs")

    text = " ".join(_help("c", [Configs]).split())
    assert "configs (default: default sample)" in text and "['default'" not in text


def test_retrieve_help_names_each_progress_flag_once(capsys):
    code, out, _ = run_cli(capsys, ["retrieve", "--help"])
    assert code == 0
    assert "--progress, --no-progress" in out and out.count("--no-progress") == 2  # usage + list
    assert "--passages PASSAGES" in out and "(required)" in out
    module = run_module("generation.answering.retrieve", "--help")
    assert module.returncode == 0 and module.stdout == out


@pytest.mark.parametrize(
    "command",
    [
        ["answer"],
        ["retrieve"],
        ["build", "gather"],
        ["build", "seed"],
        ["build", "questions"],
        ["build", "filter"],
        ["build", "expand"],
        ["build", "split"],
        ["build", "all"],
        ["export"],
        ["push"],
        ["push-metric"],
    ],
)
def test_no_command_prints_a_flag_with_an_optional_value(capsys, command):
    code, out, _ = run_cli(capsys, [*command, "--help"])
    assert code == 0 and out.startswith(f"usage: ambigdocs {' '.join(command)}")
    assert "[DRY_RUN]" not in out and "[OVERWRITE]" not in out and "[PROGRESS]" not in out
    assert "--no_" not in out  # one spelling shown; the other is accepted


def test_required_options_are_shown_required(capsys):
    _, out, _ = run_cli(capsys, ["push", "--help"])
    assert "--repo-id REPO_ID --split SPLIT" in out.split("\n\n")[0]  # usage, not bracketed
    # answer's --model and --output may come from --args-file, so argparse cannot insist on
    # them; the help says they are required all the same.
    _, out, _ = run_cli(capsys, ["answer", "--help"])
    assert "--model MODEL         local folder, Hub id, or API model name (required)" in out
    assert "--output OUTPUT       the answers, JSONL (required)" in out
    assert "(default: 0)" in out and "(default: None)" not in out


# --- the dispatcher -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["eval"], "unknown command 'eval' (did you mean 'evaluate'?)"),
        (["anwser"], "unknown command 'anwser' (did you mean 'answer'?)"),
        (["build", "sead"], "unknown command 'sead' (did you mean 'seed'?)"),
        (["frobnicate"], "unknown command 'frobnicate'"),
        ([], "ambigdocs: error: no command given"),
        (["build"], "ambigdocs build: error: no command given"),
    ],
)
def test_a_missing_or_unknown_command_is_a_usage_error(capsys, argv, needle):
    code, out, err = run_cli(capsys, argv)
    assert code == 2 and out == ""
    assert err.splitlines()[0].endswith(needle) and "usage: ambigdocs" in err
    module = run_module("generation.cli", *argv)
    assert module.returncode == 2 and module.stderr == err


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["build", "--help"]])
def test_asking_for_help_is_status_0(capsys, argv):
    code, out, err = run_cli(capsys, argv)
    assert code == 0 and out.startswith("usage: ambigdocs") and err == ""


def test_each_stage_parses_the_same_by_both_routes(tmp_path, capsys):
    """`ambigdocs build split` and the stage's own `main` refuse a bad value alike."""
    argv = ["--input", "x.jsonl", "--output-dir", str(tmp_path / "o"), "--seed", "zero"]
    split = importlib.import_module("generation.datagen.split")
    code, _, err = run_cli(capsys, ["build", "split", *argv])
    assert split.main(argv) == code == 2
    module_err = capsys.readouterr().err
    assert (
        err
        == module_err
        == (
            "ambigdocs build split: error: argument --seed: invalid int value: 'zero' (see --help)\n"
        )
    )


def test_stage_options_from_a_config_and_from_flags_agree(tmp_path):
    """`build all` (a YAML mapping) and the flags make the same option dataclasses."""
    from generation.datagen import seed
    from generation.options import parse_mapping

    values = {"passages": "p.tsv", "disambiguation": "d.json", "output": "o.jsonl", "num-proc": 2}
    from_config = parse_mapping(seed.OPTIONS, values, "config")
    argv = ["--passages", "p.tsv", "--disambiguation", "d.json", "--output", "o.jsonl"]
    from_flags = parse_argv("s", "", seed.OPTIONS, argv + ["--num_proc", "2", "--progress"])
    assert from_config == from_flags
    assert json.loads(json.dumps(dataclasses.asdict(from_flags[0])))["num_proc"] == 2


@dataclasses.dataclass
class Files:
    results: list[str] = option(help="results files", positional=True)
    output_dir: str = option("out", help="where")


def test_positional_files_may_sit_on_either_side_of_the_flags():
    expected = (Files(results=["a.json", "b.json"], output_dir="x"),)
    for argv in (
        ["a.json", "b.json", "--output-dir", "x"],
        ["a.json", "--output-dir", "x", "b.json"],
        ["--output-dir", "x", "a.json", "b.json"],
    ):
        assert parse_argv("e", "", [Files], argv) == expected
    with pytest.raises(UsageError, match="the following arguments are required: results"):
        parse_argv("e", "", [Files], ["--output-dir", "x"])
