"""GPU check of `ambigdocs distill`: 4-bit load, a few QLoRA steps in bf16, save, reload, generate.

Runs the real distillation code (`generation.distill.train`) on a Llama-architecture model of a few
hundred million parameters with random weights, built here (no download), on a handful of
synthetic `build filter` records of realistic length, and prints timings and peak memory.
Finishes in well under 10 minutes on one CUDA GPU.

    python benchmarks/gpu_check_distill.py            # CUDA: ~370M-parameter Llama, 20 steps
    python benchmarks/gpu_check_distill.py --smoke    # any machine: tiny model, 2 steps (CPU ok)
    python benchmarks/gpu_check_distill.py --json-out results.json

It checks, and exits non-zero otherwise: the base layers are bitsandbytes 4-bit (NF4), the
loss is finite, training changed the adapter, the adapter reloaded with peft generates the
same tokens as the model in memory, and the hf back-end given only the adapter folder loads the
base in NF4 (the quantisation `ambigdocs distill` recorded there). Whether the back-end's text
equals the trained model's is reported (`backend_same_text`), not required: the back-end keeps
norms in bf16 and upcasts the adapter to float32, where training kept float32 norms and a bf16
adapter.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # tiny_models: the project's offline tokenizer builder

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# hidden, intermediate, layers, heads: about 370M parameters with a 32k vocabulary (Llama-2-like
# shapes, scaled down), or a 2-layer toy for --smoke.
FULL = dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=24, num_attention_heads=16)
SMOKE = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4)


def build_model(path: Path, shape: dict, vocab_size: int) -> int:
    """Saves a random Llama of the given shape with the project's tiny tokenizer; returns #params."""
    import torch
    from tiny_models import make_tiny_tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = make_tiny_tokenizer()
    config = LlamaConfig(
        vocab_size=max(vocab_size, len(tokenizer)),
        num_key_value_heads=shape["num_attention_heads"],
        max_position_embeddings=4096,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **shape,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return sum(p.numel() for p in model.parameters())


def write_records(path: Path, n: int, words: int) -> None:
    """`build filter`-style lines (status ok) with two passages of `words` words each."""
    filler = (
        "the council met in the old town hall and voted on the new budget for the river bridge "
        "which was built in 1904 by a local company and repaired after the flood of 1937 "
    ).split()
    with open(path, "w") as f:
        for i in range(n):
            docs = [
                {"title": f"Entity {i} ({kind})", "text": " ".join((filler * 10)[k : k + words])}
                for k, kind in enumerate(("town", "river"))
            ]
            record = {
                "id": i,
                "status": "ok",
                "surface_name": f"Entity {i} (disambiguation)",
                "documents": docs,
                "question": f"When was Entity {i} built?",
                "answers": ["1904", "1937"],
            }
            f.write(json.dumps(record) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny model, 2 steps (runs on CPU)")
    parser.add_argument("--steps", type=int, default=None, help="training steps (20; smoke: 2)")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--max-length", type=int, default=2048)
    parser.add_argument("--json-out", default=None, help="also write the summary here")
    opts = parser.parse_args(argv)

    import torch

    from generation.backends.base import load_backend
    from generation.distill.args import parse_args
    from generation.distill.train import (
        build_trainer,
        load_base_model,
        quantization_config,
        resolve_compute_dtype,
        train_and_save,
    )

    cuda = torch.cuda.is_available()
    if not cuda and not opts.smoke:
        print("no CUDA device: run with --smoke for the CPU check", file=sys.stderr)
        return 2
    steps = opts.steps or (2 if opts.smoke else 20)
    shape = SMOKE if opts.smoke else FULL
    summary: dict = {
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "torch": torch.__version__,
        "mode": "smoke" if opts.smoke else "full",
        "steps": steps,
    }
    with tempfile.TemporaryDirectory(prefix="gpu-check-distill-") as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        summary["parameters"] = build_model(tmp / "base", shape, 400 if opts.smoke else 32000)
        summary["build_s"] = round(time.perf_counter() - t0, 2)
        write_records(tmp / "filtered.jsonl", n=max(8, opts.batch_size * 2), words=100)

        args, model_args, training_args = parse_args(
            ["--base-model", str(tmp / "base"), "--train", str(tmp / "filtered.jsonl")]
            + ["--output-dir", str(tmp / "adapter"), "--max_steps", str(steps)]
            + ["--per_device_train_batch_size", str(opts.batch_size), "--logging_steps", "1"]
            + ["--max_length", str(opts.max_length), "--save_strategy", "no"]
        )
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        trainer = build_trainer(args, model_args, training_args)
        summary["load_4bit_s"] = round(time.perf_counter() - t0, 2)
        if cuda:
            summary["memory_after_load_gib"] = round(torch.cuda.memory_allocated() / 2**30, 3)
        model = trainer.model
        q_proj = model.base_model.model.model.layers[0].self_attn.q_proj.base_layer
        summary["base_layer"] = type(q_proj).__name__
        summary["quant_type"] = q_proj.weight.quant_state.quant_type
        dtype = resolve_compute_dtype(model_args.dtype)  # build_trainer resolved `auto`
        summary["compute_dtype"] = str(dtype)
        summary["mixed_precision"] = (
            "bf16" if training_args.bf16 else "fp16" if training_args.fp16 else "no"
        )
        lora_before = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_B" in n}

        t0 = time.perf_counter()
        info = train_and_save(trainer, args, model_args, training_args)
        summary["train_s"] = round(time.perf_counter() - t0, 2)
        summary["s_per_step"] = round(summary["train_s"] / steps, 3)
        summary["losses"] = [round(e["loss"], 4) for e in info["loss_history"]]
        summary["train_examples"] = info["train_examples"]
        if cuda:
            summary["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 3)
        after = dict(model.named_parameters())
        summary["adapter_changed"] = any(
            not torch.equal(after[n].detach(), b) for n, b in lora_before.items()
        )
        summary["adapter_mib"] = round(
            (tmp / "adapter" / "adapter_model.safetensors").stat().st_size / 2**20, 2
        )

        from peft import PeftModel

        model.eval()
        tokenizer = trainer.processing_class
        prompt = "### Instruction:\nEntity: X\n### Response:\nQuestion: "
        ids = tokenizer(prompt, return_tensors="pt").to(model.device)
        gen = dict(max_new_tokens=16, do_sample=False, pad_token_id=tokenizer.pad_token_id)
        with torch.no_grad():
            expected = model.generate(**ids, **gen)[0].tolist()
        del trainer, model, after, lora_before, q_proj  # free the trained copy before reloading
        if cuda:
            torch.cuda.empty_cache()
        t0 = time.perf_counter()
        base = load_base_model(model_args, dtype, quantization_config(model_args, dtype))
        reloaded = PeftModel.from_pretrained(
            base, str(tmp / "adapter"), autocast_adapter_dtype=False
        ).eval()
        summary["reload_s"] = round(time.perf_counter() - t0, 2)
        with torch.no_grad():
            summary["reload_same_tokens"] = reloaded.generate(**ids, **gen)[0].tolist() == expected
        del reloaded, base
        if cuda:
            torch.cuda.empty_cache()
        # The hf back-end reads the quantisation from the adapter folder. Its norms and adapter
        # dtypes differ from training's (bf16 base, float32 adapter), so same tokens are reported,
        # not required.
        backend = load_backend("hf", str(tmp / "base"), adapter=str(tmp / "adapter"))
        layers = [m for m in backend.model.modules() if type(m).__name__ == "Linear4bit"]
        summary["backend_quant_type"] = layers[0].weight.quant_state.quant_type if layers else None
        new_tokens = expected[ids["input_ids"].shape[1] :]
        if tokenizer.eos_token_id in new_tokens:
            new_tokens = new_tokens[: new_tokens.index(tokenizer.eos_token_id)]
        text = backend.generate([prompt], max_new_tokens=16)[0].text
        summary["backend_same_text"] = text == tokenizer.decode(
            new_tokens, skip_special_tokens=True
        )
        backend.close()

    ok = (
        summary["base_layer"] == "Linear4bit"
        and summary["quant_type"] == "nf4"
        and all(map(lambda x: x == x and abs(x) != float("inf"), summary["losses"]))
        and summary["adapter_changed"]
        and summary["reload_same_tokens"]
        and summary["backend_quant_type"] == "nf4"
    )
    summary["ok"] = ok
    print(json.dumps(summary, indent=2))
    if opts.json_out:
        Path(opts.json_out).write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
