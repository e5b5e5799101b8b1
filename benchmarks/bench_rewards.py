"""Benchmark: the trl rewards (`generation/rewards.py`) on 4,096 completions, against a naive
per-call scorer.

The completions and rows are `bench_evaluate.py`'s synthetic test-split-shaped examples (2-10
gold documents, five shown 100-word passages with Wikipedia's share of non-ASCII text, answers
of about 55 words), passed as trl passes them: one list per column. It times, in this process,
best of `--repeat`:

- naive: `tests/reference_scorer.py`, the rules of docs/metric.md written per call (every score
  re-normalises every string it needs), called once per completion;
- ours: one reward call on the whole batch (`entity_answer_recall`, and `k_precision`, which
  also reads every shown document), for plain and for conversational completions, and the five
  rewards of docs/training.md's recipe called one after the other, as trl does (the later
  ones reuse the batch's scores). Every timing starts from a fresh batch.

It checks that both give the same scores for every completion, and prints times and ratios.

    .venv/bin/python benchmarks/bench_rewards.py [--n 4096] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks"), str(REPO / "tests")]

import reference_scorer as ref  # noqa: E402
from bench_evaluate import make_results  # noqa: E402

from generation import rewards  # noqa: E402


def best(fn, repeat: int) -> tuple[float, object]:
    """The best time of `repeat` calls, each on a fresh batch (the rewards' cache emptied)."""
    times, out = [], None
    for _ in range(repeat):
        rewards._last.clear()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    rows = make_results(args.n)
    completions = [r["gen_answer"] for r in rows]
    chat = [[{"role": "assistant", "content": c}] for c in completions]
    columns = {k: [r[k] for r in rows] for k in ("qid", "question", "ambiguous_entity")}
    columns.update(documents=[r["documents"] for r in rows], docs=[r["docs"] for r in rows])

    def naive(with_kp: bool):
        return [
            ref.score(c, r, r["docs"] if with_kp else None)
            for c, r in zip(completions, rows, strict=False)
        ]

    recipe = ("entity_answer_recall", "category", "answer_recall", "k_precision", "length")
    timings = {
        "naive, recalls and category": best(lambda: naive(False), max(1, args.repeat // 2)),
        "naive, with K-Precision": best(lambda: naive(True), max(1, args.repeat // 2)),
        "entity_answer_recall": best(
            lambda: rewards.entity_answer_recall(completions=completions, **columns), args.repeat
        ),
        "entity_answer_recall, chat": best(
            lambda: rewards.entity_answer_recall(completions=chat, **columns), args.repeat
        ),
        "k_precision": best(
            lambda: rewards.k_precision(completions=completions, **columns), args.repeat
        ),
        "five rewards (the recipe)": best(
            lambda: [getattr(rewards, f)(completions=chat, **columns) for f in recipe],
            args.repeat,
        ),
    }
    want = timings["naive, with K-Precision"][1]
    got_ear = timings["entity_answer_recall"][1]
    got_kp = timings["k_precision"][1]
    mismatches = sum(
        abs(w[2] - e) > 1e-9 or abs(w[5] - k) > 1e-9
        for w, e, k in zip(want, got_ear, got_kp, strict=True)
    )
    mismatches += got_ear != timings["entity_answer_recall, chat"][1]

    print(f"{args.n} completions scored in one call, in process, best of {args.repeat}")
    for label, (t, _) in timings.items():
        print(f"  {label:32s} {t:7.3f} s {args.n / t:9.0f} completions/s")
    naive_lexical = timings["naive, recalls and category"][0]
    naive_kp = timings["naive, with K-Precision"][0]
    print(
        f"  entity_answer_recall vs naive    {naive_lexical / timings['entity_answer_recall'][0]:6.1f}x"
    )
    print(f"  k_precision vs naive with K-P    {naive_kp / timings['k_precision'][0]:6.1f}x")
    print(f"  identical scores                 {'yes' if not mismatches else f'NO ({mismatches})'}")
    if mismatches:
        sys.exit(1)


if __name__ == "__main__":
    main()
