"""CPU benchmark: batched greedy generation (the hf back-end) against one example at a time (the
authors' loop), on a tiny random Llama and the paper's sample questions in the gold-only setting.

    .venv/bin/python benchmarks/bench_generation.py [--examples 32] [--batch-size 16]
        [--max-new-tokens 32] [--hidden-size 64] [--layers 2] [--threads 1]

Prints the throughput of both (examples/s, new tokens/s), their ratio, and whether the greedy
outputs are identical (they must be; the script exits 1 otherwise). Both runs use the same
back-end code; only the batch size differs, so the ratio is the gain of batching alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))


def make_model(folder: Path, hidden: int, layers: int) -> Path:
    import torch
    from tiny_models import make_tiny_tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = make_tiny_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def make_prompts(n: int) -> list[str]:
    from generation.documents import select_documents
    from generation.prompts import render_answer_prompt

    rows = json.loads((REPO / "generation/resources/sample/test.json").read_text())
    prompts = []
    for i in range(n):
        row = {**rows[i % len(rows)], "qid": i}
        docs = select_documents(row, "gold-only", seed=0)
        prompts.append(render_answer_prompt(row["question"], docs))
    return prompts


def timed(backend, prompts, max_new_tokens):
    start = time.perf_counter()
    gens = backend.generate(prompts, max_new_tokens=max_new_tokens)
    return gens, time.perf_counter() - start


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--examples", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--hidden-size", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (shared machines)")
    args = p.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from generation.backends.base import load_backend

    prompts = make_prompts(args.examples)
    with tempfile.TemporaryDirectory() as tmp:
        model = make_model(Path(tmp) / "model", args.hidden_size, args.layers)
        one = load_backend("hf", str(model), batch_size=1)
        batched = load_backend("hf", str(model), batch_size=args.batch_size)
        one.generate(prompts[:2], max_new_tokens=2)  # warm-up (allocations, kernels)
        batched.generate(prompts[:2], max_new_tokens=2)
        gens_one, t_one = timed(one, prompts, args.max_new_tokens)
        gens_b, t_b = timed(batched, prompts, args.max_new_tokens)

    tokens = sum(g.num_tokens for g in gens_one)
    identical = [g.text for g in gens_one] == [g.text for g in gens_b]
    print(
        f"model: random Llama hidden={args.hidden_size} layers={args.layers} float32 CPU, "
        f"{torch.get_num_threads()} thread(s); {args.examples} gold-only prompts, "
        f"{args.max_new_tokens} new tokens each"
    )
    for name, t in (("one at a time", t_one), (f"batched (batch {args.batch_size})", t_b)):
        print(
            f"{name:>22}: {t:7.2f}s  {args.examples / t:7.2f} examples/s  {tokens / t:8.1f} tokens/s"
        )
    print(f"{'speed-up':>22}: {t_one / t_b:.2f}x")
    print(f"{'identical outputs':>22}: {identical}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
