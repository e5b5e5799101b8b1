"""GPU check for the generation back-ends (a CUDA machine, under 10 minutes, offline).

    python benchmarks/gpu_check_generation.py [--output gpu_generation.json] [--examples 256]

What it does, on a Llama-architecture model of Llama-3.2-1B shape (hidden 2048, 16 layers,
GQA 32/8 heads) with random weights and the tests' small tokenizer (nothing is downloaded):
1. hf back-end, bfloat16: one example at a time (on a subset) against batches of 32 and 64 —
   examples/s and new tokens/s, and whether the greedy outputs agree;
2. hf back-end, float32: batch-size independence of greedy outputs (1 vs 16) on 32 prompts;
3. vllm back-end (if installed): the same prompts, throughput, and agreement with hf;
4. `ambigdocs answer` end to end (hf, batch 32) on 64 examples, twice (the second run resumes
   and must do nothing).
Prints one JSON summary and writes it to --output. Sections that fail are reported, not fatal.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))


def build_model(folder: Path, small: bool = False) -> Path:
    import torch
    from tiny_models import make_tiny_tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = make_tiny_tokenizer(chat_template=False)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64 if small else 2048,
        intermediate_size=128 if small else 8192,
        num_hidden_layers=2 if small else 16,
        num_attention_heads=4 if small else 32,
        num_key_value_heads=2 if small else 8,
        max_position_embeddings=8192,
        rope_theta=500000.0,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def prompts_and_data(n: int, folder: Path):
    from generation.documents import select_documents
    from generation.prompts import render_answer_prompt

    rows = json.loads((REPO / "generation/resources/sample/test.json").read_text())
    data = [{**rows[i % len(rows)], "qid": i} for i in range(n)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test.json").write_text(json.dumps(data))
    prompts = [
        render_answer_prompt(r["question"], select_documents(r, "gold-only", 0)) for r in data
    ]
    return prompts


def timed_generate(backend, prompts, max_new_tokens):
    import torch

    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    sync()
    start = time.perf_counter()
    gens = backend.generate(prompts, max_new_tokens=max_new_tokens)
    sync()
    elapsed = time.perf_counter() - start
    tokens = sum(g.num_tokens or 0 for g in gens)
    return gens, {
        "seconds": round(elapsed, 3),
        "examples_per_s": round(len(prompts) / elapsed, 2),
        "new_tokens_per_s": round(tokens / elapsed, 1),
    }


def section(summary, name, fn):
    start = time.perf_counter()
    try:
        summary[name] = fn()
    except Exception as err:  # report and go on: one broken part must not hide the others
        summary[name] = {
            "error": f"{type(err).__name__}: {err}",
            "trace": traceback.format_exc()[-2000:],
        }
    summary[name]["section_seconds"] = round(time.perf_counter() - start, 1)
    print(name, json.dumps(summary[name])[:800], flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--output", default="gpu_generation.json")
    p.add_argument("--examples", type=int, default=256)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="tiny model, few examples, CPU allowed: checks the script itself, measures nothing",
    )
    args = p.parse_args(argv)

    import torch

    if args.dry_run:
        args.examples, args.max_new_tokens = min(args.examples, 8), min(args.max_new_tokens, 4)
    elif not torch.cuda.is_available():
        print("no CUDA device: this check is for a GPU machine", file=sys.stderr)
        return 2
    from generation.backends.base import load_backend

    summary = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none (dry run)",
        "torch": torch.__version__,
        "model": "random Llama, Llama-3.2-1B shape (2048 hidden, 16 layers, 32/8 heads)",
        "examples": args.examples,
        "max_new_tokens": args.max_new_tokens,
    }
    tmp = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    model = build_model(tmp / "model", small=args.dry_run)
    prompts = prompts_and_data(args.examples, tmp / "data")
    n_one = min(16, len(prompts))
    hf_texts = {}

    def hf_bf16():
        out = {}
        one = load_backend("hf", str(model), batch_size=1, dtype="bfloat16")
        one.generate(prompts[:2], max_new_tokens=4)
        gens1, out["batch_1_on_subset"] = timed_generate(one, prompts[:n_one], args.max_new_tokens)
        one.close()
        for bs in (32, 64):
            b = load_backend("hf", str(model), batch_size=bs, dtype="bfloat16")
            b.generate(prompts[:2], max_new_tokens=4)
            gens, out[f"batch_{bs}"] = timed_generate(b, prompts, args.max_new_tokens)
            hf_texts[bs] = [g.text for g in gens]
            agree = sum(a.text == c.text for a, c in zip(gens1, gens[:n_one], strict=True))
            out[f"batch_{bs}_agrees_with_batch_1"] = f"{agree}/{n_one}"
            b.close()
        out["speedup_batch_64_vs_1"] = round(
            out["batch_64"]["examples_per_s"] / out["batch_1_on_subset"]["examples_per_s"], 2
        )
        return out

    def hf_fp32_independence():
        sub = prompts[:32]
        texts = {}
        for bs in (1, 16):
            b = load_backend("hf", str(model), batch_size=bs, dtype="float32")
            texts[bs] = [g.text for g in b.generate(sub, max_new_tokens=32)]
            b.close()
        same = sum(a == c for a, c in zip(texts[1], texts[16], strict=True))
        return {"float32_batch_1_vs_16_identical": f"{same}/{len(sub)}"}

    def vllm_check():
        import importlib.util

        if importlib.util.find_spec("vllm") is None:
            return {"skipped": "vllm not installed"}
        v = load_backend("vllm", str(model), dtype="bfloat16", gpu_memory_utilization=0.5)
        v.generate(prompts[:2], max_new_tokens=4)
        gens, out = timed_generate(v, prompts, args.max_new_tokens)
        ref = hf_texts.get(64)
        if ref:
            out["agrees_with_hf_bf16"] = (
                f"{sum(a.text == r for a, r in zip(gens, ref, strict=True))}/{len(ref)}"
            )
        v.close()
        return out

    def runner():
        from generation.answering.answer import main as answer_main

        out_file = tmp / "answers.jsonl"
        argv = ["--model", str(model), "--data-dir", str(tmp / "data"), "--split", "test",
                "--setting", "gold-only", "--batch-size", "32", "--max-new-tokens", "32",
                "--limit", "64", "--seed", "0", "--output", str(out_file)]  # fmt: skip
        start = time.perf_counter()
        rc1 = answer_main(argv)
        first = time.perf_counter() - start
        start = time.perf_counter()
        rc2 = answer_main(argv)
        second = time.perf_counter() - start
        n = sum(1 for _ in out_file.open())
        return {
            "rc": [rc1, rc2],
            "rows": n,
            "first_s": round(first, 1),
            "resume_s": round(second, 1),
        }

    section(summary, "hf_bfloat16", hf_bf16)
    section(summary, "hf_float32_batch_independence", hf_fp32_independence)
    section(summary, "vllm_bfloat16", vllm_check)
    section(summary, "answer_runner", runner)
    Path(args.output).write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items()}, indent=1)[:6000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
