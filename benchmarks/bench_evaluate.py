"""Benchmark: `ambigdocs evaluate --no-df1` against a straightforward per-call scorer.

Generates a results file shaped like the test split (7,220 answered examples; 2-10 gold
documents per question as in the paper's Table 1; 100-word passages with Wikipedia's share of
non-ASCII text (accents, en dashes, curly quotes); five shown documents; answers of about 55
words), then times, as whole processes on the same file:

- naive: `tests/reference_scorer.py`, the rules of docs/metric.md written per call (every score
  re-normalises every string it needs), run over the file in a plain loop;
- ours: `ambigdocs evaluate FILE --output-dir DIR --no-df1`.

It checks that both give the same category and scores for every example, and prints
examples/second and the ratio.

    .venv/bin/python benchmarks/bench_evaluate.py [--n 7220] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ANSWER_COUNTS = [
    (2, 0.495),
    (3, 0.266),
    (4, 0.133),
    (5, 0.064),
    (6, 0.015),
    (7, 0.01),
    (8, 0.008),
    (9, 0.005),
    (10, 0.004),
]
FILLER = (
    "the a of in and was is to for on by with as at from that which it his her their an".split()
)


def make_vocab(rng: random.Random, n: int = 6000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(n)]


def unicode_touch(rng, word: str) -> str:
    """Wikipedia text is not ASCII: accents, en dashes in ranges, curly quotes and apostrophes."""
    r = rng.random()
    if r < 0.4:
        return word.replace("e", "\u00e9", 1).replace("u", "\u00fc", 1)
    if r < 0.6:
        return f"{rng.randint(1800, 1950)}\u2013{rng.randint(1951, 2018)}"
    if r < 0.8:
        return f"{word}\u2019s"
    return f"\u201c{word}\u201d"


def sentence(rng, vocab, k):
    words = [rng.choice(FILLER) if rng.random() < 0.35 else rng.choice(vocab) for _ in range(k)]
    words[0] = words[0].capitalize()
    for i in range(len(words)):
        if rng.random() < 0.08:
            words[i] = words[i] + rng.choice([",", ".", ";", "'s", ")"])
        elif rng.random() < 0.03:
            words[i] = unicode_touch(rng, words[i])
    return " ".join(words)


def make_results(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    vocab = make_vocab(rng)
    sizes, weights = zip(*ANSWER_COUNTS, strict=True)
    rows = []
    for qid in range(n):
        sn_words = [w.capitalize() for w in rng.sample(vocab, rng.randint(1, 3))]
        sn = " ".join(sn_words)
        docs = []
        for j in range(rng.choices(sizes, weights)[0]):
            qualifier = " ".join(w.capitalize() for w in rng.sample(vocab, rng.randint(1, 2)))
            if rng.random() < 0.1:
                qualifier = unicode_touch(rng, qualifier)
            title = f"{sn} ({qualifier})" if rng.random() < 0.6 else f"{qualifier} {sn_words[-1]}"
            answer = " ".join(rng.sample(vocab, rng.randint(1, 8)))
            text = sentence(rng, vocab, 45) + f" {answer} " + sentence(rng, vocab, 45)
            docs.append({"title": title, "text": text, "pid": str(qid * 20 + j), "answer": answer})
        shown = rng.sample(docs, min(5, len(docs)))
        parts = []
        for d in shown:
            r = rng.random()
            if r < 0.45:
                parts.append(f"{d['title']} is known for {d['answer']}.")
            elif r < 0.7:
                parts.append(f"{sn} was {d['answer']} in the provided context.")
        parts.append(sentence(rng, vocab, rng.randint(5, 40)))
        rows.append(
            {
                "qid": qid,
                "ambiguous_entity": sn + (" (disambiguation)" if rng.random() < 0.1 else ""),
                "question": f"What is {sn} known for?",
                "documents": docs,
                "docs": [{"pid": d["pid"], "title": d["title"], "text": d["text"]} for d in shown],
                "gen_answer": "\n".join(parts) if rng.random() < 0.2 else " ".join(parts),
            }
        )
    return rows


NAIVE_SCRIPT = """
import json, sys
sys.path.insert(0, {tests!r})
import reference_scorer as ref
rows = json.load(open(sys.argv[1]))
with_kp = sys.argv[3] == "kp"
out = [ref.score(r["gen_answer"], r, r["docs"] if with_kp else None) for r in rows]
json.dump(out, open(sys.argv[2], "w"))
"""


def best_time(cmd: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=7220)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--save", type=Path, help="also keep the generated results file here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        results = tmp / "results.json"
        results.write_text(json.dumps(make_results(args.n)))
        if args.save:
            args.save.write_bytes(results.read_bytes())
        naive_script = tmp / "naive.py"
        naive_script.write_text(NAIVE_SCRIPT.format(tests=str(REPO / "tests")))
        naive_out = tmp / "naive.json"
        ours_dir = tmp / "ours"
        ambigdocs = str(Path(sys.executable).parent / "ambigdocs")
        naive_cmd = [sys.executable, str(naive_script), str(results)]

        # The recalls and categories only (no K-Precision): the scope of the authors' script.
        naive_lexical = best_time([*naive_cmd, str(tmp / "lexical.json"), "-"], args.repeat)
        naive = best_time([*naive_cmd, str(naive_out), "kp"], args.repeat)
        ours = best_time(
            [ambigdocs, "evaluate", str(results), "--output-dir", str(ours_dir), "--no-df1"],
            args.repeat,
        )

        # Same numbers, example by example.
        want = json.loads(naive_out.read_text())
        got = [
            json.loads(line) for line in (ours_dir / "per_example.jsonl").read_text().splitlines()
        ]
        fields = (
            "answer_recall",
            "entity_recall",
            "entity_answer_recall",
            "answer_length",
            "category",
            "k_precision",
        )
        mismatches = 0
        for w, g in zip(want, got, strict=True):
            for k, v in zip(fields, w, strict=True):
                same = g[k] == v if k in ("category", "answer_length") else abs(g[k] - v) <= 1e-9
                mismatches += not same
        size_mb = results.stat().st_size / 1e6

    print(
        f"{args.n} answered examples ({size_mb:.1f} MB results file), whole process, best of {args.repeat}"
    )
    for label, t in [
        ("naive, recalls and categories only", naive_lexical),
        ("naive, with K-Precision", naive),
        ("ambigdocs evaluate (all scores)", ours),
    ]:
        print(f"  {label:36s} {t:6.2f} s {args.n / t:8.0f} examples/s")
    print(f"  speed-up against the first          {naive_lexical / ours:6.1f}x")
    print(f"  speed-up against the second         {naive / ours:6.1f}x")
    print(
        f"  identical scores                    {'yes' if mismatches == 0 else f'NO ({mismatches} differ)'}"
    )
    if mismatches:
        sys.exit(1)


if __name__ == "__main__":
    main()
