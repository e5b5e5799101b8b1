"""faiss indexes for `ambigdocs retrieve`: any index-factory string, inner product, trained on a
uniform sample drawn with a fixed seed (docs/answering.md, "Index types").
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from generation.io.records import atomic_write_binary


def make_index(spec: str, dim: int):
    """An empty inner-product index of the factory string `spec` for `dim`-dimensional vectors.

    Raises:
        ValueError: faiss cannot parse `spec` (or it does not fit `dim`).
    """
    import faiss

    try:
        return faiss.index_factory(int(dim), spec, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as err:
        reason = str(err).strip().splitlines()[-1].split(": ", 1)[-1]
        raise ValueError(
            f"--index {spec!r}: not a faiss index-factory string for {dim}-dimensional vectors "
            f"({reason}); e.g. Flat, SQfp16, HNSW32, IVF4096,Flat, IVF65536,PQ64"
        ) from None


def check_spec(spec: str, dim: int, train_size: int) -> None:
    """Refuses (ValueError) a bad factory string, or a training sample smaller than the IVF
    lists, before encoding, so that hours of encoding are not followed by the error."""
    import faiss

    index = make_index(spec, dim)
    try:
        nlist = faiss.extract_index_ivf(index).nlist
    except RuntimeError:  # not an IVF index
        return
    if train_size < nlist:
        raise ValueError(
            f"--index {spec!r} needs at least {nlist} training vectors (one per list), "
            f"--train-size is {train_size}; faiss advises 30-256 per list"
        )


def sample_rows(sources: Sequence[np.ndarray], size: int, seed: int) -> np.ndarray:
    """`size` rows drawn uniformly without replacement from the concatenated `sources`.

    Rows are read in increasing order from each source, so memory-mapped shards are read
    sequentially; the sample is float32 and C-contiguous, as faiss wants it.
    """
    total = sum(len(s) for s in sources)
    size = min(size, total)
    picked = np.sort(np.random.default_rng(seed).choice(total, size=size, replace=False))
    parts, start = [], 0
    for source in sources:
        mine = picked[(picked >= start) & (picked < start + len(source))] - start
        if len(mine):
            parts.append(np.asarray(source[mine], dtype=np.float32))
        start += len(source)
    return np.ascontiguousarray(np.concatenate(parts))


def train(index, spec: str, sources: Sequence[np.ndarray], train_size: int, seed: int) -> None:
    """Trains `index` on a sample of `train_size` rows when its type needs training.

    Raises:
        ValueError: the sample is too small for the index (fewer vectors than IVF lists or PQ
            centroids); the message says how many it needs.
    """
    if index.is_trained:
        return
    if train_size < 1:
        raise ValueError(f"--train-size must be >= 1, got {train_size}")
    sample = sample_rows(sources, train_size, seed)
    try:
        index.train(sample)
    except RuntimeError as err:
        text = str(err)
        if "training points" not in text:
            raise ValueError(
                f"--index {spec!r}: training failed: {text.splitlines()[-1]}"
            ) from None
        # faiss: "Number of training points (N) should be at least as large as number of
        # clusters (K)" -- the sample is smaller than the IVF lists or PQ centroids.
        need = text.rsplit("(", 1)[-1].split(")", 1)[0]
        raise ValueError(
            f"--index {spec!r} needs at least {need} training vectors, the sample has "
            f"{len(sample)} (--train-size {train_size}, {sum(len(s) for s in sources)} vectors "
            f"in all); raise --train-size or use fewer lists/centroids"
        ) from None


def build(
    spec: str,
    sources: Sequence[np.ndarray],
    *,
    train_size: int = 262144,
    seed: int = 0,
    add_batch: int = 65536,
    progress: bool = True,
):
    """An index of factory string `spec` holding every row of `sources` ((n_i, dim) arrays,
    memory-mapped shards are fine) in order, so that vector id i is row i of their
    concatenation; trained on `train_size` rows sampled with `seed` when its type needs it, and
    filled `add_batch` rows at a time (bounding the extra memory).

    Raises:
        ValueError: no vectors, sources of different widths, a bad spec or too small a sample.
    """
    from tqdm.auto import tqdm

    dims = {s.shape[1] for s in sources if s.ndim == 2}
    if not sources or len(dims) != 1 or any(s.ndim != 2 for s in sources):
        raise ValueError(
            f"vectors to index must be 2-D arrays of one width, got {len(dims)} widths"
        )
    total = sum(len(s) for s in sources)
    if total == 0:
        raise ValueError("no vectors to index")
    index = make_index(spec, dims.pop())
    train(index, spec, sources, train_size, seed)
    with tqdm(total=total, unit="vec", desc=f"index {spec}", disable=not progress) as bar:
        for source in sources:
            for start in range(0, len(source), add_batch):
                batch = np.ascontiguousarray(source[start : start + add_batch], dtype=np.float32)
                index.add(batch)
                bar.update(len(batch))
    return index


def set_search_parameters(index, params: str | None) -> None:
    """Applies faiss search-time parameters, e.g. `nprobe=64` (IVF) or `efSearch=128` (HNSW).

    Raises:
        ValueError: a parameter the index does not have.
    """
    if not params:
        return
    import faiss

    try:
        faiss.ParameterSpace().set_index_parameters(index, params)
    except RuntimeError as err:
        raise ValueError(
            f"--search-params {params!r}: {str(err).strip().splitlines()[-1]}"
        ) from None


def write(index, path: str | os.PathLike) -> None:
    """Saves `index` atomically (written to a temporary file in the folder, then renamed)."""
    import faiss

    atomic_write_binary(path, lambda f: faiss.write_index(index, faiss.PyCallbackIOWriter(f.write)))


def read(path: str | os.PathLike):
    """Loads an index saved by `write`."""
    import faiss

    return faiss.read_index(str(path))
