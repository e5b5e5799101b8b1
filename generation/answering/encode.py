"""Passage embeddings for `ambigdocs retrieve`: encoded in shards (spread over processes, each
saved atomically with its settings last, resumed by the project's resume rule), or imported
from `.npy` files, never unpickled. Layout and rules: docs/answering.md, `ambigdocs retrieve`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from generation.boundary import one_line
from generation.io.passages import iter_passage_rows
from generation.io.records import atomic_write_json, atomic_write_npy
from generation.io.resume import (
    ResumeRefused,
    file_fingerprint,
    normalise,
    read_saved_json,
    settings_differences,
    unreadable_state,
)

PASSAGE_FORMAT = "{title} {text}"  # what the encoder reads (the authors' retrieval format)


def passages_identity(path: str | os.PathLike) -> dict:
    """What identifies an input file for reuse: its absolute path and the project's fingerprint
    (content digest up to 256 MB, size and mtime beyond; generation/io/resume.py)."""
    return {"path": str(Path(path).resolve()), "fingerprint": file_fingerprint(path)}


class ShardStore:
    """The embedding shards of one passage file and model in `folder`, made with `settings`
    (JSON-serialisable); `overwrite` discards shards made with other settings instead of refusing
    them (ResumeRefused)."""

    def __init__(self, folder: str | os.PathLike, settings: dict, overwrite: bool = False):
        self.folder = Path(folder)
        self.settings = normalise(settings)  # as JSON gives it back, so that == compares
        self.overwrite = overwrite
        for meta in sorted(self.folder.glob("shard-*.json")):
            try:
                made_with = _read_shard_settings(meta)
            except ResumeRefused:
                if not overwrite:
                    raise
                made_with = None  # unreadable: discarded like a shard of other settings
            if made_with == self.settings:
                continue
            if not overwrite:
                changed = "; ".join(settings_differences(made_with or {}, self.settings))
                raise ResumeRefused(
                    f"{meta} was made with other settings or inputs ({changed}); rerun with the "
                    f"old ones to resume it, or pass --overwrite to start again"
                )
            # Only the marker goes: with several processes another may be writing that shard's
            # arrays for the new settings right now; its arrays are rewritten anyway.
            meta.unlink(missing_ok=True)

    def _paths(self, k: int) -> tuple[Path, Path, Path]:
        stem = self.folder / f"shard-{k:05d}"
        return Path(f"{stem}.npy"), Path(f"{stem}.offsets.npy"), Path(f"{stem}.json")

    def is_done(self, k: int) -> bool:
        """Whether shard k is saved with these settings (always False with `overwrite`)."""
        return not self.overwrite and self._paths(k)[2].exists()

    def save(self, k: int, vectors: np.ndarray, offsets: np.ndarray, rank: int = 0) -> None:
        """Saves shard k: vectors and offsets first, then the metadata that vouches for them."""
        vec_path, off_path, meta_path = self._paths(k)
        meta_path.unlink(missing_ok=True)  # an overwritten shard is unfinished until the end
        atomic_write_npy(vec_path, np.ascontiguousarray(vectors, dtype=np.float32))
        atomic_write_npy(off_path, np.asarray(offsets, dtype=np.int64))
        atomic_write_json(
            meta_path, {"settings": self.settings, "shard": k, "count": len(offsets), "rank": rank}
        )

    def load(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Shard k's vectors (memory-mapped) and offsets.

        Raises:
            ValueError: the shard is missing or unfinished.
        """
        vec_path, off_path, meta_path = self._paths(k)
        if not meta_path.exists():
            raise ValueError(
                f"{self.folder}: shard {k} is missing or unfinished; run the encoding again"
            )
        if _read_shard_settings(meta_path) != self.settings:
            raise ValueError(f"{meta_path} was made with other settings; run the encoding again")
        vectors = load_saved_array(vec_path, "a shard's vectors", mmap_mode="r")
        offsets = load_saved_array(off_path, "a shard's offsets")
        if vectors.ndim != 2 or len(vectors) != len(offsets):
            raise ValueError(f"{vec_path}: shape {vectors.shape} does not match its offsets")
        return vectors, offsets

    def write_plan(self, passages: int) -> None:
        """Records how many passages (hence shards) the file has, for the merge."""
        atomic_write_json(
            self.folder / "plan.json", {"settings": self.settings, "passages": passages}
        )

    def read_plan(self) -> int:
        """The number of passages recorded by `write_plan` with these settings.

        Raises:
            ValueError: no plan with these settings (the encoding has not finished).
        """
        path = self.folder / "plan.json"
        plan = {}
        if path.exists():
            plan = read_saved_json(path, "the encoding plan", {"settings": dict, "passages": int})
        if plan.get("settings") != self.settings:
            raise ValueError(f"{self.folder}: the encoding has not finished; run it again")
        return int(plan["passages"])


def load_saved_array(path: Path, what: str, mmap_mode: str | None = None) -> np.ndarray:
    """An array a run saved (a shard, an index's offsets); one line naming it when it is gone
    or cut short, since its record vouched for it.

    Raises:
        ResumeRefused: the file is missing or not a plain .npy array.
    """
    try:
        return np.load(path, mmap_mode=mmap_mode, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise unreadable_state(path, what, one_line(err)) from None


def _read_shard_settings(meta: Path) -> dict:
    """The settings a shard's metadata file records (refused in one line when unreadable)."""
    return read_saved_json(meta, "the shard's record", {"settings": dict})["settings"]


def encode_shards(
    passages: str | os.PathLike,
    store: ShardStore,
    encode_documents: Callable[[list[str]], np.ndarray],
    *,
    shard_size: int,
    rank: int = 0,
    world_size: int = 1,
    chunk_size: int = 8192,
    progress: bool = True,
) -> int:
    """Encodes the unfinished shards of process `rank` of `world_size` (`encode_documents`: a
    list of strings -> an (n, dim) array, called on `chunk_size` passages at a time); returns
    the passage count, which rank 0 records (`store.write_plan`). Every process reads the whole
    file (parsing is cheap next to encoding) but encodes only its own shards."""
    if shard_size < 1 or chunk_size < 1:  # Python callers skip the command's option checks
        raise ValueError(f"shard_size and chunk_size must be >= 1, got {shard_size}, {chunk_size}")
    store.folder.mkdir(parents=True, exist_ok=True)
    current, vectors, offsets, texts = -1, [], [], []

    def encode_pending() -> None:
        if texts:
            vectors.append(np.asarray(encode_documents(texts), dtype=np.float32))
            texts.clear()

    def finish(k: int) -> None:
        encode_pending()
        if k >= 0 and offsets:
            store.save(k, np.concatenate(vectors), np.asarray(offsets), rank)
        vectors.clear()
        offsets.clear()

    count, skip = 0, {}
    for i, (offset, _pid, text, title) in enumerate(iter_passage_rows(passages, progress=progress)):
        count = i + 1
        k = i // shard_size
        if k not in skip:  # decided once per shard: another process's, or finished before
            skip[k] = k % world_size != rank or store.is_done(k)
        if skip[k]:
            continue
        if k != current:
            finish(current)
            current = k
        offsets.append(offset)
        texts.append(PASSAGE_FORMAT.format(title=title, text=text))
        if len(texts) >= chunk_size:
            encode_pending()
    finish(current)
    if count == 0:
        raise ValueError(f"--passages {passages}: no passages after the header")
    if rank == 0:
        store.write_plan(count)
    return count


def load_shards(store: ShardStore) -> tuple[list[np.ndarray], np.ndarray]:
    """Every shard's vectors (memory-mapped, in order) and all offsets, for the merge.

    Raises:
        ValueError: the plan is missing, or a shard is missing, unfinished or of the wrong size.
    """
    total = store.read_plan()
    shard_size = store.settings["shard_size"]
    vectors, offsets = [], []
    for k in range(-(-total // shard_size)):
        v, o = store.load(k)
        expected = min(shard_size, total - k * shard_size)
        if len(o) != expected:
            raise ValueError(
                f"{store.folder}: shard {k} has {len(o)} passages, expected {expected}"
            )
        vectors.append(v)
        offsets.append(o)
    return vectors, np.concatenate(offsets)


def _load_npy(path: str, what: str) -> np.ndarray:
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{what} {path}: no such file" + (" (a folder)" if path.is_dir() else ""))
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as err:  # object arrays (pickles inside .npy), or not a .npy file
        raise ValueError(f"{what} {path}: not a plain NumPy .npy array ({err})") from None
    except EOFError:  # an empty or cut-short file
        raise ValueError(f"{what} {path}: empty or cut short, not a .npy array") from None
    except OSError as err:
        raise ValueError(f"{what} {path}: cannot read it as .npy ({err})") from None


def load_embeddings(files: Sequence[str], id_files: Sequence[str] = ()) -> tuple[list, list]:
    """Memory-mapped (n_i, dim) float32/float16 embedding arrays of `files`, in passage-file
    order, and their (n_i,) passage ids (integers or strings) of `id_files`, one per file (or None
    each without them), validated.

    Raises:
        ValueError: a pickled or non-NumPy file, a wrong shape or dtype, or id files that do not
            pair with the embeddings files.
    """
    if id_files and len(id_files) != len(files):
        raise ValueError(
            f"--embedding-ids: {len(id_files)} files for {len(files)} embeddings files"
        )
    arrays, ids = [], []
    for n, path in enumerate(files):
        a = _load_npy(path, "--embeddings")
        if a.ndim != 2 or a.shape[1] < 1:
            raise ValueError(
                f"--embeddings {path}: expected a 2-D array (passages, dim), got shape {a.shape}"
            )
        if a.dtype not in (np.float32, np.float16):
            raise ValueError(f"--embeddings {path}: expected float32 or float16, got {a.dtype}")
        if arrays and a.shape[1] != arrays[0].shape[1]:
            raise ValueError(
                f"--embeddings {path}: dimension {a.shape[1]}, the first file has {arrays[0].shape[1]}"
            )
        arrays.append(a)
        if not id_files:
            ids.append(None)
            continue
        i = _load_npy(id_files[n], "--embedding-ids")
        if i.ndim != 1 or len(i) != len(a):
            raise ValueError(
                f"--embedding-ids {id_files[n]}: expected shape ({len(a)},) to match {path}, got {i.shape}"
            )
        if i.dtype.kind not in "iuU":
            raise ValueError(
                f"--embedding-ids {id_files[n]}: expected integer or string ids, got {i.dtype}"
            )
        ids.append(i)
    return arrays, ids


def match_passages(
    passages: str | os.PathLike, arrays: Sequence[np.ndarray], ids: Sequence, progress: bool = True
) -> np.ndarray:
    """The byte offset of each embedding row's passage: row i (over the concatenated files) is
    the i-th passage of the file, as in the authors' GTR index built from `psgs_w100.tsv` in order;
    given ids are checked against it (ValueError, as when the counts differ)."""
    total = sum(len(a) for a in arrays)
    flat_ids = None if ids[0] is None else np.concatenate([np.asarray(i).astype(str) for i in ids])
    offsets = np.empty(total, dtype=np.int64)
    n = 0
    for offset, pid, _text, _title in iter_passage_rows(passages, progress=progress):
        if n < total:
            if flat_ids is not None and flat_ids[n] != pid:
                raise ValueError(
                    f"--embedding-ids: row {n} has id {flat_ids[n]!r}, but passage {n} of "
                    f"{passages} is {pid!r}; embeddings must follow the passage file's order"
                )
            offsets[n] = offset
        n += 1
    if n != total:
        raise ValueError(f"--embeddings: {total} rows, but {passages} has {n} passages")
    return offsets
