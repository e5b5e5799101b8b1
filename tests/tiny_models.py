"""Tiny models and tokenizers built on the spot, so that tests never download anything.

- `make_tiny_tokenizer`: a byte-level BPE tokenizer trained on a few lines (plus the sample's
  text), wrapped as a `PreTrainedTokenizerFast` with bos/eos/pad and, optionally, a chat template.
- `make_tiny_llama`: a randomly initialised Llama-architecture causal LM (2 layers, width 64)
  saved with its tokenizer, loadable by path like any Hub model.
"""

from __future__ import annotations

import json
from pathlib import Path

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

_REPO = Path(__file__).resolve().parents[1]


def _training_lines() -> list[str]:
    lines = [
        "Answer for the given question using only the provided context.",
        "Question: What is the state where Judge Day was born? Context: Answer:",
        "Entity: Passage 1: Passage 2: Answer to Passage 1: Answer to Passage 2:",
        "### Instruction: ### Response: Question:",
        "The quick brown fox jumps over the lazy dog. 0123456789",
    ]
    for row in json.loads((_REPO / "generation/resources/sample/test.json").read_text()):
        lines.append(row["question"])
        lines += [f"{d['title']} | {d['text']} {d['answer']}" for d in row["documents"]]
    return lines


def make_tiny_tokenizer(chat_template: bool = False, vocab_size: int = 400):
    """A small trained byte-level BPE tokenizer (any Unicode text encodes, nothing is unknown)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<pad>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_training_lines(), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    if chat_template:
        fast.chat_template = CHAT_TEMPLATE
    return fast


def make_tiny_llama(path: str | Path, chat_template: bool = False, seed: int = 0) -> Path:
    """Saves a random tiny Llama causal LM and its tokenizer under `path`; returns the path."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    path = Path(path)
    tokenizer = make_tiny_tokenizer(chat_template=chat_template)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
