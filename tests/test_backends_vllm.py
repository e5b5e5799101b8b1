"""The vLLM back-end without vLLM: the clear error when it is missing, its pure logic, and its
wiring through a stand-in `vllm` module placed at the import boundary.

What is not verified here: real vLLM (needs a CUDA GPU); see benchmarks/gpu_check_generation.py.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from dataclasses import dataclass

import pytest

from generation.backends.base import load_backend
from generation.backends.vllm import mean_nll, sampling_kwargs
from generation.prompts import render_answer_prompt


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_missing_vllm_is_a_clear_error():
    # The back-end's extra is checked before its module is imported (generation/extras.py).
    with pytest.raises(ValueError, match=r"vllm, not installed: pip install 'ambigdocs\[vllm\]'$"):
        load_backend("vllm", "some/model")


def test_sampling_kwargs_are_greedy():
    assert sampling_kwargs(300, False) == {
        "temperature": 0.0, "top_p": 1.0, "max_tokens": 300, "seed": 0,
    }  # fmt: skip
    assert sampling_kwargs(5, True, seed=None)["logprobs"] == 0
    with pytest.raises(ValueError, match="max_new_tokens"):
        sampling_kwargs(0, False)


@dataclass
class _Logprob:
    logprob: float


def test_mean_nll_from_logprob_tables():
    tables = [{5: _Logprob(-1.0), 7: _Logprob(-3.0)}, {9: -2.0}]
    assert mean_nll([5, 9], tables) == pytest.approx(1.5)
    assert mean_nll([5], None) is None
    assert mean_nll([], []) == 0.0
    with pytest.raises(ValueError, match="step 0"):
        mean_nll([6], [{5: _Logprob(-1.0)}])


@pytest.fixture
def fake_vllm(monkeypatch, tiny_chat_llama_dir):
    """A `vllm` stand-in: records the engine arguments and the requests; answers with the
    prompt's token count, so that order and tokenisation are visible."""
    from transformers import AutoTokenizer

    calls = {}
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_chat_llama_dir))

    class SamplingParams:
        def __init__(self, **kw):
            self.kw = kw

    class LLM:
        def __init__(self, **kw):
            calls["engine"] = kw

        def get_tokenizer(self):
            return tokenizer

        def generate(self, inputs, params, lora_request=None):
            calls["inputs"], calls["params"], calls["lora"] = inputs, params.kw, lora_request
            outs = []
            for inp in inputs:
                ids = [1, 2]
                logprobs = [{1: _Logprob(-0.5)}, {2: _Logprob(-1.5)}]
                best = types.SimpleNamespace(
                    text=f"n={len(inp['prompt_token_ids'])}", token_ids=ids, logprobs=logprobs
                )
                outs.append(types.SimpleNamespace(outputs=[best]))
            return outs

    class LoRARequest:
        def __init__(self, name, idx, path):
            self.args = (name, idx, path)

    vllm = types.ModuleType("vllm")
    vllm.LLM, vllm.SamplingParams = LLM, SamplingParams
    lora = types.ModuleType("vllm.lora")
    lora_request = types.ModuleType("vllm.lora.request")
    lora_request.LoRARequest = LoRARequest
    for name, mod in {"vllm": vllm, "vllm.lora": lora, "vllm.lora.request": lora_request}.items():
        monkeypatch.setitem(sys.modules, name, mod)
    return calls, tokenizer


def test_wiring_through_a_stand_in_vllm(fake_vllm, tiny_chat_llama_dir):
    calls, tokenizer = fake_vllm
    backend = load_backend(
        "vllm", str(tiny_chat_llama_dir), adapter="/adapters/a", dtype="bfloat16",
        enforce_eager=True,
    )  # fmt: skip
    assert backend.has_chat_template
    engine = calls["engine"]
    assert engine["dtype"] == "bfloat16" and engine["enable_lora"] is True
    assert engine["enforce_eager"] is True and engine["model"] == str(tiny_chat_llama_dir)
    docs = [{"title": "T", "text": "some text"}]
    chat = render_answer_prompt("Who?", docs, prompt_format="chat")
    plain = render_answer_prompt("Who?", docs)
    gens = backend.generate([plain, chat], max_new_tokens=9, return_scores=True)
    assert calls["params"]["max_tokens"] == 9 and calls["params"]["temperature"] == 0.0
    assert calls["lora"].args == ("adapter", 1, "/adapters/a")
    # The same token ids the hf back-end would read.
    rendered = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    assert (
        calls["inputs"][1]["prompt_token_ids"]
        == tokenizer(rendered, add_special_tokens=False)["input_ids"]
    )
    assert calls["inputs"][0]["prompt_token_ids"] == tokenizer(plain)["input_ids"]
    assert gens[1].text == f"n={len(calls['inputs'][1]['prompt_token_ids'])}"
    assert gens[0].num_tokens == 2 and gens[0].mean_nll == pytest.approx(1.0)
    backend.close()
