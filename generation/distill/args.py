"""Command-line and YAML arguments of `ambigdocs distill`, with the paper's defaults.

`DistillArguments` (the toolkit's own), trl's `ModelConfig` and `SFTConfig`, parsed together by
trl's `TrlParser` (docs/distillation.md, "Defaults (the paper's) and how to change them"). No
torch or trl import at import time: `ambigdocs distill --help` (`short_help`) answers at once.
"""

from __future__ import annotations

import dataclasses
import sys
import textwrap
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from generation.boundary import UsageError
from generation.options import read_yaml_mapping

# ModelConfig fields whose defaults differ here from trl's (the paper's settings). `dtype: auto`
# means here: bfloat16 where it runs (see generation.distill.train.resolve_compute_dtype).
PAPER_MODEL_DEFAULTS: dict[str, object] = {
    "dtype": "auto",
    "use_peft": True,
    "load_in_4bit": True,
    "bnb_4bit_quant_type": "nf4",
    "use_bnb_nested_quant": False,
    "lora_r": 64,
    "lora_alpha": 16,
    "lora_dropout": 0.1,
    "lora_target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"],
}

# SFTConfig fields whose defaults differ here from trl's (the paper's settings).
PAPER_TRAINING_DEFAULTS: dict[str, object] = {
    "num_train_epochs": 5.0,
    "learning_rate": 2e-4,
    "lr_scheduler_type": "linear",
    "warmup_steps": 0.03,  # a float < 1 is a ratio of the total steps in transformers 5
    "optim": "paged_adamw_32bit",
    "max_length": 4096,
    "report_to": "none",
    # Mixed precision follows --dtype (decided in generation.distill.train once the device is
    # known); trl's default bf16=True would fail transformers' argument check on a CPU.
    "bf16": False,
}

# Named presets: defaults laid over the paper's; the YAML and the command line still override.
PRESETS: dict[str, dict[str, object]] = {
    "paper": {},
    # The authors' old-trl run: prompt+completion tokenised as one text (BOS, no EOS), the loss on
    # every token, the batch size found by halving on out-of-memory, no gradient checkpointing.
    "authors": {
        "tokenization": "authors",
        "completion_only_loss": False,
        "auto_find_batch_size": True,
        "gradient_checkpointing": False,
    },
}


@dataclass
class DistillArguments:
    """The toolkit's own options: what to train on and how examples become tokens."""

    train: str | None = field(
        default=None,
        metadata={
            "help": "Required. `ambigdocs build filter` output (JSONL or .parquet); status-ok "
            "lines are the training examples."
        },
    )
    eval: str | None = field(
        default=None,
        metadata={"help": "Held-out filter output for evaluation (same format as --train)."},
    )
    preset: Literal["paper", "authors"] = field(
        default="paper",
        metadata={
            "help": "paper: the defaults below; authors: the authors' old-trl run (one text "
            "with BOS and no EOS, loss on every token, auto_find_batch_size, no gradient "
            "checkpointing). Explicit options still override."
        },
    )
    tokenization: Literal["inference", "trl", "authors"] = field(
        default="inference",
        metadata={
            "help": "inference: the prompt tokenised alone, as generation does, then the target "
            "and EOS; trl: trl's joint prompt+completion tokenisation; authors: prompt+target "
            "as one text with BOS and no EOS (needs --completion_only_loss false)."
        },
    )
    # Not an option: set by `parse_args` when --bf16/--fp16 appear on the command line or in the
    # YAML, so that an explicit `false` is kept instead of being replaced by the automatic choice.
    mixed_precision_set: bool = field(default=False, init=False)
    # Likewise for --disable_tqdm (progress bars are turned off automatically when stderr is not a
    # terminal, unless the option is given).
    progress_set: bool = field(default=False, init=False)


# The options `short_help` lists besides DistillArguments, with one line each.
MODEL_HELP: dict[str, str] = {
    "model_name_or_path": "Required (alias --base-model). The model to distil into: a folder or "
    "Hub id (the paper: meta-llama/Llama-2-13b-chat-hf).",
    "dtype": "Compute dtype: auto (bfloat16 where it runs, float16 on older GPUs, else float32), "
    "bfloat16, float16, float32.",
    "load_in_4bit": "QLoRA: bitsandbytes 4-bit base weights (false: plain LoRA).",
    "load_in_8bit": "8-bit base weights instead.",
    "bnb_4bit_quant_type": "4-bit data type: nf4 or fp4.",
    "use_bnb_nested_quant": "Double quantisation (the QLoRA paper's).",
    "lora_r": "LoRA rank.",
    "lora_alpha": "LoRA alpha (scaling alpha / r).",
    "lora_dropout": "Dropout on the LoRA input.",
    "lora_target_modules": "Linear layers that get adapters.",
    "attn_implementation": "Attention kernel (sdpa, flash_attention_2, ...).",
}
TRAINING_HELP: dict[str, str] = {
    "output_dir": "Required. Where the adapter is written.",
    "num_train_epochs": "Epochs.",
    "max_steps": "Stop after this many steps (overrides epochs).",
    "learning_rate": "Peak learning rate.",
    "lr_scheduler_type": "Schedule.",
    "warmup_steps": "Warm-up (a float below 1 is a fraction of the steps).",
    "optim": "Optimiser.",
    "per_device_train_batch_size": "Examples per device and step.",
    "gradient_accumulation_steps": "Steps accumulated per update.",
    "auto_find_batch_size": "Halve the batch size on out-of-memory.",
    "gradient_checkpointing": "Recompute activations to save memory.",
    "max_length": "Longest example in tokens (longer ones are left out).",
    "completion_only_loss": "Loss on the target only (default: yes, except with --tokenization "
    "authors).",
    "eval_strategy": "When to evaluate (with --eval).",
    "save_strategy": "When to save checkpoints.",
    "resume_from_checkpoint": "`last`: continue from the newest checkpoint.",
    "logging_steps": "Log every N steps.",
    "report_to": "none, wandb, tensorboard, trackio, ...",
    "seed": "Random seed.",
}
# trl's own defaults for the options above that the paper does not change (shown in the help;
# a test checks them against the parsed values).
TRL_DEFAULTS_SHOWN: dict[str, object] = {
    "load_in_8bit": False,
    "attn_implementation": None,
    "max_steps": -1,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "auto_find_batch_size": False,
    "gradient_checkpointing": True,
    "completion_only_loss": None,
    "eval_strategy": "no",
    "save_strategy": "steps",
    "resume_from_checkpoint": None,
    "logging_steps": 10,
    "seed": 42,
}

DOC = "docs/distillation.md"
USAGE = (
    "usage: ambigdocs distill --model_name_or_path MODEL --train FILE --output_dir DIR\n"
    "                         [--eval FILE] [--preset paper|authors] [--config YAML] [OPTION ...]"
)


_SHOWN_DEFAULTS = {**TRL_DEFAULTS_SHOWN, **PAPER_TRAINING_DEFAULTS, **PAPER_MODEL_DEFAULTS}


def _option_lines(helps: dict[str, str], defaults: dict[str, object] = _SHOWN_DEFAULTS):
    """One `_option_line` per option, with its default and the authors preset's value."""
    lines = []
    for name, text in helps.items():
        default = defaults.get(name)
        if isinstance(default, list):
            default = " ".join(default)
        note = f" (default {default})" if default is not None else ""
        if name in PRESETS["authors"]:
            note += f" [--preset authors: {PRESETS['authors'][name]}]"
        lines.append(_option_line(name, text + note))
    return lines


def _option_line(name: str, text: str) -> str:
    """`  --name   text`, the text wrapped at 100 columns under itself."""
    return textwrap.fill(
        text, width=100, initial_indent=f"  --{name:<29} ", subsequent_indent=" " * 34
    )


def short_help() -> str:
    """The toolkit's options and the common trl ones, without importing torch or trl."""
    own = [f for f in dataclasses.fields(DistillArguments) if f.init]
    return "\n".join(
        [USAGE, "", "QLoRA-distil the question generator (paper 3.2, B.2).", "", "options:"]
        + _option_lines({f.name: f.metadata["help"] for f in own}, {f.name: f.default for f in own})
        + [_option_line("config", "A YAML file setting any option; the command line wins.")]
        + ["", "model and adapter (trl ModelConfig):"]
        + _option_lines(MODEL_HELP)
        + ["", "training (trl SFTConfig / transformers TrainingArguments), the most used:"]
        + _option_lines(TRAINING_HELP)
        + [
            "",
            "`ambigdocs distill --help-all` lists every ModelConfig and SFTConfig option (~850",
            f"lines); {DOC} explains the defaults and the presets.",
        ]
    )


def _raise_usage_error(message: str):
    raise UsageError(message)  # one line from the error boundary, not argparse's exit + usage


def make_parser(preset: str = "paper"):
    """The `TrlParser` over `DistillArguments`, trl's `ModelConfig` and `SFTConfig`, with the
    paper's defaults and then the preset's (a ValueError for an unknown preset)."""
    if preset not in PRESETS:
        raise ValueError(f"--preset must be one of {', '.join(PRESETS)}, got {preset!r}")
    from trl import ModelConfig, SFTConfig, TrlParser

    parser = TrlParser((DistillArguments, ModelConfig, SFTConfig), prog="ambigdocs distill")
    parser.set_defaults(**PAPER_MODEL_DEFAULTS, **PAPER_TRAINING_DEFAULTS, **PRESETS[preset])
    parser.error = _raise_usage_error
    for action in parser._actions:
        if action.dest == "dtype":  # the same field, with the meaning `auto` has here
            action.help = MODEL_HELP["dtype"]
        elif action.dest == "model_name_or_path":
            action.help = MODEL_HELP["model_name_or_path"]
    return parser


_ALIASES = {"--base-model": "--model_name_or_path", "--base_model": "--model_name_or_path"}
# How errors name the base model option: by both names, so whichever the user typed is there.
MODEL_FLAG = "--base-model/--model_name_or_path"

# Numeric options checked before anything loads: (which arguments, name, lowest value, highest
# value or None). Out of range, trl and transformers accept them and fail only once the model
# is loaded (a negative learning rate in the optimiser) or train nothing without a word.
NUMBER_RANGES: tuple[tuple[str, str, float, float | None], ...] = (
    ("training", "learning_rate", 0, None),
    ("training", "num_train_epochs", 0, None),
    ("training", "max_steps", -1, None),  # -1: train for num_train_epochs
    ("training", "per_device_train_batch_size", 1, None),
    ("training", "per_device_eval_batch_size", 1, None),
    ("training", "gradient_accumulation_steps", 1, None),
    ("training", "warmup_steps", 0, None),  # a float < 1 is a ratio of the total steps
    ("training", "weight_decay", 0, None),
    ("training", "max_grad_norm", 0, None),
    ("training", "max_length", 1, None),  # None: no truncation
    ("model", "lora_r", 1, None),
    ("model", "lora_alpha", 1, None),  # 0 would scale the adapter away
    ("model", "lora_dropout", 0, 1),
)


def _apply_aliases(argv: list[str]) -> list[str]:
    """`--base-model M` (and `--base-model=M`) as `--model_name_or_path M`."""
    out = []
    for arg in argv:
        name, eq, value = arg.partition("=")
        out.append(_ALIASES[name] + eq + value if name in _ALIASES else arg)
    return out


def read_yaml_config(argv: list[str]) -> dict:
    """The mapping in the `--config` YAML of `argv` ({} without one).

    Raises:
        ValueError: `--config` without a value, a missing or unreadable file, or not a mapping.
    """
    if "--config" not in argv:
        return {}
    index = argv.index("--config")
    if index + 1 >= len(argv):
        raise ValueError("--config needs a YAML file")
    return read_yaml_mapping(argv[index + 1], f"--config {argv[index + 1]}")


def _given(name: str, argv: list[str], config: dict) -> bool:
    """Whether option `name` is set on the command line or in the YAML (to any value)."""
    flag = f"--{name}"
    return name in config or any(a == flag or a.startswith(flag + "=") for a in argv)


def _preset_of(argv: list[str], config: dict) -> str:
    for k, arg in enumerate(argv):
        if arg.startswith("--preset="):
            return arg.split("=", 1)[1]
        if arg == "--preset" and k + 1 < len(argv):
            return argv[k + 1]
    return str(config.get("preset", "paper"))


def parse_args(argv: list[str] | None):
    """Parses `argv` (and its `--config YAML`) into `(DistillArguments, ModelConfig, SFTConfig)`.

    Raises:
        ValueError: any usage error (unknown option, bad value, missing required option, a
            combination that cannot work), in one line; `MissingExtraError` without the
            `distill` extra.
    """
    from generation.extras import require

    require("distill", what="QLoRA distillation")  # trl's parser, then the training itself
    argv = _apply_aliases(list(argv) if argv is not None else sys.argv[1:])
    config = read_yaml_config(argv)
    parser = make_parser(_preset_of(argv, config))
    with warnings.catch_warnings():
        if not _given("gradient_checkpointing", argv, config):
            # trl's default (or the preset's) sets the old name, which transformers 5 reports as
            # deprecated; a user who did not write it has nothing to change.
            warnings.filterwarnings(
                "ignore", message="`gradient_checkpointing` is deprecated", category=FutureWarning
            )
        distill_args, model_args, training_args = parser.parse_args_and_config(args=argv)
    distill_args.mixed_precision_set = any(_given(n, argv, config) for n in ("bf16", "fp16"))
    distill_args.progress_set = _given("disable_tqdm", argv, config)
    output_dir_given = any(a.split("=", 1)[0] in ("--output_dir", "--output-dir") for a in argv)
    check_args(distill_args, model_args, training_args, output_dir_given)
    return distill_args, model_args, training_args


def check_args(distill_args, model_args, training_args, output_dir_given: bool = True) -> None:
    """Checks that the options are complete and consistent (no file is looked at).

    Raises:
        ValueError: a missing required option, or options that contradict each other.
    """
    if not model_args.model_name_or_path:
        raise ValueError(f"{MODEL_FLAG} is required")
    check_numbers(model_args, training_args)
    if not distill_args.train:
        raise ValueError("--train is required (a `build filter` output)")
    if not output_dir_given and training_args.output_dir in (None, "trainer_output"):
        # SFTConfig falls back to ./trainer_output; an adapter should never land there silently.
        raise ValueError("--output_dir is required (where the adapter is written)")
    if not model_args.use_peft:
        raise ValueError("--use_peft false: distill trains a LoRA adapter; it needs use_peft")
    if training_args.eval_strategy != "no" and distill_args.eval is None:
        raise ValueError(f"--eval_strategy {training_args.eval_strategy} needs an --eval file")
    if distill_args.tokenization == "authors" and training_args.completion_only_loss:
        raise ValueError(
            "--tokenization authors trains on the whole text (no prompt/target boundary); "
            "it needs --completion_only_loss false"
        )


def check_numbers(model_args, training_args) -> None:
    """Checks the numeric options of `NUMBER_RANGES`; a ValueError names the option, its range
    and the value."""
    for which, name, low, high in NUMBER_RANGES:
        value = getattr(model_args if which == "model" else training_args, name, None)
        if value is None or isinstance(value, bool):
            continue
        if not low <= value or (high is not None and not value <= high):  # NaN too
            allowed = f">= {low}" if high is None else f"between {low} and {high}"
            raise ValueError(f"--{name} must be {allowed}, got {value}")


def check_paths(distill_args, model_args, training_args) -> None:
    """Checks the files and folders the options name, before anything is loaded.

    Raises:
        ValueError: a data file that is not there, an output folder that is a file, or a local
            model folder that does not exist.
    """
    for flag, path in (("--train", distill_args.train), ("--eval", distill_args.eval)):
        if path is not None and not Path(path).is_file():
            raise ValueError(f"{flag} {path}: no such file")
    output_dir = Path(training_args.output_dir)
    if output_dir.exists() and not output_dir.is_dir():
        raise ValueError(f"--output_dir {output_dir}: exists and is not a folder")
    from generation.backends.loading import check_model_path

    check_model_path(model_args.model_name_or_path, MODEL_FLAG)
