"""The `ambigdocs` command: one entry point, one subcommand per job.

Each subcommand lives in its own module with a `main(argv) -> int`; the module is imported only
when its subcommand runs, so `ambigdocs evaluate` never pays for torch or datasets, and
`python -m generation.<module>` (or `accelerate launch -m generation.<module>`) runs the same code.
"""

from __future__ import annotations

import importlib
import sys

# subcommand -> (module with main(argv), one-line description)
COMMANDS: dict[str, tuple[str, str]] = {
    "evaluate": ("generation.report.evaluate", "score answered examples with the paper's metrics"),
    "answer": (
        "generation.answering.answer",
        "answer AmbigDocs questions with a model (hf, vllm, openai)",
    ),
    "retrieve": ("generation.answering.retrieve", "dense retrieval over a passage collection"),
    "build": ("generation.datagen.cli", "create AmbigDocs-style data, stage by stage"),
    "distill": ("generation.distill.train", "QLoRA-distil the question generator (trl + peft)"),
    "export": ("generation.hub.export", "write a script-free, Hub-ready copy of the data set"),
    "push": ("generation.hub.push", "add or replace one split in a Hub dataset repository"),
    "push-metric": ("generation.hub.push_metric", "publish the metric as a Hub Space"),
}


def _usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: ambigdocs COMMAND [ARGS ...]", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {desc}" for name, (_, desc) in COMMANDS.items()]
    lines += ["", "`ambigdocs COMMAND --help` describes one command."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    if argv[0] == "--version":
        from generation import __version__

        print(__version__)
        return 0
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"ambigdocs: unknown command {command!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[command][0])
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
