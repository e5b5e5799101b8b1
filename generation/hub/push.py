"""`ambigdocs push`: add or replace one split of a script-free AmbigDocs dataset on the Hub, in
one commit, after checking every name and row offline (docs/datasets.md, "Publishing a new split").
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets
import pyarrow as pa
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, DatasetCard

from ambigdocs import FEATURES, parse_row, raw_file_names, read_raw_rows
from generation.hub import card as dataset_card
from generation.hub import remote
from generation.hub.layout import (
    check_config_name,
    check_split_name,
    split_pattern,
    write_split,
)
from generation.io.records import check_utf8
from generation.options import option, run_command

REPO_TYPE = "dataset"
# Files of a dataset repository that are not data (never counted as unexported data files).
# fnmatch's `*` also matches `/`: "*.md" covers README.md and ".*" covers .gitattributes.
_NOT_DATA = ("*.md", "*.py", "*.txt", "*.yaml", "*.yml", ".*")


def check_features(features: datasets.Features, source: str) -> None:
    """Checks that `features` hold the release's columns with the release's types.

    Raises:
        ValueError: a column is missing or has another type (the message names both).
    """
    for name, expected in FEATURES.items():
        if name not in features:
            raise ValueError(f"{source}: column {name!r} is missing")
        if features[name] != expected:
            raise ValueError(f"{source}: column {name!r} is {features[name]}, expected {expected}")


def _dataset_from_rows(rows: list[dict], source: str) -> datasets.Dataset:
    """A Dataset of validated rows: the release's features, plus inferred ones for extras."""
    if not rows:
        raise ValueError(f"{source}: no rows")
    extras = list(dict.fromkeys(k for row in rows for k in row if k not in FEATURES))
    features = datasets.Features(FEATURES)
    if extras:
        extra_rows = [{k: row.get(k) for k in extras} for row in rows]
        try:
            features.update(datasets.Dataset.from_list(extra_rows).features)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as err:
            raise ValueError(
                f"{source}: the extra fields {extras} do not have one type across rows ({err})"
            ) from None
    return datasets.Dataset.from_list(rows, features=features)


def _check_unique_qids(qids: list[int], source: str) -> None:
    first: dict[int, int] = {}
    for index, qid in enumerate(qids):
        if (j := first.setdefault(qid, index)) != index:
            raise ValueError(f"{source}, row {index}: field 'qid' repeats qid {qid} (row {j})")


def _read_folder_card(folder: Path) -> DatasetCard:
    """The dataset card of an export folder; a README that is not UTF-8 is named."""
    path = folder / "README.md"
    data = path.read_bytes()
    check_utf8(path, data)
    return DatasetCard(data.decode("utf-8") or "---\n---\n")  # empty: no YAML yet


def _is_export_folder(folder: Path) -> bool:
    if (folder / "README.md").is_file() and dataset_card.card_configs(_read_folder_card(folder)):
        return True
    return any(folder.rglob("*.parquet"))


def read_source(
    source: str | Path, split: str, config: str = "default", source_config: str | None = None
) -> datasets.Dataset:
    """Reads and validates the split to push.

    Args:
        source: a raw file, a folder in the release layout, or an export folder.
        split: the split to push (picks the file in a raw folder or the split of an export).
        config: the target config (picks the export folder's config of that name, if any).
        source_config: the export folder's config to read (default: `config` if the folder
            has it, else its only config).

    Returns:
        The split with the release's features (plus any extra columns).

    Raises:
        ValueError: the source is missing, malformed, or ambiguous.
    """
    source = Path(source)
    if source.is_file() and source_config is not None:
        raise ValueError(
            f"--source-config {source_config}: {source} is a file, not an export folder"
        )
    if source.is_file():
        rows = list(read_raw_rows(source, keep_extra=True))
        _check_unique_qids([r["qid"] for r in rows], str(source))
        return _dataset_from_rows(rows, str(source))
    if not source.is_dir():
        raise ValueError(f"{source}: no such file or folder")
    if _is_export_folder(source):
        return _read_export_split(source, split, config, source_config)
    if source_config is not None:  # silently ignored, it would push what was not asked for
        raise ValueError(f"--source-config {source_config}: {source} is not an export folder")
    for name in raw_file_names(split):
        if (source / name).is_file():
            return read_source(source / name, split)
    raise ValueError(f"{source}: no file for split {split!r} (looked for {raw_file_names(split)})")


def _read_export_split(
    folder: Path, split: str, config: str, source_config: str | None
) -> datasets.Dataset:
    card = _read_folder_card(folder)
    names = list(dataset_card.card_configs(card)) or ["default"]
    name = source_config or (config if config in names else (names[0] if len(names) == 1 else None))
    if source_config is not None and source_config not in names:
        raise ValueError(
            f"--source-config {source_config}: {folder} has no such config (it has {names})"
        )
    if name not in names:
        raise ValueError(f"{folder}: pick one of its configs {names} with --source-config")
    import pyarrow.parquet as pq

    # An empty or cut-short Parquet file is named (from its footer alone); `datasets` would
    # fail in its builder, naming no file.
    for path in sorted(folder.rglob("*.parquet")):
        try:
            pq.read_metadata(path)
        except (pa.ArrowInvalid, OSError) as err:
            raise ValueError(f"{path}: not a readable Parquet file ({err})") from None
    loaded = datasets.load_dataset(str(folder), name=name)
    if split not in loaded:
        raise ValueError(f"{folder}: config {name!r} has no split {split!r} ({list(loaded)})")
    ds = loaded[split]
    where = f"{folder} ({name}/{split})"
    check_features(ds.features, where)
    # Parquet written by other tools may hold anything the types allow: validate the rows too.
    for index, row in enumerate(ds):
        parse_row(row, source=where, index=index)
    _check_unique_qids(list(ds["qid"]), where)
    return ds


def _match(path: str, patterns: Sequence) -> bool:
    """Whether `path` matches a pattern; an item may be a list of them (a `data_files` path)."""
    return any(
        fnmatch.fnmatchcase(path, p) if isinstance(p, str) else _match(path, p) for p in patterns
    )


def _config_patterns(entry: dict) -> list[str | list[str]]:
    """Every file pattern a config reads, whatever form its `data_files` has."""
    files = entry.get("data_files")
    data_dir = entry.get("data_dir")
    if files is None:
        # No data_files: the loader takes every file under data_dir (or the whole repository).
        return [f"{data_dir.rstrip('/')}/*" if data_dir else "*"]
    items = [files] if isinstance(files, str) else list(files)
    patterns: list[str] = []
    for item in items:
        paths = item["path"] if isinstance(item, dict) else item
        patterns += [paths] if isinstance(paths, str) else list(paths)
    if data_dir:
        patterns = [f"{data_dir.rstrip('/')}/{p}" for p in patterns]
    return patterns


def plan_push(
    dataset: datasets.Dataset,
    repo_id: str,
    split: str,
    config: str,
    state: remote.RepoState,
    card_text: str | None,
    workdir: Path,
) -> tuple[list, str]:
    """Works out the commit that adds or replaces one split, writing its files under workdir.

    Args:
        dataset, repo_id, split, config: the validated split and where it goes (names checked).
        state: the repository as read.
        card_text: its README.md (None: none yet).
        workdir: a scratch folder for the Parquet shards.

    Returns:
        (operations, new README.md text).

    Raises:
        ValueError: the push would touch other splits, the config's features differ, the
            config declares its files in a form other than `{split, path}` items, the
            repository holds data files its card does not describe, or it holds `NAME.py`
            (a loading script, which makes `datasets` refuse the whole repository).
    """
    script = f"{repo_id.split('/')[-1]}.py"
    if script in state.files:  # datasets >= 4 would refuse the whole repository
        raise ValueError(
            f"{repo_id}: holds {script}, a loading script: datasets >= 4 refuses to load a "
            f"repository holding a script named after it. Delete it first "
            f"(HfApi().delete_file({script!r}, {repo_id!r}, repo_type='dataset')) or push to "
            "another repository"
        )
    card = DatasetCard(card_text) if card_text else dataset_card.new_card(repo_id)
    configs = dataset_card.card_configs(card)
    data_like = [f for f in state.files if not _match(f, _NOT_DATA)]
    if data_like and not configs:
        raise ValueError(
            f"{repo_id}: holds data files ({', '.join(data_like[:3])}...) but its card has no "
            "`configs`; pushing would hide them. Export the data set (`ambigdocs export`) into a "
            "new repository and push there."
        )
    old_features = getattr(dataset_card.card_infos(card).get(config), "features", None)
    if old_features is not None and old_features != dataset.features:
        raise ValueError(
            f"{repo_id}: config {config!r} has features {old_features}, this split has "
            f"{dataset.features}; all splits of a config share features, use another --config"
        )

    # Files of this split now, and of every other split of every config (never touched).
    own_items = dataset_card.split_entries(configs.get(config, {}), config, repo_id)
    old_patterns = [item["path"] for item in own_items if item["split"] == split]
    other_patterns = [item["path"] for item in own_items if item["split"] != split]
    for name, entry in configs.items():
        if name != config:
            other_patterns += _config_patterns(entry)
    # Undeclared leftovers under this split's own pattern (e.g. shards of an earlier layout)
    # would be read as part of it: they are replaced too, so the card and the files agree.
    old_patterns.append(split_pattern(config, split))
    old_files = [f for f in state.files if _match(f, old_patterns)]
    new_files = write_split(dataset, workdir, config, split)
    for path in old_files + new_files:
        if _match(path, other_patterns):
            raise ValueError(
                f"{repo_id}: {path} also belongs to another split; refusing to touch it"
            )

    dataset_card.set_split(card, config, split, dataset)
    readme = dataset_card.render(card)
    operations: list = [CommitOperationDelete(f) for f in old_files if f not in new_files]
    operations += [CommitOperationAdd(f, str(workdir / f)) for f in new_files]
    operations.append(CommitOperationAdd("README.md", readme.encode("utf-8")))
    return operations, readme


def push_split(
    source: str | Path,
    repo_id: str,
    split: str,
    config: str = "default",
    *,
    source_config: str | None = None,
    **publish_options: Any,
):
    """Validates SOURCE, then adds or replaces `config`/`split` in a Hub dataset repository.

    Args:
        source: a raw file, a raw folder, or an export folder (see `read_source`).
        repo_id, split, config: where it goes.
        source_config: the config to read from an export folder.
        **publish_options: `private`, `revision`, `create_pr`, `dry_run`, `api`, `out`, as
            `remote.publish` takes them.

    Returns:
        The commit's `CommitInfo`, or None on a dry run.

    Raises:
        ValueError: a name or the source is invalid (found before any Hub call), the card
            cannot be extended, or `create_pr` names a branch that does not exist.
        Exception: what the Hub client raises (see `remote.publish`); the error boundary
            (`generation/boundary.py`) turns it into one line.
    """
    # Everything that can be checked offline is checked before the first Hub call.
    remote.check_repo_id(repo_id)
    check_split_name(split)
    check_config_name(config)
    dataset = read_source(source, split, config, source_config)
    with tempfile.TemporaryDirectory(prefix="ambigdocs-push-") as tmp:
        return remote.publish(
            repo_id,
            REPO_TYPE,
            functools.partial(plan_push, dataset, repo_id, split, config, workdir=Path(tmp)),
            f"Add or replace split {config}/{split} ({len(dataset):,} rows)",
            verb="push",
            what=f"{config}/{split} ({len(dataset):,} rows) to",
            read_card=True,
            **publish_options,
        )


@dataclasses.dataclass
class PushOptions:
    """The options of `ambigdocs push`."""

    source: str = option(
        help="raw file, raw folder (release layout), or export folder", positional=True
    )
    repo_id: str = option(help="NAMESPACE/NAME of the dataset repo")
    split: str = option(help="the split to add or replace")
    config: str = option("default", help="the config it belongs to")
    source_config: str | None = option(None, help="config to read from an export folder")
    private: bool = option(False, help="create the repository private")
    revision: str | None = option(None, help="branch to commit to (created if missing)")
    create_pr: bool = option(False, help="open a pull request (against an existing --revision)")
    dry_run: bool = option(False, help="print what would be uploaded")


def main(argv: list[str] | None = None) -> int:
    description = "Add or replace one split of a script-free AmbigDocs dataset on the Hub."

    def run(o: PushOptions) -> None:
        push_split(**dataclasses.asdict(o))

    return run_command("ambigdocs push", description, [PushOptions], run, argv)


if __name__ == "__main__":
    sys.exit(main())
