"""The OpenAI back-end against a loopback HTTP server started by the test: order, concurrency
limit, retries with backoff on 429/5xx, no retry on 4xx, the key sent but never printed."""

from __future__ import annotations

import json
import threading
import time
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("openai")

from generation.backends import openai as openai_backend  # noqa: E402
from generation.backends.base import load_backend  # noqa: E402

KEY = "sk-test-SECRET-0123456789"


class FakeServer:
    """A chat-completions endpoint that answers `echo: <last user message>`.

    `script` maps a user message to the list of statuses to answer before succeeding.
    """

    def __init__(self, delay=0.0, script=None):
        self.delay = delay
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.lock = threading.Lock()
        self.in_flight = self.max_in_flight = 0
        self.requests: list[dict] = []
        self.auth: set[str] = set()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    server.requests.append(body)
                    server.auth.add(self.headers.get("Authorization", ""))
                    content = body["messages"][-1]["content"]
                    todo = server.script.get(content, [])
                    status = todo.pop(0) if todo else 200
                try:
                    time.sleep(server.delay)
                    if status == "empty":  # a malformed 200 reply
                        self._send(200, {"id": "c0", "object": "chat.completion", "created": 0,
                                         "model": body["model"], "choices": []})  # fmt: skip
                        return
                    if status != 200:
                        message = f"scripted {status}"
                        if status == 401:  # as some servers do: the key echoed in the error
                            auth = self.headers.get("Authorization", "")
                            message += f": incorrect API key {auth.removeprefix('Bearer ')}"
                        payload = {"error": {"message": message, "type": "x"}}
                        self._send(status, payload, {"Retry-After": "0"} if status == 429 else {})
                        return
                    payload = {
                        "id": "c1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": f"echo: {content}"},
                                "logprobs": {
                                    "content": [
                                        {
                                            "token": "a",
                                            "logprob": -0.5,
                                            "bytes": None,
                                            "top_logprobs": [],
                                        },
                                        {
                                            "token": "b",
                                            "logprob": -1.5,
                                            "bytes": None,
                                            "top_logprobs": [],
                                        },
                                    ]
                                }
                                if body.get("logprobs")
                                else None,
                            }
                        ],
                        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
                    }
                    self._send(200, payload)
                finally:
                    with server.lock:
                        server.in_flight -= 1

            def _send(self, status, payload, headers=None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server_factory():
    servers = []

    def make(**kw):
        servers.append(FakeServer(**kw))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def _backend(server, monkeypatch, **kw):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return load_backend("openai", "gpt-test", base_url=server.url, backoff_base=0.01, **kw)


def test_order_concurrency_limit_and_key(server_factory, monkeypatch, capfd):
    server = server_factory(delay=0.05)
    backend = _backend(server, monkeypatch, max_concurrency=3)
    prompts = [f"p{i}" for i in range(10)]
    prompts[4] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "chat4"}]
    gens = backend.generate(prompts, max_new_tokens=7)
    assert [g.text for g in gens][:4] == ["echo: p0", "echo: p1", "echo: p2", "echo: p3"]
    assert gens[4].text == "echo: chat4" and gens[9].text == "echo: p9"
    assert gens[0].num_tokens == 2 and gens[0].mean_nll is None
    assert 2 <= server.max_in_flight <= 3
    req = server.requests[0]
    assert req["temperature"] == 0 and req["max_tokens"] == 7 and req["model"] == "gpt-test"
    assert any(r["messages"][0] == {"role": "system", "content": "sys"} for r in server.requests)
    assert server.auth == {f"Bearer {KEY}"}
    assert KEY not in repr(backend)
    out, err = capfd.readouterr()
    assert KEY not in out + err
    backend.close()


def test_scores_from_logprobs(server_factory, monkeypatch):
    server = server_factory()
    gens = _backend(server, monkeypatch).generate(["x"], max_new_tokens=2, return_scores=True)
    assert gens[0].mean_nll == pytest.approx(1.0)  # mean of 0.5 and 1.5
    assert server.requests[0]["logprobs"] is True


def test_retries_on_429_and_5xx_then_succeeds(server_factory, monkeypatch):
    server = server_factory(script={"flaky": [429, 500, 503]})
    backend = _backend(server, monkeypatch, max_retries=3)
    gens = backend.generate(["ok", "flaky"], max_new_tokens=3)
    assert [g.text for g in gens] == ["echo: ok", "echo: flaky"]
    assert sum(r["messages"][-1]["content"] == "flaky" for r in server.requests) == 4


def test_gives_up_after_max_retries_and_never_retries_4xx(server_factory, monkeypatch, capfd):
    server = server_factory(script={"down": [502] * 10, "bad": [400, 400]})
    backend = _backend(server, monkeypatch, max_retries=2)
    with pytest.raises(RuntimeError, match=r"prompt 0: gave up after 3 tries \(HTTP 502") as err:
        backend.generate(["down"], max_new_tokens=3)
    assert KEY not in str(err.value)
    with pytest.raises(RuntimeError, match="prompt 1: HTTP 400: scripted 400"):
        backend.generate(["fine", "bad"], max_new_tokens=3)
    assert sum(r["messages"][-1]["content"] == "bad" for r in server.requests) == 1
    out, errs = capfd.readouterr()
    assert KEY not in out + errs


def test_malformed_reply_names_the_prompt(server_factory, monkeypatch):
    server = server_factory(script={"broken": ["empty"]})
    backend = _backend(server, monkeypatch)
    with pytest.raises(RuntimeError, match="prompt 1: the server's response has no choices"):
        backend.generate(["ok", "broken"], max_new_tokens=3)


def test_a_failure_drops_the_queued_requests(server_factory, monkeypatch):
    server = server_factory(delay=0.05, script={"bad": [400]})
    backend = _backend(server, monkeypatch, max_concurrency=1)
    prompts = ["bad"] + [f"p{i}" for i in range(8)]
    with pytest.raises(RuntimeError, match="prompt 0: HTTP 400"):
        backend.generate(prompts, max_new_tokens=3)
    # At most the request a free worker picked up before the failure was seen; not all nine.
    assert len(server.requests) <= 2


def test_a_failure_ends_the_retry_waits_of_requests_in_flight(server_factory, monkeypatch):
    server = server_factory(delay=0.05, script={"flaky": [502] * 10, "bad": [400]})
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    backend = load_backend(
        "openai", "m", base_url=server.url, max_concurrency=2, max_retries=3, backoff_base=2.0
    )
    # Every retry wait lasts an hour; each one the backend starts is recorded with how it ended
    # (True: ended by the stop). No clock is read: a wait that is not ended never returns.
    monkeypatch.setattr(backend, "_backoff", lambda attempt, retry_after: 3600.0)
    waits = []

    class RecordedEvent(threading.Event):
        def wait(self, timeout=None):
            ended = super().wait(timeout)
            waits.append((timeout, ended))
            return ended

    # only the back-end's own events (the server's and the pool's threads keep theirs)
    recorded = types.SimpleNamespace(Event=RecordedEvent, Lock=threading.Lock)
    monkeypatch.setattr(openai_backend, "threading", recorded)
    outcome = {}

    def call():
        try:
            backend.generate(["flaky", "bad"], max_new_tokens=3)
        except RuntimeError as err:
            outcome["error"] = str(err)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(timeout=120)  # only a guard against hanging the suite; never reached when right
    assert not worker.is_alive(), "a retry wait of an hour was not ended by the failure"
    assert outcome["error"].startswith("prompt 1: HTTP 400")
    # "flaky" got its 502, started one wait, and the failure of "bad" ended it
    assert waits == [(3600.0, True)]
    assert sum(r["messages"][-1]["content"] == "flaky" for r in server.requests) == 1


def test_backoff_grows_and_honours_retry_after(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    backend = load_backend("openai", "m", backoff_base=1.0, backoff_max=10.0)
    waits = [backend._backoff(a, None) for a in range(6)]
    assert 0.5 <= waits[0] < 1.5 and 4.0 <= waits[3] < 12.0 and waits[5] <= 15.0
    assert backend._backoff(0, 2.5) == 2.5


def test_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        load_backend("openai", "gpt-4")
    # A local server without a key is fine.
    assert load_backend("openai", "m", base_url="http://127.0.0.1:9/v1").name == "openai"


def test_runner_with_the_openai_backend(server_factory, monkeypatch, tmp_path, capfd):
    from generation.answering.answer import main as answer_main
    from generation.io.records import iter_jsonl

    server = server_factory(script={})
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    out = tmp_path / "gpt.jsonl"
    args = ["--model", "gpt-test", "--backend", "openai", "--base-url", server.url,
            "--config", "sample", "--split", "test", "--max-new-tokens", "20",
            "--batch-size", "2", "--output", str(out)]  # fmt: skip
    assert answer_main(args) == 0
    rows = list(iter_jsonl(out))
    assert len(rows) == 5 and {r["prompt_format"] for r in rows} == {"chat"}
    # chat format: the instruction is the system turn, the question and contexts the user turn
    first = server.requests[0]["messages"]
    assert first[0]["role"] == "system" and first[1]["content"].startswith("Question: ")
    for row in rows:
        assert row["gen_answer"].startswith("echo: Question: " + row["question"])
    assert KEY not in capfd.readouterr().err


def test_runner_batch_size_does_not_cap_concurrency(server_factory, monkeypatch, tmp_path):
    from generation.answering.answer import main as answer_main

    server = server_factory(delay=0.1)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    args = ["--model", "gpt-test", "--backend", "openai", "--base-url", server.url,
            "--config", "sample", "--split", "test", "--max-new-tokens", "5",
            "--batch-size", "1", "--max-concurrency", "5",
            "--output", str(tmp_path / "o.jsonl")]  # fmt: skip
    assert answer_main(args) == 0
    assert server.max_in_flight >= 2  # all 5 prompts form one chunk, sent concurrently


def test_a_key_echoed_by_the_server_is_masked(server_factory, monkeypatch, capfd, tmp_path):
    from generation.answering.answer import main as answer_main

    server = server_factory(script={})
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    backend = load_backend("openai", "m", base_url=server.url)
    server.script["q"] = [401]
    with pytest.raises(RuntimeError) as info:
        backend.generate(["q"], max_new_tokens=3)
    assert "HTTP 401" in str(info.value) and "incorrect API key ***" in str(info.value)
    assert KEY not in str(info.value)
    # Through the CLI, with a key given as a back-end option and one that does not look like
    # an OpenAI key: neither is printed.
    monkeypatch.delenv("OPENAI_API_KEY")
    other = "plainsecretvalue42"
    server_401 = server_factory(script={})
    server_401.script = _AlwaysStatus(401)
    args = ["--model", "gpt-test", "--backend", "openai", "--base-url", server_401.url,
            "--config", "sample", "--split", "test", "--limit", "1",
            "--backend-option", f"api_key={other}", "--output", str(tmp_path / "o.jsonl")]  # fmt: skip
    capfd.readouterr()
    assert answer_main(args) == 1
    err = capfd.readouterr().err
    assert "HTTP 401" in err and other not in err and "Traceback" not in err


class _AlwaysStatus(dict):
    """A server script that answers every message with one status."""

    def __init__(self, status):
        super().__init__()
        self.status = status

    def get(self, key, default=None):
        return [self.status]


def test_base_url_credentials_are_not_written(server_factory, monkeypatch, tmp_path):
    from generation.answering.answer import main as answer_main

    server = server_factory(script={})
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    url = server.url.replace("http://", "http://user:hunter2pw@")
    out = tmp_path / "o.jsonl"
    args = ["--model", "gpt-test", "--backend", "openai", "--base-url", url,
            "--config", "sample", "--split", "test", "--limit", "1", "--output", str(out)]  # fmt: skip
    assert answer_main(args) == 0
    meta = (tmp_path / "o.jsonl.meta.json").read_text()
    assert "hunter2pw" not in meta and "user:" not in meta
    assert json.loads(meta)["base_url"] == server.url
    assert KEY not in meta and "hunter2pw" not in out.read_text()


def test_authors_decoding_sends_no_temperature_and_no_limit(server_factory, monkeypatch, tmp_path):
    from generation.answering.answer import main as answer_main

    server = server_factory(script={})
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    base = ["--model", "gpt-test", "--backend", "openai", "--base-url", server.url,
            "--config", "sample", "--split", "test", "--limit", "1"]  # fmt: skip
    assert answer_main([*base, "--prompt-format", "authors", "--output", str(tmp_path / "a")]) == 0
    sent = server.requests[-1]
    assert "temperature" not in sent and "max_tokens" not in sent
    assert json.loads((tmp_path / "a.meta.json").read_text())["decoding"] == "authors"
    # The toolkit's greedy decoding with the authors' prompt, when asked.
    args = [*base, "--prompt-format", "authors", "--decoding", "greedy"]
    assert answer_main([*args, "--output", str(tmp_path / "g")]) == 0
    sent = server.requests[-1]
    assert sent["temperature"] == 0 and sent["max_tokens"] == 300
    assert json.loads((tmp_path / "g.meta.json").read_text())["decoding"] == "greedy"


def test_mask_secrets_and_strip_url_credentials():
    from generation import secrets
    from generation.secrets import mask as mask_secrets
    from generation.secrets import strip_url as strip_url_credentials

    secrets.remember("opensesame42")  # a value the run knows to be secret

    text = (
        f"bad key {KEY}; Authorization: Bearer abc.def-123456789; hf_abcdefghijklmnop; "
        "api_key='q1w2e3r4t5'; token=zzzzzzzz; http://bob:pa55word@host:8000/v1; mine=opensesame42"
    )
    masked = mask_secrets(text)
    for secret in (KEY, "abc.def-123456789", "hf_abcdefghijklmnop", "q1w2e3r4t5", "zzzzzzzz",
                   "pa55word", "opensesame42"):  # fmt: skip
        assert secret not in masked, secret
    assert "http://bob:***@host:8000/v1" in masked and "bad key ***" in masked
    assert mask_secrets("HTTP 404: model not found") == "HTTP 404: model not found"
    assert strip_url_credentials("http://u:p@h:1/v1") == "http://h:1/v1"
    assert strip_url_credentials("https://h/v1?api-key=abc&x=1") == "https://h/v1?api-key=***&x=1"
    assert strip_url_credentials(None) is None
