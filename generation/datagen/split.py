"""`ambigdocs build split`: train / dev / test with no passage shared (docs/pipeline.md §5).

Writes the release's raw layout (`train.json`, `dev.json`, `test.json`) that
`ambigdocs.load_ambigdocs(data_dir=...)` reads. Input, output and the rule: docs/building-seed.md,
"split".
"""

from __future__ import annotations

import os
import random
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ambigdocs import RAW_FILE_NAMES
from generation.datagen.stage_io import format_stats, read_stage, stage_main, stats_path
from generation.io.outputs import check_replaceable, output_lock, replace_folder
from generation.io.records import atomic_write_json
from generation.options import option
from generation.prompts import strip_disambiguation
from metric.ambigdocs_metric.scoring import parse_row, parse_string

SPLITS = ("train", "validation", "test")
DEFAULT_FRACTIONS = (0.6, 0.1, 0.3)


def _file_name(split: str) -> str:
    # The release's own names: train.json, dev.json, test.json.
    return RAW_FILE_NAMES[split][0]


def to_release_row(row: Mapping, qid: int, where: str) -> dict:
    """One input row in the release's raw row schema.

    Args:
        row: the input row.
        qid: its qid.
        where: names the row in error messages (file and row index).

    Raises:
        ValueError: a field is missing or of the wrong type; names the row and the field.
    """

    for field in ("surface_name", "question"):
        parse_string(row.get(field), where, field, non_empty=True)
    release = {
        "qid": qid,
        "ambiguous_entity": strip_disambiguation(row["surface_name"]),
        "question": row["question"],
        "documents": row.get("documents"),
    }
    return parse_row(release, where, release=True, keep_extra=False)


def passage_groups(rows: Sequence[Mapping]) -> list[list[int]]:
    """Indices of rows grouped so that rows sharing a passage id are in one group.

    Returns:
        The groups, each sorted, ordered by their first row.
    """
    parent = list(range(len(rows)))  # union-find over rows

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = x = parent[parent[x]]  # path halving
        return x

    first_row: dict[str, int] = {}
    for i, row in enumerate(rows):
        for doc in row["documents"]:
            a, b = find(i), find(first_row.setdefault(doc["pid"], i))
            parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for i in range(len(rows)):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def check_fractions(fractions: Sequence[float]) -> None:
    """Refuses split shares that are not three non-negative numbers summing to 1 (NaN too)."""
    shares = all(
        isinstance(f, (int, float)) and not isinstance(f, bool) and f >= 0 for f in fractions
    )
    if len(fractions) != 3 or not shares or not abs(sum(fractions) - 1) <= 1e-6:
        raise ValueError(f"fractions must be three non-negative numbers summing to 1: {fractions}")


def assign_splits(
    groups: Sequence[Sequence[int]], seed: int = 0, fractions: Sequence[float] = DEFAULT_FRACTIONS
) -> dict[str, list[int]]:
    """Deals shuffled groups to train / validation / test by cumulative targets.

    Returns:
        split name -> sorted row indices.
    """
    check_fractions(fractions)
    order = list(range(len(groups)))
    random.Random(seed).shuffle(order)
    total = sum(len(g) for g in groups)
    bounds = (fractions[0] * total, (fractions[0] + fractions[1]) * total)
    out: dict[str, list[int]] = {s: [] for s in SPLITS}
    placed = 0
    for g in order:
        split = "train" if placed < bounds[0] else "validation" if placed < bounds[1] else "test"
        out[split].extend(groups[g])
        placed += len(groups[g])
    return {s: sorted(ix) for s, ix in out.items()}


def run(
    input: str | os.PathLike,
    output_dir: str | os.PathLike,
    seed: int = 0,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    progress: bool = True,
) -> dict:
    """Runs the split stage (docs/building-seed.md, "split").

    Args:
        input: the expand stage's output.
        output_dir: where train.json, dev.json, test.json and split.stats.json go.
        seed: the shuffle's seed.
        fractions: train, validation, test shares (authors: 0.6, 0.1, 0.3).
        progress: show a progress bar over the rows.

    Returns:
        The statistics as saved.

    Raises:
        ValueError: a malformed row (naming its index and field), bad fractions, a split that
            comes out empty although its fraction is not 0, or an output folder that holds
            other files than a split's.
    """
    check_fractions(fractions)
    out = Path(output_dir)
    where = f"--output-dir {out}"
    check_replaceable(out, _split_file, where, "a split's")
    with output_lock(out, where):  # one run at a time
        rows = read_stage(input)
        kept, skipped = _release_rows(rows, input, progress)
        groups = passage_groups(kept)
        assigned = assign_splits(groups, seed=seed, fractions=fractions)
        _check_disjoint(kept, assigned)
        _check_not_empty(assigned, fractions, len(kept))
        stats = {
            "stage": "split",
            "output": str(out),
            "input_rows": len(rows),
            **{f"skipped_{status}": n for status, n in skipped.items()},
            "examples": len(kept),
            "passage_groups": len(groups),
            "largest_group": max((len(g) for g in groups), default=0),
            **{split: len(ix) for split, ix in assigned.items()},
            **{f"{split}_fraction": len(ix) / len(kept) for split, ix in assigned.items()},
            "seed": seed,
        }
        # The whole folder at once: readers see the old set or the new one, never a mix.
        with replace_folder(out, _split_file, where, "a split's") as new:
            for split, ix in assigned.items():
                atomic_write_json(new / _file_name(split), [kept[i] for i in ix], indent=None)
            atomic_write_json(stats_path(new / "split"), stats)
        print(format_stats(stats))
        return stats


def _release_rows(rows: Sequence[Mapping], input, progress: bool) -> tuple[list[dict], dict]:
    """The rows with status ok as release rows (qid = position among them), and skip counts."""
    from tqdm.auto import tqdm

    kept, skipped = [], Counter()
    for index, row in enumerate(tqdm(rows, desc="split: checking rows", disable=not progress)):
        if row.get("status", "ok") != "ok":
            skipped[row["status"]] += 1
            continue
        kept.append(to_release_row(row, qid=len(kept), where=f"{input}, row {index}"))
    return kept, skipped


def _check_not_empty(
    assigned: Mapping[str, Sequence[int]], fractions: Sequence[float], examples: int
) -> None:
    # An empty split file is one the loader refuses: fail now, naming it, unless asked for.
    for (split, indices), fraction in zip(assigned.items(), fractions, strict=True):
        if not indices and fraction > 0:
            raise ValueError(
                f"the {split} split comes out empty ({examples} examples in "
                f"{'no' if not examples else 'too few'} passage groups for fractions "
                f"{list(fractions)}); give it fraction 0 or add examples"
            )


# What a split folder holds; anything else in --output-dir is the user's and is never replaced.
def _split_file(path: Path) -> bool:
    return path.name in {_file_name(s) for s in SPLITS} | {stats_path("split").name}


def _check_disjoint(rows: Sequence[Mapping], assigned: Mapping[str, Sequence[int]]) -> None:
    # Cheap, and the property the stage exists for: fail loudly rather than write a leaky split.
    owner: dict[str, str] = {}
    for split, indices in assigned.items():
        for i in indices:
            for doc in rows[i]["documents"]:
                if owner.setdefault(doc["pid"], split) != split:
                    raise AssertionError(
                        f"passage {doc['pid']} is in {owner[doc['pid']]} and {split}"
                    )


@dataclass(kw_only=True)
class SplitOptions:
    input: str = option(help="the expand stage's output (JSONL/JSON/Parquet)")
    output_dir: str = option(help="folder for train.json, dev.json, test.json")
    seed: int = option(0, help="shuffle seed")
    fractions: list[float] = option(
        list(DEFAULT_FRACTIONS), help="train, dev and test shares (three numbers)"
    )
    progress: bool = option(True, help="show progress bars (--no-progress hides them)")

    def __post_init__(self):
        # Checked when the options are made, before the input is read (and, in `build all`,
        # before any stage runs); a value that is not a list is left to the type check.
        if isinstance(self.fractions, (list, tuple)):
            check_fractions(self.fractions)


OPTIONS = (SplitOptions,)
DESCRIPTION = "Split examples 60/10/30 with no passage shared between splits (§5)."
main = stage_main("split", __name__)

if __name__ == "__main__":
    sys.exit(main())
