"""`ambigdocs build questions --backend openai`: the decoding sent (issue 11). With the authors'
prompt format it sends no temperature and no token limit by default, as the authors' GPT-4
script (and `ambigdocs answer --prompt-format authors`); `--decoding` chooses, and is recorded
with the run's settings so that a resume never mixes the two."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openai")

from test_backends_openai import KEY, FakeServer  # noqa: E402
from test_build_questions import seed_rows, write_jsonl  # noqa: E402

from generation.backends.openai import decoding_options, resolve_decoding  # noqa: E402
from generation.datagen import questions  # noqa: E402
from generation.io.resume import partial_path  # noqa: E402
from generation.prompts import render_question_prompt  # noqa: E402


@pytest.fixture
def server():
    server = FakeServer()
    yield server
    server.close()


def _questions(tmp_path, server, monkeypatch, *extra: str) -> int:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    seeds = write_jsonl(tmp_path / "seeds.jsonl", seed_rows(2))
    argv = ["--input", str(seeds), "--output", str(tmp_path / "q.jsonl"), "--backend", "openai",
            "--model", "gpt-test", "--backend-option", f"base_url={server.url}",
            "--chunk-size", "1", "--no-progress", *extra]  # fmt: skip
    return questions.main(argv)


def test_authors_format_sends_no_temperature_and_no_token_limit(tmp_path, server, monkeypatch):
    assert _questions(tmp_path, server, monkeypatch, "--prompt-format", "authors") == 0
    assert len(server.requests) == 2
    for sent in server.requests:
        assert "temperature" not in sent
        assert "max_tokens" not in sent and "max_completion_tokens" not in sent


@pytest.mark.parametrize(
    "extra",
    [["--prompt-format", "authors", "--decoding", "greedy"], ["--prompt-format", "chat"], []],
)
def test_greedy_decoding_sends_temperature_0_and_the_budget(tmp_path, server, monkeypatch, extra):
    assert _questions(tmp_path, server, monkeypatch, *extra) == 0
    assert [(r["temperature"], r["max_tokens"]) for r in server.requests] == [(0, 200)] * 2


def test_authors_decoding_can_be_asked_with_another_format(tmp_path, server, monkeypatch):
    assert _questions(tmp_path, server, monkeypatch, "--decoding", "authors") == 0
    assert all("temperature" not in r and "max_tokens" not in r for r in server.requests)


def test_a_backend_option_still_overrides_the_decoding(tmp_path, server, monkeypatch):
    extra = ["--prompt-format", "authors", "--backend-option", "temperature=0.5"]
    assert _questions(tmp_path, server, monkeypatch, *extra) == 0
    assert all(r["temperature"] == 0.5 and "max_tokens" not in r for r in server.requests)


def test_the_decoding_is_recorded_and_a_resume_with_another_is_refused(
    tmp_path, server, monkeypatch, capsys
):
    # The second seed pair's request fails for good (400 is not retried): the run stops after
    # saving the first chunk.
    second = render_question_prompt(
        seed_rows(2)[1]["surface_name"], seed_rows(2)[1]["documents"], prompt_format="authors"
    )
    server.script = {second[-1]["content"]: [400]}
    capsys.readouterr()
    # A service that failed for good: one line saying the finished work is kept, status 1.
    assert _questions(tmp_path, server, monkeypatch, "--prompt-format", "authors") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1 and "prompt 0: HTTP 400" in err[0] and "run the same command again" in err[0]
    )
    out = tmp_path / "q.jsonl"
    assert partial_path(out).exists()
    recorded = json.loads((tmp_path / "q.jsonl.partial.settings.json").read_text())
    assert recorded["decoding"] == "authors"
    capsys.readouterr()
    extra = ["--prompt-format", "authors", "--decoding", "greedy"]
    assert _questions(tmp_path, server, monkeypatch, *extra) == 2
    err = capsys.readouterr().err
    assert "decoding" in err and len(err.strip().splitlines()) == 1
    # The same decoding resumes: only the unfinished seed pair is sent again.
    sent_before = len(server.requests)
    assert _questions(tmp_path, server, monkeypatch, "--prompt-format", "authors") == 0
    assert len(server.requests) == sent_before + 1


def test_open_models_always_decode_greedily():
    assert resolve_decoding("hf", "authors", "authors") == "greedy"
    assert resolve_decoding("openai", "authors", None) == "authors"
    assert resolve_decoding("openai", None, None) == "greedy"
    assert decoding_options("greedy") == {}
    with pytest.raises(ValueError, match="decoding must be one of"):
        decoding_options("sampled")
