"""Benchmark: Disambig-F1 in `ambigdocs evaluate --qa-model` against the authors' run_qa route.

Builds a random extractive QA model of BERT-base size (768 hidden, 12 layers, 12 heads: the
cost of deepset/roberta-base-squad2) on the real WordPiece tokenizer of all-MiniLM-L6-v2, with
a trained model's low scores for question and padding tokens (tests/qa_models.py: without
them, padding of a random model enters run_qa's candidates and the spans would depend on the
padding, which no trained model does). It saves the model to a temporary folder and generates
answered examples shaped like the test split (2-10 gold documents, long-form answers of 50-100
words of real words that name some of the documents and their answers). Then, as whole
processes on the same file:

- reference: the run_qa route written out (`REFERENCE_SCRIPT`): one (disambiguated question,
  answer) row per scored document, windows padded to 384 tokens with stride 128, evaluation
  batches of 8 in file order, float32, run_qa's post-processing, token F1, mean per example;
- ours: `ambigdocs evaluate FILE --output-dir DIR --qa-model MODEL` (all scores, defaults).

It checks that the per-example Disambig-F1 are identical and prints wall and CPU time, the
speed-up, and a projection to the 7,220 examples of the test split (start-up measured on a
one-example file).

    .venv/bin/python benchmarks/bench_df1.py [--n 48] [--hidden-size 768 --layers 12]
        [--ours-args='' --ours-args='--qa-dtype bfloat16' ...]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))

TEST_SPLIT = 7220

# The authors' route: transformers' run_qa.py evaluation (padding="max_length", batch 8, float32,
# torch.no_grad as Trainer.prediction_step), then its post-processing, written per call.
REFERENCE_SCRIPT = """
import json, sys
import numpy as np
import torch
from transformers import AutoModelForQuestionAnswering, AutoTokenizer
sys.path.insert(0, {repo!r})
from metric.ambigdocs_metric.disambig_f1 import disambiguate_question, postprocess_example
from metric.ambigdocs_metric.scoring import clean_prediction, surface_name, token_f1, tokens

model_dir, results, out = sys.argv[1:4]
tok = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForQuestionAnswering.from_pretrained(model_dir, dtype=torch.float32).eval()
rows = json.load(open(results))
pairs = []  # (example, question, context, gold answer)
for i, r in enumerate(rows):
    y = clean_prediction(r["gen_answer"])
    sn = surface_name(r["ambiguous_entity"])
    for d in r["documents"][:5]:
        pairs.append((i, disambiguate_question(r["question"], sn, d["title"]), y, d["answer"]))
enc = tok([p[1].lstrip() for p in pairs], [p[2] for p in pairs], truncation="only_second",
          max_length=384, stride=128, return_overflowing_tokens=True,
          return_offsets_mapping=True, padding="max_length")
starts, ends = [], []
with torch.no_grad():
    for b in range(0, len(enc["input_ids"]), 8):
        o = model(**{{k: torch.tensor(enc[k][b:b + 8])
                     for k in ("input_ids", "attention_mask", "token_type_ids")}})
        starts.extend(o.start_logits.numpy()); ends.extend(o.end_logits.numpy())
windows = [[] for _ in pairs]
for w, j in enumerate(enc["overflow_to_sample_mapping"]):
    seq = enc.sequence_ids(w)
    offs = [o if seq[k] == 1 else None for k, o in enumerate(enc["offset_mapping"][w])]
    windows[j].append((starts[w], ends[w], offs))
f1s = [[] for _ in rows]
spans = 0
for (i, q, y, a), ws in zip(pairs, windows):
    span = postprocess_example(y, ws)
    spans += span not in ("", "empty")
    f1s[i].append(token_f1(tokens(span), tokens(a)))
json.dump({{"df1": [sum(f) / len(f) for f in f1s], "pairs": len(pairs),
            "windows": len(enc["input_ids"]), "spans": spans,
            "tokens": int(sum(sum(m) for m in enc["attention_mask"]))}}, open(out, "w"))
"""


def english_words(tokenizer) -> list[str]:
    """Whole words of the WordPiece vocabulary (real English words, one token or more)."""
    words = [w for w in tokenizer.get_vocab() if w.isalpha() and w.isascii() and len(w) > 2]
    return sorted(words)


def make_results(n: int, words: list[str], seed: int = 0) -> list[dict]:
    """Answered examples: 2-10 gold documents, answers of 50-100 words naming some of them."""
    from bench_evaluate import ANSWER_COUNTS

    rng = random.Random(seed)
    sizes, weights = zip(*ANSWER_COUNTS, strict=True)
    rows = []
    for qid in range(n):
        sn = " ".join(w.capitalize() for w in rng.sample(words, rng.randint(1, 3)))
        docs = []
        for j in range(rng.choices(sizes, weights)[0]):
            qualifier = " ".join(w.capitalize() for w in rng.sample(words, rng.randint(1, 2)))
            title = f"{sn} ({qualifier})" if rng.random() < 0.6 else f"{qualifier} {sn}"
            answer = " ".join(rng.sample(words, rng.randint(1, 6)))
            docs.append({"title": title, "text": "", "pid": str(qid * 20 + j), "answer": answer})
        rows.append(
            {
                "qid": qid,
                "ambiguous_entity": sn,
                "question": f"What is {sn} known for?",
                "documents": docs,
                "gen_answer": long_form_answer(rng, words, sn, docs),
            }
        )
    return rows


def long_form_answer(rng: random.Random, words: list[str], sn: str, docs: list[dict]) -> str:
    """50-100 words: sentences naming some documents and their answers, then filler sentences."""
    target = rng.randint(50, 100)
    parts = []
    for d in rng.sample(docs, rng.randint(0, min(5, len(docs)))):
        who = d["title"] if rng.random() < 0.6 else sn
        parts.append(f"{who} is known for {d['answer']}.")
    while sum(len(p.split()) for p in parts) < target:
        k = rng.randint(6, 18)
        sentence = " ".join(rng.choice(words) for _ in range(k))
        if rng.random() < 0.3:
            sentence += f", in {rng.randint(1800, 2020)}"
        parts.append(sentence.capitalize() + ".")
    rng.shuffle(parts)
    return " ".join(" ".join(parts).split()[:target])


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of a whole child process (CPU: user + system of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def evaluate_cmd(results: Path, out: Path, model: Path, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "generation.cli", "evaluate", str(results), "--output-dir",
            str(out), "--qa-model", str(model), *extra]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=48, help="answered examples (default 48)")
    parser.add_argument("--hidden-size", type=int, default=768)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument(
        "--ours-args",
        action="append",
        help="extra `ambigdocs evaluate` options; one variant per use, each timed and compared "
        "with the reference (e.g. --ours-args='' --ours-args='--qa-dtype bfloat16')",
    )
    args = parser.parse_args()

    from qa_models import minilm_tokenizer, save_qa_model

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = save_qa_model(
            tmp / "qa-model", hidden_size=args.hidden_size, num_layers=args.layers,
            num_heads=args.heads,
        )  # fmt: skip
        rows = make_results(args.n, english_words(minilm_tokenizer()))
        results = tmp / "results.json"
        results.write_text(json.dumps(rows))
        (tmp / "one.json").write_text(json.dumps(rows[:1]))
        script = tmp / "run_qa_route.py"
        script.write_text(REFERENCE_SCRIPT.format(repo=str(REPO)))

        ref = timed([sys.executable, str(script), str(model), str(results), str(tmp / "ref.json")])
        want = json.loads((tmp / "ref.json").read_text())
        describe(args, want, ref)
        differ = 0
        for k, variant in enumerate(args.ours_args or [""]):
            extra = variant.split()
            ours = timed(evaluate_cmd(results, tmp / f"ours{k}", model, extra))
            startup = timed(evaluate_cmd(tmp / "one.json", tmp / f"one{k}", model, extra))
            lines = (tmp / f"ours{k}" / "per_example.jsonl").read_text().splitlines()
            got = [json.loads(line)["disambig_f1"] for line in lines]
            differ += report(args, variant, want, got, ref, ours, startup)
    if differ:
        sys.exit(1)


def describe(args, want: dict, ref) -> None:
    print(
        f"model: random BERT QA, hidden {args.hidden_size}, {args.layers} layers, float32 CPU; "
        f"{args.n} answered examples, {want['pairs']} scored documents, {want['windows']} windows "
        f"of {want['tokens'] / want['windows']:.0f} tokens on average; "
        f"{want['spans']}/{want['pairs']} spans non-empty"
    )
    print(f"{'':34s} {'wall':>8s} {'CPU':>8s}")
    print(f"  run_qa route (384, batch 8)      {ref[0]:7.1f}s {ref[1]:7.1f}s")


def report(args, variant: str, want: dict, got: list[float], ref, ours, startup) -> int:
    """Prints one variant's times against the reference; returns how many examples differ."""
    differ = sum(g != w for g, w in zip(got, want["df1"], strict=True))
    print(f"ambigdocs evaluate --qa-model {variant}".rstrip())
    print(f"  ambigdocs evaluate               {ours[0]:7.1f}s {ours[1]:7.1f}s")
    print(f"  speed-up                         {ref[0] / ours[0]:7.1f}x {ref[1] / ours[1]:7.1f}x")
    print(f"  start-up (a 1-example file)      {startup[0]:7.1f}s {startup[1]:7.1f}s")
    # Start-up once, then the cost per example beyond the one-example file's.
    print(f"  projected, {TEST_SPLIT} examples       {'wall':>8s} {'CPU':>8s}")
    for label, times in (("run_qa route", ref), ("ambigdocs evaluate", ours)):
        minutes = [
            (start + max(t - start, 0.0) / max(args.n - 1, 1) * (TEST_SPLIT - 1)) / 60
            for t, start in zip(times, startup, strict=True)
        ]
        print(f"    {label:28s} {minutes[0]:6.1f}min {minutes[1]:5.1f}min")
    print(f"  identical per-example Disambig-F1 {'yes' if not differ else f'NO ({differ} differ)'}")
    return differ


if __name__ == "__main__":
    main()
