"""The one output writer (generation/io/outputs.py): safe unique names, whole-folder swaps, no
writes through symbolic links, one run per output, errors that name the real file.

Each guarantee is tried on the function itself and on the commands that rely on it, by both
routes (`ambigdocs X` and `python -m ...`). Concurrency is tested with a second process that
holds the lock and says so on a pipe (a handshake, never a sleep).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generation.cli import main as ambigdocs_main
from generation.io import outputs
from generation.io.outputs import (
    OutputBusy,
    output_lock,
    refuse_unsafe_output,
    replace_folder,
    safe_name,
    unique_names,
)
from generation.io.records import atomic_write_json, atomic_write_text
from generation.report.evaluate import folder_names, system_names
from generation.report.outputs import EVALUATE_FILES, evaluation_folder

EXPANDED = {
    "surface_name": "X (disambiguation)",
    "question": "q?",
    "documents": [{"title": "X (a)", "text": "x", "pid": "1", "answer": "a"}],
}


def assert_safe(name: str) -> None:
    """What every made name must be, checked from its characters (not from the code)."""
    assert name not in ("", ".", "..")
    assert not name.startswith((".", "-")) and not name.endswith((".", " "))
    assert len(name.encode("utf-8")) <= 120
    for c in name:
        assert c not in '<>:"/\\|?*', name
        assert unicodedata.category(c)[0] not in "C" and (c == " " or not c.isspace()), name
        assert "/" not in unicodedata.normalize("NFKC", c), name
    assert name.split(".")[0].upper() not in {"CON", "PRN", "AUX", "NUL", "COM1", "LPT1"}


def stays_inside(folder: Path, name: str) -> bool:
    return (folder / name).resolve().parent == folder.resolve()


# --- names ----------------------------------------------------------------------------------------


def column_names(paths: list[Path]) -> list[str]:
    """The subfolders `ambigdocs evaluate` gives these results files (default system names)."""
    return folder_names(system_names(paths, []))


def test_three_files_with_two_stems_get_three_names_and_keep_readable_stems():
    names = column_names([Path("x/a.json"), Path("y/a.json"), Path("a-2.json")])
    assert len(set(names)) == 3
    assert names == ["x_a", "y_a", "a-2"]  # the folder tells the two stems apart, readably


def test_dot_names_never_escape_nor_take_the_combined_summary(tmp_path):
    names = column_names([Path("...json"), Path("..json"), Path(".json"), Path("summary.json")])
    assert len({n.casefold() for n in names}) == 4
    for name in names:
        assert_safe(name)
        assert stays_inside(tmp_path, name)
        assert name.casefold() not in {f.casefold() for f in EVALUATE_FILES}


@pytest.mark.parametrize(
    "hostile",
    [
        "a/b", "a\\b", "..", ".", "...", ".hidden", "-rf", "a\x01b\x1f\x7f", "tab\there",
        "new\nline", "a\u2215b", "a\u2044b", "a\uff0fb", "a\u29f8b", "rtl\u202eexe.txt",
        "zero\u200bwidth", "CON", "con.json", "Lpt1", "a:b*c?", 'quo"te<>|', "trailing. ",
        "x" * 10_000, "é" * 10_000, "x" * 119 + ".json", "x" * 118 + " .json", "\U0001f600" * 100, "", " ", "nbsp\u00a0x", "line\u2028sep",
    ],
)  # fmt: skip
def test_hostile_names_are_made_safe(tmp_path, hostile):
    name = safe_name(hostile)
    assert_safe(name)
    assert stays_inside(tmp_path, name)
    (tmp_path / name).mkdir()  # the file system takes it as one component


def test_safe_names_are_kept_as_they_are():
    for text in ("gpt-4o", "llama 3 (8B)", "résultats_été", "Qwen2.5-7B"):
        assert safe_name(text) == text


def test_names_are_unique_case_folded_and_deterministic():
    names = unique_names(["Run", "run", "RUN", "run-2"])
    assert len({n.casefold() for n in names}) == 4
    assert names == unique_names(["Run", "run", "RUN", "run-2"])
    assert safe_name("A", taken=["a", "a-2"]) == "A-3"
    # A long name keeps its suffix inside the length bound.
    long = unique_names(["y" * 500, "y" * 500])
    assert long[0] != long[1] and all(len(n.encode()) <= 120 for n in long)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=12))
def test_any_inputs_get_distinct_safe_names(texts):
    names = unique_names(texts, reserved=["summary.json"])
    assert len({n.casefold() for n in names}) == len(texts)
    assert "summary.json" not in {n.casefold() for n in names}
    for name in names:
        assert_safe(name)


# --- whole-folder replacement -------------------------------------------------------------------


def _owned(path: Path) -> bool:
    return path.name.endswith(".txt")


def test_a_later_run_leaves_none_of_the_earlier_runs_files(tmp_path):
    out = tmp_path / "out"
    with replace_folder(out, _owned) as new:
        (new / "summary.txt").write_text("1")
        (new / "report.txt").write_text("1")
    with replace_folder(out, _owned) as new:
        (new / "summary.txt").write_text("2")
    assert sorted(p.name for p in out.iterdir()) == ["summary.txt"]
    assert (out / "summary.txt").read_text() == "2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging, no lock left


def test_a_failed_run_leaves_the_previous_run_untouched(tmp_path):
    out = tmp_path / "out"
    with replace_folder(out, _owned) as new:
        (new / "a.txt").write_text("old")
    with (
        pytest.raises(RuntimeError, match="^disk full halfway$"),
        replace_folder(out, _owned) as new,
    ):
        (new / "a.txt").write_text("new")
        (new / "b.txt").write_text("new")
        raise RuntimeError("disk full halfway")
    assert sorted(p.name for p in out.iterdir()) == ["a.txt"]
    assert (out / "a.txt").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_folder_holding_the_users_files_is_never_replaced(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.md").write_text("mine")
    with pytest.raises(ValueError, match=r"holds other files than .*notes\.md"):
        with replace_folder(out, _owned):
            pass
    assert (out / "notes.md").read_text() == "mine"


def test_the_swap_works_under_a_symlinked_parent_and_leftovers_are_cleared(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("keep")
    # A leftover of an interrupted run, and a planted link named like one: removed, never
    # followed.
    (real / ".out.tmp-old1").mkdir()
    (real / ".out.tmp-evil").symlink_to(elsewhere)
    with replace_folder(tmp_path / "link" / "out", _owned) as new:
        (new / "a.txt").write_text("x")
    assert (real / "out" / "a.txt").read_text() == "x"
    assert (tmp_path / "link").is_symlink()
    assert (elsewhere / "keep.txt").read_text() == "keep"
    assert sorted(p.name for p in real.iterdir()) == ["out"]


def test_a_symlinked_output_folder_is_refused(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (target / "a.txt").write_text("theirs")
    (tmp_path / "out").symlink_to(target)
    with pytest.raises(ValueError, match="is a symbolic link"):
        with replace_folder(tmp_path / "out", _owned):
            pass
    assert (tmp_path / "out").is_symlink() and (target / "a.txt").read_text() == "theirs"


def test_the_evaluation_folder_replaces_an_earlier_report(tmp_path):
    out = tmp_path / "eval"
    with evaluation_folder(out) as new:
        atomic_write_json(new / "summary.json", {"run": 1})
        atomic_write_text(new / "report.html", "<p>1</p>")
        (new / "a").mkdir()
        atomic_write_json(new / "a" / "summary.json", {"run": 1})
    with evaluation_folder(out) as new:  # the second run asks for no report
        atomic_write_json(new / "summary.json", {"run": 2})
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]
    assert json.loads((out / "summary.json").read_text()) == {"run": 2}


# --- symbolic links and real names in errors -------------------------------------------------------


def test_atomic_writes_refuse_a_link_and_leave_its_target(tmp_path):
    target = tmp_path / "theirs.json"
    target.write_text("precious")
    link = tmp_path / "summary.json"
    link.symlink_to(target)
    with pytest.raises(ValueError, match="summary.json: is a symbolic link"):
        atomic_write_json(link, {"x": 1})
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere" / "x.json")
    with pytest.raises(ValueError, match="is a symbolic link"):
        refuse_unsafe_output(dangling)
    assert target.read_text() == "precious"


def test_a_full_disk_names_the_real_file_not_the_temporary_one(tmp_path, monkeypatch):
    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as caught:
        atomic_write_json(tmp_path / "summary.json", {"x": 1})
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename == str(tmp_path / "summary.json")
    assert ".tmp" not in str(caught.value)
    assert not list(tmp_path.iterdir())  # the temporary file is gone


def test_dev_full_names_the_device(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    from generation.io.outputs import real_name_errors

    with pytest.raises(OSError) as caught, real_name_errors("/dev/full"):
        with open("/dev/full", "w") as f:
            f.write("x")
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == "/dev/full"


# --- one run per output ---------------------------------------------------------------------------

HOLDER = """
import sys
from generation.io.outputs import output_lock
with output_lock(sys.argv[1]):
    print("locked", flush=True)
    sys.stdin.readline()   # hold until the test says so
"""


class Holder:
    """A second process holding the lock of `path` until `release` (a pipe handshake)."""

    def __init__(self, path: Path, repo_root: Path):
        env = {**os.environ, "PYTHONPATH": str(repo_root)}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        assert self.proc.stdout.readline().strip() == "locked"

    def release(self):
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        assert self.proc.wait() == 0


def test_a_second_process_is_refused_then_admitted(tmp_path, repo_root):
    out = tmp_path / "a.jsonl"
    holder = Holder(out, repo_root)
    try:
        with pytest.raises(OutputBusy, match=rf"a\.jsonl.*pid {holder.proc.pid}"):
            with output_lock(out):
                pass
    finally:
        holder.release()
    with output_lock(out):
        assert outputs.lock_path(out).exists()
    assert not outputs.lock_path(out).exists()


def test_a_lock_file_of_a_dead_process_is_taken_over(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "a.jsonl"
    outputs.lock_path(out).write_text(f"{dead.pid}\n")
    with output_lock(out):
        assert outputs.lock_path(out).read_text() == f"{os.getpid()}\n"


def test_a_planted_link_as_lock_file_is_not_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    out = tmp_path / "a.jsonl"
    outputs.lock_path(out).symlink_to(victim)
    with pytest.raises(OSError, match=r"symbolic link.*\.a\.jsonl\.lock"):
        with output_lock(out):
            pass
    assert victim.read_text() == "keep"


# --- the commands, by both routes -----------------------------------------------------------------


def _route(route: str, argv: list[str], repo_root: Path, capsys) -> tuple[int, str]:
    """(exit status, stderr) of `ambigdocs ARGV` in process, or `python -m MODULE` in a new one."""
    if route == "cli":
        capsys.readouterr()
        status = ambigdocs_main(argv)
        return status, capsys.readouterr().err
    module = {
        "answer": "generation.answering.answer",
        "build": f"generation.datagen.{argv[1] if len(argv) > 1 else ''}",
    }[argv[0]]
    rest = argv[1:] if argv[0] == "answer" else argv[2:]
    env = {**os.environ, "PYTHONPATH": str(repo_root), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", module, *rest], capture_output=True, text=True, env=env
    )
    return done.returncode, done.stderr


def assert_one_line(status: int, err: str, *fragments) -> None:
    lines = [x for x in err.splitlines() if x.strip()]
    assert status == 2 and len(lines) == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert str(fragment) in lines[0], (fragment, lines[0])


@pytest.fixture
def rows_file(tmp_path, sample_dir):
    rows = json.loads((sample_dir / "test.json").read_text())[:2]
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows))
    return path


def _dry_answer(rows: Path, out: Path) -> list[str]:
    return ["answer", "--model", "nobody/none", "--backend", "openai", "--dataset", str(rows),
            "--output", str(out), "--dry-run"]  # fmt: skip


@pytest.mark.parametrize("route", ["cli", "module"])
def test_answer_refuses_a_symlinked_output(tmp_path, rows_file, repo_root, capsys, route):
    target = tmp_path / "theirs.jsonl"
    target.write_text('{"qid": 1}\n')
    link = tmp_path / "out.jsonl"
    link.symlink_to(target)
    status, err = _route(route, _dry_answer(rows_file, link), repo_root, capsys)
    assert_one_line(status, err, link, "symbolic link")
    assert target.read_text() == '{"qid": 1}\n' and link.is_symlink()


@pytest.mark.parametrize("route", ["cli", "module"])
def test_answer_refuses_a_second_run_on_one_output(tmp_path, rows_file, repo_root, capsys, route):
    out = tmp_path / "out.jsonl"
    holder = Holder(out, repo_root)
    try:
        status, err = _route(route, _dry_answer(rows_file, out), repo_root, capsys)
        assert_one_line(status, err, f"--output {out}", "another run")
        assert not out.exists()
    finally:
        holder.release()
    status, err = _route(route, _dry_answer(rows_file, out), repo_root, capsys)
    assert status == 0, err


def test_retrieve_refuses_a_second_run_on_one_output_folder(
    tmp_path, sample_dir, repo_root, capsys
):
    passages = tmp_path / "p.tsv"
    passages.write_text("id\ttext\ttitle\n1\tSome text.\tA\n")
    out = tmp_path / "retrieval"
    argv = ["retrieve", "--data-dir", str(sample_dir), "--split", "test", "--passages",
            str(passages), "--model", "nobody/none", "--output", str(out)]  # fmt: skip
    holder = Holder(out, repo_root)
    try:  # refused before the model loads: the held lock is the only error
        status, err = _route("cli", argv, repo_root, capsys)
        assert_one_line(status, err, f"--output {out}", "another run")
        assert not out.exists()
    finally:
        holder.release()
    status, err = _route("cli", argv, repo_root, capsys)  # admitted: now the model is the error
    assert_one_line(status, err, "--model nobody/none")


def test_the_resumable_output_never_appends_through_a_link(tmp_path):
    from generation.io.records import ResumableJsonl

    target = tmp_path / "theirs.jsonl"
    target.write_text("")
    (tmp_path / "out.jsonl").symlink_to(target)
    with pytest.raises(ValueError, match="symbolic link"):
        ResumableJsonl(tmp_path / "out.jsonl", key=lambda r: r["qid"])
    assert target.read_text() == ""


def _split(data: Path, out: Path) -> list[str]:
    return ["build", "split", "--input", str(data), "--output-dir", str(out), "--no-progress"]


@pytest.fixture
def expanded(tmp_path):
    path = tmp_path / "expanded.jsonl"
    rows = [
        {**EXPANDED, "surface_name": f"X{i} (disambiguation)",
         "documents": [{**EXPANDED["documents"][0], "pid": str(i)}]}
        for i in range(10)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("route", ["cli", "module"])
def test_split_refuses_a_second_run_and_a_symlinked_folder(
    tmp_path, expanded, repo_root, capsys, route
):
    out = tmp_path / "release"
    holder = Holder(out, repo_root)
    try:
        status, err = _route(route, _split(expanded, out), repo_root, capsys)
        assert_one_line(status, err, f"--output-dir {out}", "another run")
    finally:
        holder.release()
    assert not out.exists()
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "linked").symlink_to(target)
    status, err = _route(route, _split(expanded, tmp_path / "linked"), repo_root, capsys)
    assert_one_line(status, err, tmp_path / "linked", "symbolic link")
    assert not list(target.iterdir())


@pytest.mark.parametrize("route", ["cli", "module"])
def test_a_build_stage_refuses_a_second_run_on_its_output(
    tmp_path, expanded, repo_root, capsys, route
):
    out = tmp_path / "q.jsonl"
    holder = Holder(out, repo_root)
    try:
        argv = ["build", "questions", "--input", str(expanded), "--output", str(out),
                "--backend", "openai", "--model", "gpt-4", "--dry-run"]  # fmt: skip
        status, err = _route(route, argv, repo_root, capsys)
        assert_one_line(status, err, f"--output {out}", "another run")
    finally:
        holder.release()


def test_a_full_disk_during_split_keeps_the_old_release_and_names_the_file(
    tmp_path, expanded, monkeypatch
):
    from generation.datagen import split

    out = tmp_path / "release"
    split.run(expanded, out, progress=False)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as caught:
        split.run(expanded, out, seed=3, progress=False)
    # The file as it would have been (the one-line form is the dispatcher's, issue 18 part 1).
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename == str(out / "train.json")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["expanded.jsonl", "release"]


# --- files safe to open ---------------------------------------------------------------------------


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised():
    import csv
    import io

    from generation.report.tables import csv_cell, format_csv

    for hostile in ("=1+1", "+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "\uff1d1"):
        assert csv_cell(hostile) == "'" + hostile
    for plain in ("gpt-4", "a=b", "model 1", ""):
        assert csv_cell(plain) == plain
    columns = {'=HYPERLINK("http://x","y")': {"answer_recall": -0.5}}
    header, row = list(csv.reader(io.StringIO(format_csv(columns))))[:2]
    assert header[1] == "'" + '=HYPERLINK("http://x","y")'
    assert row[1] == "-0.5"  # numbers are not text: written as they are


def test_markdown_escapes_html_pipes_and_line_breaks():
    from generation.report.tables import format_markdown, md_code, md_escape

    assert md_escape("<img src=x onerror=alert(1)>|a\nb") == (
        "&lt;img src=x onerror=alert(1)&gt;\\|a b"
    )
    head = format_markdown({"<b>x</b>|y": {"answer_recall": 0.5}}).splitlines()[0]
    assert head == "| | &lt;b&gt;x&lt;/b&gt;\\|y |"
    assert md_code("plain") == "`plain`"
    assert md_code("a`b<i>") == "`` a`b<i> ``"  # the fence outgrows any backtick run inside


def test_comparison_markdown_keeps_names_inside_code_spans():
    from generation.report.compare import format_comparison_markdown

    comparison = {
        "baseline": "base",
        "comparisons": [{"system": "x` <script>alert(1)</script> `", "baseline": "base",
                         "n_shared": 1, "only_in_baseline": 0, "only_in_system": 0,
                         "scores": {}, "transitions": {}}],
    }  # fmt: skip
    text = format_comparison_markdown(comparison)
    assert "## `` x` <script>alert(1)</script> ` `` vs `base`" in text


def test_plot_labels_show_dollars_and_tex_literally(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import cbook

    from generation.report.evaluate import plot_categories
    from generation.report.tables import escape_mathtext

    for label in ("$x^2$", "a $ b", "$\\frac{1}{$", "cost $5 and $6"):
        escaped = escape_mathtext(label)
        assert not cbook.is_math_text(escaped)
        assert escaped.replace("\\$", "$") == label  # what matplotlib shows for non-math text
    columns = {
        name: {"complete": 0.5, "partial": 0.5, "no_answer": 0.0, "ambiguous": 0.0, "merged": 0.0}
        for name in ("$\\frac{1}{$", "$x^2$")
    }
    plot_categories(columns, tmp_path / "c.png")  # mathtext would fail to parse the first
    assert (tmp_path / "c.png").stat().st_size > 0


@pytest.mark.parametrize("route", ["cli", "module"])
def test_evaluate_writes_hostile_names_safely(tmp_path, repo_root, capsys, route):
    row = {
        "qid": 1, "ambiguous_entity": "Day", "question": "Who is Day?", "gen_answer": "a judge",
        "documents": [{"title": "Day (judge)", "text": "t", "pid": "1", "answer": "a judge"}],
    }  # fmt: skip
    files = []
    for stem in ("=cmd", "<img src=x onerror=alert(1)>", "$x^2$"):
        path = tmp_path / f"{stem}.jsonl"
        path.write_text(json.dumps(row) + "\n")
        files.append(str(path))
    out = tmp_path / "out"
    argv = ["evaluate", *files, "--output-dir", str(out), "--no-df1", "--bootstrap", "0", "--plot"]
    if route == "cli":
        capsys.readouterr()
        status, err = ambigdocs_main(argv), capsys.readouterr().err
    else:
        env = {**os.environ, "PYTHONPATH": str(repo_root), "HF_HUB_OFFLINE": "1"}
        done = subprocess.run([sys.executable, "-m", "generation.report.evaluate", *argv[1:]],
                              capture_output=True, text=True, env=env)  # fmt: skip
        status, err = done.returncode, done.stderr
    assert status == 0, err
    table_csv = (out / "table.csv").read_text().splitlines()[0]
    assert table_csv.startswith("metric,'=cmd,")
    table_md = (out / "table.md").read_text()
    assert "<img" not in table_md and "&lt;img src=x onerror=alert(1)&gt;" in table_md
    assert (out / "categories.png").stat().st_size > 0


def test_the_evaluation_folder_refuses_a_second_run_and_the_users_folder(tmp_path, repo_root):
    out = tmp_path / "eval"
    holder = Holder(out, repo_root)
    try:
        with pytest.raises(OutputBusy, match=f"--output-dir {out}: another run"):
            with evaluation_folder(out):
                pass
    finally:
        holder.release()
    out.mkdir()
    (out / "answers.jsonl").write_text("{}\n")  # the user's results, not evaluate's
    with pytest.raises(ValueError, match=r"holds other files than .*answers\.jsonl"):
        with evaluation_folder(out):
            pass
    assert (out / "answers.jsonl").read_text() == "{}\n"


# --- targets that are not plain files, companions of long names, outputs that collide ------------


@pytest.mark.parametrize("route", ["cli", "module"])
def test_answer_never_replaces_a_pipe_or_device(tmp_path, rows_file, repo_root, capsys, route):
    # An atomic write renames a regular file over its target: over /dev/null or a FIFO that
    # would replace the device for everyone (as root, system-wide).
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    status, err = _route(route, _dry_answer(rows_file, fifo), repo_root, capsys)
    assert_one_line(status, err, fifo, "device, pipe or socket")
    assert fifo.is_fifo()


def test_no_writer_replaces_a_pipe(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for write in (lambda: atomic_write_json(fifo, {}), lambda: atomic_write_text(fifo, "x")):
        with pytest.raises(ValueError, match="is a device, pipe or socket"):
            write()
    with pytest.raises(ValueError, match="is a device, pipe or socket"):
        refuse_unsafe_output("/dev/null")
    assert fifo.is_fifo() and Path("/dev/null").is_char_device()


def test_companions_of_the_longest_name_fit_and_stay_distinct(tmp_path):
    # A 250-byte output name is valid; its lock, temporary file and staging folder must still
    # have names the file system takes (255 bytes), and two such names must not share them.
    first, second = tmp_path / ("a" * 249 + "1.json"), tmp_path / ("a" * 249 + "2.json")
    for path in (first, second):
        assert len(outputs.lock_path(path).name.encode()) <= 255
        with output_lock(path):
            atomic_write_json(path, {"name": path.name})
        assert json.loads(path.read_text()) == {"name": path.name}
    assert outputs.lock_path(first) != outputs.lock_path(second)
    folder = tmp_path / ("é" * 125)  # 250 bytes in UTF-8
    with replace_folder(folder) as staging:
        atomic_write_text(staging / "x.txt", "x")
    assert (folder / "x.txt").read_text() == "x"


def test_evaluate_scores_a_results_file_whose_name_leaves_no_room_for_a_meta_file(
    tmp_path, sample_dir, capsys
):
    # `NAME.meta.json` beside a 250-byte NAME is too long to exist: there is no meta file.
    results = tmp_path / ("c" * 244 + ".jsonl")
    results.write_text('{"qid": 0, "answer": "Charles Bernard Day was born in Alabama."}\n')
    argv = ["evaluate", str(results), "--data-dir", str(sample_dir), "--subset", "--no-df1"]
    assert ambigdocs_main([*argv, "--output-dir", str(tmp_path / "out")]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["n"] == 1


@pytest.mark.parametrize(
    ("export", "fragment"),
    [
        ("{out}", "--export-json {out} is also --output"),
        ("{out}.meta.json", "is also the settings file of --output"),
    ],
)
def test_answer_refuses_an_export_over_its_own_outputs(
    tmp_path, rows_file, capsys, export, fragment
):
    out = tmp_path / "a.jsonl"
    argv = ["answer", "--model", "m", "--backend", "openai", "--dataset", str(rows_file)]
    argv += ["--output", str(out), "--export-json", export.format(out=out)]
    capsys.readouterr()
    status = ambigdocs_main(argv)
    assert_one_line(status, capsys.readouterr().err, fragment.format(out=out))
    assert not out.exists()


def test_answer_refuses_an_export_that_a_dry_run_would_ignore(tmp_path, rows_file, capsys):
    argv = _dry_answer(rows_file, tmp_path / "d.jsonl") + ["--export-json", str(tmp_path / "e")]
    capsys.readouterr()
    status = ambigdocs_main(argv)
    assert_one_line(status, capsys.readouterr().err, "--export-json", "dry run")
