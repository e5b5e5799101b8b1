"""The `ambigdocs` command: one entry point, one dispatch table for every job.

Each command lives in its own module with a `main(argv) -> int`; the module is imported only
when its command runs, so `ambigdocs evaluate` never pays for torch or datasets, and
`python -m generation.<package>.<module>` (or `accelerate launch -m ...`) runs the same code.
`ambigdocs build STAGE` dispatches one level deeper, through `STAGES`.
"""

from __future__ import annotations

import importlib
import sys

# build stage -> (module with main(argv), one-line description), in chain order
STAGES: dict[str, tuple[str, str]] = {
    "gather": (
        "generation.datagen.gather",
        "disambiguation map from a MediaWiki XML dump (or the API)",
    ),
    "seed": ("generation.datagen.seed", "seed document pair per surface name (docs/pipeline.md 2)"),
    "questions": ("generation.datagen.questions", "question + two answers per seed pair (3)"),
    "filter": ("generation.datagen.filter", "not formatted / not ambiguous / not entailed (3)"),
    "expand": ("generation.datagen.expand", "answer set expansion (4)"),
    "split": ("generation.datagen.split", "train/validation/test with no shared passage (5)"),
    "all": ("generation.datagen.pipeline", "the whole chain from a YAML config, resumable"),
}

# command -> (module with main(argv), or a table of subcommands; one-line description)
COMMANDS: dict[str, tuple[str | dict, str]] = {
    "evaluate": ("generation.report.evaluate", "score answered examples with the paper's metrics"),
    "answer": (
        "generation.answering.answer",
        "answer AmbigDocs questions with a model (hf, vllm, openai)",
    ),
    "retrieve": ("generation.answering.retrieve", "dense retrieval over a passage collection"),
    "build": (STAGES, "create AmbigDocs-style data, stage by stage"),
    "distill": ("generation.distill.train", "QLoRA-distil the question generator (trl + peft)"),
    "export": ("generation.hub.export", "write a script-free, Hub-ready copy of the data set"),
    "push": ("generation.hub.push", "add or replace one split in a Hub dataset repository"),
    "push-metric": ("generation.hub.push_metric", "publish the metric as a Hub Space"),
}


def _usage(prog: str, table: dict[str, tuple[str | dict, str]]) -> str:
    width = max(map(len, table))
    lines = [f"usage: {prog} COMMAND [ARGS ...]", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {desc}" for name, (_, desc) in table.items()]
    lines += ["", f"`{prog} COMMAND --help` describes one command."]
    return "\n".join(lines)


def dispatch(prog: str, table: dict[str, tuple[str | dict, str]], argv: list[str]) -> int:
    """Runs the command `argv[0]` of `table` with the rest of `argv`; 2 for an unknown one."""
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage(prog, table))
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command not in table:
        print(f"{prog}: unknown command {command!r}\n\n{_usage(prog, table)}", file=sys.stderr)
        return 2
    target = table[command][0]
    if isinstance(target, dict):
        return dispatch(f"{prog} {command}", target, rest)
    try:
        return int(importlib.import_module(target).main(rest) or 0)
    except PATH_ERRORS as err:
        if not err.filename:
            raise
        return _path_unusable(f"{prog} {command}", err)
    except Exception as err:
        return _hub_unreachable(f"{prog} {command}", err)


# A path the user gave (or one derived from it) that cannot be used: bad input, whichever
# command let it through, so the dispatcher ends it in one line rather than a traceback.
PATH_ERRORS = (
    FileNotFoundError,
    FileExistsError,
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
)


def _path_unusable(prog: str, err: OSError) -> int:
    """One line naming the path and status 2 for a file-system error on a given path."""
    from generation.options import one_line

    print(f"{prog}: error: {one_line(err)}", file=sys.stderr)
    return 2


def _hub_unreachable(prog: str, err: Exception) -> int:
    """One line and status 2 when a command failed because the Hub could not be reached.

    Any command may load a model or a file from the Hub; offline (`HF_HUB_OFFLINE=1`) or with
    no network, the libraries fail with a long chain of exceptions. Anything else is raised
    again.
    """
    from metric.ambigdocs_metric.hub_errors import hub_unreachable, root_cause

    if not hub_unreachable(err):
        raise err
    from huggingface_hub import constants

    detail = "HF_HUB_OFFLINE is set" if constants.HF_HUB_OFFLINE else root_cause(err)
    print(
        f"{prog}: cannot reach the Hugging Face Hub at {constants.ENDPOINT} ({detail}), and "
        "what it needs is not in the local cache; give a local path or download it first",
        file=sys.stderr,
    )
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--version"]:
        from generation import __version__

        print(__version__)
        return 0
    if not argv:
        print(_usage("ambigdocs", COMMANDS))
        return 0
    return dispatch("ambigdocs", COMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
