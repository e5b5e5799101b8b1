"""Command-line and YAML arguments of `ambigdocs distill`, with the paper's defaults.

Two dataclasses are parsed together by trl's `TrlParser` (the parser of trl's own scripts):
`DistillArguments` (data, base model, quantisation, LoRA) and trl's `SFTConfig` (every
transformers/trl training argument: `--max_steps 4`, `--learning_rate 1e-4`, `--report_to wandb`,
...). A YAML `--config` file sets any of them; the command line overrides the YAML.

The paper (B.2) trained QLoRA for 5 epochs at learning rate 2e-4; the rest of the defaults are
those the issue fixes for parity with the authors' training script (Yoran et al., 2023):
NF4 4-bit with bf16 compute, LoRA r=64, alpha=16, dropout 0.1 on q/k/v/o, linear schedule with 3%
warm-up, paged AdamW 32-bit, at most 4096 tokens.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Literal

# SFTConfig fields whose defaults differ here from trl's (the paper's settings).
PAPER_TRAINING_DEFAULTS: dict[str, object] = {
    "num_train_epochs": 5.0,
    "learning_rate": 2e-4,
    "lr_scheduler_type": "linear",
    "warmup_steps": 0.03,  # a float < 1 is a ratio of the total steps in transformers 5
    "optim": "paged_adamw_32bit",
    "max_length": 4096,
    "report_to": "none",
    # Mixed precision follows --compute_dtype (decided in generation.distill.train once the device is
    # known); trl's default bf16=True would fail transformers' argument check on a CPU.
    "bf16": False,
}


@dataclass
class DistillArguments:
    """What to train on and how the base model and adapter are set up."""

    base_model: str = field(
        metadata={
            "help": "The model to distil into: a local folder or Hub id (the paper: "
            "meta-llama/Llama-2-13b-chat-hf)."
        }
    )
    train: str = field(
        metadata={
            "help": "`ambigdocs build filter` output (JSONL or .parquet); status-ok lines "
            "are the training examples."
        }
    )
    eval: str | None = field(
        default=None,
        metadata={
            "help": "Optional held-out filter output for evaluation (same format as --train)."
        },
    )
    quantization: Literal["4bit", "none"] = field(
        default="4bit",
        metadata={"help": "4bit: QLoRA (bitsandbytes NF4 base weights); none: plain LoRA."},
    )
    bnb_4bit_quant_type: Literal["nf4", "fp4"] = field(
        default="nf4", metadata={"help": "4-bit data type of the base weights."}
    )
    bnb_4bit_use_double_quant: bool = field(
        default=False, metadata={"help": "Also quantise the quantisation constants (QLoRA paper)."}
    )
    compute_dtype: Literal["auto", "bfloat16", "float16", "float32"] = field(
        default="auto",
        metadata={
            "help": "dtype of the computation (4-bit compute dtype, non-quantised weights, mixed "
            "precision). auto: bfloat16 where it runs (CUDA with bf16 support, or a CPU where a "
            "probe bf16 step succeeds), float16 on older GPUs, float32 otherwise."
        },
    )
    lora_r: int = field(default=64, metadata={"help": "LoRA rank."})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA alpha (scaling = alpha / r)."})
    lora_dropout: float = field(default=0.1, metadata={"help": "Dropout on the LoRA input."})
    lora_target_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"],
        metadata={"help": "Names of the linear layers that get LoRA adapters."},
    )
    tokenization: Literal["inference", "trl"] = field(
        default="inference",
        metadata={
            "help": "inference: tokenise the prompt alone, as generation does, then the target "
            "(trains on the exact generation-time context); trl: trl's joint prompt+completion "
            "tokenisation of the prompt-completion data set."
        },
    )
    attn_implementation: str | None = field(
        default=None, metadata={"help": "Attention kernel (e.g. sdpa, flash_attention_2)."}
    )
    # Not an option: set by `parse_args` when --bf16/--fp16 appear on the command line or in the
    # YAML, so that an explicit `false` is kept instead of being replaced by the automatic choice.
    mixed_precision_set: bool = field(default=False, init=False)


def make_parser():
    """The `TrlParser` over `DistillArguments` and trl's `SFTConfig`, with the paper's defaults."""
    from trl import SFTConfig, TrlParser

    parser = TrlParser((DistillArguments, SFTConfig), prog="ambigdocs distill")
    parser.set_defaults(**PAPER_TRAINING_DEFAULTS)
    return parser


_PRECISION_FLAGS = ("bf16", "fp16")


def _precision_given(argv: list[str]) -> bool:
    """Whether `argv` or its `--config` YAML sets --bf16 or --fp16 (to any value)."""
    for arg in argv:
        if any(arg == f"--{name}" or arg.startswith(f"--{name}=") for name in _PRECISION_FLAGS):
            return True
    if "--config" in argv and argv.index("--config") + 1 < len(argv):
        import yaml

        with open(argv[argv.index("--config") + 1], encoding="utf-8") as handle:
            config = yaml.safe_load(handle)
        return isinstance(config, dict) and any(name in config for name in _PRECISION_FLAGS)
    return False


def parse_args(argv: list[str] | None):
    """Parses `argv` (and its `--config YAML`) into `(DistillArguments, SFTConfig)`.

    Raises:
        ValueError: no `--output_dir`, or an eval strategy without an eval file.
    """
    argv = list(argv) if argv is not None else sys.argv[1:]
    distill_args, training_args = make_parser().parse_args_and_config(args=argv)
    distill_args.mixed_precision_set = _precision_given(argv)
    if "--output_dir" not in argv and "--output-dir" not in argv:
        # SFTConfig falls back to ./trainer_output; an adapter should never land there silently.
        if training_args.output_dir in (None, "trainer_output"):
            raise ValueError("--output_dir is required (where the adapter is written)")
    if training_args.eval_strategy != "no" and distill_args.eval is None:
        raise ValueError(f"--eval_strategy {training_args.eval_strategy} needs an --eval file")
    return distill_args, training_args
