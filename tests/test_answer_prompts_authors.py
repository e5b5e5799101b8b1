"""`--prompt-format authors`: the authors' answering strings, byte for byte.

The expected text comes from `tests/authors_qa_reference.py` (the authors' literal exemplar block
and their concatenation), never from `generation.prompts`.
"""

from __future__ import annotations

import json
import random

import authors_qa_reference as ref
import pytest

from generation.documents import select_documents
from generation.prompts import (
    AUTHORS_ANSWER_EXEMPLARS,
    render_answer_input,
    render_answer_prompt,
    render_authors_answer_input,
)

# Characters that break naive escaping or joining: quotes, pipes, newlines, non-ASCII, braces.
TRICKY = ['He said "hi"', "it's", "a | b", "line\nbreak", "Stick\u2013style", "{q}", "  "]


def _docs(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [
        {
            "pid": str(1000 + k),
            "title": f"Entity {k} ({rng.choice(TRICKY)})",
            "text": " ".join(rng.choice(TRICKY + ["word"]) for _ in range(rng.randint(1, 30))),
        }
        for k in range(n)
    ]


@pytest.mark.parametrize("n_docs", range(2, 11))
@pytest.mark.parametrize("few_shot", [False, True])
def test_open_models_get_the_authors_raw_text(n_docs, few_shot):
    docs = _docs(n_docs, seed=n_docs)
    question = f"What is {TRICKY[n_docs % len(TRICKY)]}?"
    for kind in ("hf", "vllm"):
        got = render_answer_input(
            question, docs, prompt_format="authors", few_shot=few_shot, backend_kind=kind
        )
        assert isinstance(got, str)
        assert got.encode() == ref.open_model_prompt(question, docs, few_shot).encode()


@pytest.mark.parametrize("n_docs", range(2, 11))
@pytest.mark.parametrize("few_shot", [False, True])
def test_openai_gets_the_authors_messages(n_docs, few_shot):
    docs = _docs(n_docs, seed=100 + n_docs)
    got = render_answer_input(
        "Q?", docs, prompt_format="authors", few_shot=few_shot, backend_kind="openai"
    )
    expected = ref.gpt_messages("Q?", docs, few_shot)
    assert json.dumps(got, ensure_ascii=False) == json.dumps(expected, ensure_ascii=False)


def test_exemplars_keep_the_scripts_characters():
    block = ref.FEW_PROMPT
    assert "one of Hunt's first works" in block and "\u2019s Treasures" in block
    assert "Stick\u2013style" in block and "\"I don't" in block
    assert block.count("\n\nQuestion: ") == 1  # two exemplars, one blank line between
    assert [ex["question"] for ex in AUTHORS_ANSWER_EXEMPLARS] == [
        "What is the location of the Griswold House?",
        "Who is the playable character in Edna & Harvey?",
    ]


def test_zero_shot_gpt_equals_the_chat_format():
    # The issue found the zero-shot GPT prompts identical; the two formats must stay so.
    docs = _docs(4, seed=7)
    authors = render_answer_input("Q?", docs, prompt_format="authors", backend_kind="openai")
    assert authors == render_answer_prompt("Q?", docs, prompt_format="chat")


def test_user_exemplars_use_the_authors_layout():
    docs = _docs(2, seed=3)
    mine = [{"question": "Q1?", "docs": docs[:1], "answer": "A1."}]
    got = render_authors_answer_input("Q?", docs, few_shot=True, exemplars=mine)
    shots = "Question: Q1?\n" + ref.contexts(docs[:1]) + "Answer: A1.\n"
    assert got == "[INST] " + ref.INSTRUCTION + " [/INST]\n" + shots + "\nQuestion: Q?\n" + (
        ref.contexts(docs) + "Answer:"
    )


def test_every_setting_renders_the_documents_it_selected():
    gold = [{"pid": f"g{k}", "title": f"G{k}", "text": f"gold {k}"} for k in range(7)]
    retrieved = [{"pid": f"r{k}", "title": f"R{k}", "text": f"ret {k}"} for k in range(6)]
    row = {"qid": 5, "question": "Q?", "documents": gold, "retrieved": [gold[0], *retrieved]}
    for setting in ("gold-only", "gold-retrieved", "retrieved-only"):
        docs = select_documents(row, setting, seed=1)
        got = render_answer_input("Q?", docs, prompt_format="authors", backend_kind="hf")
        assert got == ref.open_model_prompt("Q?", docs, False)


def test_unknown_format_or_backend_is_an_error():
    with pytest.raises(ValueError, match="prompt_format"):
        render_answer_input("Q?", [], prompt_format="nope")
    with pytest.raises(ValueError, match="backend_kind"):
        render_answer_input("Q?", [], prompt_format="authors", backend_kind="tgi")


def test_open_models_get_one_bos_from_the_tokenizer():
    # As the authors' `tokenizer([prompt])`: the raw text plus the tokenizer's BOS, no template.
    pytest.importorskip("tokenizers")
    from tiny_models import make_tiny_tokenizer
    from tokenizers.processors import TemplateProcessing

    from generation.backends.hf import encode_prompt

    tok = make_tiny_tokenizer()
    bos = tok.convert_tokens_to_ids("<s>")
    tok.backend_tokenizer.post_processor = TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", bos)]
    )
    docs = _docs(3, seed=1)
    for few_shot in (False, True):
        text = render_answer_input("Q?", docs, prompt_format="authors", few_shot=few_shot)
        ids = encode_prompt(tok, text)
        assert ids[0] == bos and ids.count(bos) == 1
        assert ids[1:] == tok(text, add_special_tokens=False)["input_ids"]
