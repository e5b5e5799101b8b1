"""No secret is printed or recorded: the one filter (`generation/secrets.py`) and the places that
print or write settings through it, by both routes (`ambigdocs X` and the module's own `main`).

The secrets here are planted values that appear nowhere else, so "not in the output" can only
pass when the value was masked.
"""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from generation import secrets
from generation.cli import main as ambigdocs

KEY = "sk-live-PLANTED0123456789"  # an OpenAI-shaped key
PLAIN = "plainsecret4242"  # a key with no telltale shape: only its name says it is secret
PASSWORD = "hunter2pw"
BASIC = base64.b64encode(f"bob:{PASSWORD}".encode()).decode()  # Ym9iOmh1bnRlcjJwdw==


@pytest.fixture(autouse=True)
def _forget_remembered_secrets(monkeypatch):
    # Values remembered by one test must not make another pass.
    monkeypatch.setattr(secrets, "_remembered", set())


def run_route(capsys, route: str, command: list[str], argv: list[str]) -> tuple[int, str]:
    """(exit status, stdout + stderr) of a command by `cli` (`ambigdocs ...`) or `module`."""
    import importlib

    from generation.datagen import STAGES

    capsys.readouterr()
    if route == "cli":
        code = ambigdocs([*command, *argv])
    else:
        name = {"answer": "generation.answering.answer", "distill": "generation.distill.train"}
        module = STAGES[command[1]][0] if command[0] == "build" else name[command[0]]
        code = importlib.import_module(module).main(argv)
    out, err = capsys.readouterr()
    return code, out + err


# --- the filter ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "hidden", "kept"),
    [
        (f"Authorization: Basic {BASIC} was refused", [BASIC], ["was refused"]),
        ("header Authorization: Bearer abc.DEF-123456789", ["abc.DEF-123456789"], ["header"]),
        (f"connecting to http://bob:{PASSWORD}@10.0.0.1:8000/v1", [PASSWORD], ["bob:***@10.0.0.1"]),
        ("git https://ghp_TOKENVALUE123@github.com/x", ["ghp_TOKENVALUE123"], ["github.com/x"]),
        (f"bad key {KEY}", [KEY], ["bad key ***"]),
        (f'{{"api_key": "{PLAIN}"}}', [PLAIN], ['"api_key": "***"']),
        (f"password={PLAIN}&user=bob", [PLAIN], ["user=bob"]),
        (f"HF_TOKEN: {PLAIN}", [PLAIN], ["HF_TOKEN: ***"]),
        (f"hf_{PLAIN}", [PLAIN], []),
    ],
)
def test_mask_hides_secrets_by_name_and_shape(text, hidden, kept):
    masked = secrets.mask(text)
    for value in hidden:
        assert value not in masked, masked
    for value in kept:
        assert value in masked, masked
    assert "***" in masked


@pytest.mark.parametrize(
    "text",
    [
        "--backend-option 'dtype': expected KEY=VALUE",
        "max_new_tokens: 300, tokenizer: gpt2, prompt_format: authors",
        "Basic settings are kept; the token budget: 300",
        "HTTP 404: model not found",
        "see https://huggingface.co/docs/hub",
    ],
)
def test_mask_leaves_ordinary_text_alone(text):
    assert secrets.mask(text) == text


def test_a_remembered_value_is_masked_anywhere():
    secrets.remember_options({"stage": {"backend_option": [f"api_key={PLAIN}", "dtype=bf16"]}})
    assert secrets.mask(f"server says: unknown key {PLAIN}!") == "server says: unknown key ***!"
    secrets.remember_options(["--api-keyy", "another-plain-value", "--hf_token=third-plain-value"])
    masked = secrets.mask("another-plain-value third-plain-value dtype=bf16")
    assert masked == "*** *** dtype=bf16"


def test_scrub_settings_at_any_depth():
    config = {
        "stages": {
            "questions": {
                "backend_option": {"api_key": PLAIN, "base_url": f"http://u:{PASSWORD}@h/v1"},
                "mirrors": [[f"http://u:{PASSWORD}@h:1/v1?token={PLAIN}", "http://h2/v1"]],
                "items": [f"api-key={PLAIN}", "dtype=float16"],
                "model": "gpt-4",
                "token": None,
            }
        }
    }
    text = json.dumps(secrets.scrub(config))
    assert PLAIN not in text and PASSWORD not in text
    scrubbed = secrets.scrub(config)["stages"]["questions"]
    assert scrubbed["backend_option"] == {"api_key": "***", "base_url": "http://h/v1"}
    assert scrubbed["mirrors"] == [["http://h:1/v1?token=***", "http://h2/v1"]]
    assert scrubbed["items"] == ["api-key=***", "dtype=float16"]
    assert scrubbed["model"] == "gpt-4" and scrubbed["token"] is None
    assert config["stages"]["questions"]["backend_option"]["api_key"] == PLAIN  # a copy


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("api_key", True),
        ("OPENAI_API_KEY", True),
        ("hf-token", True),
        ("Password", True),
        ("client_secret", True),
        ("Authorization", True),
        ("max_new_tokens", False),
        ("tokenizer", False),
        ("tokenization", False),
        ("authors", False),
        ("model", False),
    ],
)
def test_secret_names(name, secret):
    assert secrets.is_secret_key(name) is secret


# --- answer: flags, back-end options, server messages -------------------------------------------

ANSWER = ["--model", "gpt-4", "--backend", "openai", "--config", "sample", "--limit", "1"]


@pytest.mark.parametrize("route", ["cli", "module"])
def test_a_misspelt_secret_flag_is_not_echoed(capsys, tmp_path, route):
    argv = [*ANSWER, "--output", str(tmp_path / "o.jsonl"), "--api-keyy", PLAIN]
    code, text = run_route(capsys, route, ["answer"], argv)
    assert code == 2 and "--api-keyy" in text and PLAIN not in text
    assert len(text.strip().splitlines()) == 1


@pytest.mark.parametrize("route", ["cli", "module"])
@pytest.mark.parametrize("value", ["[unclosed", "{a: b", "'x", "a: b: c"])
def test_a_backend_option_yaml_cannot_read_is_one_line_without_its_value(
    capsys, tmp_path, route, value
):
    secret = f"{value}{PLAIN}"
    argv = [*ANSWER, "--dry-run", "--output", str(tmp_path / "o.jsonl")]
    argv += ["--backend-option", f"api_key={secret}"]
    code, text = run_route(capsys, route, ["answer"], argv)
    assert code == 2 and "Traceback" not in text, text
    assert len(text.strip().splitlines()) == 1, text
    assert "--backend-option api_key" in text and PLAIN not in text


def test_a_base_url_with_a_password_given_as_a_backend_option_is_not_recorded(
    capsys, tmp_path, monkeypatch
):
    from generation.answering.answer import parse_answer_args, run_meta

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    argv = [*ANSWER, "--output", str(tmp_path / "o.jsonl")]
    argv += ["--backend-option", f"base_url=http://bob:{PASSWORD}@127.0.0.1:9/v1"]
    argv += ["--backend-option", f"api_key={PLAIN}"]
    meta = run_meta(parse_answer_args(argv), "chat")
    text = json.dumps(meta)
    assert PASSWORD not in text and PLAIN not in text and KEY not in text
    assert meta["backend_options"]["base_url"] == "http://127.0.0.1:9/v1"


class _EchoingServer:
    """An OpenAI-compatible server that refuses every request with a 401 whose message echoes
    the credentials it was sent, as some proxies do."""

    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                auth = self.headers.get("Authorization", "")
                message = f"bad credentials: {auth}; also tried Authorization: Basic {BASIC}"
                data = json.dumps({"error": {"message": message}}).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.mark.parametrize("route", ["cli", "module"])
def test_credentials_a_server_echoes_are_masked(capsys, tmp_path, monkeypatch, route):
    server = _EchoingServer()
    try:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        argv = [*ANSWER, "--base-url", server.url.replace("http://", f"http://bob:{PASSWORD}@")]
        argv += ["--backend-option", f"api_key={PLAIN}", "--output", str(tmp_path / "o.jsonl")]
        code, text = run_route(capsys, route, ["answer"], argv)
    finally:
        server.httpd.shutdown()
    assert code == 1, text  # a service that failed for good: resumable, not bad input
    assert "HTTP 401: bad credentials" in text and "also tried Authorization" in text
    for value in (PLAIN, BASIC, PASSWORD):
        assert value not in text
    meta = tmp_path / "o.jsonl.meta.json"
    if meta.exists():
        assert PLAIN not in meta.read_text() and PASSWORD not in meta.read_text()


# --- build all: the plan it prints, the state it stores ------------------------------------------


def _seed_file(tmp_path):
    rows = [
        {
            "surface_name": f"Name {i} (disambiguation)",
            "documents": [
                {"pid": f"{i}1", "title": f"Name {i} (river)", "text": f"A river {i} flows."},
                {"pid": f"{i}2", "title": f"Name {i} (town)", "text": f"A town {i} stands."},
            ],
            "overlap": "a b c d",
        }
        for i in range(2)
    ]
    path = tmp_path / "seeds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _config(tmp_path) -> str:
    config = {
        "workdir": "work",
        "stages": {
            "questions": {
                "input": str(_seed_file(tmp_path)),
                "output": "questions.jsonl",
                "backend": "openai",
                "model": "gpt-4",
                "dry_run": True,  # the stage writes its prompts and sends nothing
                "progress": False,
                "backend_option": {
                    "api_key": PLAIN,
                    "base_url": f"http://bob:{PASSWORD}@127.0.0.1:9/v1",
                },
            }
        },
    }
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("route", ["cli", "module"])
def test_build_all_prints_and_stores_no_secret(capsys, tmp_path, route):
    config = _config(tmp_path)
    code, text = run_route(capsys, route, ["build", "all"], ["--config", config, "--dry-run"])
    assert code == 0, text
    assert "ambigdocs build questions" in text and "api_key=***" in text
    assert PLAIN not in text and PASSWORD not in text
    code, text = run_route(capsys, route, ["build", "all"], ["--config", config])
    assert code == 0, text
    assert PLAIN not in text and PASSWORD not in text
    written = [p for p in (tmp_path / "work").rglob("*") if p.is_file()]
    state = tmp_path / "work" / ".build-all-state.json"
    assert state in written
    assert json.loads(state.read_text())["questions"]["options"]["backend_option"] == [
        "api_key=***",
        "base_url=http://bob:***@127.0.0.1:9/v1",
    ]
    for path in written:
        content = path.read_text(encoding="utf-8")
        assert PLAIN not in content and PASSWORD not in content, path
    # A later run compares the stored (masked) options with the config's: they still agree.
    from generation.datagen import pipeline

    _, stages = pipeline.load_config(config)
    recorded = json.loads(state.read_text())["questions"]["options"]
    options = pipeline._stage_options("questions", stages["questions"], "stage 'questions'")
    assert pipeline._record(options) == recorded


# --- evaluate's provenance of an answer run -----------------------------------------------------


def test_provenance_records_no_secret_from_an_answer_meta_file(tmp_path):
    """A meta file written by an older version (with the secrets in it) is read back masked,
    so neither summary.json nor report.html can show them."""
    from generation.report.provenance import answer_run_settings

    results = tmp_path / "answers.jsonl"
    results.write_text("", encoding="utf-8")
    old_meta = {
        "model": "gpt-4",
        "base_url": f"http://bob:{PASSWORD}@127.0.0.1:9/v1",
        "backend_options": {"api_key": PLAIN, "stops": [[f"x token={PLAIN}"]]},
    }
    (tmp_path / "answers.jsonl.meta.json").write_text(json.dumps(old_meta), encoding="utf-8")
    settings = answer_run_settings(results)
    text = json.dumps(settings)
    assert PLAIN not in text and PASSWORD not in text
    assert settings["backend_options"]["api_key"] == "***"
    assert settings["base_url"] == "http://127.0.0.1:9/v1" and settings["model"] == "gpt-4"


# --- the boundary masks what a message repeats ---------------------------------------------------


@pytest.mark.parametrize("route", ["cli", "module"])
def test_the_boundary_masks_a_secret_a_library_message_repeats(capsys, tmp_path, route):
    """trl's parser echoes an unknown flag with its value; only the boundary stands between
    that message and the terminal."""
    argv = ["--train", "t.jsonl", "--output_dir", str(tmp_path / "o"), "--api-keyy", PLAIN]
    code, text = run_route(capsys, route, ["distill"], argv)
    assert code == 2 and "--api-keyy" in text and PLAIN not in text, text
    assert "Traceback" not in text


@pytest.mark.parametrize("route", ["cli", "module"])
def test_the_boundary_masks_a_url_password_in_a_refused_value(capsys, tmp_path, route):
    import importlib

    argv = ["--config", "sample", "--repo-id", f"http://bob:{PASSWORD}@h/x", str(tmp_path / "o")]
    capsys.readouterr()
    if route == "cli":
        code = ambigdocs(["export", *argv])
    else:
        code = importlib.import_module("generation.hub.export").main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("ambigdocs export: error: ") and PASSWORD not in err
    assert "bob:***@h" in err and len(err.splitlines()) == 1
