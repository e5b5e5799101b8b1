"""`ambigdocs distill`: data preparation, arguments, and real (4-bit QLoRA) training on CPU.

The training tests run a few optimizer steps of the real path (bitsandbytes NF4 base weights,
paged AdamW 32-bit, peft LoRA on q/k/v/o, trl SFTTrainer) on the random tiny Llama of
`tests/tiny_models.py`, with a handful of records made from the bundled sample.
"""

from __future__ import annotations

import json
from pathlib import Path

import authors_reference as ref
import pytest

from generation.distill.args import PAPER_MODEL_DEFAULTS, PAPER_TRAINING_DEFAULTS, parse_args
from generation.distill.data import (
    drop_too_long,
    select_ok_records,
    to_prompt_completion,
    tokenize_example,
)
from generation.prompts import render_question_prompt

TARGETS = {"q_proj", "k_proj", "v_proj", "o_proj"}


def _filter_records(sample_dir: Path) -> list[dict]:
    """`build filter`-style lines: the sample's rows as seed pairs with two answers, plus rejects."""
    rows = json.loads((sample_dir / "test.json").read_text())
    records = []
    for row in rows:
        docs = row["documents"][:2]
        records.append(
            {
                "id": row["qid"],
                "status": "ok",
                "surface_name": row["ambiguous_entity"] + " (disambiguation)",
                "documents": [
                    {"title": d["title"], "text": d["text"], "pid": d["pid"]} for d in docs
                ],
                "question": row["question"],
                "answers": [d["answer"] for d in docs],
            }
        )
    records.insert(1, {**records[0], "id": 99, "status": "not_ambiguous"})
    records.append({"id": 100, "status": "not_formatted", "raw": "garbage"})
    return records


@pytest.fixture(scope="module")
def filter_file(tmp_path_factory, sample_dir) -> Path:
    path = tmp_path_factory.mktemp("distill-data") / "filtered.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _filter_records(sample_dir)))
    return path


@pytest.fixture(scope="module")
def tokenizer(tiny_llama_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_llama_dir)


# --- data ------------------------------------------------------------------------------------


def test_only_status_ok_records_are_used(sample_dir):
    records = _filter_records(sample_dir)
    kept = select_ok_records(records)
    assert [r["id"] for r in kept] == [r["id"] for r in records if r["status"] == "ok"]
    assert len(kept) == 5


def test_bad_records_name_the_record_and_field(sample_dir):
    records = _filter_records(sample_dir)
    no_status = [dict(records[0]), {k: v for k, v in records[2].items() if k != "status"}]
    with pytest.raises(ValueError, match=r"record 1 .*'status'"):
        select_ok_records(no_status)
    bad = [dict(r) for r in records]
    bad[3]["answers"] = ["only one"]
    with pytest.raises(ValueError, match=r"record 3: field 'answers'"):
        select_ok_records(bad)
    bad = [dict(r) for r in records]
    bad[4]["documents"] = [{"title": "T"}, {"title": "U", "text": "x"}]
    with pytest.raises(ValueError, match=r"record 4: field 'documents\[0\].text'"):
        select_ok_records(bad)
    with pytest.raises(ValueError, match="no record has status 'ok'"):
        select_ok_records([r for r in records if r["status"] != "ok"])


def test_training_text_is_the_generation_prompt_plus_target(sample_dir):
    record = select_ok_records(_filter_records(sample_dir))[0]
    (row,) = to_prompt_completion([record])
    docs = [{"title": d["title"], "text": d["text"]} for d in record["documents"]]
    # the exact prompt the `questions` stage sends to a distilled model
    # the exact prompt of the authors' Llama script (an independent reference)
    assert row["prompt"] == ref.llama_prompt(record["surface_name"], docs)
    assert row["prompt"].startswith("### Instruction:\n")
    assert "Entity: Judge Day\n" in row["prompt"]  # `(disambiguation)` dropped
    assert row["prompt"].endswith("### Response:\nQuestion: ")
    assert row["completion"] == (
        "What is the state where Judge Day was born?\n"
        "Answer to Passage 1: Alabama\nAnswer to Passage 2: Rhode Island"
    )


def test_tokenization_matches_generation_time_prompt(tokenizer):
    prompt, completion = "### Response:\nQuestion: ", "Who?\nAnswer to Passage 1: A"
    ex = tokenize_example(prompt, completion, tokenizer)
    n_prompt = len(tokenizer(prompt)["input_ids"])
    # the prompt's tokens are exactly those a generation back-end feeds the model
    assert ex["input_ids"][:n_prompt] == tokenizer(prompt)["input_ids"]
    assert ex["completion_mask"] == [0] * n_prompt + [1] * (len(ex["input_ids"]) - n_prompt)
    assert ex["input_ids"][-1] == tokenizer.eos_token_id
    assert tokenizer.decode(ex["input_ids"][n_prompt:-1]) == completion


def test_overlong_examples_are_dropped_not_truncated(tokenizer, sample_dir):
    rows = to_prompt_completion(select_ok_records(_filter_records(sample_dir)))
    lengths = [
        len(tokenize_example(r["prompt"], r["completion"], tokenizer)["input_ids"]) for r in rows
    ]
    limit = sorted(lengths)[2]
    kept = drop_too_long(rows, tokenizer, limit)
    assert kept == [r for r, n in zip(rows, lengths, strict=True) if n <= limit]
    assert drop_too_long(rows, tokenizer, None) == rows
    with pytest.raises(ValueError, match="max_length"):
        drop_too_long(rows, tokenizer, min(lengths) - 1)


# --- arguments -------------------------------------------------------------------------------

REQUIRED = ["--base-model", "M", "--train", "t.jsonl", "--output-dir", "out"]


def test_defaults_are_the_papers():
    args, model, training = parse_args(REQUIRED)
    assert model.model_name_or_path == "M"  # --base-model is an alias of trl's option
    assert (model.load_in_4bit, model.load_in_8bit, model.use_peft) == (True, False, True)
    assert (model.bnb_4bit_quant_type, model.use_bnb_nested_quant, model.dtype) == (
        "nf4",
        False,
        "auto",
    )
    assert (model.lora_r, model.lora_alpha, model.lora_dropout) == (64, 16, 0.1)
    assert set(model.lora_target_modules) == TARGETS
    assert (args.preset, args.tokenization) == ("paper", "inference")
    assert training.num_train_epochs == 5
    assert training.learning_rate == 2e-4
    assert training.lr_scheduler_type == "linear"
    assert training.warmup_steps == 0.03
    assert training.optim == "paged_adamw_32bit"
    assert training.max_length == 4096
    assert training.report_to in ([], "none", ["none"])
    assert training.output_dir == "out"


def test_every_training_argument_is_settable_from_the_command_line():
    args, model, training = parse_args(
        REQUIRED
        + [
            "--max_steps",
            "4",
            "--learning_rate",
            "1e-3",
            "--lora_r",
            "8",
            "--report_to",
            "tensorboard",
        ]
        + ["--load_in_4bit", "false", "--gradient_accumulation_steps", "3"]
    )
    assert training.max_steps == 4 and training.learning_rate == 1e-3
    assert training.gradient_accumulation_steps == 3
    assert training.report_to == ["tensorboard"]
    assert model.lora_r == 8 and model.load_in_4bit is False
    # usage errors are one-line ValueErrors (main prints them and exits 2), never SystemExit
    with pytest.raises(ValueError, match="bnb_4bit_quant_type"):
        parse_args(REQUIRED + ["--bnb_4bit_quant_type", "nf8"])
    with pytest.raises(ValueError, match="--no_such_option"):
        parse_args(REQUIRED + ["--no_such_option", "1"])


def test_yaml_config_and_command_line_override(tmp_path, repo_root):
    shipped, shipped_model, training = parse_args(
        REQUIRED + ["--config", str(repo_root / "configs/distill.yaml")]
    )
    defaults, default_model, default_training = parse_args(REQUIRED)
    assert shipped == defaults and shipped_model == default_model
    for name in PAPER_MODEL_DEFAULTS:
        assert getattr(shipped_model, name) == PAPER_MODEL_DEFAULTS[name], name
    for name in PAPER_TRAINING_DEFAULTS:
        assert getattr(training, name) == getattr(default_training, name), name

    config = tmp_path / "c.yaml"
    config.write_text("lora_r: 16\nlearning_rate: 1.0e-3\nmax_steps: 7\noutput_dir: from_yaml\n")
    args, model, training = parse_args(
        ["--base-model", "M", "--train", "t", "--config", str(config)]
    )
    assert (model.lora_r, training.learning_rate, training.max_steps) == (16, 1e-3, 7)
    assert training.output_dir == "from_yaml"
    args, model, training = parse_args(
        ["--base-model", "M", "--train", "t", "--config", str(config), "--max_steps", "2"]
    )
    assert training.max_steps == 2 and model.lora_r == 16


def test_argument_errors():
    with pytest.raises(ValueError, match="output_dir"):
        parse_args(["--base-model", "M", "--train", "t"])
    with pytest.raises(ValueError, match="needs an --eval file"):
        parse_args(REQUIRED + ["--eval_strategy", "steps"])


# --- training (real QLoRA on CPU) ------------------------------------------------------------


def _lora_tensors(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(path / "adapter_model.safetensors"))


@pytest.fixture(scope="module")
def trained(tiny_llama_dir, filter_file, tmp_path_factory):
    """4-bit QLoRA for 6 steps on one repeated batch, keeping the trainer's in-memory model."""
    import torch

    from generation.distill.train import build_trainer, train_and_save

    out = tmp_path_factory.mktemp("qlora")
    args, model_args, training_args = parse_args(
        ["--base-model", str(tiny_llama_dir), "--train", str(filter_file), "--output-dir", str(out)]
        + ["--max_steps", "6", "--learning_rate", "1e-2", "--warmup_steps", "0"]
        + ["--per_device_train_batch_size", "5", "--logging_steps", "1", "--max_length", "512"]
        + ["--save_strategy", "no", "--lora_dropout", "0.0", "--seed", "0"]
    )
    trainer = build_trainer(args, model_args, training_args)
    peft_model = trainer.model
    base = {
        name: p.detach().clone() for name, p in peft_model.named_parameters() if "lora_" not in name
    }
    lora_before = {
        name: p.detach().clone() for name, p in peft_model.named_parameters() if "lora_" in name
    }
    info = train_and_save(trainer, args, model_args, training_args)
    peft_model.eval()
    return {
        "args": args,
        "model_args": model_args,
        "out": out,
        "info": info,
        "model": peft_model,
        "tokenizer": trainer.processing_class,
        "base_before": base,
        "lora_before": lora_before,
        "torch": torch,
    }


def test_qlora_loads_4bit_nf4_weights(trained):
    import bitsandbytes as bnb

    q_proj = trained["model"].base_model.model.model.layers[0].self_attn.q_proj
    assert isinstance(q_proj.base_layer, bnb.nn.Linear4bit)
    assert q_proj.base_layer.weight.quant_state.quant_type == "nf4"


def test_loss_goes_down(trained):
    losses = [e["loss"] for e in trained["info"]["loss_history"]]
    assert len(losses) == 6
    assert losses[-1] < losses[0] - 0.1, losses


def test_base_weights_unchanged_adapter_weights_changed(trained):
    torch = trained["torch"]
    after = dict(trained["model"].named_parameters())
    for name, before in trained["base_before"].items():
        assert torch.equal(after[name].detach(), before), name  # 4-bit packed and fp32 weights
    assert any("weight" in n and after[n].dtype == torch.uint8 for n in trained["base_before"])
    changed = [
        n for n, b in trained["lora_before"].items() if not torch.equal(after[n].detach(), b)
    ]
    assert len(changed) == len(trained["lora_before"]) > 0
    saved = _lora_tensors(trained["out"])
    lora_b = [t for n, t in saved.items() if "lora_B" in n]
    assert lora_b and all(t.abs().max() > 0 for t in lora_b)  # lora_B starts at zero


def _generate(model, tokenizer, prompt, n=12):
    torch = __import__("torch")
    ids = tokenizer(prompt, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(
            **ids, max_new_tokens=n, do_sample=False, pad_token_id=tokenizer.pad_token_id
        )
    return out[0, ids["input_ids"].shape[1] :].tolist()


def _instruction_prompt(sample_dir):
    record = select_ok_records(_filter_records(sample_dir))[2]
    return render_question_prompt(
        record["surface_name"], record["documents"], prompt_format="instruction"
    )


def test_saved_adapter_reloads_and_generates_the_same_tokens(trained, sample_dir):
    from peft import PeftModel

    from generation.distill.train import (
        load_base_model,
        quantization_config,
        resolve_compute_dtype,
    )

    torch = trained["torch"]
    model_args = trained["model_args"]
    prompt = _instruction_prompt(sample_dir)
    in_memory = _generate(trained["model"], trained["tokenizer"], prompt)

    dtype = resolve_compute_dtype(model_args.dtype)
    quantization = quantization_config(model_args, dtype)
    assert quantization.load_in_4bit and quantization.bnb_4bit_compute_dtype == dtype
    ids = trained["tokenizer"](prompt, return_tensors="pt")
    with torch.no_grad():
        expected = trained["model"](**ids).logits

    # As saved (trl keeps QLoRA adapters in bf16): the very same computation.
    exact = PeftModel.from_pretrained(
        load_base_model(model_args, dtype, quantization),
        str(trained["out"]),
        autocast_adapter_dtype=False,
    ).eval()
    assert _generate(exact, trained["tokenizer"], prompt) == in_memory
    with torch.no_grad():
        assert torch.equal(exact(**ids).logits, expected)

    # peft's default load (adapter upcast to float32, what a generation back-end gets): the same
    # tokens, logits equal up to bf16 rounding of the LoRA product.
    reloaded = PeftModel.from_pretrained(
        load_base_model(model_args, dtype, quantization), str(trained["out"])
    ).eval()
    assert _generate(reloaded, trained["tokenizer"], prompt) == in_memory
    with torch.no_grad():
        assert torch.allclose(reloaded(**ids).logits, expected, atol=1e-2)
        # and the adapter matters: the bare base model computes something else
        with reloaded.disable_adapter():
            assert not torch.allclose(reloaded(**ids).logits, expected, atol=1e-2)


# --- the command line, exactly as the acceptance check runs it ---------------------------------


def test_cli_distill_writes_a_peft_adapter_with_the_papers_settings(
    tiny_llama_dir, filter_file, tmp_path
):
    import torch
    from peft import PeftConfig, PeftModel
    from transformers import AutoModelForCausalLM

    from generation.cli import main

    out = tmp_path / "adapter"
    rc = main(
        ["distill", "--base-model", str(tiny_llama_dir), "--train", str(filter_file)]
        + ["--output-dir", str(out), "--max_steps", "2", "--max_length", "512"]
        + ["--per_device_train_batch_size", "2", "--save_strategy", "no"]
    )
    assert rc == 0
    config = json.loads((out / "adapter_config.json").read_text())
    assert (config["r"], config["lora_alpha"], config["lora_dropout"]) == (64, 16, 0.1)
    assert set(config["target_modules"]) == TARGETS
    assert config["peft_type"] == "LORA" and config["task_type"] == "CAUSAL_LM"
    info = json.loads((out / "ambigdocs_distill.json").read_text())
    assert info["global_step"] == 2 and info["train_examples"] == 5
    assert info["quantization"]["load_in_4bit"] is True
    assert info["quantization"]["bnb_4bit_quant_type"] == "nf4"
    saved = _lora_tensors(out)
    assert any("lora_B" in n and t.abs().max() > 0 for n, t in saved.items())  # training changed it

    assert PeftConfig.from_pretrained(str(out)).r == 64
    base = AutoModelForCausalLM.from_pretrained(tiny_llama_dir)
    model = PeftModel.from_pretrained(base, str(out))
    loaded = {n: p for n, p in model.named_parameters() if "lora_B" in n}
    assert loaded and any(p.abs().max() > 0 for p in loaded.values())
    assert all(torch.isfinite(p).all() for p in loaded.values())


def test_cli_reports_bad_input(tiny_llama_dir, tmp_path, capsys):
    from generation.cli import main

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"status": "ok", "surface_name": "X", "question": "q?"}) + "\n")
    rc = main(
        ["distill", "--base-model", str(tiny_llama_dir), "--train", str(bad)]
        + ["--output-dir", str(tmp_path / "o"), "--max_steps", "1"]
    )
    assert rc == 2
    assert "record 0: field 'documents'" in capsys.readouterr().err


def test_plain_lora_with_trl_tokenization_and_an_eval_split(tiny_llama_dir, filter_file, tmp_path):
    """--quantization none, trl's prompt-completion tokenisation, and --eval give eval metrics."""
    from generation.cli import main

    out = tmp_path / "lora"
    rc = main(
        ["distill", "--base-model", str(tiny_llama_dir), "--train", str(filter_file)]
        + ["--eval", str(filter_file), "--output-dir", str(out), "--load_in_4bit", "false"]
        + ["--tokenization", "trl", "--max_steps", "2", "--max_length", "512"]
        + ["--per_device_train_batch_size", "5", "--save_strategy", "no", "--lora_r", "4"]
    )
    assert rc == 0
    info = json.loads((out / "ambigdocs_distill.json").read_text())
    assert info["quantization"] is None and info["tokenization"] == "trl"
    assert info["metrics"]["eval_loss"] > 0
    assert json.loads((out / "adapter_config.json").read_text())["r"] == 4
    saved = _lora_tensors(out)
    assert any("lora_B" in n and t.abs().max() > 0 for n, t in saved.items())


# --- precision ---------------------------------------------------------------------------------


def test_compute_dtype_auto_on_this_cpu(monkeypatch, caplog):
    import torch

    from generation.distill import train as distill

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    # bitsandbytes 0.50 runs bf16 4-bit forward/backward on x86-64: the paper's bf16 stays
    assert distill._bf16_runs_on_cpu() is True
    assert distill.resolve_compute_dtype("auto") == torch.bfloat16
    assert distill.resolve_compute_dtype("float32") == torch.float32
    monkeypatch.setattr(distill, "_bf16_runs_on_cpu", lambda: False)
    with caplog.at_level("WARNING"):
        assert distill.resolve_compute_dtype("auto") == torch.float32
    assert "float32" in caplog.text


def test_mixed_precision_follows_compute_dtype_on_cuda_only(monkeypatch):
    import torch

    from generation.distill.train import _apply_mixed_precision

    (_, _, training), (_, _, training_fp16) = parse_args(REQUIRED), parse_args(REQUIRED)
    _apply_mixed_precision(training, torch.bfloat16)  # no CUDA here: nothing changes
    assert (training.bf16, training.fp16, training.mixed_precision) == (False, False, "no")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # after parsing: no device setup
    _apply_mixed_precision(training, torch.bfloat16)
    assert (training.bf16, training.fp16, training.mixed_precision) == (True, False, "bf16")
    training = training_fp16
    _apply_mixed_precision(training, torch.float16)
    assert (training.bf16, training.fp16, training.mixed_precision) == (False, True, "fp16")


@pytest.mark.parametrize(
    "argv, yaml_text",
    [
        (["--bf16", "false"], None),
        (["--bf16=False"], None),
        (["--fp16", "false"], None),
        ([], "bf16: false\n"),
    ],
)
def test_explicit_no_mixed_precision_is_kept_on_cuda(monkeypatch, tmp_path, argv, yaml_text):
    import torch

    from generation.distill.train import _apply_mixed_precision

    if yaml_text is not None:
        (tmp_path / "c.yaml").write_text(yaml_text)
        argv = ["--config", str(tmp_path / "c.yaml")]
    args, _, training = parse_args(REQUIRED + argv)
    auto_args, _, auto_training = parse_args(REQUIRED)  # neither flag given
    assert (args.mixed_precision_set, auto_args.mixed_precision_set) == (True, False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # after parsing: no device setup
    _apply_mixed_precision(training, torch.bfloat16, args.mixed_precision_set)
    assert (training.bf16, training.fp16, training.mixed_precision) == (False, False, "no")
    # Without the flags, the automatic choice applies.
    _apply_mixed_precision(auto_training, torch.bfloat16, auto_args.mixed_precision_set)
    assert (auto_training.bf16, auto_training.mixed_precision) == (True, "bf16")


def test_loss_is_on_the_completion_tokens_only(
    tiny_llama_dir, filter_file, sample_dir, tmp_path, tokenizer
):
    """One batch of the real trainer: labels -100 on the prompt, the input ids on the target."""
    from generation.distill.train import build_trainer

    args, model_args, training_args = parse_args(
        ["--base-model", str(tiny_llama_dir), "--train", str(filter_file)]
        + ["--output-dir", str(tmp_path / "o"), "--load_in_4bit", "false", "--max_steps", "1"]
        + ["--max_length", "512", "--per_device_train_batch_size", "2", "--save_strategy", "no"]
    )
    trainer = build_trainer(args, model_args, training_args)
    batch = next(iter(trainer.get_train_dataloader()))
    rows = to_prompt_completion(select_ok_records(_filter_records(sample_dir)))
    expected = [tokenize_example(r["prompt"], r["completion"], tokenizer) for r in rows]
    assert len(batch["input_ids"]) == 2
    columns = (batch["input_ids"], batch["labels"], batch["attention_mask"])
    for ids, labels, mask in zip(*columns, strict=True):
        n = int(mask.sum())
        ids, labels = ids.tolist(), labels.tolist()
        (example,) = [e for e in expected if e["input_ids"] == ids[:n]]
        n_prompt = example["completion_mask"].index(1)
        assert 0 < n_prompt < n
        assert labels[:n_prompt] == [-100] * n_prompt
        assert labels[n_prompt:n] == ids[n_prompt:n]
        assert labels[n:] == [-100] * (len(labels) - n)  # padding


def test_float32_compute_keeps_a_float32_adapter_and_trains(tiny_llama_dir, filter_file, tmp_path):
    import torch

    from generation.distill.train import build_trainer, train_and_save

    args, model_args, training_args = parse_args(
        ["--base-model", str(tiny_llama_dir), "--train", str(filter_file)]
        + ["--output-dir", str(tmp_path), "--dtype", "float32", "--max_steps", "1"]
        + ["--max_length", "512", "--save_strategy", "no", "--lora_r", "4", "--logging_steps", "1"]
    )
    trainer = build_trainer(args, model_args, training_args)
    trainable = [p for p in trainer.model.parameters() if p.requires_grad]
    assert trainable and all(p.dtype == torch.float32 for p in trainable)
    q_proj = trainer.model.base_model.model.model.layers[0].self_attn.q_proj.base_layer
    assert q_proj.compute_dtype == torch.float32
    info = train_and_save(trainer, args, model_args, training_args)
    assert info["global_step"] == 1 and info["loss_history"][0]["loss"] > 0


def test_reads_the_filter_stage_output_parquet(sample_dir, tiny_llama_dir, tmp_path):
    """questions-stage lines -> `ambigdocs build filter --no-entailment` (Parquet) -> distill."""
    from generation.cli import main
    from generation.datagen.stage_io import read_stage

    questions = [
        {k: v for k, v in r.items() if k != "status"}
        for r in _filter_records(sample_dir)
        if r["status"] == "ok"
    ]
    questions.append(
        {**questions[0], "surface_name": "Unparsed", "question": None, "answers": None}
    )
    questions.append({**questions[1], "surface_name": "Same", "answers": ["Ohio", "ohio"]})
    q_path, f_path = tmp_path / "questions.jsonl", tmp_path / "filtered.parquet"
    q_path.write_text("".join(json.dumps(r) + "\n" for r in questions))
    assert (
        main(
            ["build", "filter", "--input", str(q_path), "--output", str(f_path), "--no-entailment"]
        )
        == 0
    )
    statuses = [r["status"] for r in read_stage(f_path)]
    assert statuses.count("ok") == 5 and len(statuses) == 7

    out = tmp_path / "adapter"
    rc = main(
        ["distill", "--base-model", str(tiny_llama_dir), "--train", str(f_path)]
        + ["--output-dir", str(out), "--max_steps", "1", "--max_length", "512"]
        + ["--save_strategy", "no", "--lora_r", "4"]
    )
    assert rc == 0
    assert json.loads((out / "ambigdocs_distill.json").read_text())["train_examples"] == 5


def test_resume_from_the_last_checkpoint(tiny_llama_dir, filter_file, tmp_path):
    from generation.cli import main

    out = tmp_path / "resumable"
    common = ["distill", "--base-model", str(tiny_llama_dir), "--train", str(filter_file)]
    common += ["--output-dir", str(out), "--max_length", "512", "--lora_r", "4"]
    common += ["--per_device_train_batch_size", "1", "--logging_steps", "1", "--save_steps", "1"]
    common += ["--warmup_steps", "0"]
    assert main(common + ["--max_steps", "2"]) == 0
    assert (out / "checkpoint-2").is_dir()
    first = json.loads((out / "ambigdocs_distill.json").read_text())["loss_history"]
    # A much larger learning rate: a run from scratch would log another loss at step 2.
    resumed = ["--max_steps", "3", "--resume_from_checkpoint", "last", "--learning_rate", "0.5"]
    assert main(common + resumed) == 0
    info = json.loads((out / "ambigdocs_distill.json").read_text())
    assert info["global_step"] == 3 and (out / "checkpoint-3").is_dir()
    assert [e["step"] for e in info["loss_history"]] == [1, 2, 3]
    assert info["loss_history"][:2] == first  # steps 1-2 restored, not retrained


def test_resume_refuses_checkpoints_of_other_data_or_layout(
    tiny_llama_dir, filter_file, tmp_path, capsys
):
    from generation.cli import main

    out = tmp_path / "resumable"
    common = ["distill", "--base-model", str(tiny_llama_dir), "--output-dir", str(out)]
    common += ["--max_length", "512", "--per_device_train_batch_size", "1", "--save_steps", "1"]
    assert main([*common, "--train", str(filter_file), "--lora_r", "4", "--max_steps", "1"]) == 0
    assert (out / "checkpoint-1").is_dir()
    other = tmp_path / "other.jsonl"  # the same rows less one: other data, same format
    other.write_text("".join(filter_file.read_text().splitlines(keepends=True)[1:]))
    resume = ["--max_steps", "2", "--resume_from_checkpoint", "last"]
    for changed, setting in (
        (["--train", str(other), "--lora_r", "4"], "train: "),
        (["--train", str(filter_file), "--lora_r", "8"], "lora_r: 4 -> 8"),
    ):
        capsys.readouterr()
        assert main([*common, *changed, *resume]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert "run folder" in err and "other settings or inputs" in err and setting in err, err
        assert "without --resume_from_checkpoint" in err, err
    assert not (out / "checkpoint-2").exists()  # nothing trained on the refused runs
    # A checkpoint of another run folder is checked against that folder's settings, and this
    # run's settings go to its own folder only.
    elsewhere = tmp_path / "elsewhere"
    argv = [*common, "--train", str(other), "--lora_r", "4", "--max_steps", "2"]
    argv[argv.index(str(out))] = str(elsewhere)
    assert main([*argv, "--resume_from_checkpoint", str(out / "checkpoint-1")]) == 2
    assert "other settings or inputs" in capsys.readouterr().err and not elsewhere.exists()
    (out / "ambigdocs_distill_settings.json").unlink()  # a checkpoint that records nothing
    assert main([*common, "--train", str(filter_file), "--lora_r", "4", *resume]) == 2
    assert "records no settings" in capsys.readouterr().err


def test_warns_when_a_short_run_is_all_warmup(caplog):
    from generation.distill.train import _warn_if_only_warmup

    for steps, warns in (("1", True), ("2", False)):
        _, _, training = parse_args(REQUIRED + ["--max_steps", steps])
        caplog.clear()
        with caplog.at_level("WARNING"):
            _warn_if_only_warmup(training)
        assert ("every step is a warm-up step" in caplog.text) is warns, steps
