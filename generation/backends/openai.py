"""The OpenAI back-end: GPT-4 / GPT-3.5 as in the paper, or any OpenAI-compatible server; requests
concurrent, retried with backoff and jitter where a retry can help, the key never printed
(docs/answering.md, "Back-ends")."""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

from generation import secrets
from generation.backends.base import Generation
from generation.boundary import ServiceError
from generation.prompts import Prompt

DEFAULT_MAX_CONCURRENCY = 8
RETRYABLE_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))

# How an API model decodes: `greedy` (temperature 0 and the caller's token budget, the toolkit's
# default) or `authors` (neither sent: the API's defaults, as the authors' GPT-4 scripts called it).
DECODINGS = ("greedy", "authors")


def resolve_decoding(backend: str, prompt_format: str | None, decoding: str | None) -> str:
    """The decoding a run uses: the one asked for, else `authors` with the authors' prompt
    format and `greedy` otherwise. Other back-ends always decode greedily (as the authors' open
    models did), so they get `greedy` whatever is asked.
    """
    if backend != "openai":
        return "greedy"
    return decoding or ("authors" if prompt_format == "authors" else "greedy")


def decoding_options(decoding: str) -> dict:
    """The back-end options a decoding sets: `authors` sends no temperature and no token limit;
    `greedy` keeps the back-end's defaults (temperature 0, `max_tokens`).
    """
    if decoding not in DECODINGS:
        raise ValueError(f"decoding must be one of {DECODINGS}, got {decoding!r}")
    return {"temperature": None, "max_tokens_param": None} if decoding == "authors" else {}


class OpenAIBackend:
    """Greedy (temperature 0, by default) chat completions through the `openai` client.

    Args:
        model: the API model name (`gpt-4`, `gpt-3.5-turbo`, or the server's model id).
        base_url: an OpenAI-compatible server (e.g. `http://localhost:8000/v1` for `vllm serve`);
            default the OpenAI API (or `OPENAI_BASE_URL`).
        api_key: default `OPENAI_API_KEY`; required for the OpenAI API, optional with base_url.
        max_retries: retries per request after the first try.
        backoff_base: seconds before the first retry, doubled each time up to `backoff_max`,
            times a random factor in [0.5, 1.5).
        max_tokens_param: `max_tokens` (what compatible servers accept) or
            `max_completion_tokens` (what newer OpenAI models require); `none` (or None) sends
            no token limit, as the authors' script did.
        temperature: sent with every request; None sends none, so the API's default applies
            (OpenAI: sampling at temperature 1), as the authors' script did.
        seed: passed to the API (best-effort determinism); None to omit.

    Chat messages are sent as they are, a plain string as one user message; `return_scores=True`
    asks for log-probabilities and fills `Generation.mean_nll`.
    """

    name = "openai"
    has_chat_template = True  # chat models: the runner defaults to chat prompts

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        max_retries: int = 6,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        timeout: float = 120.0,
        max_tokens_param: str | None = "max_tokens",
        temperature: float | None = 0.0,
        seed: int | None = None,
        show_progress: bool = False,
        batch_size: int | None = None,  # accepted for a uniform CLI; concurrency is what counts
    ):
        import openai

        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if max_tokens_param in ("none", "None"):
            max_tokens_param = None
        if max_tokens_param not in ("max_tokens", "max_completion_tokens", None):
            raise ValueError(
                "max_tokens_param must be max_tokens, max_completion_tokens or none, "
                f"got {max_tokens_param!r}"
            )
        if temperature is not None and not isinstance(temperature, (int, float)):
            raise ValueError(f"temperature must be a number or None, got {temperature!r}")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if base_url is None and not os.environ.get("OPENAI_BASE_URL"):
                raise ValueError(
                    "the openai back-end needs an API key (set OPENAI_API_KEY, or pass "
                    "--base-url for a local server that needs none)"
                )
            key = "EMPTY"  # local servers usually ignore the key, the client needs one
        self.model_name = model
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_tokens_param = max_tokens_param
        self.temperature = temperature
        self.seed = seed
        self.show_progress = show_progress
        self._openai = openai
        if key != "EMPTY":
            secrets.remember(key)  # masked out of every message, whatever the server echoes
        # The client's own retries are off: ours are explicit, logged and tested.
        self.client = openai.OpenAI(api_key=key, base_url=base_url, max_retries=0, timeout=timeout)
        self._rng = random.Random()
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIBackend(model={self.model_name!r}, base_url={secrets.mask(str(self.client.base_url))!r})"

    def generate(
        self, prompts: Sequence[Prompt], *, max_new_tokens: int, return_scores: bool = False
    ) -> list[Generation]:
        """One chat completion per prompt, `max_concurrency` at a time, in input order.

        Raises:
            ServiceError (a RuntimeError): a request failed for good (after retries when they apply) or got a
                malformed reply (no choices); the message names the prompt index and the HTTP
                status. The requests still queued are then dropped.
        """
        if not prompts:
            return []
        from tqdm.auto import tqdm

        results: list[Generation | None] = [None] * len(prompts)
        bar = tqdm(total=len(prompts), desc="requests", unit="req", disable=not self.show_progress)
        stop = threading.Event()

        def work(i: int) -> None:
            results[i] = self._one(i, prompts[i], max_new_tokens, return_scores, stop)
            bar.update(1)

        pool = ThreadPoolExecutor(max_workers=self.max_concurrency)
        try:
            futures = [pool.submit(work, i) for i in range(len(prompts))]
            wait(futures, return_when=FIRST_EXCEPTION)
            for future in futures:  # the first failure (in input order), in the caller's thread
                if future.done() and future.exception() is not None:
                    raise future.exception()
        finally:
            # After a failure: drop the queued requests and end the retry waits of those in
            # flight, rather than sit through every other retry sequence first.
            stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            bar.close()
        return results  # type: ignore[return-value]

    def _one(
        self,
        index: int,
        prompt: Prompt,
        max_new_tokens: int,
        return_scores: bool,
        stop: threading.Event,
    ):
        openai = self._openai
        request = {"model": self.model_name, "messages": to_messages(prompt)}
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.max_tokens_param is not None:
            request[self.max_tokens_param] = max_new_tokens
        if self.seed is not None:
            request["seed"] = self.seed
        if return_scores:
            request["logprobs"] = True
        for attempt in range(self.max_retries + 1):
            try:
                response = self.client.chat.completions.create(**request)
                return self._to_generation(response, return_scores, index)
            except openai.APIStatusError as err:
                status, retry_after = err.status_code, _retry_after(err)
                reason = secrets.mask(f"HTTP {status}: {_server_message(err)}")
                if status not in RETRYABLE_STATUS:
                    raise ServiceError(f"prompt {index}: {reason}") from None
            except (openai.APITimeoutError, openai.APIConnectionError) as err:
                retry_after, reason = None, type(err).__name__
            if attempt == self.max_retries:
                raise ServiceError(
                    f"prompt {index}: gave up after {self.max_retries + 1} tries ({reason})"
                )
            if stop.wait(self._backoff(attempt, retry_after)):  # another request failed for good
                raise ServiceError(f"prompt {index}: cancelled after another request failed")
        raise AssertionError("unreachable")

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.backoff_max)
        with self._lock:
            jitter = self._rng.uniform(0.5, 1.5)
        return min(self.backoff_base * (2**attempt), self.backoff_max) * jitter

    @staticmethod
    def _to_generation(response, return_scores: bool, index: int = 0) -> Generation:
        """A `Generation` from a chat completion.

        Raises:
            ServiceError (a RuntimeError): the response has no choices (a malformed reply); names the prompt.
        """
        choices = getattr(response, "choices", None)
        if not choices:
            raise ServiceError(f"prompt {index}: the server's response has no choices")
        choice = choices[0]
        if getattr(choice, "message", None) is None:
            raise ServiceError(f"prompt {index}: the server's response has no message")
        text = choice.message.content or ""
        usage = getattr(response, "usage", None)
        n = getattr(usage, "completion_tokens", None) if usage is not None else None
        mean_nll = None
        if return_scores:
            content = getattr(choice.logprobs, "content", None) if choice.logprobs else None
            if content:
                mean_nll = -sum(t.logprob for t in content) / len(content)
                n = n if n is not None else len(content)
        return Generation(text=text, num_tokens=n, mean_nll=mean_nll)

    def close(self) -> None:
        """Closes the HTTP connections."""
        self.client.close()


def to_messages(prompt: Prompt) -> list[dict]:
    """The messages sent for one prompt: chat messages as they are, a string as one user turn."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return [dict(m) for m in prompt]


def _retry_after(err) -> float | None:
    """Seconds from a `Retry-After` header (seconds form), or None."""
    try:
        value = err.response.headers.get("retry-after")
        return max(0.0, float(value)) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


def _server_message(err) -> str:
    """The server's error message, short; never the request (which holds the key)."""
    body = getattr(err, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
    return str(getattr(err, "message", "") or type(err).__name__)[:300]
