"""The transformers back-end on the tiny random Llama: batching, order, scores, chat, adapter."""

from __future__ import annotations

import json
import math

import pytest

torch = pytest.importorskip("torch")

from generation.backends.base import Backend, Generation, load_backend  # noqa: E402
from generation.backends.hf import length_sorted_batches, pick_dtype  # noqa: E402
from generation.prompts import render_answer_prompt  # noqa: E402


@pytest.fixture(scope="module")
def prompts(sample_dir):
    rows = json.loads((sample_dir / "test.json").read_text())
    # Different lengths (1..3 documents) so that batches need padding.
    return [
        render_answer_prompt(r["question"], r["documents"][: k + 1]) for r in rows for k in (0, 2)
    ]


def _manual_greedy(model, tokenizer, prompt: str, max_new_tokens: int):
    """Greedy decoding by hand, one token at a time without cache: the reference."""
    ids = tokenizer(prompt)["input_ids"]
    nll = []
    for _ in range(max_new_tokens):
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, -1].float()
        logp = torch.log_softmax(logits, -1)
        nxt = int(logits.argmax())
        nll.append(-float(logp[nxt]))
        ids.append(nxt)
    return ids[-max_new_tokens:], nll


def test_length_sorted_batches_longest_first_and_stable():
    assert length_sorted_batches([3, 5, 3, 9, 1], 2) == [[3, 1], [0, 2], [4]]
    assert length_sorted_batches([], 4) == []
    with pytest.raises(ValueError, match="batch_size"):
        length_sorted_batches([1], 0)


def test_pick_dtype():
    assert pick_dtype("auto", "cpu") == torch.float32
    assert pick_dtype("bfloat16", "cpu") == torch.bfloat16
    with pytest.raises(ValueError, match="dtype"):
        pick_dtype("float8", "cpu")


def test_greedy_outputs_do_not_depend_on_batch_size(tiny_llama_dir, prompts):
    outs = {}
    for bs in (1, 3, len(prompts)):
        backend = load_backend("hf", str(tiny_llama_dir), batch_size=bs)
        assert isinstance(backend, Backend)
        assert backend.dtype == torch.float32 and backend.device == "cpu"
        outs[bs] = backend.generate(prompts, max_new_tokens=12, return_scores=True)
    texts = {bs: [g.text for g in gens] for bs, gens in outs.items()}
    assert texts[1] == texts[3] == texts[len(prompts)]
    for a, b in zip(outs[1], outs[len(prompts)], strict=True):
        assert a.num_tokens == b.num_tokens == 12
        assert a.mean_nll == pytest.approx(b.mean_nll, abs=1e-4)


def test_matches_manual_greedy_and_nll_in_input_order(tiny_llama_dir, prompts):
    backend = load_backend("hf", str(tiny_llama_dir), batch_size=4)
    gens = backend.generate(prompts, max_new_tokens=8, return_scores=True)
    for i in (0, 3, len(prompts) - 1):  # spread over batches: checks the order is restored
        tokens, nll = _manual_greedy(backend.model, backend.tokenizer, prompts[i], 8)
        assert gens[i].text == backend.tokenizer.decode(tokens, skip_special_tokens=True)
        assert gens[i].mean_nll == pytest.approx(sum(nll) / len(nll), abs=1e-4)
        assert gens[i].mean_nll > 0


def test_stops_at_eos_and_scores_exclude_the_padding(tiny_llama_dir, prompts):
    backend = load_backend("hf", str(tiny_llama_dir), batch_size=len(prompts))
    free = backend.generate(prompts, max_new_tokens=10, return_scores=True)
    # Make the 4th token of prompt 0 the EOS: row 0 must stop there while the others go on.
    tokens, nll = _manual_greedy(backend.model, backend.tokenizer, prompts[0], 10)
    eos = tokens[3]
    assert eos not in tokens[:3]
    backend.model.generation_config.eos_token_id = eos
    gens = backend.generate(prompts, max_new_tokens=10, return_scores=True)
    assert gens[0].num_tokens == 4
    assert gens[0].text == backend.tokenizer.decode(tokens[:3])  # the EOS itself is not text
    assert gens[0].mean_nll == pytest.approx(sum(nll[:4]) / 4, abs=1e-4)
    assert gens[0].mean_nll != pytest.approx(free[0].mean_nll, abs=1e-4)
    others = [g for g, f in zip(gens, free, strict=True) if g.num_tokens == 10]
    assert others, "every row hit the chosen EOS; pick another token"


def test_chat_prompts_use_the_template(tiny_chat_llama_dir, tiny_llama_dir):
    chat = render_answer_prompt("Who?", [{"title": "T", "text": "x"}], prompt_format="chat")
    backend = load_backend("hf", str(tiny_chat_llama_dir), batch_size=2)
    assert backend.has_chat_template
    rendered = backend.render(chat)
    assert rendered.startswith("<|system|>\nAnswer for the given question")
    assert rendered.endswith("<|assistant|>\n")
    plain_of_same = backend.generate([rendered], max_new_tokens=5)[0]
    assert backend.generate([chat], max_new_tokens=5)[0].text == plain_of_same.text
    plain_backend = load_backend("hf", str(tiny_llama_dir))
    with pytest.raises(ValueError, match="no chat template"):
        plain_backend.generate([chat], max_new_tokens=2)


def test_adapter_is_applied(tiny_llama_dir, tmp_path, prompts):
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(tiny_llama_dir))
    cfg = peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    torch.manual_seed(1)
    lora = peft.get_peft_model(base, cfg)
    with torch.no_grad():  # make the adapter strong enough to change greedy tokens
        for name, p in lora.named_parameters():
            if "lora_" in name:
                p.mul_(20)
    lora.save_pretrained(tmp_path / "adapter")

    plain = load_backend("hf", str(tiny_llama_dir), batch_size=4)
    adapted = load_backend(
        "hf", str(tiny_llama_dir), batch_size=4, adapter=str(tmp_path / "adapter")
    )
    a = adapted.generate(prompts[:3], max_new_tokens=6, return_scores=True)
    b = plain.generate(prompts[:3], max_new_tokens=6, return_scores=True)
    assert [g.text for g in a] != [g.text for g in b]
    tokens, nll = _manual_greedy(lora.eval(), adapted.tokenizer, prompts[0], 6)
    assert a[0].text == adapted.tokenizer.decode(tokens, skip_special_tokens=True)
    assert math.isclose(a[0].mean_nll, sum(nll) / 6, abs_tol=1e-4)


def test_empty_and_bad_input(tiny_llama_dir):
    backend = load_backend("hf", str(tiny_llama_dir))
    assert backend.generate([], max_new_tokens=3) == []
    with pytest.raises(ValueError, match="prompt 1"):
        backend.generate(["hello", ""], max_new_tokens=3)
    with pytest.raises(ValueError, match="batch_size"):
        load_backend("hf", str(tiny_llama_dir), batch_size=0)
    assert isinstance(backend.generate(["hello"], max_new_tokens=2)[0], Generation)


NO_SYSTEM_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'system' %}"
    "{{ raise_exception('System role not supported') }}{% endif %}"
    "<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def test_template_without_system_role_gets_the_instruction_in_the_user_turn():
    from jinja2.exceptions import TemplateError
    from tiny_models import make_tiny_tokenizer

    from generation.backends.hf import encode_prompt, render_prompt

    tok = make_tiny_tokenizer()
    tok.chat_template = NO_SYSTEM_TEMPLATE
    chat = render_answer_prompt("Who?", [{"title": "T", "text": "x"}], prompt_format="chat")
    assert chat[0]["role"] == "system"  # the case the fallback is for
    with pytest.raises(TemplateError, match="System role not supported"):
        tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    rendered = render_prompt(tok, chat)
    user = next(m["content"] for m in chat if m["role"] == "user")
    assert rendered == f"<|user|>\n{chat[0]['content']}\n{user}\n<|assistant|>\n"
    assert encode_prompt(tok, chat) == tok(rendered, add_special_tokens=False)["input_ids"]
    # Other template errors are not swallowed.
    tok.chat_template = "{{ raise_exception('broken') }}"
    with pytest.raises(TemplateError, match="broken"):
        render_prompt(tok, [{"role": "user", "content": "hi"}])


def test_missing_local_model_adapter_or_tokenizer_is_refused_before_loading(
    tiny_llama_dir, tmp_path, monkeypatch
):
    from transformers import AutoModelForCausalLM

    def no_loading(*args, **kwargs):  # the check must come before any weights are read
        raise AssertionError("from_pretrained was called")

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", no_loading)
    missing = str(tmp_path / "missing")
    with pytest.raises(ValueError, match=r"^model .*missing: no such folder$"):
        load_backend("hf", missing)
    with pytest.raises(ValueError, match=r"^adapter .*missing: no such folder$"):
        load_backend("hf", str(tiny_llama_dir), adapter=missing)
    with pytest.raises(ValueError, match=r"^tokenizer \./nope: no such folder$"):
        load_backend("hf", str(tiny_llama_dir), tokenizer="./nope")
