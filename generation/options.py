"""Command options: one typed dataclass per command, parsed one way everywhere.

A command declares its options as a dataclass whose fields carry `help` metadata (`Literal`
types give the choices) and runs through `run_command`. The same dataclass is filled from the
command line (transformers' `HfArgumentParser`, so `--num-proc` and `--num_proc` both work) or
from a mapping (a stage's section of the `ambigdocs build all` YAML config), and checked in one
place, so that a bad value gets the same one-line error from either route.

`ambigdocs evaluate` keeps a plain argparse parser: it must not import transformers.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

# What a command reports as bad input (one line, exit status 2) rather than a crash.
INPUT_ERRORS = (
    ValueError,
    FileNotFoundError,
    FileExistsError,  # e.g. a folder to create where a file stands
    IsADirectoryError,
    NotADirectoryError,
    PermissionError,
)


def option(default: Any = dataclasses.MISSING, help: str = "", **metadata: Any) -> Any:
    """A dataclass field with a help text (`default_factory` for lists)."""
    if isinstance(default, list):
        return dataclasses.field(
            default_factory=lambda: list(default), metadata={"help": help, **metadata}
        )
    return dataclasses.field(default=default, metadata={"help": help, **metadata})


class UsageError(ValueError):
    """The command line does not parse (unknown flag, missing value, bad choice)."""


def _parser_class():
    from transformers import HfArgumentParser

    class OptionParser(HfArgumentParser):
        # argparse prints the usage and exits; a command reports one line and returns 2.
        def error(self, message: str) -> typing.NoReturn:
            raise UsageError(f"{message} (see --help)")

    return OptionParser


def parse_argv(
    prog: str, description: str, option_types: Sequence[type], argv: Sequence[str]
) -> tuple:
    """Fills the option dataclasses from command-line arguments and checks their values.

    Raises:
        UsageError: the arguments do not parse.
        ValueError: a value of the wrong type or out of its choices (names the option).
    """
    parser = _parser_class()(list(option_types), prog=prog, description=description)
    for action in parser._actions:
        # `--num-proc` is the house style; `--num_proc` stays accepted.
        action.option_strings.sort(key=lambda flag: flag.startswith("--") and "_" in flag)
    parsed = parser.parse_args_into_dataclasses(args=list(argv), look_for_args_file=False)
    for options in parsed:
        check_types(options)
    return tuple(parsed)


def parse_mapping(option_types: Sequence[type], values: Mapping[str, Any], where: str) -> tuple:
    """Fills the option dataclasses from a mapping (a YAML section) and checks their values.

    Keys may use `-` or `_`. Unknown keys, missing required options and values of the wrong type
    are errors that name `where` and the key.
    """
    values = {str(k).replace("-", "_"): v for k, v in values.items()}
    known = {f.name for t in option_types for f in dataclasses.fields(t) if f.init}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"{where}: unknown option(s) {unknown}; known: {sorted(known)}")
    parsed = []
    for option_type in option_types:
        names = {f.name for f in dataclasses.fields(option_type) if f.init}
        missing = [
            f.name
            for f in dataclasses.fields(option_type)
            if f.init
            and f.name not in values
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        ]
        if missing:
            raise ValueError(f"{where}: missing required option(s) {missing}")
        try:
            options = option_type(**{k: v for k, v in values.items() if k in names})
        except ValueError as err:  # a `__post_init__` check
            raise ValueError(f"{where}: {err}") from None
        check_types(options, where)
        parsed.append(options)
    return tuple(parsed)


def check_types(options: Any, where: str = "") -> None:
    """Checks each field's value against its annotation (int, float, str, bool, Literal,
    Optional, list[...]); ints are accepted where floats are expected.

    Raises:
        ValueError: names the option and the value.
    """
    hints = typing.get_type_hints(type(options))
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        if not _matches(value, hints[f.name]):
            prefix = f"{where}: " if where else ""
            raise ValueError(
                f"{prefix}option {f.name!r}: {value!r} is not {_describe(hints[f.name])}"
            )


def check_at_least(options: Any, minimum: float, *names: str) -> None:
    """For a dataclass's `__post_init__`: each named number field (int or float; None is
    left alone) is at least `minimum`. A NaN is refused; other types are left to `check_types`.

    Raises:
        ValueError: names the option and the value.
    """
    for name in names:
        value = getattr(options, name)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if number and not value >= minimum:  # `not >=` also catches NaN
            raise ValueError(f"option {name!r} must be >= {minimum}, got {value}")


def _matches(value: Any, hint: Any) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin is Literal:
        return value in args
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, a) for a in args)
    if origin in (list, tuple) or hint in (list, tuple):
        return isinstance(value, (list, tuple)) and all(_matches(v, args[0]) for v in value if args)
    if origin is dict or hint is dict:
        return isinstance(value, dict)
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint) if isinstance(hint, type) else True


def _describe(hint: Any) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return "one of " + ", ".join(map(repr, args))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in args)
    if origin in (list, tuple):
        return f"a list of {_describe(args[0])}" if args else "a list"
    return "None" if hint is type(None) else f"a {getattr(hint, '__name__', hint)}"


def one_line(err: BaseException) -> str:
    """An exception as one line: its message with line breaks folded."""
    text = str(err) if not isinstance(err, OSError) or not err.filename else _os_message(err)
    return " ".join(text.split()) or type(err).__name__


def _os_message(err: OSError) -> str:
    return f"{err.filename}: {err.strerror or type(err).__name__}"


def run_command(
    prog: str,
    description: str,
    option_types: Sequence[type],
    run: Callable[..., Any],
    argv: Sequence[str] | None,
) -> int:
    """Parses `argv` into the option dataclasses and calls `run(*options)`.

    Returns `run`'s result when it is an exit status (an int), else 0.

    Bad input of any kind (unparsable arguments, a bad value, a missing or unreadable file,
    a `ValueError` from the run, a model the Hub cannot deliver) ends with one line on stderr
    and exit status 2, whether the command runs through `ambigdocs` or `python -m`.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        options = parse_argv(prog, description, option_types, argv)
        status = run(*options)
        return status if isinstance(status, int) else 0
    except INPUT_ERRORS as err:
        print(f"{prog}: error: {one_line(err)}", file=sys.stderr)
        return 2
    except Exception as err:
        # A model or file the Hub cannot deliver: one line, as through `ambigdocs` (the same
        # handler), so that `python -m` runs behave alike; anything else is raised again.
        from generation.cli import _hub_unreachable

        return _hub_unreachable(prog, err)
