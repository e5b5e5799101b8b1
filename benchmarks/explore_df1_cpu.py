"""What else could make Disambig-F1 faster on CPU with the same spans: bfloat16 and ONNX Runtime.

On the benchmark's BERT-base-sized QA model and answers (benchmarks/bench_df1.py), on the same
length-sorted batches:
1. bfloat16 against float32: CPU time, the largest logit difference, and how many spans stay
   the same;
2. ONNX Runtime (float32, the graph exported by `torch.onnx.export` and fused by
   `onnxruntime.transformers.optimizer`) against torch: export/optimise/session cost, CPU time,
   the largest logit difference. Skipped unless `onnxruntime` and `onnx` are installed (they
   are not requirements: this measurement found nothing to gain, see RESULTS.md).

    .venv/bin/python benchmarks/explore_df1_cpu.py [--n 150] [--skip-onnx]
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def torch_logits(qa, feeds) -> tuple[list, float]:
    """Start logits per batch and the CPU seconds they took."""
    import torch

    start, out = cpu_seconds(), []
    with torch.inference_mode():
        for feed in feeds:
            result = qa.model(**{k: torch.tensor(v) for k, v in feed.items()})
            out.append(result.start_logits.float().numpy())
    return out, cpu_seconds() - start


def max_difference(a: list, b: list) -> float:
    import numpy as np

    return max(float(np.abs(x - y).max()) for x, y in zip(a, b, strict=True))


def compare_bfloat16(model_dir: Path, questions, contexts) -> tuple:
    from metric.ambigdocs_metric.disambig_f1 import QAExtractor

    f32 = QAExtractor(str(model_dir))
    windows = f32._tokenize(questions, contexts)
    batches = f32._batches([len(ids) for ids in windows.input_ids])
    feeds = [{k: v.numpy() for k, v in f32._padded(windows, m, w).items()} for m, w in batches]
    base, t32 = torch_logits(f32, feeds)
    bf16 = QAExtractor(str(model_dir), dtype="bfloat16")
    low, t16 = torch_logits(bf16, feeds)
    spans32 = f32.extract(questions, contexts)
    spans16 = bf16.extract(questions, contexts)
    same = sum(a == b for a, b in zip(spans32, spans16, strict=True))
    print(
        f"bfloat16: {t32:.1f} s CPU in float32, {t16:.1f} s in bfloat16 ({t32 / t16:.1f}x); "
        f"largest start-logit difference {max_difference(base, low):.3f}; "
        f"spans equal {same}/{len(spans32)} "
        f"({sum(s not in ('', 'empty') for s in spans32)} non-empty in float32)"
    )
    return f32, feeds, base, t32


def compare_onnx(f32, feeds, base, t32: float, folder: Path) -> None:
    import onnxruntime as ort
    import torch
    from onnxruntime.transformers.optimizer import optimize_model

    start = cpu_seconds()
    names = list(feeds[0])
    axes = {k: {0: "batch", 1: "tokens"} for k in [*names, "start_logits", "end_logits"]}
    example = {k: torch.tensor(v) for k, v in feeds[-1].items()}
    torch.onnx.export(f32.model, (), str(folder / "qa.onnx"), kwargs=example, input_names=names,
                      output_names=["start_logits", "end_logits"], dynamic_axes=axes,
                      dynamo=False, opset_version=17)  # fmt: skip
    exported = cpu_seconds() - start
    config = f32.model.config
    fused = optimize_model(
        str(folder / "qa.onnx"), "bert", config.num_attention_heads, config.hidden_size
    )
    fused.save_model_to_file(str(folder / "qa-fused.onnx"))
    optimised = cpu_seconds() - start - exported
    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    session = ort.InferenceSession(str(folder / "qa-fused.onnx"), options)
    start = cpu_seconds()
    logits = [session.run(["start_logits"], feed)[0] for feed in feeds]
    t_ort = cpu_seconds() - start
    ops = {k: v for k, v in fused.get_fused_operator_statistics().items() if v}
    print(
        f"ONNX Runtime: export {exported:.1f} s CPU, fusing {optimised:.1f} s ({ops}); "
        f"{t_ort:.1f} s CPU against torch's {t32:.1f} s ({t32 / t_ort:.2f}x); "
        f"largest start-logit difference {max_difference(base, logits):.2e}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=150, help="answered examples")
    parser.add_argument("--skip-onnx", action="store_true")
    args = parser.parse_args()

    from bench_df1 import english_words, make_results
    from gpu_check_df1 import scored_pairs
    from qa_models import minilm_tokenizer, save_qa_model

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model_dir = save_qa_model(tmp / "qa-model", hidden_size=768, num_layers=12, num_heads=12)
        rows = make_results(args.n, english_words(minilm_tokenizer()), seed=1)
        questions, contexts = scored_pairs(rows)
        print(f"{args.n} answered examples, {len(questions)} scored pairs, BERT-base-sized model")
        f32, feeds, base, t32 = compare_bfloat16(model_dir, questions, contexts)
        have_onnx = all(importlib.util.find_spec(m) for m in ("onnxruntime", "onnx"))
        if args.skip_onnx or not have_onnx:
            print("ONNX Runtime: skipped" + ("" if have_onnx else " (onnxruntime/onnx missing)"))
            return
        compare_onnx(f32, feeds, base, t32, tmp)


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"({time.perf_counter() - start:.0f} s wall)")
