"""GPU check for Disambig-F1 (a CUDA machine, a few minutes, offline).

    python benchmarks/gpu_check_df1.py [--output gpu_df1.json] [--examples 2000]

On a random BERT-base-sized QA model (768 hidden, 12 layers: the cost of
deepset/roberta-base-squad2) with a trained model's low scores for question and padding tokens
(tests/qa_models.py), and answered examples shaped like the test split (benchmarks/bench_df1.py):
1. the run_qa route (every window padded to 384, batch 8, float32) on a subset: pairs/s;
2. `QAExtractor` float32, batches of similar length padded to their longest, at several token
   budgets: pairs/s, windows/s, tokens/s, peak GPU memory, and whether the spans equal route 1's;
3. the same in bfloat16 and float16: throughput, and how many spans equal float32's (the
   default stays float32 unless every span agrees: half precision is kept only where spans
   provably stay the same, and a random model proves nothing for a trained one);
4. `ambigdocs evaluate --qa-model` end to end on the whole file (a saved model), wall time and
   examples/s, with the projection to the 7,220-example test split.
Prints one JSON summary and writes it to --output. Sections that fail are reported, not fatal.
`--smoke` checks the script itself on CPU with a tiny model (measures nothing).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))

# One section runner for every GPU check: each part reports and the script goes on.
from gpu_check_generation import section  # noqa: E402

TEST_SPLIT = 7220


def scored_pairs(rows: list[dict]) -> tuple[list[str], list[str]]:
    """The (disambiguated question, cleaned answer) pairs Disambig-F1 scores (first 5 docs)."""
    from metric.ambigdocs_metric.disambig_f1 import disambiguate_question
    from metric.ambigdocs_metric.scoring import clean_prediction, surface_name

    questions, contexts = [], []
    for r in rows:
        sn = surface_name(r["ambiguous_entity"])
        for d in r["documents"][:5]:
            questions.append(disambiguate_question(r["question"], sn, d["title"]))
            contexts.append(clean_prediction(r["gen_answer"]))
    return questions, contexts


def timed_extract(qa, questions, contexts) -> tuple[list[str], dict]:
    import torch

    cuda = qa.device.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    qa.extract(questions[:8], contexts[:8])  # warm-up: kernels, allocator
    start = time.perf_counter()
    spans = qa.extract(questions, contexts)
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    windows = qa._tokenize(questions, contexts)
    tokens = sum(len(ids) for ids in windows.input_ids)
    stats = {
        "seconds": round(seconds, 3),
        "pairs_per_s": round(len(questions) / seconds, 1),
        "windows_per_s": round(len(windows.input_ids) / seconds, 1),
        "tokens_per_s": round(tokens / seconds),
    }
    if cuda:
        stats["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    return spans, stats


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--output", default="gpu_df1.json")
    p.add_argument("--examples", type=int, default=2000)
    p.add_argument("--reference-pairs", type=int, default=1000, help="pairs for the run_qa route")
    p.add_argument("--smoke", action="store_true", help="tiny model on CPU: checks the script")
    args = p.parse_args(argv)

    import torch

    if args.smoke:
        args.examples, args.reference_pairs = min(args.examples, 12), min(args.reference_pairs, 16)
    elif not torch.cuda.is_available():
        print("no CUDA device: this check is for a GPU machine", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="gpu-check-df1-") as tmp:
        return run_checks(args, Path(tmp))


@dataclass
class Check:
    """What every section works on."""

    model_dir: Path
    device: str
    rows: list[dict]
    questions: list[str]
    contexts: list[str]
    n_ref: int  # pairs for the run_qa route
    tmp: Path
    summary: dict
    fp32_spans: dict[str, list[str]] = field(default_factory=dict)

    def extractor(self, **options):
        from metric.ambigdocs_metric.disambig_f1 import QAExtractor

        return QAExtractor(str(self.model_dir), device=self.device, **options)


def agreement(spans: list[str], base: list[str]) -> str:
    return f"{sum(a == b for a, b in zip(spans, base, strict=True))}/{len(base)}"


def run_qa_route(c: Check) -> dict:
    qa = c.extractor(batch_size=8, padding="max_length")
    spans, stats = timed_extract(qa, c.questions[: c.n_ref], c.contexts[: c.n_ref])
    c.fp32_spans["reference"] = spans
    return {"pairs": c.n_ref, **stats}


def dynamic_float32(c: Check) -> dict:
    out = {}
    for budget in (8192, 32768, 131072):
        qa = c.extractor(batch_size=4096, batch_tokens=budget)
        spans, stats = timed_extract(qa, c.questions, c.contexts)
        c.fp32_spans.setdefault("dynamic", spans)
        stats["spans_equal_first_budget"] = agreement(spans, c.fp32_spans["dynamic"])
        out[f"batch_tokens_{budget}"] = stats
    if "reference" in c.fp32_spans:
        ref = c.fp32_spans["reference"]
        out["spans_equal_run_qa_route"] = agreement(c.fp32_spans["dynamic"][: c.n_ref], ref)
        ref_rate = c.summary["run_qa_route"]["pairs_per_s"]
        best = max(v["pairs_per_s"] for k, v in out.items() if k.startswith("batch_"))
        out["speedup_vs_run_qa_route"] = round(best / ref_rate, 1)
    return out


def half_precision(c: Check) -> dict:
    out = {}
    for dtype in ("bfloat16", "float16"):
        qa = c.extractor(batch_size=4096, batch_tokens=32768, dtype=dtype)
        spans, out[dtype] = timed_extract(qa, c.questions, c.contexts)
        if "dynamic" in c.fp32_spans:
            out[dtype]["spans_equal_float32"] = agreement(spans, c.fp32_spans["dynamic"])
    return out


def evaluate_end_to_end(c: Check) -> dict:
    from generation.report.evaluate import main as evaluate_main

    results = c.tmp / "results.json"
    results.write_text(json.dumps(c.rows))
    argv = [str(results), "--output-dir", str(c.tmp / "eval"), "--qa-model", str(c.model_dir),
            "--qa-batch-tokens", "32768", "--qa-batch-size", "4096"]  # fmt: skip
    start = time.perf_counter()
    rc = evaluate_main(argv)
    seconds = time.perf_counter() - start
    return {
        "rc": rc,
        "seconds": round(seconds, 1),
        "examples_per_s": round(len(c.rows) / seconds, 1),
        "projected_test_split_s": round(seconds / len(c.rows) * TEST_SPLIT, 1),
    }


def run_checks(args, tmp: Path) -> int:
    """The four sections, on a model saved under `tmp`."""
    import torch
    from bench_df1 import english_words, make_results
    from qa_models import minilm_tokenizer, save_qa_model

    shape = {"hidden_size": 64, "num_layers": 2, "num_heads": 2} if args.smoke else {
        "hidden_size": 768, "num_layers": 12, "num_heads": 12}  # fmt: skip
    model_dir = save_qa_model(tmp / "qa-model", **shape)
    rows = make_results(args.examples, english_words(minilm_tokenizer()))
    questions, contexts = scored_pairs(rows)
    summary = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "gpu": torch.cuda.get_device_name(0) if not args.smoke else "none (smoke, CPU)",
        "torch": torch.__version__,
        "model": f"random BERT QA {shape}, low question/padding scores (tests/qa_models.py)",
        "examples": args.examples,
        "pairs": len(questions),
    }
    check = Check(
        model_dir, "cpu" if args.smoke else "cuda", rows, questions, contexts,
        min(args.reference_pairs, len(questions)), tmp, summary,
    )  # fmt: skip
    for name, fn in [
        ("run_qa_route", run_qa_route),
        ("dynamic_float32", dynamic_float32),
        ("half_precision", half_precision),
        ("evaluate_end_to_end", evaluate_end_to_end),
    ]:
        section(summary, name, lambda fn=fn: fn(check))
    Path(args.output).write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1)[:6000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
