"""The one loader of a data source: the rows of split S of `--data-dir DIR`, `--config NAME` or
`--dataset ID_OR_FOLDER_OR_FILE`, as every command that reads a data set names it (`answer`,
`retrieve`, `evaluate`). Its errors name the option and the split, the same for every command.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from generation.io.records import read_records


def load_split_rows(
    *,
    data_dir: str | os.PathLike | None = None,
    config: str | None = None,
    dataset: str | os.PathLike | None = None,
    split: str = "test",
) -> list[dict]:
    """The rows of one split of exactly one data source, as plain dicts in data order (not
    validated: each command checks the fields it reads): `data_dir`, a folder of the release's raw
    files (`test.json`, ...); `config`, `sample` (offline) or `default` (the release, downloaded);
    `dataset`, a JSON/JSONL file of rows, a folder `datasets` reads (`save_to_disk`, `ambigdocs
    export`) or a Hub dataset id.

    Raises:
        ValueError: none or several sources; a source that is not there or cannot be loaded
            (a Hub that cannot be reached ends in seconds); an unknown split; no rows. The
            message names the option (`--data-dir X`, `--dataset X`, `--split S`).
    """
    given = [n for n, v in (("data_dir", data_dir), ("config", config), ("dataset", dataset)) if v]
    if len(given) != 1:
        raise ValueError("give one data set: --data-dir DIR, --config NAME or --dataset ID")
    if dataset and Path(dataset).is_file():
        try:
            rows = read_records(dataset)
        except ValueError as err:
            raise with_flag("--dataset", err) from None
    else:
        from metric.ambigdocs_metric.hub_errors import fail_fast_without_network

        fail_fast_without_network()  # a Hub id (or the release) without a network: seconds
        with _quiet_datasets():
            rows = _load_with_datasets(data_dir, config, dataset, split)
    if not rows:
        # An empty file or `[]` would otherwise "succeed" with an empty output.
        source = f"--data-dir {data_dir}" if data_dir else f"--config {config}" if config else None
        raise ValueError(f"{source or f'--dataset {dataset}'}, split {split!r}: no rows")
    return rows


def _load_with_datasets(data_dir, config, dataset, split) -> list[dict]:
    """The rows of a folder, a builder config or a Hub id (everything but a file of rows)."""
    if data_dir or config:
        from ambigdocs import load_ambigdocs

        if data_dir and not Path(data_dir).is_dir():
            raise ValueError(f"--data-dir {data_dir}: not a folder")
        try:
            ds = load_ambigdocs(split, config=config or "default", data_dir=data_dir)
        except ValueError as err:
            raise _name_the_option(err, split, data_dir) from None
        return [dict(r) for r in ds]
    import datasets

    try:
        if Path(dataset).is_dir() and (Path(dataset) / "dataset_info.json").exists():
            ds = datasets.load_from_disk(str(dataset))
            ds = ds[split] if isinstance(ds, datasets.DatasetDict) else ds
        else:
            ds = datasets.load_dataset(str(dataset), split=split)
    except Exception as err:  # noqa: BLE001 - datasets raises many kinds; all mean "cannot load"
        cause = err.__cause__ or err
        reason = (str(cause).strip().splitlines() or [type(cause).__name__])[0][:300]
        raise ValueError(f"--dataset {dataset}: cannot be loaded ({reason})") from None
    return [dict(r) for r in ds]


def _name_the_option(err: ValueError, split: str, data_dir) -> ValueError:
    """The loader's error with the option it is about: `--split` for a split the data does not
    have (datasets says only 'Unknown split'), `--data-dir` for a folder without the files."""
    message = str(err)
    if message.startswith("Unknown split"):
        return ValueError(f"--split {split}: {message}")
    if data_dir and message.startswith(f"{data_dir}:"):
        return ValueError(f"--data-dir {message}")
    return err


def with_flag(flag: str, err: ValueError) -> ValueError:
    """A file's error (which names the file, line and field), its message starting with the
    option that gave the file (e.g. `--dataset`)."""
    message = str(err)
    return ValueError(message if message.startswith(flag) else f"{flag} {message}")


@contextlib.contextmanager
def _quiet_datasets():
    """No progress bars or notes of datasets' while a split loads: the command's own lines
    are what the user reads (errors still come through)."""
    import datasets

    bars = datasets.is_progress_bar_enabled()
    level = datasets.logging.get_verbosity()
    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    try:
        yield
    finally:
        datasets.logging.set_verbosity(level)
        if bars:
            datasets.enable_progress_bars()
