"""Streaming the DPR passage file (`psgs_w100.tsv`: 21M rows `id<TAB>text<TAB>title`, ~13 GB)
exactly as the authors' `csv.reader(delimiter="\\t")` loader read it (any row whose first field
is `id` is the header), and keeping only the passages of the titles a stage needs."""

from __future__ import annotations

import csv
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from generation.io.records import check_utf8

# Passages are about 600 bytes, but a few are far longer; the csv default limit (128 KiB) would
# make a single odd row abort a multi-hour run.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))

_LINE_BREAK = re.compile(rb"(\r\n|\r|\n)")


def _counted(lines, update: Callable[[int], object]) -> Iterator:
    """`lines` as they are, their sizes reported to `update` (a progress bar's) in batches."""
    pending = 0
    for line in lines:
        pending += len(line)
        if pending >= 1 << 20:
            update(pending)
            pending = 0
        yield line
    update(pending)


def _text_lines(f, start: int, update: Callable[[int], object], where: list[int]) -> Iterator[str]:
    """The binary file's lines from byte `start`, as text mode with universal newlines reads them.

    `where[0]` is kept at the byte offset just past the last line handed out, so that the caller
    knows where each csv row began. Lines are decoded one by one (a UTF-8 character never holds
    a newline byte); `\r\n` and a lone `\r` become `\n` exactly as `open(path, encoding=...)`
    would turn them, so rows parse as the authors' text-mode loader parses them.
    """
    f.seek(start)
    offset = start
    for raw in _counted(f, update):
        offset += len(raw)
        if b"\r" not in raw:
            where[0] = offset
            yield raw.decode("utf-8")
            continue
        # A lone \r ends a line in text mode too: split there, keeping exact byte offsets.
        parts = _LINE_BREAK.split(raw)  # [text, break, text, break, ..., rest]
        pos = offset - len(raw)
        for k in range(0, len(parts) - 1, 2):
            pos += len(parts[k]) + len(parts[k + 1])
            where[0] = pos
            yield parts[k].decode("utf-8") + "\n"
        if parts[-1]:
            where[0] = offset
            yield parts[-1].decode("utf-8")


def iter_passage_rows(
    path: str | os.PathLike, start: int = 0, progress: bool = True
) -> Iterator[tuple[int, str, str, str]]:
    """Yields (byte offset, pid, text, title) for every passage row of a DPR-style TSV from
    the row at byte `start`: the rows of `iter_passages`, with the offsets retrieval keeps to
    read its hits back (`read_passage_at`) instead of holding 21M passages in memory.

    Raises:
        ValueError: a row has fewer than 3 fields, or the file is not UTF-8; the message names
            the file and the row's byte offset.
    """
    yield from _rows(path, start, progress, offsets=True)


def iter_passages(path: str | os.PathLike, progress: bool = True) -> Iterator[tuple[str, str, str]]:
    """Yields (pid, text, title) for every passage row of a DPR-style TSV, in file order.

    Raises:
        ValueError: a row has fewer than 3 fields, or the file is not UTF-8 (the message names
            the file and line, and byte), or it holds no passage.
        IsADirectoryError: the path is a folder (FileNotFoundError: it does not exist).
    """
    found = False
    for _, pid, text, title in _rows(path, 0, progress, offsets=False):
        found = True
        yield pid, text, title
    if not found:
        # An empty file (or a header alone) would otherwise end a stage "done" with no output.
        raise ValueError(f"{path}: holds no passages (expected rows `id<TAB>text<TAB>title`)")


def _raise_utf8_error(path: Path) -> None:
    """Finds the first line that is not UTF-8 (only when decoding failed: the fast path decodes
    in large chunks, which do not know their line) and raises a ValueError naming it."""
    with path.open("rb") as f:
        for lineno, line in enumerate(f, 1):
            check_utf8(path, line, first_line=lineno)


def _rows(path, start: int, progress: bool, offsets: bool) -> Iterator[tuple[int, str, str, str]]:
    """The one parser of the passage file, behind `iter_passages` and `iter_passage_rows`.

    Without offsets the csv reader reads the file in text mode, exactly as the authors' loader
    did (and ~1.4x faster); with offsets it reads `_text_lines`, the same lines from the bytes.
    The offset is -1 without `offsets`.
    """
    from tqdm.auto import tqdm

    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(21, "is a folder, not the passage TSV", str(path))
    where = [start if offsets else -1]
    with (
        path.open("rb") if offsets else path.open(encoding="utf-8") as f,
        tqdm(
            total=path.stat().st_size,
            initial=start,
            unit="B",
            unit_scale=True,
            desc=f"reading {path.name}",
            disable=not progress,
        ) as bar,
    ):
        lines = _text_lines(f, start, bar.update, where) if offsets else _counted(f, bar.update)
        reader = csv.reader(lines, delimiter="\t")
        while True:
            row_start = where[0]
            try:
                row = next(reader)
            except StopIteration:
                return
            except UnicodeDecodeError as err:
                _raise_utf8_error(path)  # names the line and byte
                raise ValueError(f"{path}: not UTF-8 after byte {max(row_start, 0)}") from err
            if not row:
                continue  # a blank line (e.g. a trailing newline) holds no passage
            if len(row) < 3:
                at = f"row at byte {row_start}" if offsets else f"line {reader.line_num}"
                raise ValueError(
                    f"{path}, {at}: expected 3 tab-separated fields "
                    f"(id, text, title), got {len(row)}: {row[:3]!r}"
                )
            if row[0] == "id":
                continue  # the header row (the authors skip every row whose id is "id")
            yield row_start, row[0], row[1], row[2]


def read_passage_at(f, offset: int) -> tuple[str, str, str]:
    """(pid, text, title) of the row that starts at byte `offset` of the open binary file `f`.

    Raises:
        ValueError: no passage row starts there.
    """
    where = [offset]
    row = next(csv.reader(_text_lines(f, offset, lambda n: None, where), delimiter="\t"), None)
    if row is None or len(row) < 3:
        raise ValueError(f"{f.name}: no passage row starts at byte {offset}")
    return row[0], row[1], row[2]


def collect_passages(
    path: str | os.PathLike,
    titles: Iterable[str],
    max_per_title: int = 20,
    progress: bool = True,
) -> tuple[dict[str, list[tuple[str, str]]], dict[str, int]]:
    """The passages of the wanted `titles` (exact match with the file's title column), in file
    order, for titles with at most `max_per_title` of them (docs/pipeline.md §1: 20).

    Returns:
        (kept, counts): kept maps each wanted title with 1..max_per_title passages to its
        [(pid, text), ...] in file order; counts maps every wanted title found to its number of
        passages (for the statistics).

    Raises:
        ValueError: the file holds no passage row, or a malformed one (see `iter_passages`).
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
