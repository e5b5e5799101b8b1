"""The options of `ambigdocs answer` (and the data options `ambigdocs retrieve` shares), as typed
dataclasses parsed by `transformers.HfArgumentParser`.

Each field is one flag (`data_dir` -> `--data-dir`, also `--data_dir`); its `help` metadata is the
flag's help. `--args-file FILE.yaml` reads the same options from YAML (keys are field names);
flags given on the command line win over the file.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Literal

from generation.documents import DEFAULT_NUM_DOCS

Backend = Literal["hf", "vllm", "openai"]
Setting = Literal["gold-only", "gold-retrieved", "retrieved-only"]
PromptFormat = Literal["chat", "plain", "authors"]
Decoding = Literal["greedy", "authors"]


def _help(text: str, **more) -> dict:
    return {"metadata": {"help": text, **more}}


@dataclass
class DataArguments:
    """Where the examples come from (one of `data_dir`, `config`, `dataset`) and which of them."""

    data_dir: str | None = field(
        default=None, **_help("folder with the release's raw files (test.json, ...)")
    )
    config: Literal["sample"] | None = field(
        default=None, **_help("`sample`: the paper's worked examples (offline)")
    )
    dataset: str | None = field(
        default=None,
        **_help("a JSON/JSONL file of rows, a saved dataset folder, or a Hub dataset id"),
    )
    split: str = field(default="test", **_help("the split to answer"))
    limit: int | None = field(default=None, **_help("answer only the first N examples"))

    def check_source(self) -> None:
        """Raises ValueError unless exactly one data source is given, and the limit is >= 0."""
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
        if self.limit is not None and self.limit < 0:
            raise ValueError(f"--limit must be >= 0, got {self.limit}")


@dataclass
class AnswerArguments(DataArguments):
    """Every option of `ambigdocs answer` (paper Section 5, Figures 11-12)."""

    model: str = field(default=None, **_help("local folder, Hub id, or API model name (required)"))
    output: str = field(default=None, **_help("the answers, JSONL (required)"))
    backend: Backend = field(default="hf", **_help("hf (transformers), vllm, openai"))
    setting: Setting = field(default="gold-only", **_help("the paper's document setting"))
    retrieved: str | None = field(
        default=None,
        **_help(
            "`ambigdocs retrieve` output (its folder or SPLIT.jsonl) for the retrieved settings"
        ),
    )
    num_docs: int = field(default=DEFAULT_NUM_DOCS, **_help("documents shown (5)"))
    few_shot: bool = field(default=False, **_help("few-shot prompt (Figure 12, or the authors')"))
    exemplars: str | None = field(
        default=None, **_help("JSON/JSONL exemplars (question, docs, answer) for few-shot")
    )
    seed: int = field(default=0, **_help("seeds document sampling and shuffling"))
    batch_size: int = field(default=8, **_help("hf: prompts per generate call; see docs"))
    max_new_tokens: int = field(default=300, **_help("the generation budget"))
    prompt_format: PromptFormat | None = field(
        default=None,
        **_help(
            "chat/plain: the paper's Figures 11-12; authors: the exact strings of the authors' "
            "answering script (raw [INST] text for open models, their two few-shot exemplars). "
            "Default: chat when the model has a chat template (always for openai), else plain"
        ),
    )
    decoding: Decoding | None = field(
        default=None,
        **_help(
            "openai: greedy (temperature 0, --max-new-tokens) or authors (no temperature and no "
            "token limit sent: the API's defaults, as the authors' script). Default: authors with "
            "--prompt-format authors, else greedy. Open models always decode greedily"
        ),
    )
    dry_run: bool = field(
        default=False,
        **_help(
            "load no model and send no request: write OUTPUT as JSONL with each example's qid, "
            "shown docs and exact model input (prompt or messages)"
        ),
    )
    overwrite: bool = field(default=False, **_help("discard an existing output and start again"))
    export_json: str | None = field(
        default=None, **_help("also write the authors' results JSON (a JSON list)")
    )
    evaluate: bool = field(default=False, **_help("score the output at the end"))
    evaluate_dir: str | None = field(
        default=None, **_help("where --evaluate writes (default OUTPUT_STEM.eval/)")
    )
    evaluate_args: str = field(
        default="",
        **_help('more `ambigdocs evaluate` arguments for --evaluate: --evaluate-args="--no-df1"'),
    )
    adapter: str | None = field(default=None, **_help("hf/vllm: a PEFT (LoRA) adapter folder"))
    dtype: str = field(default="auto", **_help("hf/vllm: auto, float32, float16, bfloat16"))
    base_url: str | None = field(default=None, **_help("openai: an OpenAI-compatible server"))
    max_concurrency: int | None = field(default=None, **_help("openai: requests in flight at once"))
    backend_option: list[str] = field(
        default_factory=list,
        metadata={
            "help": "any other back-end option (VALUE read as a YAML scalar), repeatable",
            "aliases": ["--backend-arg"],
            "action": "append",
            "metavar": "KEY=VALUE",
        },
    )

    def __post_init__(self) -> None:
        # `action="append"` with the parser's `nargs="+"` gives one list per flag: flatten.
        flat: list[str] = []
        for item in self.backend_option:
            flat.extend(item if isinstance(item, list) else [item])
        self.backend_option = flat

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
        for name, low in (("batch_size", 1), ("num_docs", 1), ("max_new_tokens", 1)):
            if getattr(self, name) < low:
                raise ValueError(
                    f"--{name.replace('_', '-')} must be >= {low}, got {getattr(self, name)}"
                )
        if self.max_concurrency is not None and self.max_concurrency < 1:
            raise ValueError(f"--max-concurrency must be >= 1, got {self.max_concurrency}")
        check_output_path(self.output, "--output")
        for name in ("export_json",):
            if getattr(self, name):
                check_output_path(getattr(self, name), f"--{name.replace('_', '-')}")


def check_output_path(path: str, flag: str) -> None:
    """Raises ValueError when `path` is a folder or lies under a file (it could not be written)."""
    target = Path(path)
    if target.is_dir():
        raise ValueError(f"{flag} {path}: is a folder; give a file path")
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"{flag} {path}: {parent} is a file, not a folder")
            break


def build_parser():
    """The `HfArgumentParser` over `AnswerArguments`."""
    from transformers import HfArgumentParser

    parser = HfArgumentParser(AnswerArguments, prog="ambigdocs answer")
    parser.description = (
        "Answer AmbigDocs questions with a model (paper Section 5, Figures 11-12). "
        "--args-file FILE.yaml reads the options from YAML (flags given here win)."
    )
    parser.add_argument("--args-file", help="a YAML file of options (keys: the field names)")
    return parser


def parse_answer_args(argv: list[str] | None = None) -> AnswerArguments:
    """The options from the command line (and `--args-file`); argparse errors exit with 2.

    Raises:
        ValueError: an unreadable or malformed `--args-file`: unknown keys, or a value of the
            wrong type (the message names the key).
    """
    parser = build_parser()
    values = vars(parser.parse_args(sys.argv[1:] if argv is None else argv))
    args_file = values.pop("args_file", None)
    if not args_file:
        return AnswerArguments(**values)
    merged = _read_args_file(args_file)
    defaults = {f.name: _default(f) for f in fields(AnswerArguments)}
    for key, value in values.items():  # a flag given on the command line wins over the file
        if value != defaults[key] or key not in merged:
            merged[key] = value
    try:
        (args,) = parser.parse_dict(merged)
    except ValueError as err:
        raise ValueError(f"--args-file {args_file}: {err}") from None
    return args


def _default(f):
    from dataclasses import MISSING

    return f.default_factory() if f.default_factory is not MISSING else f.default


def _read_args_file(path: str) -> dict:
    """The YAML mapping of options, keys as field names, values type-checked."""
    import typing

    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        reason = (str(err).splitlines() or [type(err).__name__])[0]
        raise ValueError(f"--args-file {path}: cannot be read ({reason})") from None
    if not isinstance(data, dict):
        raise ValueError(f"--args-file {path}: expected a mapping of option names to values")
    hints = typing.get_type_hints(AnswerArguments)
    out = {}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name not in hints:
            raise ValueError(f"--args-file {path}: unknown option {key!r}")
        if not _matches(value, hints[name]):
            raise ValueError(f"--args-file {path}: option {key!r} has a value of the wrong type")
        out[name] = value
    return out


def _matches(value, hint) -> bool:
    import typing

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return value in args
    if origin is list:
        return isinstance(value, list) and all(_matches(v, args[0]) for v in value)
    if args and type(None) in args:  # X | None
        return value is None or any(_matches(value, a) for a in args if a is not type(None))
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)
