"""Where the splits of a script-free AmbigDocs repository live, and writing them as Parquet.

One layout for `export` and `push`, the one `Dataset.push_to_hub` uses, so that either tool can
extend a repository the other wrote:

    data/{split}-00000-of-00002.parquet        config `default`
    {config}/{split}-00000-of-00001.parquet    any other config

Split names are `\\w+` (a `datasets` rule), so the pattern `{folder}/{split}-*` of one split never
matches the files of another (`test-*` does not match `test_ood-...`).
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import datasets

# About the shard size `push_to_hub` uses; the release's train split is far below it.
DEFAULT_MAX_SHARD_BYTES = 500 << 20

_NAME = re.compile(r"\w+(\.\w+)*")
_CONFIG = re.compile(r"[A-Za-z0-9][\w.-]*")


def check_split_name(split: str) -> str:
    """Returns `split` if `datasets` accepts it as a split name.

    Raises:
        ValueError: it is not (e.g. it has a dash).
    """
    if not _NAME.fullmatch(split or "") or split == "all":
        raise ValueError(f"split name {split!r}: use letters, digits and underscores (not 'all')")
    return split


def check_config_name(config: str) -> str:
    """Returns `config` if it is usable as a config name and a folder name.

    Raises:
        ValueError: it is not.
    """
    if not _CONFIG.fullmatch(config or "") or config == "data":
        raise ValueError(
            f"config name {config!r}: use letters, digits, '_', '-', '.' (and not 'data')"
        )
    return config


def split_folder(config: str) -> str:
    """The repository folder holding the Parquet files of `config`."""
    return "data" if config == "default" else check_config_name(config)


def split_pattern(config: str, split: str) -> str:
    """The `data_files` pattern (relative to the repository root) of one split."""
    return f"{split_folder(config)}/{check_split_name(split)}-*"


def write_split(
    dataset: datasets.Dataset,
    root: str | os.PathLike,
    config: str,
    split: str,
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
) -> list[str]:
    """Writes one split as Parquet shards under `root` in the repository layout.

    The features travel inside the Parquet schema metadata as well as in the card, so a reader
    that ignores the card still gets `List` of structs and int64 qids.

    `max_shard_bytes` bounds the in-memory (Arrow) size of one shard.

    Returns:
        The written files, relative to `root`, POSIX-style, in shard order.

    Raises:
        ValueError: `max_shard_bytes` is not positive.
    """
    if max_shard_bytes <= 0:
        raise ValueError(f"max_shard_bytes must be positive, got {max_shard_bytes}")
    num_shards = max(1, math.ceil(dataset.data.nbytes / max_shard_bytes))
    folder = Path(root) / split_folder(config)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for index in range(num_shards):
        name = f"{check_split_name(split)}-{index:05d}-of-{num_shards:05d}.parquet"
        dataset.shard(num_shards, index, contiguous=True).to_parquet(str(folder / name))
        written.append(f"{split_folder(config)}/{name}")
    return written
