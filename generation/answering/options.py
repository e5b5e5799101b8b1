"""The options of `ambigdocs answer` (and the data options `ambigdocs retrieve` shares), as typed
dataclasses parsed the project's one way (`generation/options.py`); each field is one flag."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from generation.documents import DEFAULT_NUM_DOCS
from generation.io.outputs import check_distinct_outputs, check_output_file
from generation.io.resume import meta_path
from generation.options import check_at_least, option, parse_argv

Backend = Literal["hf", "vllm", "openai"]
Setting = Literal["gold-only", "gold-retrieved", "retrieved-only"]
PromptFormat = Literal["chat", "plain", "authors"]
Decoding = Literal["greedy", "authors"]


@dataclass
class DataArguments:
    """Where the examples come from (one of `data_dir`, `config`, `dataset`) and which of them."""

    data_dir: str | None = option(None, "folder with the release's raw files (test.json, ...)")
    config: Literal["sample"] | None = option(
        None, "`sample`: the paper's worked examples (offline)"
    )
    dataset: str | None = option(
        None, "a JSON/JSONL file of rows, a saved dataset folder, or a Hub dataset id"
    )
    split: str = option("test", "the split to answer")
    limit: int | None = option(None, "answer only the first N examples")

    def check_source(self) -> None:
        """Raises ValueError unless exactly one data source is given, and the limit is >= 1."""
        given = [
            f"--{n.replace('_', '-')}"
            for n in ("data_dir", "config", "dataset")
            if getattr(self, n)
        ]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of --data-dir, --config, --dataset"
                + (f" (got {', '.join(given)})" if given else "")
            )
        check_at_least(self, 1, "limit")


@dataclass
class AnswerArguments(DataArguments):
    """Every option of `ambigdocs answer` (paper Section 5, Figures 11-12)."""

    model: str | None = option(None, "local folder, Hub id, or API model name", required=True)
    output: str | None = option(None, "the answers, JSONL", required=True)
    backend: Backend = option("hf", "hf (transformers), vllm, openai")
    setting: Setting = option("gold-only", "the paper's document setting")
    retrieved: str | None = option(
        None, "`ambigdocs retrieve` output (its folder or SPLIT.jsonl) for the retrieved settings"
    )
    num_docs: int = option(DEFAULT_NUM_DOCS, "documents shown")
    few_shot: bool = option(False, "few-shot prompt (Figure 12, or the authors')")
    exemplars: str | None = option(
        None, "JSON/JSONL exemplars (question, docs, answer) for few-shot"
    )
    seed: int = option(0, "seeds document sampling and shuffling")
    batch_size: int = option(8, "hf: prompts per generate call; see docs")
    max_new_tokens: int = option(300, "the generation budget")
    prompt_format: PromptFormat | None = option(
        None,
        "chat/plain: the paper's Figures 11-12; authors: the exact strings of the authors' "
        "answering script (raw [INST] text for open models, their two few-shot exemplars). "
        "Default: chat when the model has a chat template (always for openai), else plain",
    )
    decoding: Decoding | None = option(
        None,
        "openai: greedy (temperature 0, --max-new-tokens) or authors (no temperature and no "
        "token limit sent: the API's defaults, as the authors' script). Default: authors with "
        "--prompt-format authors, else greedy. Open models always decode greedily",
    )
    dry_run: bool = option(
        False,
        "load no model and send no request: write OUTPUT as JSONL with each example's row, "
        "shown docs and exact model input (prompt: text or chat messages), a dataset trl reads",
    )
    overwrite: bool = option(False, "discard an existing output and start again")
    export_json: str | None = option(None, "also write the authors' results JSON (a JSON list)")
    evaluate: bool = option(False, "score the output at the end")
    evaluate_dir: str | None = option(None, "where --evaluate writes (default OUTPUT_STEM.eval/)")
    evaluate_args: str = option(
        "", 'more `ambigdocs evaluate` arguments for --evaluate: --evaluate-args="--no-df1"'
    )
    adapter: str | None = option(None, "hf/vllm: a PEFT (LoRA) adapter folder")
    dtype: str = option("auto", "hf/vllm: auto, float32, float16, bfloat16")
    base_url: str | None = option(None, "openai: an OpenAI-compatible server")
    max_concurrency: int | None = option(None, "openai: requests in flight at once")
    args_file: str | None = option(
        None, "a YAML file of these options (keys: the option names); flags given here win"
    )
    backend_option: list[str] = option(
        [],
        "any other back-end option (VALUE read as a YAML scalar), repeatable",
        aliases=["--backend-arg"],
        metavar="KEY=VALUE",
    )

    def check(self) -> None:
        """Checks what can be checked before anything is loaded.

        Raises:
            ValueError: a missing required option, a bad data source, a number out of range, or
                an output path that cannot be written (under a file, or a folder).
        """
        for name in ("model", "output"):
            if not getattr(self, name):
                raise ValueError(f"--{name} is required")
        self.check_source()
        check_at_least(self, 1, "batch_size", "num_docs", "max_new_tokens", "max_concurrency")
        check_output_file(self.output, f"--output {self.output}")
        if self.evaluate:
            import shlex

            from generation.report.evaluate import check_extra_args

            try:
                extra = shlex.split(self.evaluate_args)
            except ValueError as err:  # an unclosed quote
                raise ValueError(f"--evaluate-args {self.evaluate_args!r}: {err}") from None
            check_extra_args(extra, "--evaluate-args")
            if self.evaluate_dir and Path(self.evaluate_dir).is_file():
                raise ValueError(f"--evaluate-dir {self.evaluate_dir}: a file, not a folder")
        if self.export_json:
            if self.dry_run:
                raise ValueError(
                    "--export-json: a dry run writes the model inputs to --output only"
                )
            check_output_file(self.export_json, f"--export-json {self.export_json}")
        check_distinct_outputs(
            {
                "--output": self.output,
                "the settings file of --output": meta_path(self.output),
                "--export-json": self.export_json,
            }
        )


DESCRIPTION = "Answer AmbigDocs questions with a model (paper Section 5, Figures 11-12)."


def parse_answer_args(argv: list[str] | None = None) -> AnswerArguments:
    """The options from the command line, and from `--args-file` where no flag was given.

    Raises:
        ValueError: arguments that do not parse, a value of the wrong type, or an unreadable
            `--args-file` or one with unknown keys or values of the wrong type (names the key).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    return parse_argv("ambigdocs answer", DESCRIPTION, [AnswerArguments], argv)[0]
