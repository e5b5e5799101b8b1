"""`ambigdocs retrieve`: dense retrieval over a DPR-format passage collection.

    ambigdocs retrieve --data-dir D --split test --passages psgs_w100.tsv \\
        --model sentence-transformers/gtr-t5-xxl --top-k 5 --output runs/retrieval

Writes OUTPUT/SPLIT.jsonl: every row of the split plus `retrieved`, a list of `pid`, `title`,
`text`, `score` (best first), which `ambigdocs answer --setting gold-retrieved|retrieved-only
--retrieved OUTPUT` reads.

The passage file (`id<TAB>text<TAB>title` with a header row; 21M rows, ~13 GB for the paper's
Wikipedia) is streamed, never loaded whole: passages are encoded chunk by chunk (the encoder reads
`"{title} {text}"`) into an exact inner-product faiss index, and only the byte offset of each
passage is kept, to read the hits back from the file. The index is saved under OUTPUT/index/ with
the offsets, checkpointed every `--checkpoint-every` passages (a killed build resumes where its
last checkpoint ended), and reused by later runs with the same passages file and model.
Each checkpoint rewrites the whole flat index built so far, so for very large collections (the
21M-passage Wikipedia dump) raise `--checkpoint-every` (e.g. 2097152) to cut the disk traffic.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from generation.io.records import atomic_write_json, atomic_write_jsonl

DEFAULT_MODEL = "sentence-transformers/gtr-t5-xxl"  # the paper's GTR
PASSAGE_FORMAT = "{title} {text}"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ambigdocs retrieve", description=__doc__.split("\n\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data-dir", help="folder with the release's raw files (test.json, ...)")
    src.add_argument("--config", choices=["sample"], help="`sample`: the paper's examples")
    src.add_argument("--dataset", help="a JSON/JSONL file of rows, or a Hub dataset id")
    p.add_argument("--split", default="test")
    p.add_argument("--limit", type=int, help="only the first N examples")
    p.add_argument("--passages", required=True, help="DPR TSV: id, text, title (with header)")
    p.add_argument("--model", default=DEFAULT_MODEL, help="a sentence-transformers model")
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=128, help="encoder batch size")
    p.add_argument("--chunk-size", type=int, default=8192, help="passages read per encode call")
    p.add_argument("--checkpoint-every", type=int, default=262144, help="passages per checkpoint")
    p.add_argument("--device", help="encoder device (default: cuda when available)")
    p.add_argument("--output", required=True, help="folder: SPLIT.jsonl and index/")
    p.add_argument("--rebuild-index", action="store_true", help="discard a saved index")
    return p


# --- the passage file ---------------------------------------------------------------------------


def _parse_line(raw: bytes, path, lineno: int) -> list[str]:
    line = raw.decode("utf-8").rstrip("\r\n")
    if '"' not in line:
        return line.split("\t")
    return next(csv.reader([line], delimiter="\t"))  # DPR quotes texts that hold quotes


def read_header(path: str | os.PathLike) -> tuple[dict[str, int], int]:
    """Column positions of `id`, `text`, `title` and the byte offset after the header.

    Raises:
        ValueError: the first line is not a header naming the three columns.
    """
    with open(path, "rb") as f:
        first = f.readline()
        cols = [c.strip().lower() for c in _parse_line(first, path, 1)]
        if not {"id", "text", "title"} <= set(cols):
            raise ValueError(
                f"{path}, line 1: expected a header with the columns id, text, title "
                f"(the DPR TSV format), got {cols[:5]}"
            )
        return {c: cols.index(c) for c in ("id", "text", "title")}, f.tell()


def iter_passages(path, columns: dict[str, int], start: int) -> Iterator[tuple[int, dict]]:
    """(byte offset, passage) for each line from byte `start` on; streamed.

    Raises:
        ValueError: a line with too few fields (names the file and byte offset).
    """
    need = max(columns.values()) + 1
    with open(path, "rb") as f:
        f.seek(start)
        offset = start
        for raw in f:
            if raw.strip():
                fields = _parse_line(raw, path, offset)
                if len(fields) < need:
                    raise ValueError(
                        f"{path}: the line at byte {offset} has {len(fields)} fields, "
                        f"expected id, text, title"
                    )
                yield offset, {k: fields[i] for k, i in columns.items()}
            offset += len(raw)


def read_passage_at(f, offset: int, columns: dict[str, int]) -> dict:
    """The passage whose line starts at `offset` in the open binary file `f`."""
    f.seek(offset)
    fields = _parse_line(f.readline(), f.name, offset)
    return {k: fields[i] for k, i in columns.items()}


# --- the index ----------------------------------------------------------------------------------


class PassageIndex:
    """An exact inner-product faiss index over a passage file, with the passages' byte offsets.

    Files under `folder`: `passages.faiss`, `offsets.npy`, `state.json` (what was indexed, how
    far, and whether the build finished).
    """

    def __init__(self, folder: str | os.PathLike, passages: str | os.PathLike, model_name: str):
        self.folder = Path(folder)
        self.passages = Path(passages)
        self.model_name = model_name
        self.columns, self.data_start = read_header(self.passages)
        stat = self.passages.stat()
        self.identity = {
            "passages": str(self.passages.resolve()),
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            "model": model_name,
            "passage_format": PASSAGE_FORMAT,
        }
        self.index = None
        self.offsets = None

    @property
    def state_path(self) -> Path:
        return self.folder / "state.json"

    def _load_state(self) -> dict | None:
        if not self.state_path.exists():
            return None
        state = json.loads(self.state_path.read_text(encoding="utf-8"))
        if state.get("identity") != self.identity:
            raise ValueError(
                f"{self.folder} holds an index of other passages or another model "
                f"({state.get('identity')}); pass --rebuild-index or another --output"
            )
        return state

    def discard(self) -> None:
        for name in ("passages.faiss", "offsets.npy", "state.json"):
            (self.folder / name).unlink(missing_ok=True)

    def _checkpoint(self, offsets: list[int], next_byte: int, done: bool) -> None:
        import faiss
        import numpy as np

        self.folder.mkdir(parents=True, exist_ok=True)
        # Index and offsets first, then the state that vouches for them: a crash in between
        # leaves extra vectors that the next resume cuts back to the state's count.
        tmp = self.folder / ".passages.faiss.tmp"
        faiss.write_index(self.index, str(tmp))
        os.replace(tmp, self.folder / "passages.faiss")
        with open(self.folder / ".offsets.npy.tmp", "wb") as f:
            np.save(f, np.asarray(offsets, dtype=np.int64))
        os.replace(self.folder / ".offsets.npy.tmp", self.folder / "offsets.npy")
        state = {"identity": self.identity, "count": len(offsets), "next_byte": next_byte}
        atomic_write_json(self.state_path, {**state, "done": done})

    def build_or_load(
        self,
        encode_documents,
        *,
        chunk_size: int = 8192,
        checkpoint_every: int = 262144,
        progress: bool = True,
    ) -> None:
        """Loads a finished index, resumes an unfinished one, or builds it.

        Args:
            encode_documents: list of strings -> float32 array (n, dim).
            chunk_size: passages per encode call.
            checkpoint_every: passages between checkpoints.
            progress: a tqdm bar over the file's bytes.
        """
        import faiss
        import numpy as np

        state = self._load_state()
        offsets: list[int] = []
        next_byte = self.data_start
        if state is not None:
            self.index = faiss.read_index(str(self.folder / "passages.faiss"))
            offsets = np.load(self.folder / "offsets.npy").tolist()[: state["count"]]
            if self.index.ntotal > state["count"]:
                self.index.remove_ids(np.arange(state["count"], self.index.ntotal, dtype=np.int64))
            next_byte = state["next_byte"]
            if state["done"]:
                self.offsets = np.asarray(offsets, dtype=np.int64)
                return
        from tqdm.auto import tqdm

        bar = tqdm(
            total=self.identity["size"],
            initial=next_byte,
            unit="B",
            unit_scale=True,
            desc="index passages",
            disable=not progress,
        )
        since_checkpoint = 0
        chunk: list[tuple[int, dict]] = []

        def flush(end_byte: int) -> None:
            nonlocal since_checkpoint
            texts = [PASSAGE_FORMAT.format(**p) for _, p in chunk]
            vectors = np.ascontiguousarray(encode_documents(texts), dtype=np.float32)
            if self.index is None:
                self.index = faiss.IndexFlatIP(vectors.shape[1])
            self.index.add(vectors)
            offsets.extend(o for o, _ in chunk)
            since_checkpoint += len(chunk)
            bar.update(end_byte - bar.n)
            chunk.clear()
            if since_checkpoint >= checkpoint_every:
                self._checkpoint(offsets, end_byte, done=False)
                since_checkpoint = 0

        for offset, passage in iter_passages(self.passages, self.columns, next_byte):
            if len(chunk) >= chunk_size:
                flush(offset)
            chunk.append((offset, passage))
        if chunk:
            flush(self.identity["size"])
        bar.close()
        if self.index is None:
            raise ValueError(f"{self.passages}: no passages after the header")
        self._checkpoint(offsets, self.identity["size"], done=True)
        self.offsets = np.asarray(offsets, dtype=np.int64)

    def search(self, query_vectors, top_k: int) -> list[list[dict]]:
        """The top_k passages per query: `pid`, `title`, `text`, `score`, best first."""
        import numpy as np

        k = min(top_k, self.index.ntotal)
        scores, ids = self.index.search(np.ascontiguousarray(query_vectors, dtype=np.float32), k)
        results = []
        with open(self.passages, "rb") as f:
            for row_scores, row_ids in zip(scores, ids, strict=True):
                hits = []
                for score, i in zip(row_scores.tolist(), row_ids.tolist(), strict=True):
                    if i < 0:
                        continue
                    p = read_passage_at(f, int(self.offsets[i]), self.columns)
                    hits.append(
                        {"pid": p["id"], "title": p["title"], "text": p["text"], "score": score}
                    )
                results.append(hits)
        return results


# --- the command --------------------------------------------------------------------------------


def load_encoder(model: str, device: str | None):
    """A sentence-transformers model and its (query, document) encode functions."""
    from generation.backends.loading import quiet_bitsandbytes

    quiet_bitsandbytes()  # before sentence-transformers imports bitsandbytes (through peft)
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(model, device=device)

    def encode(texts, query: bool):
        # encode_query/encode_document apply the model's own prompts when it has any (GTR has
        # none, so both are plain `encode`).
        fn = st.encode_query if query else st.encode_document
        return fn(texts, batch_size=encode.batch_size, convert_to_numpy=True)

    encode.batch_size = 128
    return st, encode


def main(argv: list[str] | None = None) -> int:
    """Entry point of `ambigdocs retrieve`."""
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except ValueError as err:
        print(f"ambigdocs retrieve: error: {err}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    from generation.answering.answer import load_rows

    if args.top_k < 1:
        raise ValueError(f"--top-k must be >= 1, got {args.top_k}")
    if not Path(args.passages).is_file():
        raise ValueError(f"--passages {args.passages}: no such file")
    args.retrieved = None
    rows = load_rows(args)
    output = Path(args.output)
    index = PassageIndex(output / "index", args.passages, args.model)
    if args.rebuild_index:
        index.discard()
    _, encode = load_encoder(args.model, args.device)
    encode.batch_size = args.batch_size
    index.build_or_load(
        lambda texts: encode(texts, query=False),
        chunk_size=args.chunk_size,
        checkpoint_every=args.checkpoint_every,
    )
    queries = encode([r["question"] for r in rows], query=True) if rows else None
    hits = index.search(queries, args.top_k) if rows else []
    out_rows = [{**row, "retrieved": h} for row, h in zip(rows, hits, strict=True)]
    atomic_write_jsonl(output / f"{args.split}.jsonl", out_rows)
    print(
        f"retrieved top-{args.top_k} of {index.index.ntotal} passages for {len(rows)} questions; "
        f"wrote {output / f'{args.split}.jsonl'}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
