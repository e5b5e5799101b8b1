"""The `ambigdocs` command: one dispatch table for every job, each command's module imported only
when it runs (`python -m generation.<package>.<module>` runs the same `main(argv)`), inside the
one error boundary (`generation/boundary.py`).
"""

from __future__ import annotations

import difflib
import importlib
import sys

from generation.boundary import guard
from generation.datagen import STAGES

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
    """Runs the command `argv[0]` of `table` with the rest of `argv` inside the one error
    boundary; its exit status, 0 after `--help`, 2 (usage on stderr) with no command or an
    unknown one, which is named with the closest command."""
    if argv[:1] in (["-h"], ["--help"]):
        print(_usage(prog, table))
        return 0
    if not argv or argv[0] not in table:
        problem = "no command given" if not argv else f"unknown command {argv[0]!r}"
        close = difflib.get_close_matches(argv[0], table, n=1) if argv else []
        if argv and not close:  # `eval` -> `evaluate`: a prefix is a close match too
            close = [name for name in table if name.startswith(argv[0])][:1]
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        print(f"{prog}: error: {problem}{hint}\n\n{_usage(prog, table)}", file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    target = table[command][0]
    if isinstance(target, dict):
        return dispatch(f"{prog} {command}", target, rest)
    return guard(f"{prog} {command}", lambda: importlib.import_module(target).main(rest), rest)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--version"]:
        from generation import __version__

        print(__version__)
        return 0
    return dispatch("ambigdocs", COMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
