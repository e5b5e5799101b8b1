"""Resuming across versions of the recorded settings, and with non-default values for them.

The rule (generation/io/resume.py): finished work is resumed only with the settings it was made
with. A setting added later has, in work recorded before it, the value the toolkit used then
(`answer`: base_url None, decoding greedy, backend_options {}; `build questions`: decoding
greedy; the model stages: backend_options {}). So the *recorded* value wins: today's default is
accepted where it equals it, and a run must repeat a non-default value to resume.
"""

from __future__ import annotations

import json

import pytest
from build_fakes import ScriptedBackend
from test_answer import _args, _rows
from test_build_questions import GOOD, seed_rows, write_jsonl

from generation.answering.answer import main as answer_main
from generation.cli import main as cli_main
from generation.datagen import questions
from generation.io.resume import partial_path

pytest.importorskip("torch")

ADDED_TO_ANSWER = ("base_url", "decoding", "backend_options")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory, sample_dir):
    """The sample's test rows as a data folder (the runs below answer at most three)."""
    folder = tmp_path_factory.mktemp("data")
    (folder / "test.json").write_text((sample_dir / "test.json").read_text())
    return folder


def _meta(out):
    return out.parent / f"{out.name}.meta.json"


def _forget(path, keys):
    """Rewrites a settings file as a version that predates `keys` wrote it."""
    saved = json.loads(path.read_text())
    for key in keys:
        saved.pop(key)  # KeyError: the setting was never recorded
    path.write_text(json.dumps(saved))


# --- answer ------------------------------------------------------------------------------------


def test_answer_resumes_a_run_recorded_before_base_url_decoding_backend_options(
    tiny_llama_dir,
    data_dir,
    tmp_path,
    capsys,
):
    out = tmp_path / "a.jsonl"
    assert answer_main(_args(tiny_llama_dir, data_dir, out, "--limit", "1")) == 0
    _forget(_meta(out), ADDED_TO_ANSWER)
    # today's defaults are the old behaviour: resumed, one more row, nothing redone
    first = _rows(out)
    assert answer_main(_args(tiny_llama_dir, data_dir, out, "--limit", "2")) == 0
    assert _rows(out)[:1] == first and len(_rows(out)) == 2
    meta = json.loads(_meta(out).read_text())
    assert {k: meta[k] for k in ADDED_TO_ANSWER} == {
        "base_url": None, "decoding": "greedy", "backend_options": {}
    }  # fmt: skip
    # a non-default value is not the recorded one: refused, naming it
    _forget(_meta(out), ADDED_TO_ANSWER)
    capsys.readouterr()
    extra = ("--backend-option", f"tokenizer={tiny_llama_dir}")
    assert answer_main(_args(tiny_llama_dir, data_dir, out, "--limit", "3", *extra)) == 2
    err = capsys.readouterr().err
    assert "backend_options: {} -> {'tokenizer': " in err and "--overwrite" in err
    assert len(_rows(out)) == 2


def test_answer_with_a_non_default_option_resumes_only_with_it(
    tiny_llama_dir,
    data_dir,
    tmp_path,
    capsys,
):
    out = tmp_path / "a.jsonl"
    extra = ("--backend-option", f"tokenizer={tiny_llama_dir}")
    assert answer_main(_args(tiny_llama_dir, data_dir, out, "--limit", "1", *extra)) == 0
    capsys.readouterr()
    # today's default (no option) does not win over the recorded value
    assert answer_main(_args(tiny_llama_dir, data_dir, out, "--limit", "2")) == 2
    err = capsys.readouterr().err
    assert f"backend_options: {{'tokenizer': '{tiny_llama_dir}'}} -> {{}}" in err
    assert answer_main(_args(tiny_llama_dir, data_dir, out, "--limit", "2", *extra)) == 0
    assert len(_rows(out)) == 2


def test_answer_openai_run_recorded_before_decoding_keeps_greedy(monkeypatch, tmp_path, capsys):
    # Before `--decoding`, the openai back-end always decoded greedily, also with the authors'
    # prompt format, whose default is now `authors`: the recorded greedy wins over that default.
    from test_backends_openai import KEY, FakeServer

    server = FakeServer()
    try:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        out = tmp_path / "o.jsonl"

        def run(*extra, limit=1):
            argv = ["--model", "gpt-test", "--backend", "openai", "--base-url", server.url,
                    "--config", "sample", "--split", "test", "--prompt-format", "authors",
                    "--limit", str(limit), "--output", str(out), *extra]  # fmt: skip
            return answer_main(argv)

        assert run("--decoding", "greedy") == 0
        _forget(_meta(out), ("decoding", "backend_options"))
        capsys.readouterr()
        assert run(limit=2) == 2  # today's default for this format is `authors`
        assert "decoding: 'greedy' -> 'authors'" in capsys.readouterr().err
        sent = len(server.requests)
        assert run("--decoding", "greedy", limit=2) == 0
        assert len(server.requests) == sent + 1 and len(_rows(out)) == 2
        assert all(r["temperature"] == 0 for r in server.requests)  # greedy throughout
    finally:
        server.close()


# --- build questions (and the model stages' shared settings) -----------------------------------


class _Crash(RuntimeError):
    pass


def _questions(monkeypatch, tmp_path, *extra, crash_after=None):
    """`build questions` on the openai back-end, faked; returns (exit status, prompts sent)."""
    sent = []

    def reply(prompt):
        if crash_after is not None and len(sent) >= crash_after:
            raise _Crash("killed")
        sent.append(prompt)
        return GOOD

    monkeypatch.setattr(
        questions, "make_backend", lambda model, defaults=None: ScriptedBackend(reply)
    )
    src = tmp_path / "seeds.jsonl"
    if not src.exists():
        write_jsonl(src, seed_rows(3))
    argv = ["build", "questions", "--input", str(src), "--output", str(tmp_path / "q.jsonl"),
            "--backend", "openai", "--model", "gpt-4", "--chunk-size", "1", "--no-progress",
            *extra]  # fmt: skip
    try:
        return cli_main(argv), sent
    except _Crash:
        return None, sent


def _settings(tmp_path):
    return partial_path(tmp_path / "q.jsonl").with_name("q.jsonl.partial.settings.json")


def test_questions_resumes_work_recorded_before_decoding_and_backend_options(
    monkeypatch, tmp_path, capsys
):
    rc, sent = _questions(monkeypatch, tmp_path, crash_after=1)
    assert rc is None and len(sent) == 1 and partial_path(tmp_path / "q.jsonl").exists()
    _forget(_settings(tmp_path), ("decoding", "backend_options"))
    # before --decoding, questions always decoded greedily: the other decoding is refused ...
    capsys.readouterr()
    rc, sent = _questions(monkeypatch, tmp_path, "--decoding", "authors")
    assert rc == 2 and sent == []
    assert "decoding: 'greedy' -> 'authors'" in capsys.readouterr().err
    # ... and today's default (greedy for the chat format) resumes: two pages left, not three
    rc, sent = _questions(monkeypatch, tmp_path)
    assert rc == 0 and len(sent) == 2
    assert len((tmp_path / "q.jsonl").read_text().splitlines()) == 3


def test_questions_backend_options_are_part_of_the_resume_check(monkeypatch, tmp_path, capsys):
    option = ("--backend-option", "temperature=0.7")
    rc, sent = _questions(monkeypatch, tmp_path, *option, crash_after=1)
    assert rc is None and len(sent) == 1
    recorded = json.loads(_settings(tmp_path).read_text())
    assert recorded["backend_options"] == {"temperature": 0.7}
    # without the option the answers would be sampled otherwise: refused, naming it
    capsys.readouterr()
    rc, sent = _questions(monkeypatch, tmp_path)
    assert rc == 2 and sent == []
    assert "backend_options: {'temperature': 0.7} -> {}" in capsys.readouterr().err
    # options that only change speed or hold credentials neither block a resume nor get written
    rc, sent = _questions(
        monkeypatch, tmp_path, *option, "--backend-option", "max_concurrency=4",
        "--backend-option", "api_key=sk-NOT-WRITTEN",
    )  # fmt: skip
    assert rc == 0 and len(sent) == 2
    assert "sk-NOT-WRITTEN" not in "".join(p.read_text() for p in tmp_path.iterdir() if p.is_file())


# --- the shared rule under both -----------------------------------------------------------------


def test_open_work_fills_in_only_the_settings_this_run_records(tmp_path):
    from generation.io.records import ResumableJsonl
    from generation.io.resume import ResumeRefused, open_work

    out = tmp_path / "o.jsonl"
    key = lambda r: r["k"]  # noqa: E731
    added = {"backend_options": {}, "decoding": "greedy"}
    work = open_work(out, key, {"model": "m"}, defaults=added)
    assert isinstance(work, ResumableJsonl)
    work.append([{"k": 1}])
    work.close()
    # a stage that records neither (expand records no decoding) resumes unchanged ...
    open_work(out, key, {"model": "m"}, defaults=added).close()
    # ... one that records them now resumes with the old values, and only with them
    open_work(out, key, {"model": "m", "decoding": "greedy"}, defaults=added).close()
    with pytest.raises(ResumeRefused, match=r"decoding: 'greedy' -> 'authors'.*--overwrite"):
        open_work(out, key, {"model": "m", "decoding": "authors"}, defaults=added)


def test_model_stage_settings_keep_only_options_that_change_outputs():
    from generation.datagen.model_options import ModelOptions, model_settings

    model = ModelOptions(
        backend="openai",
        model="gpt-4",
        backend_option=["temperature=0.7", "max_concurrency=4", "api_key=sk-x", "timeout=3"],
    )
    assert model_settings(model)["backend_options"] == {"temperature": 0.7}
