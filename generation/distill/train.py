"""`ambigdocs distill`: QLoRA-distil the question generator (paper 3.2 and B.2) with trl + peft.

The status-ok lines of a `build filter` output become instruction-format examples, and a LoRA
adapter is trained on a 4-bit (NF4) base model; it plugs into `ambigdocs build questions
--backend hf --adapter DIR`. The base model's quantisation is written next to the adapter, so
that the hf back-end loads it as it was trained. Usage and defaults: docs/distillation.md.
"""

from __future__ import annotations

import json
import logging
import math
import sys
import warnings
from pathlib import Path

from generation.backends.loading import no_peft_deprecation_noise, save_base_quantization
from generation.boundary import guard
from generation.distill import data
from generation.distill.args import DistillArguments, check_paths, parse_args, short_help

logger = logging.getLogger("ambigdocs.distill")

# Written next to the adapter: how to use it, and what it was trained on.
INFO_FILE = "ambigdocs_distill.json"
# What a checkpoint was trained on and as, checked when a run resumes from it.
RESUME_SETTINGS_FILE = "ambigdocs_distill_settings.json"


def _bf16_runs_on_cpu() -> bool:
    """Whether a bitsandbytes 4-bit layer computes and back-propagates in bfloat16 on this CPU."""
    import torch

    try:
        import bitsandbytes as bnb

        layer = bnb.nn.Linear4bit(64, 64, compute_dtype=torch.bfloat16, quant_type="nf4")
        layer = layer.to("cpu")
        x = torch.randn(2, 64, dtype=torch.bfloat16, requires_grad=True)
        layer(x).float().sum().backward()
        return bool(torch.isfinite(x.grad).all())
    except Exception as err:  # any failure means: do not rely on bf16 here
        logger.info("bfloat16 probe failed on CPU: %s", err)
        return False


def resolve_compute_dtype(name: str):
    """The torch dtype of the computation for `--dtype NAME` (`auto`, `bfloat16`, `float16`,
    `float32`).

    `auto` is the paper's bfloat16 wherever it runs: on CUDA when the GPU supports it (float16
    on older GPUs, as QLoRA did there), and on a CPU when a probe 4-bit bf16 forward/backward
    succeeds; otherwise float32, with a logged note.
    """
    import torch

    if name != "auto":
        return getattr(torch, name)
    if torch.cuda.is_available():
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if _bf16_runs_on_cpu():
        return torch.bfloat16
    logger.warning("bfloat16 does not run on this CPU; computing in float32 instead")
    return torch.float32


def _apply_mixed_precision(training_args, dtype, user_set: bool = False) -> None:
    """Turns on the Trainer's mixed precision matching the compute dtype, on CUDA only.

    On a CPU the 4-bit layers already compute in `dtype` and the LoRA weights stay float32, so
    no autocast is needed (and transformers refuses bf16 on CPU without `--use_cpu`).
    `user_set`: --bf16/--fp16 were given (even as false): they are kept as they are.
    """
    import torch

    if user_set or training_args.bf16 or training_args.fp16 or not torch.cuda.is_available():
        return  # the user chose, or there is nothing to choose
    if training_args.mixed_precision not in (None, "no"):
        return  # set by accelerate's config (ACCELERATE_MIXED_PRECISION)
    training_args.bf16 = dtype == torch.bfloat16
    training_args.fp16 = dtype == torch.float16
    # TrainingArguments derives `mixed_precision` (what the Accelerator reads) in __post_init__.
    training_args.mixed_precision = (
        "bf16" if training_args.bf16 else "fp16" if training_args.fp16 else "no"
    )


def quantization_config(model_args, dtype):
    """trl's `BitsAndBytesConfig` for the base model (None when unquantised), computing in `dtype`.

    `model_args.dtype` is set to the resolved dtype's name first: trl uses it as the 4-bit compute
    dtype, and here `auto` has already been decided (`resolve_compute_dtype`).
    """
    from trl import get_quantization_config

    model_args.dtype = str(dtype).replace("torch.", "")
    return get_quantization_config(model_args)


def load_base_model(model_args, dtype, quantization=None, trust_remote_code: bool = False):
    """The base causal LM in `dtype`, quantised by `quantization` (a `BitsAndBytesConfig`, or
    None), ready for `get_peft_model` (a quantised one prepared with
    `peft.prepare_model_for_kbit_training`, which keeps norms and embeddings in float32)."""
    import torch
    from transformers import AutoModelForCausalLM

    kwargs = {
        "dtype": dtype,
        "revision": model_args.model_revision,
        "trust_remote_code": trust_remote_code,
    }
    if model_args.attn_implementation:
        kwargs["attn_implementation"] = model_args.attn_implementation
    if quantization is not None:
        kwargs["quantization_config"] = quantization
        if torch.cuda.is_available():
            from accelerate import PartialState

            # One full copy per process (data parallel under accelerate launch).
            kwargs["device_map"] = {"": PartialState().local_process_index}
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, **kwargs)
    if quantization is not None:
        from peft import prepare_model_for_kbit_training

        # Gradient checkpointing is turned on by the Trainer (SFTConfig.gradient_checkpointing).
        with no_peft_deprecation_noise():
            model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    return model


def load_examples(path: str, tokenizer, tokenization: str, max_length: int | None):
    """The status-ok records of a filter output that fit `max_length`, as a `datasets.Dataset`."""
    from generation.datagen.stage_io import read_stage

    records = data.select_ok_records(read_stage(path), source=str(path))
    rows = data.to_prompt_completion(records)
    rows = data.drop_too_long(rows, tokenizer, max_length, str(path), tokenization)
    return data.build_dataset(rows, tokenizer, tokenization)


def build_trainer(args: DistillArguments, model_args, training_args):
    """Loads tokenizer, data and model, and returns the `SFTTrainer` (not yet trained);
    `trainer.model` is the PEFT model. `model_args.dtype` becomes the resolved compute dtype, and
    `training_args` is settled in place (mixed precision, completion-only loss, eval strategy).

    Raises:
        ValueError: a named file or folder is missing or of the wrong kind, or bad data (both
            found before any weights are loaded).
    """
    check_paths(args, model_args, training_args)
    from transformers import AutoTokenizer
    from trl import SFTTrainer, get_peft_config

    dtype = resolve_compute_dtype(model_args.dtype)
    _apply_mixed_precision(training_args, dtype, args.mixed_precision_set)
    _resolve_training_options(args, training_args)
    check_resumable(args, model_args, training_args)  # before any weights load
    tokenizer = AutoTokenizer.from_pretrained(
        model_args.model_name_or_path,
        revision=model_args.model_revision,
        trust_remote_code=training_args.trust_remote_code,
    )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token  # Llama-2 has none; padded positions get no loss
    max_length = training_args.max_length
    train_dataset = load_examples(args.train, tokenizer, args.tokenization, max_length)
    eval_dataset = (
        load_examples(args.eval, tokenizer, args.tokenization, max_length) if args.eval else None
    )
    quantization = quantization_config(model_args, dtype)
    peft_config = get_peft_config(model_args)
    _log_setup(model_args, quantization, peft_config, dtype, len(train_dataset))
    model = load_base_model(
        model_args, dtype, quantization, trust_remote_code=training_args.trust_remote_code
    )
    with no_peft_deprecation_noise():
        trainer = SFTTrainer(
            model=model,
            args=training_args,
            train_dataset=train_dataset,
            eval_dataset=eval_dataset,
            processing_class=tokenizer,
            peft_config=peft_config,
        )
    _keep_adapter_trainable_in(trainer.model, dtype)
    return trainer


def _resolve_training_options(args: DistillArguments, training_args) -> None:
    """Settles the SFTConfig options that depend on the data, the device or other options."""
    import torch

    if training_args.completion_only_loss is None:
        # trl's default for prompt-completion data; pre-tokenised data must say it explicitly.
        training_args.completion_only_loss = args.tokenization != "authors"
    _warn_if_only_warmup(training_args)
    if args.eval and training_args.eval_strategy == "no":
        from transformers.trainer_utils import IntervalStrategy

        logger.info("--eval given: evaluating at the end of every epoch (--eval_strategy epoch)")
        training_args.eval_strategy = IntervalStrategy.EPOCH
        training_args.do_eval = True
    if not args.progress_set and not sys.stderr.isatty():
        # In a log file every redraw of tqdm's bar is a new line: each step's bar appears twice
        # around each logged line. Without a terminal the Trainer prints one line per log instead.
        training_args.disable_tqdm = True
    if not torch.cuda.is_available():
        # Pinned memory only helps copies to a GPU; without one torch warns mid-progress-bar.
        training_args.dataloader_pin_memory = False
        if str(getattr(training_args.optim, "value", training_args.optim)).startswith("paged_"):
            logger.info("no GPU: bitsandbytes runs the paged optimiser without paging")
            warnings.filterwarnings(
                "ignore", message="Paged optimizers are not supported on CPU", category=UserWarning
            )


def _log_setup(model_args, quantization, peft_config, dtype, n_examples: int) -> None:
    if quantization is None:
        weights = "unquantised"
    elif quantization.load_in_4bit:
        weights = f"4-bit {quantization.bnb_4bit_quant_type}"
    else:
        weights = "8-bit"
    logger.info(
        "base %s, %s, compute %s, LoRA r=%d alpha=%d dropout=%s on %s; %d training examples",
        model_args.model_name_or_path,
        weights,
        str(dtype).replace("torch.", ""),
        peft_config.r,
        peft_config.lora_alpha,
        peft_config.lora_dropout,
        ",".join(sorted(peft_config.target_modules)),
        n_examples,
    )


def _warn_if_only_warmup(training_args) -> None:
    """Warns when a short `--max_steps` run is all warm-up: its first step has learning rate 0."""
    steps, warmup = training_args.max_steps, training_args.warmup_steps
    if steps and steps > 0 and warmup:
        warmup_steps = math.ceil(steps * warmup) if warmup < 1 else int(warmup)
        if warmup_steps >= steps:
            logger.warning(
                "--max_steps %d with %s warm-up: every step is a warm-up step (the first at "
                "learning rate 0), so the adapter barely changes; add --warmup_steps 0",
                steps,
                warmup,
            )


def _keep_adapter_trainable_in(model, dtype) -> None:
    """Keeps the LoRA weights in float32 unless the computation is bfloat16.

    For 4-bit models trl stores the adapter in bfloat16, as the QLoRA paper did with bf16
    compute. Where bf16 does not run (float32 fallback on a CPU) or with float16 mixed precision
    (older GPUs, whose gradient scaler refuses half-precision weights), they go back to float32.
    """
    import torch

    if dtype == torch.bfloat16:
        return
    for param in model.parameters():
        if param.requires_grad and param.dtype != torch.float32:
            param.data = param.data.to(torch.float32)


def check_resumable(args: DistillArguments, model_args, training_args) -> None:
    """Refuses to resume a checkpoint made from another base model, other data, another
    tokenisation or another adapter layout (the optimiser's settings, e.g. the learning rate, may
    change), and records this run's settings in `output_dir` for a later resume.

    Raises:
        ResumeRefused: one line naming each changed setting.
    """
    from generation.io.resume import check_settings, file_fingerprint

    out = Path(training_args.output_dir)
    settings = {
        "base_model": model_args.model_name_or_path,
        "model_revision": model_args.model_revision,
        "train": file_fingerprint(args.train),
        "eval": file_fingerprint(args.eval) if args.eval else None,
        "preset": args.preset,
        "tokenization": args.tokenization,
        "max_length": training_args.max_length,
        "completion_only_loss": training_args.completion_only_loss,
        "load_in_4bit": model_args.load_in_4bit,
        "load_in_8bit": model_args.load_in_8bit,
        "lora_r": model_args.lora_r,
        "lora_alpha": model_args.lora_alpha,
        "lora_target_modules": model_args.lora_target_modules,
    }
    resume = _resume_value(training_args.resume_from_checkpoint)
    # A checkpoint's settings lie in the run folder that holds it (output_dir for `last`).
    holder = Path(resume).parent if isinstance(resume, str) else out
    check_settings(
        holder / RESUME_SETTINGS_FILE,
        settings,
        has_work=bool(resume),
        what=f"the run folder {holder}",
        restart="train without --resume_from_checkpoint to start again",
        record_to=out / RESUME_SETTINGS_FILE,  # never into another run's folder
    )


def _resume_value(value):
    """`--resume_from_checkpoint last|true` resumes from the newest checkpoint in output_dir."""
    if isinstance(value, str) and value.lower() in ("last", "true", "auto"):
        return True
    return value


def _base_quantization(trainer):
    """The `BitsAndBytesConfig` the trained model's base weights were loaded with, or None."""
    config = getattr(trainer.model.get_base_model().config, "quantization_config", None)
    if isinstance(config, dict):
        from transformers import BitsAndBytesConfig

        config = BitsAndBytesConfig.from_dict(config)
    return config


def _final_eval_metrics(trainer) -> dict:
    """The eval metrics at the last step: those already logged there, else a new evaluation.

    With `--eval_strategy epoch` the Trainer has just evaluated after the last step; evaluating
    again would print a second eval progress bar for the same numbers.
    """
    step = trainer.state.global_step
    logged = [e for e in trainer.state.log_history if "eval_loss" in e and e.get("step") == step]
    if logged:
        return {k: v for k, v in logged[-1].items() if k.startswith("eval_")}
    return trainer.evaluate()


def train_and_save(trainer, args: DistillArguments, model_args, training_args) -> dict:
    """Trains, evaluates (when there is an eval split) and saves the adapter and its info files.

    Returns:
        What was saved in `ambigdocs_distill.json`: settings, data sizes, loss history, metrics.
    """
    result = trainer.train(
        resume_from_checkpoint=_resume_value(training_args.resume_from_checkpoint)
    )
    metrics = dict(result.metrics)
    if trainer.eval_dataset is not None:
        metrics.update(_final_eval_metrics(trainer))
    out = Path(training_args.output_dir)
    trainer.save_model(str(out))  # adapter_config.json + adapter_model.safetensors (+ tokenizer)
    quantization = _base_quantization(trainer)
    info = {
        "base_model": model_args.model_name_or_path,
        "train": str(args.train),
        "eval": args.eval,
        "train_examples": len(trainer.train_dataset),
        "preset": args.preset,
        "quantization": quantization.to_dict() if quantization is not None else None,
        "tokenization": args.tokenization,
        "completion_only_loss": training_args.completion_only_loss,
        "prompt_format": "instruction",
        "global_step": trainer.state.global_step,
        "loss_history": [
            {"step": e["step"], "loss": e["loss"]} for e in trainer.state.log_history if "loss" in e
        ],
        "metrics": metrics,
        "use_with": f"ambigdocs build questions --backend hf --model "
        f"{model_args.model_name_or_path} --adapter {out}",
    }
    if trainer.accelerator.is_main_process:
        from generation.io.records import atomic_write_json

        save_base_quantization(out, quantization)
        atomic_write_json(out / INFO_FILE, info)
        print(json.dumps({k: info[k] for k in ("global_step", "metrics", "use_with")}, indent=2))
    return info


def run(args: DistillArguments, model_args, training_args) -> dict:
    """Builds the trainer, trains, and saves the adapter to `training_args.output_dir`.

    Returns:
        The contents of `ambigdocs_distill.json` (see `train_and_save`).
    """
    trainer = build_trainer(args, model_args, training_args)
    info = train_and_save(trainer, args, model_args, training_args)
    if hasattr(trainer, "end"):
        trainer.end()  # transformers >= 5.18: finish trackers, destroy the process group
    return info


def main(argv: list[str] | None = None) -> int:
    """`ambigdocs distill ARGV` and `python -m generation.distill.train`: 0 on success and after
    a help text, 2 on a usage or data error (one line on stderr)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "-h" in argv or "--help" in argv:
        print(short_help())  # without importing torch or trl
        return 0
    if "--help-all" in argv:
        from generation.distill.args import make_parser

        make_parser().print_help()
        return 0
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    return guard("ambigdocs distill", lambda: run(*parse_args(argv)), argv)


if __name__ == "__main__":
    sys.exit(main())
