"""Crash safety across stages: stale work after an earlier stage reran, leftover work files,
and statistics that mark an output complete."""

from __future__ import annotations

import json

import pytest
from build_fakes import ScriptedBackend
from test_build_questions import GOOD, seed_rows, write_jsonl

import generation.datagen.filter as filters
from generation.datagen import questions, stage_io
from generation.io.resume import ResumeRefused, partial_path


def test_work_done_on_an_older_input_is_refused_and_overwrite_redoes_it(tmp_path):
    src = write_jsonl(tmp_path / "seeds.jsonl", seed_rows(2))
    out = tmp_path / "q.jsonl"
    calls = []

    def crash_on_second(prompt):
        calls.append(prompt)
        if len(calls) > 1:
            raise RuntimeError("boom")
        return GOOD

    with pytest.raises(RuntimeError, match="^boom$"):
        questions.generate_questions(
            src, out, ScriptedBackend(crash_on_second), chunk_size=1, show_progress=False
        )
    assert partial_path(out).read_text().count("\n") == 1  # one finished page saved

    # The seed stage reruns and rewrites its output with other passages.
    new_rows = seed_rows(2)
    for row in new_rows:
        row["documents"][0]["text"] = "NEW " + row["documents"][0]["text"]
    write_jsonl(src, new_rows)
    prompts = []
    backend = ScriptedBackend(lambda p: prompts.append(p) or GOOD)
    # One rule for every command: stale work is refused, naming the input that changed ...
    with pytest.raises(ResumeRefused, match=r"input .*seeds\.jsonl.*--overwrite"):
        questions.generate_questions(src, out, backend, chunk_size=1, show_progress=False)
    assert prompts == [] and partial_path(out).exists()
    # ... and --overwrite starts again.
    questions.generate_questions(
        src, out, backend, chunk_size=1, show_progress=False, overwrite=True
    )
    assert len(prompts) == 2  # both pages redone, none reused from the stale work
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(r["documents"][0]["text"].startswith("NEW ") for r in rows)


def test_filter_without_entailment_drops_an_old_work_file(tmp_path):
    row = {
        "surface_name": "Name",
        "documents": [{"title": "Name (a)", "text": "x"}, {"title": "Name (b)", "text": "y"}],
        "question": "Where is Name?",
        "answers": ["in the hills", "by the sea"],
    }
    src = write_jsonl(tmp_path / "q.jsonl", [row])
    out = tmp_path / "f.jsonl"
    partial_path(out).write_text('{"surface_name": "Name"}\n')  # left by an interrupted run
    filters.filter_questions(src, out, checker=None, show_progress=False)
    assert not partial_path(out).exists()
    assert json.loads(out.read_text())["status"] == "ok"


def test_a_failed_write_leaves_no_statistics_behind(tmp_path, monkeypatch):
    out = tmp_path / "o.jsonl"
    stage_io.write_stage(out, [{"a": 1}], {"n": 1}, stage="t")
    assert stage_io.stats_path(out).exists()

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(stage_io, "atomic_write_jsonl", fail)
    with pytest.raises(OSError, match="^disk full$"):
        stage_io.write_stage(out, [{"a": 2}], {"n": 1}, stage="t")
    # Without statistics the output is not complete: `build all` reruns the stage.
    assert not stage_io.stats_path(out).exists()
