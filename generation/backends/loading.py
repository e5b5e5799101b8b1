"""Loading transformers models: the one home shared by the causal back-end, the seq2seq models of
the entailment check, and `ambigdocs distill` (device and dtype, tokenizer and model, a PEFT
adapter on top, and the base quantisation an adapter was trained on: docs/distillation.md).
Importing it silences one bitsandbytes message (`quiet_bitsandbytes`).
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from pathlib import Path
from typing import Any

from generation.io.records import atomic_write_json, read_json

# Written by `ambigdocs distill` into the adapter folder when the base model was quantised.
BASE_QUANTIZATION_FILE = "base_quantization_config.json"

# `generate` keywords of greedy decoding. The Nones clear sampling settings that a model's
# generation_config may carry (greedy is the protocol); they would otherwise draw warnings.
GREEDY = {"do_sample": False, "num_beams": 1, "temperature": None, "top_p": None, "top_k": None}

# Values of the hf back-end's `quantization` option.
QUANTIZATION_CHOICES = ("auto", "none", "adapter")

_BNB_KERNEL_LOGGER = "bitsandbytes.backends.cpu.ops"
_BNB_KERNEL_MESSAGE = "Failed to load CPU gemm_4bit_forward from kernels-community"


def _not_kernel_message(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith(_BNB_KERNEL_MESSAGE)


def quiet_bitsandbytes() -> None:
    """Silences bitsandbytes' "Failed to load CPU gemm_4bit_forward from kernels-community".

    bitsandbytes logs it when it is imported (peft, trl and sentence-transformers import it) on a
    CPU with AVX512-bf16 and without the optional `kernels` package; it then uses its own CPU
    kernel, which is what the toolkit tests. Only that one message of that one logger is dropped;
    every other bitsandbytes warning still shows. Idempotent.
    """
    logger = logging.getLogger(_BNB_KERNEL_LOGGER)
    if _not_kernel_message not in logger.filters:
        logger.addFilter(_not_kernel_message)


quiet_bitsandbytes()


@contextlib.contextmanager
def no_peft_deprecation_noise():
    """Hides transformers' FutureWarning about `is_gradient_checkpointing`, which peft reads
    when it wraps a model: a library-internal deprecation with nothing for a user to change."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning
        )
        yield


def pick_device(device: str | None = None) -> str:
    """`device` if given, else `cuda`, `mps` or `cpu`, the first that is available."""
    if device:
        return str(device)
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def pick_dtype(dtype: str | None, device: str):
    """The torch dtype: a named one, or for `auto`/None bfloat16 on GPUs that support it,
    float16 on other accelerators and float32 on CPU (CPU half precision is slow and lossy).

    Raises:
        ValueError: an unknown dtype name.
    """
    import torch

    if dtype not in (None, "auto"):
        if isinstance(dtype, torch.dtype):
            return dtype
        named = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
        if dtype not in named:
            raise ValueError(f"dtype must be auto or one of {sorted(named)}, got {dtype!r}")
        return named[dtype]
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.startswith("mps"):
        return torch.float16
    return torch.float32


def check_model_path(name: str | Path, label: str) -> None:
    """Refuses (a ValueError naming `label`), before anything is loaded, a name that can only
    be a local path (absolute, `./`, `../`, `~`, or more than one `/`; `org/model` may be a Hub
    id) and is not a folder."""
    name = str(name)
    looks_local = name.startswith(("/", ".", "~")) or name.count("/") > 1
    if looks_local and not Path(name).expanduser().is_dir():
        raise ValueError(f"{label} {name}: no such folder")


def save_base_quantization(folder: str | Path, quantization_config) -> None:
    """Records in the adapter `folder` the `BitsAndBytesConfig` the base model was loaded with
    (nothing when it was not quantised)."""
    if quantization_config is None:
        return
    atomic_write_json(Path(folder) / BASE_QUANTIZATION_FILE, quantization_config.to_dict())


def resolve_quantization(quantization: str, adapter: str | None):
    """The `BitsAndBytesConfig` to load a base model with (None: unquantised), by the hf
    back-end's option: `auto` (the settings the `adapter` folder records, see
    `save_base_quantization`, else none), `adapter` (the recorded settings; an error without them)
    or `none`.

    Raises:
        ValueError: an unknown choice, `adapter` without recorded settings, or a recorded file
            that is not a JSON object.
    """
    if quantization not in QUANTIZATION_CHOICES:
        raise ValueError(
            f"quantization must be one of {', '.join(QUANTIZATION_CHOICES)}, got {quantization!r}"
        )
    if quantization == "none":
        return None
    path = Path(adapter or "") / BASE_QUANTIZATION_FILE
    if not adapter or not path.is_file():
        if quantization == "adapter":
            raise ValueError(
                f"quantization=adapter: {adapter or 'no adapter'} records no base quantisation "
                f"({BASE_QUANTIZATION_FILE}, written by `ambigdocs distill`)"
            )
        return None
    recorded = read_json(path)  # the one reader: names the file, line and column
    if not isinstance(recorded, dict):
        raise ValueError(f"{path}: must hold a JSON object (a BitsAndBytesConfig)")
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig.from_dict(recorded)


def load_tokenizer(name: str, *, padding_side: str, trust_remote_code: bool = False):
    """A tokenizer with the given padding side and a pad token (EOS when it ships none)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(name), trust_remote_code=trust_remote_code)
    tokenizer.padding_side = padding_side
    if tokenizer.pad_token is None and tokenizer.eos_token is not None:
        # Llama-style tokenizers ship without a pad token; the attention mask hides it anyway.
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_model(
    auto_class,
    name: str,
    *,
    dtype,
    device: str,
    quantization_config=None,
    adapter: str | None = None,
    trust_remote_code: bool = False,
):
    """A pretrained model (`auto_class`, e.g. `AutoModelForCausalLM`, from a folder or Hub id)
    in eval mode on `device`: the weights in `dtype` or quantised by `quantization_config`, and
    a PEFT `adapter` on top (a `PeftModel` then) when one is given."""
    kwargs: dict[str, Any] = {"dtype": dtype, "trust_remote_code": trust_remote_code}
    if quantization_config is not None:
        # A quantised model is placed by `device_map`; it cannot be moved afterwards.
        kwargs["quantization_config"] = quantization_config
        kwargs["device_map"] = {"": device}
    model = auto_class.from_pretrained(str(name), **kwargs)
    if adapter:
        from peft import PeftModel

        with no_peft_deprecation_noise():
            model = PeftModel.from_pretrained(model, str(adapter))
    if quantization_config is None:
        model = model.to(device)
    return model.eval()
