"""`ambigdocs retrieve`: dense retrieval over a DPR-format passage collection.

    ambigdocs retrieve --data-dir D --split test --passages psgs_w100.tsv \\
        --model sentence-transformers/gtr-t5-xxl --top-k 5 --output runs/retrieval

Three resumable steps: encode the passages in shards (`encode.py`, or import `--embeddings`),
build the faiss index (`index.py`), search; docs/answering.md, section `ambigdocs retrieve`.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from generation.answering import index as faiss_index
from generation.answering.encode import (
    PASSAGE_FORMAT,
    ShardStore,
    encode_shards,
    load_embeddings,
    load_saved_array,
    load_shards,
    match_passages,
    passages_identity,
)
from generation.answering.options import DataArguments
from generation.boundary import one_line
from generation.io.outputs import output_lock
from generation.io.passages import read_passage_at
from generation.io.records import atomic_write_json, atomic_write_jsonl, atomic_write_npy
from generation.io.resume import file_fingerprint, read_saved_json, unreadable_state
from generation.options import check_at_least, option

DEFAULT_MODEL = "sentence-transformers/gtr-t5-xxl"  # the paper's GTR
# Processes wait for each other after encoding: the slowest may finish hours after the fastest.
ENCODE_TIMEOUT = timedelta(days=7)


@dataclass(kw_only=True)
class RetrieveArguments(DataArguments):
    """Options of `ambigdocs retrieve`: the data options `answer` has, and these."""

    passages: str = option(help="DPR TSV: id, text, title (with a header row).")
    output: str = option(help="Folder: SPLIT.jsonl, embeddings/ and index/.")
    model: str = option(
        DEFAULT_MODEL, "A sentence-transformers model (encodes passages and questions)."
    )
    top_k: int = option(5, "Passages retrieved per question.")
    index: str = option(
        "Flat",
        "A faiss index-factory string, inner product: Flat (exact), SQfp16 (exact "
        "up to float16), HNSW32, IVF65536,PQ64, ... (docs/answering.md compares them).",
    )
    train_size: int = option(
        262144, "Vectors sampled to train index types that need it (IVF, PQ, ...)."
    )
    search_params: str | None = option(
        None, "faiss search-time parameters, e.g. nprobe=64 (IVF), efSearch=128."
    )
    embeddings: list[str] | None = option(
        None,
        "Precomputed passage embeddings: .npy files of (n, dim) float32/float16, "
        "rows in passage-file order (never unpickled). Skips encoding.",
    )
    embedding_ids: list[str] | None = option(
        None, "One .npy of passage ids per --embeddings file, checked against it."
    )
    batch_size: int = option(128, "Encoder batch size.")
    chunk_size: int = option(8192, "Passages per encode call.")
    shard_size: int = option(262144, "Passages per saved shard (the unit of resuming).")
    device: str | None = option(None, "Encoder device (default: the process's accelerator).")
    overwrite: bool = option(
        False, "Encode again and rebuild the index instead of reusing/refusing them."
    )
    progress: bool = option(True, "Show progress bars.")


def check_arguments(args: RetrieveArguments) -> None:
    """Refuses bad options and missing files before any work.

    Raises:
        ValueError: one line naming the option.
    """
    args.check_source()
    check_at_least(args, 1, "top_k", "batch_size", "chunk_size", "shard_size", "train_size")
    files = [("--passages", args.passages)]
    files += [("--embeddings", f) for f in args.embeddings or []]
    files += [("--embedding-ids", f) for f in args.embedding_ids or []]
    for flag, path in files:
        if not Path(path).is_file():
            kind = "a folder, not a file" if Path(path).is_dir() else "no such file"
            raise ValueError(f"{flag} {path}: {kind}")
    if args.embedding_ids and not args.embeddings:
        raise ValueError("--embedding-ids needs --embeddings")
    check_output_folder(args.output)


def check_output_folder(output: str) -> None:
    """Refuses an --output that is a file, or lies under one, before the model is loaded.

    Raises:
        ValueError: one line naming the file.
    """
    folder = next((p for p in (Path(output), *Path(output).parents) if p.exists()), None)
    if folder is not None and folder.is_file():
        what = "a file" if folder == Path(output) else f"{folder} is a file"
        raise ValueError(f"--output {output}: {what}, not a folder")


def load_encoder(model: str, device: str | None, batch_size: int = 128):
    """A sentence-transformers model and its encode(texts, query) function."""
    from generation.backends.loading import quiet_bitsandbytes

    quiet_bitsandbytes()  # before sentence-transformers imports bitsandbytes (through peft)
    from sentence_transformers import SentenceTransformer

    try:
        st = SentenceTransformer(model, device=device)
    except OSError as err:  # missing files, an unreachable Hub: name what could not be loaded
        raise ValueError(f"--model {model}: cannot be loaded ({one_line(err)})") from None

    def encode(texts, query: bool):
        # encode_query/encode_document apply the model's own prompts when it has any (GTR has
        # none, so both are plain `encode`).
        fn = st.encode_query if query else st.encode_document
        return fn(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False)

    return st, encode


class SavedIndex:
    """OUTPUT/index/INDEX/: `passages.faiss`, `offsets.npy` and `index.json` (written last)."""

    def __init__(self, output: Path, spec: str, source: dict, train_size: int):
        self.folder = output / "index" / re.sub(r"[^A-Za-z0-9,._=-]", "_", spec)
        self.spec = spec
        self.identity = {"source": source, "index": spec, "train_size": train_size, "seed": 0}

    def current(self, overwrite: bool) -> bool:
        """Whether a finished index of this source and spec is saved.

        Raises:
            ValueError: an index of another source is saved there (and not `overwrite`).
        """
        meta = self.folder / "index.json"
        if overwrite or not meta.exists():
            return False
        saved = read_saved_json(meta, "the index's record", {"identity": dict})["identity"]
        if "source" not in saved or not isinstance(saved.get("dim"), int):
            why = "'identity' lacks 'source' or an integer 'dim'"
            raise unreadable_state(meta, "the index's record", why)
        if saved["source"] != self.identity["source"]:
            raise ValueError(
                f"{self.folder} holds an index of other passages or embeddings "
                f"({saved['source']}); pass --overwrite or use another --output"
            )
        if {k: v for k, v in saved.items() if k != "dim"} == self.identity:
            return True
        # Same vectors, another training sample: the index is only derived data, build it again.
        return faiss_index.make_index(self.spec, saved["dim"]).is_trained

    def build(self, vectors, offsets, progress: bool) -> None:
        """Builds the index of `vectors` and saves it with their passages' `offsets`."""
        train_size = self.identity["train_size"]
        index = faiss_index.build(self.spec, vectors, train_size=train_size, progress=progress)
        faiss_index.write(index, self.folder / "passages.faiss")
        atomic_write_npy(self.folder / "offsets.npy", offsets)
        meta = {"identity": {**self.identity, "dim": index.d}, "count": int(index.ntotal)}
        atomic_write_json(self.folder / "index.json", meta)

    def load(self):
        """The saved index and offsets, refused in one line when either cannot be read back."""
        offsets = load_saved_array(self.folder / "offsets.npy", "the index's offsets")
        path = self.folder / "passages.faiss"
        try:
            index = faiss_index.read(path)
        except RuntimeError as err:  # missing, cut short
            why = str(err).strip().splitlines()[-1].split("Error: ", 1)[-1]
            raise unreadable_state(path, "the saved index", why) from None
        if offsets.ndim != 1 or len(offsets) != index.ntotal:
            why = f"{index.ntotal} vectors but {offsets.shape} offsets"
            raise unreadable_state(self.folder / "offsets.npy", "the index's offsets", why)
        return index, offsets


def index_from_passages(args: RetrieveArguments, state, encode):
    """Encodes this process's shards, then (main process) builds or loads the index.

    Returns:
        (index, offsets) on the main process, None on the others.
    """
    settings = {
        "passages": passages_identity(args.passages),
        "model": args.model,
        "model_files": file_fingerprint(args.model) if Path(args.model).exists() else None,
        "passage_format": PASSAGE_FORMAT,
        "shard_size": args.shard_size,
    }
    saved = SavedIndex(Path(args.output), args.index, settings, args.train_size)
    store = ShardStore(Path(args.output) / "embeddings", settings, overwrite=args.overwrite)
    if not saved.current(args.overwrite):
        encode_shards(
            args.passages,
            store,
            lambda texts: encode(texts, query=False),
            shard_size=args.shard_size,
            rank=state.process_index,
            world_size=state.num_processes,
            chunk_size=args.chunk_size,
            progress=args.progress and state.is_main_process,
        )
        state.wait_for_everyone()
        if not state.is_main_process:
            return None
        saved.build(*load_shards(store), args.progress)
    return saved.load() if state.is_main_process else None


def index_from_embeddings(args: RetrieveArguments, dim: int):
    """Builds (or loads) the index of precomputed embeddings; returns (index, offsets).

    Raises:
        ValueError: bad files (see `load_embeddings`), or embeddings of another width than the
            questions' (`dim`, from --model).
    """
    arrays, ids = load_embeddings(args.embeddings, args.embedding_ids or ())
    if arrays[0].shape[1] != dim:
        raise ValueError(
            f"--embeddings {args.embeddings[0]}: {arrays[0].shape[1]} dimensions, but --model "
            f"{args.model} makes {dim}; the questions must be encoded by the passages' model"
        )
    source = {
        "passages": passages_identity(args.passages),
        "embeddings": [passages_identity(f) for f in args.embeddings],
        "ids": [passages_identity(f) for f in args.embedding_ids or []],
    }
    saved = SavedIndex(Path(args.output), args.index, source, args.train_size)
    if not saved.current(args.overwrite):
        offsets = match_passages(args.passages, arrays, ids, progress=args.progress)
        saved.build(arrays, offsets, args.progress)
    return saved.load()


def search(index, offsets, passages: str, query_vectors, top_k: int) -> list[list[dict]]:
    """The top_k passages per query: `pid`, `title`, `text`, `score`, best first."""
    import numpy as np

    queries = np.ascontiguousarray(query_vectors, dtype=np.float32)
    if queries.shape[1] != index.d:
        raise ValueError(
            f"the questions' embeddings have {queries.shape[1]} dimensions, the index {index.d}: "
            f"--model must be the model that made the passage embeddings"
        )
    scores, ids = index.search(queries, min(top_k, index.ntotal))
    results = []
    with open(passages, "rb") as f:
        for row_scores, row_ids in zip(scores, ids, strict=True):
            hits = []
            for score, i in zip(row_scores.tolist(), row_ids.tolist(), strict=True):
                if i < 0:
                    continue  # an approximate index may find fewer than top_k
                pid, text, title = read_passage_at(f, int(offsets[i]))
                hits.append({"pid": pid, "title": title, "text": text, "score": score})
            results.append(hits)
    return results


def main(argv: list[str] | None = None) -> int:
    """Entry point of `ambigdocs retrieve`: bad input ends with one line and exit status 2."""
    from generation.options import run_command

    return run_command(
        "ambigdocs retrieve", __doc__.split("\n\n")[0], [RetrieveArguments], run, argv
    )


def run(args: RetrieveArguments) -> int:
    from generation.extras import require

    require("retrieval", what="dense retrieval")
    check_arguments(args)
    if not args.progress:
        import datasets
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        datasets.disable_progress_bars()
    from generation.answering.answer import process_state

    state = process_state(ENCODE_TIMEOUT)
    # One run per output folder: each process locks a name of its own, so that every process of
    # a second run is refused (none waits at a barrier for a partner that gave up).
    output = Path(args.output)
    mine = (
        output
        if state.is_main_process
        else output.with_name(f"{output.name}.rank{state.process_index}")
    )
    with output_lock(mine, f"--output {output}"):
        return _retrieve(args, state)


def _retrieve(args: RetrieveArguments, state) -> int:
    from generation.answering.data import read_rows

    rows = []
    if state.is_main_process:
        rows = read_rows(
            split=args.split,
            data_dir=args.data_dir,
            config=args.config,
            dataset=args.dataset,
            limit=args.limit,
        )
    if args.embeddings and not state.is_main_process:
        return 0  # nothing to encode: the main process imports and searches
    device = args.device or (str(state.device) if state.num_processes > 1 else None)
    st, encode = load_encoder(args.model, device, args.batch_size)
    # sentence-transformers 6 renamed get_sentence_embedding_dimension (still in 5.x).
    dim = getattr(st, "get_embedding_dimension", st.get_sentence_embedding_dimension)()
    faiss_index.check_spec(args.index, dim, args.train_size)
    if args.embeddings:
        built = index_from_embeddings(args, dim)
    else:
        built = index_from_passages(args, state, encode)
    if built is None:
        return 0
    index, offsets = built
    faiss_index.set_search_parameters(index, args.search_params)
    output = Path(args.output)
    hits = []
    if rows:
        queries = encode([r["question"] for r in rows], query=True)
        hits = search(index, offsets, args.passages, queries, args.top_k)
    out_rows = [{**row, "retrieved": h} for row, h in zip(rows, hits, strict=True)]
    atomic_write_jsonl(output / f"{args.split}.jsonl", out_rows)
    print(
        f"retrieved top-{args.top_k} of {index.ntotal} passages ({args.index}) for "
        f"{len(rows)} questions; wrote {output / f'{args.split}.jsonl'}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
