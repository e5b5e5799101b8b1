"""A distilled adapter plugs into the hf back-end (`ambigdocs build questions --backend hf
--model BASE --adapter DIR`), which reads the instruction-format prompt of the `questions` stage.

With a plain LoRA adapter the hf back-end loads the base model unquantised (float32 on CPU) and
must generate exactly what the trainer's in-memory model generates. With a QLoRA adapter it
loads the base with the quantisation settings `ambigdocs distill` recorded in the adapter folder
(here non-default ones: double quantisation, fp4) and must then generate exactly what the
trainer's in-memory 4-bit model generates; `quantization="none"` loads it unquantised.
"""

from __future__ import annotations

import json

import pytest
from build_fakes import sample_filter_records

from generation.backends.base import load_backend
from generation.distill.args import parse_args
from generation.prompts import render_question_prompt

MAX_NEW = 16


@pytest.fixture(scope="module")
def data(tmp_path_factory, sample_dir):
    records = sample_filter_records(sample_dir)
    path = tmp_path_factory.mktemp("distill-hf") / "filtered.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    prompts = [
        render_question_prompt(r["surface_name"], r["documents"], prompt_format="instruction")
        for r in records[:2]
    ]
    return path, prompts


def _greedy_text(model, tokenizer, prompt: str) -> tuple[str, int]:
    """What the back-end reports: text up to EOS (special tokens dropped) and the token count."""
    import torch

    ids = tokenizer(prompt, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(
            **ids, max_new_tokens=MAX_NEW, do_sample=False, pad_token_id=tokenizer.pad_token_id
        )
    tokens = out[0, ids["input_ids"].shape[1] :].tolist()
    n = len(tokens)
    if tokenizer.eos_token_id in tokens:
        n = tokens.index(tokenizer.eos_token_id) + 1
    return tokenizer.decode(tokens[:n], skip_special_tokens=True), n


def test_hf_backend_with_the_adapter_generates_what_the_trained_model_generates(
    tiny_llama_dir, data, tmp_path
):
    from generation.distill.train import build_trainer, train_and_save

    path, prompts = data
    args, model_args, training_args = parse_args(
        ["--base-model", str(tiny_llama_dir), "--train", str(path), "--output-dir", str(tmp_path)]
        + ["--load_in_4bit", "false", "--dtype", "float32", "--lora_dropout", "0.0"]
        + ["--max_steps", "4", "--learning_rate", "1e-2", "--warmup_steps", "0"]
        + ["--per_device_train_batch_size", "5", "--max_length", "512", "--save_strategy", "no"]
    )
    trainer = build_trainer(args, model_args, training_args)
    train_and_save(trainer, args, model_args, training_args)
    model, tokenizer = trainer.model.eval(), trainer.processing_class
    expected = [_greedy_text(model, tokenizer, p) for p in prompts]

    backend = load_backend("hf", str(tiny_llama_dir), adapter=str(tmp_path), device="cpu")
    got = backend.generate(prompts, max_new_tokens=MAX_NEW)
    assert [(g.text, g.num_tokens) for g in got] == expected
    backend.close()

    # the adapter is what makes the difference
    bare = load_backend("hf", str(tiny_llama_dir), device="cpu")
    assert [g.text for g in bare.generate(prompts, max_new_tokens=MAX_NEW)] != [
        t for t, _ in expected
    ]
    bare.close()


def test_hf_backend_runs_a_qlora_adapter_on_the_quantisation_it_was_trained_with(
    tiny_llama_dir, data, tmp_path
):
    from trl import get_quantization_config

    from generation.backends.loading import BASE_QUANTIZATION_FILE
    from generation.distill.train import build_trainer, train_and_save

    path, prompts = data
    args, model_args, training_args = parse_args(
        ["--base-model", str(tiny_llama_dir), "--train", str(path), "--output-dir", str(tmp_path)]
        + ["--load_in_4bit", "true", "--dtype", "float32", "--lora_dropout", "0.0"]
        + ["--use_bnb_nested_quant", "true", "--bnb_4bit_quant_type", "fp4"]
        + ["--max_steps", "4", "--learning_rate", "1e-2", "--warmup_steps", "0", "--lora_r", "8"]
        + ["--per_device_train_batch_size", "5", "--max_length", "512", "--save_strategy", "no"]
    )
    trainer = build_trainer(args, model_args, training_args)
    train_and_save(trainer, args, model_args, training_args)
    model, tokenizer = trainer.model.eval(), trainer.processing_class
    expected = [_greedy_text(model, tokenizer, p) for p in prompts]

    # the adapter folder records trl's BitsAndBytesConfig for these options
    saved = json.loads((tmp_path / BASE_QUANTIZATION_FILE).read_text())
    assert saved == get_quantization_config(model_args).to_dict()
    assert (saved["bnb_4bit_use_double_quant"], saved["bnb_4bit_quant_type"]) == (True, "fp4")
    assert saved["bnb_4bit_compute_dtype"] == "float32"

    backend = load_backend("hf", str(tiny_llama_dir), adapter=str(tmp_path), device="cpu")
    assert type(backend.model).__name__.startswith("Peft")
    layers = [m for m in backend.model.modules() if type(m).__name__ == "Linear4bit"]
    assert layers
    state = layers[0].weight.quant_state
    assert state.quant_type == "fp4" and state.nested  # read from the folder, not a default
    got = backend.generate(prompts, max_new_tokens=MAX_NEW)
    assert [(g.text, g.num_tokens) for g in got] == expected
    backend.close()

    full = load_backend(
        "hf", str(tiny_llama_dir), adapter=str(tmp_path), device="cpu", quantization="none"
    )
    assert not any(type(m).__name__ == "Linear4bit" for m in full.model.modules())
    full.close()


def test_hf_backend_quantization_option_errors(tiny_llama_dir, tmp_path):
    with pytest.raises(ValueError, match="quantization must be one of"):
        load_backend("hf", str(tiny_llama_dir), quantization="4bit")
    # a plain LoRA adapter (or none) records no quantisation: `adapter` asks for one
    with pytest.raises(ValueError, match="records no base quantisation"):
        load_backend("hf", str(tiny_llama_dir), adapter=str(tmp_path), quantization="adapter")


def test_an_8bit_adapter_runs_on_an_8bit_base(tiny_llama_dir, data, tmp_path):
    """trl's `--load_in_8bit` goes through the same record: the back-end loads int8 layers."""
    from generation.distill.train import build_trainer, train_and_save

    path, prompts = data
    args, model_args, training_args = parse_args(
        ["--base-model", str(tiny_llama_dir), "--train", str(path), "--output-dir", str(tmp_path)]
        + ["--load_in_4bit", "false", "--load_in_8bit", "true", "--lora_r", "4"]
        + ["--max_steps", "1", "--warmup_steps", "0", "--max_length", "512"]
        + ["--per_device_train_batch_size", "5", "--save_strategy", "no"]
    )
    trainer = build_trainer(args, model_args, training_args)
    info = train_and_save(trainer, args, model_args, training_args)
    assert info["quantization"]["load_in_8bit"] is True
    backend = load_backend("hf", str(tiny_llama_dir), adapter=str(tmp_path), device="cpu")
    kinds = {type(m).__name__ for m in backend.model.modules()}
    assert "Linear8bitLt" in kinds and "Linear4bit" not in kinds
    assert backend.generate(prompts[:1], max_new_tokens=4)[0].num_tokens > 0
    backend.close()
