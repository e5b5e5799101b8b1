"""`ambigdocs build all --config pipeline.yaml`: the whole chain, resumable (docs/pipeline.md §7).

Runs the config's stages in chain order, wiring each missing input to the previous stage's
output, and skips a stage that is done. The config, the wiring and when a stage counts as done:
docs/building-stages.md, "The whole chain".
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, asdict
from pathlib import Path

from generation import secrets
from generation.boundary import guard, one_line
from generation.datagen import STAGES
from generation.datagen.stage_io import call_stage, stats_path
from generation.io.records import atomic_write_json, check_utf8
from generation.io.resume import normalise, partial_path
from generation.options import option as _option
from generation.options import parse_mapping, run_command

ORDER = ("gather", "seed", "questions", "filter", "expand", "split")

# Options whose relative values are resolved inside the workdir.
PATH_OPTIONS = frozenset(
    {"input", "output", "output_dir", "passages", "disambiguation", "exemplars", "dump", "adapter"}
)
# (stage, option) <- (earlier stage, option): wiring used when the config leaves an input out.
WIRING: dict[tuple[str, str], tuple[str, str]] = {
    ("seed", "disambiguation"): ("gather", "output"),
    ("questions", "input"): ("seed", "output"),
    ("filter", "input"): ("questions", "output"),
    ("expand", "input"): ("filter", "output"),
    ("expand", "passages"): ("seed", "passages"),
    ("expand", "disambiguation"): ("seed", "disambiguation"),
    ("split", "input"): ("expand", "output"),
}
OUTPUT_OPTIONS = ("output", "output_dir")
STATE_FILE = ".build-all-state.json"


def load_config(path: str | os.PathLike) -> tuple[Path, dict[str, dict]]:
    """Reads the YAML config.

    Returns:
        (workdir, {stage: options}) with option names in snake_case, stages in chain order,
        relative path options resolved inside the workdir and missing inputs wired.

    Raises:
        ValueError: not a mapping, an unknown stage, a stage without an output option, or a
            stage whose options are not a mapping (the message names the stage).
    """
    import yaml

    path = Path(path)
    raw = path.read_bytes()
    check_utf8(path, raw)
    try:
        data = yaml.safe_load(raw) or {}
    except yaml.YAMLError as err:
        raise ValueError(f"{path}, {one_line(err)}") from None
    if not isinstance(data, dict) or not isinstance(data.get("stages"), dict):
        raise ValueError(f"{path}: expected a mapping with a `stages:` mapping")
    unknown = set(data) - {"workdir", "stages"}
    if unknown:
        raise ValueError(f"{path}: unknown top-level keys {sorted(unknown)} (workdir, stages)")
    workdir = (path.parent / str(data.get("workdir", "."))).resolve()
    stages: dict[str, dict] = {}
    for name, options in data["stages"].items():
        if name not in ORDER:
            raise ValueError(f"{path}: stage {name!r} is not one of {list(ORDER)}")
        if options is None:
            options = {}
        if not isinstance(options, dict):
            raise ValueError(f"{path}: stage {name!r}: options must be a mapping")
        stages[name] = {str(k).replace("-", "_"): v for k, v in options.items()}
    ordered = {name: stages[name] for name in ORDER if name in stages}
    for (stage, option), (source, source_option) in WIRING.items():
        if stage in ordered and option not in ordered[stage]:
            value = ordered.get(source, {}).get(source_option)
            if value is not None:
                ordered[stage][option] = value
    for name, options in ordered.items():
        for key in PATH_OPTIONS & set(options):
            if options[key] is not None:
                options[key] = str(workdir / str(options[key]))
        if not any(k in options for k in OUTPUT_OPTIONS):
            raise ValueError(f"{path}: stage {name!r}: give its `output` (or `output_dir`)")
    return workdir, ordered


def command_line(options: Sequence[object]) -> list[str]:
    """The command-line arguments that give these option dataclasses: the options that differ
    from their defaults, `--no-X` for a flag turned off, several values after a list option."""
    argv: list[str] = []
    for values in options:
        for f in dataclasses.fields(values):
            value = getattr(values, f.name)
            default = f.default_factory() if f.default_factory is not MISSING else f.default
            if value == default:
                continue
            flag = "--" + f.name.replace("_", "-")
            if isinstance(value, bool):
                argv.append(flag if value else "--no-" + f.name.replace("_", "-"))
            elif isinstance(value, (list, tuple)):
                argv += [flag, *map(str, value)]
            elif value is not None:
                argv += [flag, str(value)]
    return argv


def _mtime(path: Path) -> float:
    """A file's modification time; a folder's newest file's."""
    if path.is_dir():
        times = [p.stat().st_mtime for p in path.rglob("*") if p.is_file()]
        return max(times, default=path.stat().st_mtime)
    return path.stat().st_mtime


def _output_of(options: Mapping[str, object]) -> Path:
    for key in OUTPUT_OPTIONS:
        if options.get(key):
            return Path(str(options[key]))
    raise ValueError("stage without output")  # load_config guarantees one


def input_paths(options: Mapping[str, object]) -> list[Path]:
    """Every option value that names an existing file or folder, other than the output."""
    output = _output_of(options)
    found = []
    for key, value in options.items():
        if key in OUTPUT_OPTIONS:
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, str) and item and Path(item).exists() and Path(item) != output:
                found.append(Path(item))
    return found


def why_not_done(
    name: str, options: Mapping[str, object], state: Mapping, record: dict
) -> str | None:
    """None when the stage is done (docs/building-stages.md), else the reason it must run
    (`record`: its options as the state file records them)."""
    output = _output_of(options)
    if not output.exists():
        return f"{output} does not exist"
    if output.is_file() and not stats_path(output).exists():
        return f"{stats_path(output)} does not exist"
    if output.is_dir() and not any(output.glob("*.stats.json")):
        return f"{output} holds no statistics file (*.stats.json)"
    if partial_path(output).exists():
        return f"an interrupted run left {partial_path(output)}"
    recorded = state.get(name)
    if recorded is not None and recorded.get("options") != record:
        return "its options changed since the last run"
    done_at = _mtime(output)
    for path in input_paths(options):
        if _mtime(path) > done_at:
            return f"{path} is newer than {output}"
    return None


def run(
    config_path: str | os.PathLike,
    overwrite: Iterable[str] = (),
    dry_run: bool = False,
    only: Sequence[str] | None = None,
) -> int:
    """Runs the stages of the config that are not done, in chain order.

    Args:
        config_path: the YAML config.
        overwrite: stages to run again from scratch even when done (their interrupted work is
            discarded; the later ones then run as their input is newer).
        dry_run: print the plan only.
        only: run only these stages (others are neither run nor checked).

    Returns:
        0, or the exit status of the first stage that failed.

    Raises:
        ValueError: a bad config (naming the stage and option), or an overwritten/only stage
            that is not in it.
    """
    workdir, stages = load_config(config_path)
    overwrite = set(overwrite)
    for name in overwrite | set(only or ()):
        if name not in stages:
            raise ValueError(f"stage {name!r} is not in {config_path}")
    # Every stage's options are checked before the first one runs (and loads a model).
    parsed = {n: _stage_options(n, o, f"{config_path}: stage {n!r}") for n, o in stages.items()}
    state_path = workdir / STATE_FILE
    state = _read_state(state_path)
    for name in [s for s in stages if only is None or s in set(only)]:
        record = _record(parsed[name])
        reason = (
            "overwrite" if name in overwrite else why_not_done(name, stages[name], state, record)
        )
        if reason is None:
            print(f"[build all] {name}: done, skipped")
            continue
        command = secrets.mask(f"ambigdocs build {name} {' '.join(command_line(parsed[name]))}")
        print(f"[build all] {name}: runs ({reason}): {command}")
        if dry_run:
            continue
        started = time.time()
        status = _run_stage(name, parsed[name], overwrite=name in overwrite)
        if status != 0:
            print(f"[build all] {name} failed with status {status}", file=sys.stderr)
            return status
        state[name] = {"options": record, "seconds": round(time.time() - started, 1)}
        workdir.mkdir(parents=True, exist_ok=True)
        atomic_write_json(state_path, state)
    return 0


def _run_stage(name: str, options: tuple, overwrite: bool) -> int:
    options = [
        dataclasses.replace(o, overwrite=True) if overwrite and hasattr(o, "overwrite") else o
        for o in options
    ]
    run = importlib.import_module(STAGES[name][0]).run
    # The stage's own name in its error line; a failed stage stops the chain.
    status = guard(f"ambigdocs build {name}", lambda: call_stage(run, options))
    gc.collect()  # drops the stage's models before the next stage loads its own
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()
    return status


def _stage_options(name: str, options: Mapping[str, object], where: str) -> tuple:
    """The stage's options parsed into its option dataclasses (checked: names, types, values)."""
    module = importlib.import_module(STAGES[name][0])
    known = {f.name for t in module.OPTIONS for f in dataclasses.fields(t)}
    for key in options:
        # `no_progress: true` was the argv form; the option is now the flag itself.
        if key not in known and key.startswith("no_") and key[3:] in known:
            raise ValueError(f"{where}: option {key!r} is now `{key[3:]}: false`")
    return parse_mapping(module.OPTIONS, options, where)


def _record(options: Sequence[object]) -> dict:
    """Every option of a stage, defaults filled in, as the state file records them (secrets
    as `***`)."""
    # YAML scalars may be dates etc.: record what JSON round-trips, so old == new compares.
    return secrets.scrub(normalise({k: v for o in options for k, v in asdict(o).items()}))


def _read_state(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return {}  # a damaged record only costs reruns
    return data if isinstance(data, dict) else {}


@dataclasses.dataclass
class AllOptions:
    """The options of `ambigdocs build all`."""

    config: str = _option(help="YAML config (see configs/pipeline.yaml)")
    overwrite: list[str] = _option(
        [],
        help="run these stages again from scratch, even when done (and so every stage after)",
        metavar="STAGE",
    )
    only: list[str] | None = _option(None, help="run only these stages", metavar="STAGE")
    dry_run: bool = _option(False, help="print what would run, and why")


def main(argv: list[str] | None = None) -> int:
    def run_all(o: AllOptions) -> int:
        return run(o.config, overwrite=o.overwrite, dry_run=o.dry_run, only=o.only)

    description = "Run the data pipeline from a YAML config; skips the stages already done."
    return run_command("ambigdocs build all", description, [AllOptions], run_all, argv)


if __name__ == "__main__":
    sys.exit(main())
