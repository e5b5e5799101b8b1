"""`ambigdocs build seed`: one seed document pair per disambiguation page (docs/pipeline.md §2).

The authors' rule by default (the pair test is `overlap.py`); resumable per batch of pages.
Options, output and statistics: docs/building-seed.md, "seed".
"""

from __future__ import annotations

import operator
import os
import random
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal

from generation.datagen import overlap as ov
from generation.datagen.stage_io import check_output, stage_main, write_stage
from generation.io.passages import collect_passages
from generation.io.records import gc_paused, read_json
from generation.io.resume import discard_work, open_work
from generation.options import check_at_least, option

TIE_BREAKS = ("first", "random")
METHODS = ("fast", "dp")
_BATCH_PAGES = 256


def read_disambiguation_map(path: str | os.PathLike) -> dict[str, list[str]]:
    """Reads and checks a disambiguation map `{page: [entity titles]}`.

    Raises:
        ValueError: the file is empty, not UTF-8 (naming the line and byte), not valid JSON
            (naming the line and column), not a JSON object of string lists (naming the page
            and the entry), or holds no page.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(21, "is a folder, not the map JSON", str(path))
    if not path.stat().st_size:
        raise ValueError(f"{path}: the file is empty (expected a JSON object {{page: [titles]}})")
    data = read_json(path)  # names the file, line and field (a lone surrogate included)
    if not isinstance(data, dict):
        raise ValueError(
            f"{path}: expected a JSON object {{page: [entity titles]}}, got a {type(data).__name__}"
        )
    if not data:
        raise ValueError(f"{path}: the map holds no page")
    for page, titles in data.items():
        if not isinstance(titles, list):
            raise ValueError(
                f"{path}: page {page!r}: the entities must be a list of titles, "
                f"got a {type(titles).__name__}"
            )
        for i, title in enumerate(titles):
            if not isinstance(title, str):
                raise ValueError(
                    f"{path}: page {page!r}, entity {i}: a title must be a string, got {title!r}"
                )
    return data


def kept_pages(
    mapping: Mapping[str, Sequence[str]], min_entities: int = 2, max_entities: int = 10
) -> dict[str, list[str]]:
    """The pages with min..max entities (counted as listed), in map order."""
    return {
        page: list(titles)
        for page, titles in mapping.items()
        if min_entities <= len(titles) <= max_entities
    }


def entity_passages(
    collected: Mapping[str, Sequence[tuple[str, str]]],
) -> dict[str, list[tuple[str, str]]]:
    """Each title's passages without its last one (usually a fragment of an article)."""
    return {title: list(ps[:-1]) for title, ps in collected.items() if len(ps) > 1}


def select_seed_pair(
    page: str,
    titles: Sequence[str],
    passages: Mapping[str, Sequence[tuple[str, str]]],
    tie_break: str = "first",
    seed: int = 0,
) -> dict | None:
    """The seed pair of one page, by the fast method (identical to the authors' DP).

    Args:
        page: the page title (the output's surface_name).
        titles: its entities in map order.
        passages: title -> [(pid, text), ...], already without the last passage; titles that are
            missing have no passages.
        tie_break: `first` (the authors: first in loop order) or `random` (seeded by seed+page).
        seed: the random tie-break's seed.

    Returns:
        The output record, or None when the page has no candidate pair.
    """
    positions = [i for i, t in enumerate(titles) if passages.get(t)]
    if len(positions) < 2:
        return None
    # A page allocates tens of thousands of small tuples that hold no reference cycles; each 700
    # allocations would otherwise start a collection that scans them (up to twice as slow).
    with gc_paused():
        return _select_fast(page, titles, passages, positions, tie_break, seed)


def _select_fast(page, titles, passages, positions, tie_break, seed) -> dict | None:
    """`select_seed_pair` once the positions with passages are known (at least two)."""
    # Prepare each distinct entity once (a title may be listed twice on a page).
    prepared: dict[str, list[ov.PreparedPassage]] = {}
    for i in positions:
        if titles[i] not in prepared:
            prepared[titles[i]] = [ov.PreparedPassage(text) for _, text in passages[titles[i]]]

    # A candidate needs a 4-word sequence common to two entity positions. Set operations in C
    # find those sequences; in real pages most passages hold none and never reach the pair loop.
    seen: set = set()
    shared: set = set()
    for i in positions:
        gram_sets = [p.grams for p in prepared[titles[i]]]
        for grams in gram_sets:
            shared |= grams & seen
        seen.update(*gram_sets)  # after the loop: a repeat within one position is not shared
    if not shared:
        return None
    # Per position: its passages that hold a shared sequence, with those sequences, in order.
    active = {
        t: [(k, p, p.grams & shared) for k, p in enumerate(ps) if not p.grams.isdisjoint(shared)]
        for t, ps in prepared.items()
    }

    best_n, ties = 0, []
    first_wins = tie_break == "first"
    ceiling = ov.MAX_EXCLUSIVE - 1  # the largest candidate: no later pair beats it
    for x, i in enumerate(positions):
        a_active = active[titles[i]]
        if not a_active:
            continue
        for j in positions[x + 1 :]:
            b_active = active[titles[j]]
            for k, a, a_shared in a_active:
                for m, b, b_shared in b_active:
                    if a_shared.isdisjoint(b_shared):
                        continue  # n <= 3
                    n, start = ov.pair_overlap(a, b)
                    if n > best_n:
                        best_n, ties = n, [(i, j, k, m, start)]
                    elif n and n == best_n and not first_wins:
                        ties.append((i, j, k, m, start))
            if first_wins and best_n == ceiling:
                break  # no later pair can be strictly longer
        if first_wins and best_n == ceiling:
            break
    if not ties:
        return None
    i, j, k, m, start = ties[0] if first_wins else _rng(seed, page).choice(ties)
    words = ov.overlap_words(prepared[titles[i]][k], best_n, start)
    return _record(page, titles, passages, (i, j, k, m), words)


def select_seed_pair_dp(page, titles, passages, tie_break="first", seed=0) -> dict | None:
    """The same selection with the authors' quadratic DP on every pair (slow; for checking)."""
    best_n, ties = 0, []
    for i in range(len(titles)):
        for j in range(i + 1, len(titles)):
            if titles[i] not in passages or titles[j] not in passages:
                continue
            for k, (_, text_a) in enumerate(passages[titles[i]]):
                for m, (_, text_b) in enumerate(passages[titles[j]]):
                    words = ov.reference_overlap(text_a, text_b)
                    n = len(words.split())
                    if not ov.MIN_EXCLUSIVE < n < ov.MAX_EXCLUSIVE:
                        continue
                    if n > best_n:
                        best_n, ties = n, [((i, j, k, m), words)]
                    elif n == best_n and tie_break == "random":
                        ties.append(((i, j, k, m), words))
    if not ties:
        return None
    where, words = ties[0] if tie_break == "first" else _rng(seed, page).choice(ties)
    return _record(page, titles, passages, where, words)


def _rng(seed: int, page: str) -> random.Random:
    # A string seed is hashed deterministically (not with the per-process hash()), so the pick
    # does not depend on the process or on --num-proc.
    return random.Random(f"{seed}\t{page}")


def _record(page, titles, passages, where, words) -> dict:
    i, j, k, m = where
    documents = [(titles[i], passages[titles[i]][k]), (titles[j], passages[titles[j]][m])]
    return {
        "surface_name": page,
        "documents": [{"pid": pid, "title": t, "text": text} for t, (pid, text) in documents],
        "overlap": words,
    }


def _select_task(task, tie_break: str, seed: int, method: str) -> tuple[str, dict | None]:
    page, titles, passages = task
    select = select_seed_pair if method == "fast" else select_seed_pair_dp
    return page, select(page, titles, passages, tie_break=tie_break, seed=seed)


def run(
    passages: str | os.PathLike,
    disambiguation: str | os.PathLike,
    output: str | os.PathLike,
    num_proc: int = 1,
    tie_break: str = "first",
    seed: int = 0,
    method: str = "fast",
    min_entities: int = 2,
    max_entities: int = 10,
    max_passages: int = 20,
    progress: bool = True,
    overwrite: bool = False,
) -> dict:
    """Runs the seed stage (docs/building-seed.md, "seed").

    Args:
        passages: the DPR passage TSV.
        disambiguation: the map JSON `{page: [entity titles]}`.
        output: the output JSONL (or .parquet).
        num_proc: worker processes for the pair search (pages are independent).
        tie_break: `first` (authors) or `random` (seeded, per page).
        seed: seed of the random tie-break.
        method: `fast` (default) or `dp` (the authors' quadratic DP; identical output).
        min_entities / max_entities: pages kept (authors: 2..10).
        max_passages: entities with more passages have none (authors: 20).
        progress: show progress bars.
        overwrite: discard an interrupted run's work instead of resuming it.

    Returns:
        The statistics as saved next to the output.

    Raises:
        ValueError: bad options, a malformed map or passage file (naming the page or line).
        ResumeRefused: an interrupted run's work was made with other options or inputs.
    """
    _check_options(tie_break, method, num_proc)
    check_output(output)
    mapping = read_disambiguation_map(disambiguation)
    pages = kept_pages(mapping, min_entities, max_entities)
    if not pages:
        raise ValueError(
            f"{disambiguation}: none of its {len(mapping)} pages has "
            f"{min_entities}..{max_entities} entities (--min-entities, --max-entities)"
        )
    # What the finished pages depend on: work made from other inputs or options is refused.
    settings = {
        "tie_break": tie_break,
        "seed": seed,
        "min_entities": min_entities,
        "max_entities": max_entities,
        "max_passages": max_passages,
    }
    key, inputs = operator.itemgetter("surface_name"), (passages, disambiguation)
    with open_work(output, key, settings, overwrite=overwrite, inputs=inputs) as work:
        todo = {p: t for p, t in pages.items() if p not in work.done}
        collected, counts = {}, {}
        if todo or not work.records:
            collected, counts = _collect_needed(passages, todo, max_passages, progress)
        usable = entity_passages(collected)
        _select_pairs(todo, usable, work, tie_break, seed, method, num_proc, progress)
        by_page = {r["surface_name"]: r["selected"] for r in work.records}

    records = [by_page[p] for p in pages if by_page.get(p) is not None]
    if not records:
        print(f"seed: warning: no page has a seed pair; {output} is empty", file=sys.stderr)
    limits = (min_entities, max_entities, max_passages)
    stats = _statistics(mapping, pages, records, counts, usable, limits)
    stats.update(tie_break=tie_break, method=method)
    if len(pages) > len(todo):
        # Passages are read only for the pages still to do: the title counts cover those.
        stats["pages_resumed_from_interrupted_run"] = len(pages) - len(todo)
        stats["title_counts_cover"] = "only the pages computed in this run"
    saved = write_stage(output, records, stats, "seed")
    discard_work(output)
    return saved


def _check_options(tie_break: str, method: str, num_proc: int) -> None:
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {TIE_BREAKS}, got {tie_break!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if num_proc < 1:
        raise ValueError(f"num_proc must be >= 1, got {num_proc}")


def _collect_needed(passages, todo: Mapping[str, list[str]], max_passages: int, progress: bool):
    """Streams the passage file once, keeping the passages of the titles the pages to do name."""
    with gc_paused():  # millions of short-lived rows, no cycles among them
        wanted = {t for titles in todo.values() for t in titles}
        collected, counts = collect_passages(passages, wanted, max_passages, progress)
    if wanted and not counts:
        # Every page would come out without a pair: most likely the wrong file.
        raise ValueError(
            f"{passages}: none of the {len(wanted)} entity titles of the map is a title "
            "(third column) of this passage file"
        )
    return collected, counts


def _select_pairs(todo, usable, work, tie_break, seed, method, num_proc, progress) -> None:
    """Selects each page's pair (in worker processes when asked), saving batches as they finish."""
    from tqdm.auto import tqdm

    worker = partial(_select_task, tie_break=tie_break, seed=seed, method=method)
    bar = tqdm(total=len(todo), desc="seed pairs", unit="page", disable=not progress)
    # (page, titles, the passages of its titles), made as the workers take them
    tasks = ((p, ts, {t: usable[t] for t in set(ts) if t in usable}) for p, ts in todo.items())
    batch, pool = [], None
    try:
        if num_proc > 1 and len(todo) > 1:
            import multiprocessing

            pool = multiprocessing.get_context("spawn").Pool(num_proc)
            results = pool.imap(worker, tasks, chunksize=8)
        else:
            results = map(worker, tasks)
        for page, record in results:
            batch.append({"surface_name": page, "selected": record})
            bar.update()
            if len(batch) >= _BATCH_PAGES:
                work.append(batch)
                batch = []
        work.append(batch)
    finally:
        if pool is not None:
            pool.terminate()
        bar.close()


def _statistics(mapping, pages, records, counts, usable, limits) -> dict:
    """The counts the stage reports: pages kept and selected, titles found, overlap lengths."""
    min_entities, max_entities, max_passages = limits
    lengths = Counter(len(r["overlap"].split()) for r in records)
    wanted = {t for titles in pages.values() for t in titles}
    return {
        "pages_in_map": len(mapping),
        f"pages_with_{min_entities}_to_{max_entities}_entities": len(pages),
        "pages_selected": len(records),
        "pages_without_candidate": len(pages) - len(records),
        "titles_needed": len(wanted),
        "titles_found": len(counts),
        f"titles_over_{max_passages}_passages": sum(n > max_passages for n in counts.values()),
        "titles_with_passages_after_dropping_last": len(usable),
        **{f"overlap_length_{n}": lengths[n] for n in sorted(lengths)},
    }


@dataclass(kw_only=True)
class SeedOptions:
    passages: str = option(help="DPR passage TSV (id, text, title)")
    disambiguation: str = option(help="map JSON {page: [entity titles]}")
    output: str = option(help="output JSONL (or .parquet)")
    num_proc: int = option(1, help="worker processes")
    tie_break: Literal["first", "random"] = option(
        "first", help="first: the first tied pair in loop order (authors); random: seeded per page"
    )
    seed: int = option(0, help="seed of --tie-break random")
    method: Literal["fast", "dp"] = option(
        "fast", help="fast, or dp: the authors' quadratic DP (identical output, slow)"
    )
    min_entities: int = option(2, help="pages with fewer entities are skipped")
    max_entities: int = option(10, help="pages with more entities are skipped")
    max_passages: int = option(20, help="entities with more passages have none")
    progress: bool = option(True, help="show progress bars (--no-progress hides them)")
    overwrite: bool = option(False, help="discard an interrupted run's work")

    def __post_init__(self):
        # Checked when the options are made: `build all` reports them before any stage runs.
        check_at_least(self, 1, "num_proc", "max_passages")
        check_at_least(self, 0, "min_entities")
        if isinstance(self.min_entities, int):
            check_at_least(self, self.min_entities, "max_entities")


OPTIONS = (SeedOptions,)
DESCRIPTION = "Select one seed document pair per disambiguation page (docs/pipeline.md §2)."
main = stage_main("seed", __name__)

if __name__ == "__main__":
    sys.exit(main())
