"""Command options: one typed dataclass per command, parsed one way everywhere, from the command
line (argparse built from the fields) or a mapping (a YAML section); docs/README.md, "The shared
rules every command follows".
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from generation import secrets
from generation.boundary import UsageError, guard, one_line


def option(default: Any = dataclasses.MISSING, help: str = "", **metadata: Any) -> Any:
    """A dataclass field with a help text (`default_factory` for lists)."""
    if isinstance(default, list):
        return dataclasses.field(
            default_factory=lambda: list(default), metadata={"help": help, **metadata}
        )
    return dataclasses.field(default=default, metadata={"help": help, **metadata})


class _Parser(argparse.ArgumentParser):
    # argparse prints the usage and exits; a command reports one line and returns 2.
    def error(self, message: str) -> typing.NoReturn:
        raise UsageError(f"{message} (see --help)")


_TRUE, _FALSE = ("true", "yes", "1", "on"), ("false", "no", "0", "off")


def build_parser(prog: str, description: str, option_types: Sequence[type]) -> _Parser:
    """The argparse parser of the option dataclasses (for `--help`; `parse_argv` parses).

    Every default is left out of the namespace (`SUPPRESS`), so that what comes back is exactly
    what the command line gave.
    """
    parser = _Parser(prog=prog, description=description, argument_default=argparse.SUPPRESS)
    for option_type in option_types:
        hints = typing.get_type_hints(option_type)
        for f in dataclasses.fields(option_type):
            if f.init:
                _add_field(parser, f, hints[f.name])
    return parser


def _add_field(parser: argparse.ArgumentParser, f: dataclasses.Field, hint: Any) -> None:
    meta = f.metadata
    required = _required(f)
    base, many = _unwrap(hint)
    default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    # `required=True` metadata: required, but it may come from an `--args-file` (checked later).
    needed = required or meta.get("required")
    if needed and not meta.get("positional"):
        note = " (required)"
    elif needed or base is bool or default in (None, [], ""):
        note = ""
    else:  # a list default as it is typed (`--config default sample`), not Python's repr
        shown = " ".join(map(str, default)) if isinstance(default, list) else default
        note = f" (default: {shown})"
    # argparse formats help texts with `%`: a literal one (`50% of`) must be doubled.
    kwargs: dict[str, Any] = {"help": (meta.get("help", "") + note).replace("%", "%%")}
    if base is bool:
        kwargs["action"] = argparse.BooleanOptionalAction
    else:
        if typing.get_origin(base) is Literal:
            kwargs["choices"] = typing.get_args(base)
        elif base in (int, float):
            kwargs["type"] = base
        if many and meta.get("repeat"):  # one value per flag, the flag repeated
            kwargs["action"] = "append"
        elif many:
            kwargs.update(nargs="+", action="extend")
        if "metavar" in meta:
            kwargs["metavar"] = meta["metavar"]
    if meta.get("positional"):
        parser.add_argument(f.name, **kwargs)
        return
    names = ["--" + f.name.replace("_", "-"), *meta.get("aliases", ())]
    parser.add_argument(*names, dest=f.name, required=required, **kwargs)


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _unwrap(hint: Any) -> tuple[Any, bool]:
    """(the type of one value, whether the option takes a list) of an annotation."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if typing.get_origin(hint) in (list, tuple):
        return (typing.get_args(hint) or (str,))[0], True
    return hint, False


def _normalise(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """`--num_proc` -> `--num-proc`; `--flag false` / `--flag=no` -> `--no-flag`."""
    flags = {
        a.option_strings[0]
        for a in parser._actions
        if isinstance(a, argparse.BooleanOptionalAction)
    }
    out, tokens = [], [str(t) for t in argv]
    while tokens:
        token = tokens.pop(0)
        name, sep, value = token.partition("=")
        if token == "--" or not name.startswith("--"):
            out += [token, *tokens] if token == "--" else [token]
            tokens = [] if token == "--" else tokens
            continue
        name = "--" + name[2:].replace("_", "-")
        if name in flags and not sep and tokens and tokens[0].lower() in _TRUE + _FALSE:
            sep, value = "=", tokens.pop(0)
        if name in flags and sep:
            if value.lower() not in _TRUE + _FALSE:
                raise UsageError(f"argument {name}: expected true or false, got {value!r}")
            name, sep, value = name if value.lower() in _TRUE else "--no-" + name[2:], "", ""
        out.append(name + sep + value)
    return out


def parse_argv(
    prog: str, description: str, option_types: Sequence[type], argv: Sequence[str]
) -> tuple:
    """Fills the option dataclasses from command-line arguments and checks their values; an
    `args_file` option's YAML mapping supplies the options the command line does not give.

    Raises:
        UsageError: the arguments do not parse (an unknown flag is named, never its value).
        ValueError: a value of the wrong type or out of its choices (names the option), or an
            unreadable `--args-file`.
    """
    parser = build_parser(prog, description, option_types)
    given, unknown = parser.parse_known_intermixed_args(_normalise(parser, argv))
    if unknown:
        raise UsageError(_unknown_message(parser, unknown))
    values, where = vars(given), ""
    if values.get("args_file"):
        where = f"--args-file {values['args_file']}"
        values = {**read_yaml_mapping(values["args_file"], where), **values}
    return parse_mapping(option_types, values, where)


def _unknown_message(parser: argparse.ArgumentParser, unknown: list[str]) -> str:
    """The unknown flags by name only: what follows one may be a secret (`--api-keyy sk-...`)."""
    flags = [t.partition("=")[0] for t in unknown if t.startswith("-")]
    if not flags:
        return f"{len(unknown)} unexpected value(s) (see --help)"
    known = [s for a in parser._actions for s in a.option_strings]
    named = []
    for flag in flags:
        close = difflib.get_close_matches(flag, known, n=1)
        named.append(f"{flag} (did you mean {close[0]}?)" if close else flag)
    return f"unrecognized arguments: {' '.join(named)} (see --help)"


def read_yaml_mapping(path: str, where: str) -> dict:
    """A YAML file holding a mapping of option names to values.

    Raises:
        ValueError: the file cannot be read, is not YAML, or is not a mapping (names `where`).
    """
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else one_line(err)
        raise ValueError(f"{where}: {reason}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a YAML mapping of option names to values")
    return data


def parse_mapping(option_types: Sequence[type], values: Mapping[str, Any], where: str) -> tuple:
    """Fills the option dataclasses from a mapping (a YAML section) and checks their values.

    Keys may use `-` or `_`. Unknown keys, missing required options and values of the wrong type
    are errors that name `where` (when given) and the key. Values under secret names are handed
    to the secret filter, so that no message or record repeats them.
    """
    prefix = f"{where}: " if where else ""
    values = {str(k).replace("-", "_"): v for k, v in values.items()}
    secrets.remember_options(values)
    known = {f.name for t in option_types for f in dataclasses.fields(t) if f.init}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"{prefix}unknown option(s) {unknown}; known: {sorted(known)}")
    parsed = []
    for option_type in option_types:
        fields = [f for f in dataclasses.fields(option_type) if f.init]
        missing = [f.name for f in fields if f.name not in values and _required(f)]
        if missing:
            raise ValueError(f"{prefix}missing required option(s) {missing}")
        try:
            options = option_type(**{f.name: values[f.name] for f in fields if f.name in values})
        except ValueError as err:  # a `__post_init__` check
            raise ValueError(f"{prefix}{err}") from None
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


def run_command(
    prog: str,
    description: str,
    option_types: Sequence[type],
    run: Callable[..., Any],
    argv: Sequence[str] | None,
) -> int:
    """Parses `argv` into the option dataclasses and calls `run(*options)` inside the error
    boundary (`generation/boundary.py`); returns `run`'s result when it is an int, else 0."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return guard(prog, lambda: run(*parse_argv(prog, description, option_types, argv)), argv)
