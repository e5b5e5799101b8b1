"""How a `summary.json` was made: the `provenance` record written beside the scores."""

from __future__ import annotations

import hashlib
import os
import platform
from importlib import metadata
from pathlib import Path

import generation
from generation import secrets
from generation.io.records import read_json
from generation.io.resume import meta_path
from generation.io.resume import sha256_file as file_sha256

# Libraries whose versions can change a number in the report.
LIBRARIES = ("numpy", "orjson", "torch", "transformers", "tokenizers", "matplotlib")


def folder_sha256(path: Path) -> str:
    """One SHA-256 over every file of a folder: relative paths and contents, in sorted order."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode() + b"\0")
        digest.update(file_sha256(file).encode())
    return digest.hexdigest()


def library_versions() -> dict[str, str]:
    """Python's version and those of the installed `LIBRARIES` (read without importing them)."""
    out = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def qa_model_record(name: str, qa, absent_reason: str | None) -> dict:
    """The QA model behind Disambig-F1: its name and revision (Hub) or digest (local folder),
    or why Disambig-F1 is absent."""
    if qa is None:
        return {"name": name, "used": False, "reason": absent_reason or "not loaded"}
    if Path(name).is_dir():
        return {"name": name, "used": True, "local_sha256": folder_sha256(Path(name))}
    return {"name": name, "used": True, "revision": hub_revision(name) or "unknown"}


def hub_revision(repo_id: str, cache_dir: str | Path | None = None) -> str | None:
    """The commit of a Hub model in the local cache (what `from_pretrained` loaded), or None.

    transformers 5 no longer keeps the commit on the config; the cache names each snapshot
    folder after its commit, and `refs/main` points to the one loaded by default.
    """
    from huggingface_hub import try_to_load_from_cache

    try:
        path = try_to_load_from_cache(repo_id, "config.json", cache_dir=cache_dir)
    except ValueError:  # not a valid repo id
        return None
    if not isinstance(path, str):
        return None
    snapshot = Path(path).parent
    return snapshot.name if snapshot.parent.name == "snapshots" else None


def answer_run_settings(results: Path) -> dict | None:
    """The run settings `ambigdocs answer` recorded beside its output (secrets as `***`, also
    from a file an older version wrote), or None if there are none.

    Raises:
        ValueError: the meta file exists but is not a JSON object.
    """
    path = meta_path(results)
    # os.path.isfile: a results name too long to take the `.meta.json` suffix has no meta file
    # (Path.is_file would raise ENAMETOOLONG).
    if not os.path.isfile(path):
        return None
    meta = read_json(path)  # the one reader: its errors name the file
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return secrets.scrub(meta)


def build_provenance(
    results: Path,
    score_documents: str,
    qa_model: dict,
    bootstrap: dict,
    answer_run: dict | None,
) -> dict:
    """The `provenance` of one results file's summary (docs/report.md, "Provenance"), from
    `qa_model_record`'s record, the bootstrap settings and `answer_run_settings(results)`."""
    return {
        "toolkit_version": generation.__version__,
        "input": {"path": str(Path(results).resolve()), "sha256": file_sha256(results)},
        "score_documents": score_documents,
        "qa_model": qa_model,
        "bootstrap": bootstrap,
        "libraries": library_versions(),
        "answer_run": answer_run
        if answer_run is not None
        else {"recorded": False, "reason": "no ambigdocs-answer meta file beside the input"},
    }
