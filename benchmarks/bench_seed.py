"""Benchmark of `ambigdocs build seed` against the authors' quadratic per-pair DP.

    .venv/bin/python benchmarks/bench_seed.py            # ~1 minute on one core
    .venv/bin/python benchmarks/bench_seed.py --pages 20 --max-entities 4   # quicker
    .venv/bin/python benchmarks/bench_seed.py --streaming --distractors 2000000   # memory, ~1 min

Builds a synthetic Wikipedia-like corpus (100-word passages drawn from a Zipf vocabulary, so
common words and short common phrases overlap as in real text, plus planted shared phrases of
3..12 words between entities of a page), writes it as a DPR-style TSV and a disambiguation map,
then times:

- the authors' selection (tests/test_build_seed_reference.py: load everything, full-matrix DP
  on every passage pair), and
- the stage as users run it (`ambigdocs build seed --passages ... --disambiguation ...
  --output ...`, end to end: streaming the TSV, selection, writing output and statistics),

checks that both select the same pair and overlap for every page, and prints the time ratios:
end to end (wall and CPU), and the pair search alone (CPU; no file reading, imports or writing
on either side).
Exit status 1 if the outputs differ.

With `--streaming`: the stage alone, in a fresh process, on the corpus plus `--distractors`
passages of unwanted titles, and on the relevant passages alone: wall time, peak resident memory,
and whether the selection is the same (the file is streamed; memory is bounded by the wanted
titles, not the file).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from test_build_seed_reference import authors_seed  # noqa: E402

from generation.cli import main as ambigdocs  # noqa: E402
from generation.datagen import seed  # noqa: E402
from generation.io.passages import write_passages_tsv  # noqa: E402


def synthetic_corpus(
    pages: int,
    max_entities: int,
    mean_passages: float,
    seed: int,
    max_passages: int = 25,
    distractors: int = 0,
) -> tuple[list[tuple[str, str, str]], dict[str, list[str]]]:
    """(pid, text, title) rows in file order, and the map {page: [entity titles]}."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(20000)]
    cum, total = [], 0.0
    for rank in range(1, len(vocab) + 1):
        total += 1.0 / rank  # Zipf: "the", "of", "and" dominate, as in Wikipedia text
        cum.append(total)
    rows, mapping = [], {}
    for p in range(pages):
        phrases = [rng.choices(vocab, cum_weights=cum, k=rng.randint(3, 12)) for _ in range(3)]
        entities = [f"Name {p} (sense {e})" for e in range(rng.randint(2, max_entities))]
        for ent in entities:
            # Mostly short articles, a few long ones (20+ passages are dropped by the rule).
            for _ in range(min(int(rng.expovariate(1 / mean_passages)) + 1, max_passages)):
                words = rng.choices(vocab, cum_weights=cum, k=100)
                if rng.random() < 0.3:
                    at = rng.randint(0, 90)
                    phrase = rng.choice(phrases)
                    words[at : at + len(phrase)] = phrase
                rows.append((str(len(rows)), " ".join(words), ent))
        mapping[f"Name {p}"] = entities
    rng.shuffle(rows)  # an entity's passages are not contiguous in the file either
    # Passages of titles no page names, streamed past: texts from a small pool (generating
    # millions of Zipf texts would take longer than the benchmark), titles that share words with
    # the wanted ones, spread through the file.
    if distractors:
        pool = [" ".join(rng.choices(vocab, cum_weights=cum, k=100)) for _ in range(997)]
        rows += [
            (f"x{i}", pool[i % len(pool)], f"Name {i % max(pages, 1)} (other {i})")
            for i in range(distractors)
        ]
        rng.shuffle(rows)
    return rows, mapping


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=150)
    ap.add_argument("--max-entities", type=int, default=8)
    ap.add_argument("--mean-passages", type=float, default=4.0, help="mean passages per entity")
    ap.add_argument("--distractors", type=int, default=0, help="passages of unneeded titles")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--num-proc", type=int, default=1)
    ap.add_argument(
        "--streaming",
        action="store_true",
        help="instead of the comparison with the authors: time and peak memory of the stage on "
        "the corpus with --distractors, and its selection against the relevant passages alone",
    )
    args = ap.parse_args(argv)

    rows, mapping = synthetic_corpus(
        args.pages, args.max_entities, args.mean_passages, args.seed, distractors=args.distractors
    )
    if args.streaming:
        return streaming_check(rows, mapping, args.num_proc)
    with tempfile.TemporaryDirectory() as tmp:
        tsv, map_path, out = Path(tmp, "psgs.tsv"), Path(tmp, "map.json"), Path(tmp, "seeds.jsonl")
        write_passages_tsv(tsv, rows)
        map_path.write_text(json.dumps(mapping))

        start, cpu = time.perf_counter(), time.process_time()
        with redirect_stdout(io.StringIO()):
            rc = ambigdocs(
                [
                    "build",
                    "seed",
                    "--passages",
                    str(tsv),
                    "--disambiguation",
                    str(map_path),
                    "--output",
                    str(out),
                    "--num-proc",
                    str(args.num_proc),
                    "--no-progress",
                ]
            )
        fast, fast_cpu = time.perf_counter() - start, time.process_time() - cpu
        if rc != 0:
            print(f"ambigdocs build seed exited with {rc}")
            return 1
        ours = [json.loads(line) for line in out.read_text().splitlines()]

        # The authors' script, end to end: load every passage (as their loader does), then select.
        start, cpu = time.perf_counter(), time.process_time()
        loaded = authors_load_passages(tsv)
        load_cpu = time.process_time() - cpu
        theirs = authors_seed(loaded, mapping)
        slow, slow_cpu = time.perf_counter() - start, time.process_time() - cpu
        authors_search_cpu = slow_cpu - load_cpu

    # Our pair search alone, in memory, no I/O or imports (CPU seconds).
    by_title: dict[str, list[tuple[str, str]]] = {}
    for pid, text, title in rows:
        by_title.setdefault(title, []).append((pid, text))
    usable = seed.entity_passages({t: ps for t, ps in by_title.items() if len(ps) <= 20})
    pages = seed.kept_pages(mapping)
    cpu = time.process_time()
    in_memory = [seed.select_seed_pair(p, ts, usable) for p, ts in pages.items()]
    search_cpu = time.process_time() - cpu

    pairs = _pair_count(rows, mapping)
    print(f"corpus: {len(rows)} passages, {len(mapping)} pages, {pairs} passage pairs compared")
    print(f"pages selected: {len(ours)} (authors: {len(theirs)})")
    print(f"authors' script:      {slow:8.2f} s wall, {slow_cpu:8.2f} s CPU  (load + per-pair DP)")
    print(
        f"ambigdocs build seed: {fast:8.3f} s wall, {fast_cpu:8.3f} s CPU  (end to end, "
        f"--num-proc {args.num_proc}; CPU counts this process only)"
    )
    print(f"speed-up, end to end: {slow / fast:8.0f}x wall, {slow_cpu / fast_cpu:8.0f}x CPU")
    print(
        f"pair search only:     authors {authors_search_cpu:.2f} s CPU, ours {search_cpu:.3f} s CPU"
        f" -> {authors_search_cpu / search_cpu:.0f}x"
    )
    same = ours == theirs == [r for r in in_memory if r is not None]
    print("identical output:", same)
    if not same:
        for a, b in zip(ours, theirs, strict=False):
            if a != b:
                print("first difference:\n ours   ", a, "\n authors", b)
                break
    return 0 if same else 1


# Runs the command and reports the process's own peak memory: VmHWM belongs to the address space
# made by exec (ru_maxrss would also count the forked copy of this benchmark's memory).
_CHILD = (
    "import sys\n"
    "from generation.cli import main\n"
    "rc = main(sys.argv[1:])\n"
    "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
    "print('VmHWM', hwm, file=sys.stderr)\n"
    "sys.exit(rc)\n"
)


def _run_stage(tsv: Path, map_path: Path, out: Path, num_proc: int) -> tuple[float, float]:
    """`ambigdocs build seed` in a fresh process: (wall seconds, peak resident memory in MB)."""
    cmd = [sys.executable, "-c", _CHILD, "build", "seed", "--passages", str(tsv),
           "--disambiguation", str(map_path), "--output", str(out), "--num-proc", str(num_proc),
           "--no-progress"]  # fmt: skip
    start = time.perf_counter()
    res = subprocess.run(
        cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    wall = time.perf_counter() - start
    if res.returncode != 0:
        raise SystemExit(f"ambigdocs build seed failed on {tsv}: {res.stderr[-2000:]}")
    kib = int(res.stderr.rsplit("VmHWM", 1)[1].split()[0])
    return wall, kib / 1024


def streaming_check(rows, mapping, num_proc: int) -> int:
    """The stage on all passages and on the relevant ones alone: same selection, bounded memory."""
    relevant = [r for r in rows if not r[0].startswith("x")]
    with tempfile.TemporaryDirectory() as tmp:
        map_path = Path(tmp, "map.json")
        map_path.write_text(json.dumps(mapping))
        outputs = []
        for name, subset in (("all", rows), ("relevant", relevant)):
            tsv, out = Path(tmp, f"{name}.tsv"), Path(tmp, f"{name}.jsonl")
            write_passages_tsv(tsv, subset)
            size = tsv.stat().st_size / 1e6
            wall, peak = _run_stage(tsv, map_path, out, num_proc)
            print(f"{name:>8}: {len(subset):9d} passages ({size:6.0f} MB file) {wall:7.2f} s wall, "
                  f"peak memory {peak:5.0f} MB (whole process)")  # fmt: skip
            outputs.append(out.read_text())
    same = outputs[0] == outputs[1] and outputs[0].count("\n") > 0
    print(f"pages selected: {outputs[0].count(chr(10))}; identical selection: {same}")
    return 0 if same else 1


def authors_load_passages(path) -> list[tuple[str, str, str]]:
    """Every passage in memory, as the authors' loader reads the TSV (csv, header skipped)."""
    with open(path, encoding="utf-8") as f:
        return [(r[0], r[1], r[2]) for r in csv.reader(f, delimiter="\t") if r[0] != "id"]


def _pair_count(rows, mapping) -> int:
    per_title: dict[str, int] = {}
    for _, _, title in rows:
        per_title[title] = per_title.get(title, 0) + 1
    usable = {t: n - 1 for t, n in per_title.items() if n <= 20}
    total = 0
    for titles in mapping.values():
        if 2 <= len(titles) <= 10:
            for i in range(len(titles)):
                for j in range(i + 1, len(titles)):
                    total += usable.get(titles[i], 0) * usable.get(titles[j], 0)
    return total


if __name__ == "__main__":
    sys.exit(main())
