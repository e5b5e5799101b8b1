"""Streaming the DPR passage file (`psgs_w100.tsv`) and keeping only the titles a stage needs.

The file has 21M rows (~13 GB): `id<TAB>text<TAB>title`, a header row `id text title`, text
quoted the way Python's `csv` module writes it. It is read with `csv.reader(delimiter="\\t")`,
exactly as the authors' loader did (any row whose first field is `id` is the header), so text
with quotes or embedded tabs parses identically. Memory is bounded by the wanted titles: at most
`max_per_title + 1` passages of each are held, and a title with more is dropped at the end.
"""

from __future__ import annotations

import csv
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

# Passages are about 600 bytes, but a few are far longer; the csv default limit (128 KiB) would
# make a single odd row abort a multi-hour run.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


def _counting_lines(f, bar) -> Iterator[str]:
    """Yields the file's lines and advances the progress bar by their size, in batches."""
    pending = 0
    for line in f:
        pending += len(line)
        if pending >= 1 << 20:
            bar.update(pending)
            pending = 0
        yield line
    bar.update(pending)


def iter_passages(path: str | os.PathLike, progress: bool = True) -> Iterator[tuple[str, str, str]]:
    """Yields (pid, text, title) for every passage row of a DPR-style TSV, in file order.

    Args:
        path: the TSV file.
        progress: show a progress bar (over bytes read; characters, for speed).

    Raises:
        ValueError: a row has fewer than 3 fields; the message names the file and line.
    """
    from tqdm.auto import tqdm

    path = Path(path)
    # Opened like the authors' loader (text mode, universal newlines), so rows parse the same.
    with (
        path.open(encoding="utf-8") as f,
        tqdm(
            total=path.stat().st_size,
            unit="B",
            unit_scale=True,
            desc=f"reading {path.name}",
            disable=not progress,
        ) as bar,
    ):
        reader = csv.reader(_counting_lines(f, bar), delimiter="\t")
        for row in reader:
            if not row:
                continue  # a blank line (e.g. a trailing newline) holds no passage
            if len(row) < 3:
                raise ValueError(
                    f"{path}, line {reader.line_num}: expected 3 tab-separated fields "
                    f"(id, text, title), got {len(row)}: {row[:3]!r}"
                )
            if row[0] == "id":
                continue  # the header row (the authors skip every row whose id is "id")
            yield row[0], row[1], row[2]


def collect_passages(
    path: str | os.PathLike,
    titles: Iterable[str],
    max_per_title: int = 20,
    progress: bool = True,
) -> tuple[dict[str, list[tuple[str, str]]], dict[str, int]]:
    """The passages of the wanted titles, in file order, for titles with few enough of them.

    Args:
        path: the DPR-style TSV.
        titles: the titles to keep (exact match with the file's title column).
        max_per_title: titles with more passages than this are dropped (pipeline.md §1: 20).
        progress: show a progress bar.

    Returns:
        (kept, counts): kept maps each wanted title with 1..max_per_title passages to its
        [(pid, text), ...] in file order; counts maps every wanted title found to its number of
        passages (for the statistics).
    """
    wanted = set(titles)
    held: dict[str, list[tuple[str, str]]] = {}
    counts: dict[str, int] = {}
    for pid, text, title in iter_passages(path, progress=progress):
        if title not in wanted:
            continue
        n = counts.get(title, 0) + 1
        counts[title] = n
        if n <= max_per_title:
            held.setdefault(title, []).append((pid, text))
        elif n == max_per_title + 1:
            del held[title]  # too many: its passages are never needed, free them now
    return held, counts


def write_passages_tsv(path: str | os.PathLike, rows: Iterable[tuple[str, str, str]]) -> None:
    """Writes (pid, text, title) rows as a DPR-style TSV with its header (tests, benchmarks)."""
    with Path(path).open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(["id", "text", "title"])
        writer.writerows(rows)
