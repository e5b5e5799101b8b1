"""`ambigdocs export`: write a script-free, Hub-ready copy of AmbigDocs (Parquet shards and a
dataset card), since `datasets` >= 4 no longer runs loading scripts (docs/datasets.md,
"Exporting a script-free copy").
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import datasets

from ambigdocs import ReleaseDownloadError
from generation.hub import card as dataset_card
from generation.hub import remote
from generation.hub.layout import DEFAULT_MAX_SHARD_BYTES, check_config_name, write_split
from generation.io.outputs import current_umask
from generation.options import check_at_least, option, run_command


def export_dataset(
    configs: Mapping[str, datasets.DatasetDict],
    output_dir: str | os.PathLike,
    repo_id: str = "NAMESPACE/ambigdocs",
    overwrite: bool = False,
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
) -> list[str]:
    """Writes a script-free repository folder holding the given configs.

    The folder is assembled next to OUTPUT_DIR and renamed into place at the end, so a crash
    never leaves a half-written export where a finished one is expected.

    Args:
        configs: {config name: DatasetDict of its splits}.
        output_dir: the folder to create.
        repo_id: the Hub id shown in the card's loading example.
        overwrite: replace an existing, non-empty `output_dir`.
        max_shard_bytes: upper bound on the Arrow size of one Parquet shard.

    Returns:
        The files written, relative to `output_dir` (README.md last).

    Raises:
        ValueError: `output_dir` exists and is not empty (without `overwrite`), or a config or
            split name is not usable.
        FileExistsError: `output_dir` is a file.
    """
    output_dir = check_output_dir(output_dir, overwrite)
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.", dir=output_dir.parent))
    # mkdtemp makes the folder 0700; the export is an ordinary output: it follows the umask.
    staging.chmod(0o777 & ~current_umask())
    try:
        card = dataset_card.new_card(repo_id)
        written = []
        for config, splits in configs.items():
            check_config_name(config)
            for split, ds in splits.items():
                written += write_split(ds, staging, config, split, max_shard_bytes)
                dataset_card.set_split(card, config, split, ds)
        # Inside the staging folder, which is renamed into place as a whole: a plain write.
        (staging / "README.md").write_text(dataset_card.render(card), encoding="utf-8")
        written.append("README.md")
        old = output_dir.with_name(f".{output_dir.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        if output_dir.exists():
            os.replace(output_dir, old)
        os.replace(staging, output_dir)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return written


def check_output_dir(output_dir: str | os.PathLike, overwrite: bool = False) -> Path:
    """Checks that `output_dir` can be written before anything is built.

    Raises:
        FileExistsError: it is a file.
        ValueError: a folder above it is a file, or it is not empty (without `overwrite`).
    """
    output_dir = Path(output_dir)
    if output_dir.is_file():
        raise FileExistsError(f"{output_dir}: is a file")
    blocking = next((p for p in output_dir.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise ValueError(f"{output_dir}: cannot be created, {blocking} is a file")
    if output_dir.is_dir() and any(output_dir.iterdir()) and not overwrite:
        raise ValueError(f"{output_dir}: exists and is not empty (use --overwrite to replace it)")
    return output_dir


@dataclasses.dataclass
class ExportOptions:
    """The options of `ambigdocs export`."""

    output_dir: str = option(
        help="the folder to write (must not exist or be empty)", positional=True
    )
    config: list[Literal["default", "sample"]] = option(
        ["default"], help="builder config to export; repeat for several", repeat=True
    )
    data_dir: str | None = option(
        None, help="raw files in the release layout (train.json, dev.json, test.json) for `default`"
    )
    repo_id: str = option("NAMESPACE/ambigdocs", help="Hub id named in the card")
    overwrite: bool = option(False, help="replace a non-empty output_dir")
    cache_dir: str | None = option(None, help="datasets cache for the build")
    max_shard_mb: int = option(
        DEFAULT_MAX_SHARD_BYTES >> 20, help="Parquet shard size in MiB (at least 1)"
    )

    def __post_init__(self) -> None:
        check_at_least(self, 1, "max_shard_mb")  # a shard size of 0 MiB makes no shards
        if len(set(self.config)) != len(self.config):
            raise ValueError("each --config may be given once")
        if self.data_dir and "default" not in self.config:
            raise ValueError("--data-dir feeds the `default` config; add --config default")


def _build(args: ExportOptions, kwargs: dict) -> dict[str, datasets.DatasetDict]:
    """Each config built with the AmbigDocs builder (`--data-dir` feeds `default`), with
    `--data-dir` named in the errors about that folder."""
    from ambigdocs import load_ambigdocs

    try:
        return {
            name: load_ambigdocs(
                config=name, data_dir=args.data_dir if name == "default" else None, **kwargs
            )
            for name in args.config
        }
    except ValueError as err:
        if args.data_dir and str(err).startswith(f"{Path(args.data_dir)}:"):
            raise ValueError(f"--data-dir {err}") from None
        raise
    except ReleaseDownloadError as err:  # say what works offline
        raise ValueError(
            f"{err.reason}; give the raw files with --data-dir RAW, or export the bundled "
            "sample with --config sample"
        ) from None


def run(args: ExportOptions) -> int:
    """Builds the configs and writes the export; prints what it wrote."""
    kwargs = {"cache_dir": args.cache_dir} if args.cache_dir else {}
    remote.check_repo_id(args.repo_id)  # the card's loading example must be a usable id
    check_output_dir(args.output_dir, args.overwrite)  # before the build, which may be long
    if args.cache_dir and Path(args.cache_dir).exists() and not Path(args.cache_dir).is_dir():
        raise ValueError(f"--cache-dir {args.cache_dir}: a file, not a folder")
    configs = _build(args, kwargs)
    written = export_dataset(
        configs, args.output_dir, args.repo_id, args.overwrite, args.max_shard_mb << 20
    )
    for config, splits in configs.items():
        for split, ds in splits.items():
            print(f"{config}/{split}: {len(ds):,} rows")
    print(f"wrote {len(written)} files to {args.output_dir}")
    return 0


def main(argv: list[str] | None = None) -> int:
    description = "Write a script-free, Hub-ready copy of AmbigDocs (Parquet + dataset card)."
    return run_command("ambigdocs export", description, [ExportOptions], run, argv)


if __name__ == "__main__":
    sys.exit(main())
