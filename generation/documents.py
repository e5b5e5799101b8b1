"""The paper's three document settings (Section 5.1, docs/pipeline.md section 6), each example
seeded by (seed, qid) alone through SHA-256: docs/answering.md, "Document settings and seeding"."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping

from metric.ambigdocs_metric.scoring import parse_documents

SETTINGS = ("gold-only", "gold-retrieved", "retrieved-only")
DEFAULT_NUM_DOCS = 5


def example_rng(seed: int, qid) -> random.Random:
    """A generator that depends only on (seed, qid)."""
    digest = hashlib.sha256(f"ambigdocs-docs:{seed}:{qid}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _shown(d: Mapping) -> dict:
    """What the prompt shows and the output records of one document."""
    pid = d.get("pid")
    return {"pid": None if pid is None else str(pid), "title": d["title"], "text": d["text"]}


def select_documents(
    row: Mapping,
    setting: str,
    seed: int,
    *,
    num_docs: int = DEFAULT_NUM_DOCS,
) -> list[dict]:
    """The documents shown for one example (`qid`, `documents`; `retrieved` for the retrieved
    settings, best first), at most `num_docs`, in prompt order, as `{"pid", "title", "text"}`.

    Raises:
        ValueError: unknown setting, or a row whose field the setting needs (`documents`,
            `retrieved`) is missing, malformed or empty (the message names the qid and field).
    """
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {SETTINGS}, got {setting!r}")
    if num_docs < 1:
        raise ValueError(f"num_docs must be >= 1, got {num_docs}")
    where = f"example qid={row.get('qid')!r}"
    rng = example_rng(seed, row.get("qid"))
    shown: list[dict] = []
    if setting in ("gold-only", "gold-retrieved"):
        gold = parse_documents(row.get("documents"), where, ("title", "text"))
        shown = [_shown(d) for d in rng.sample(gold, min(num_docs, len(gold)))]
    if setting in ("gold-retrieved", "retrieved-only"):
        if row.get("retrieved") is None:
            raise ValueError(
                f"{where}: setting {setting!r} needs the field 'retrieved' "
                "(run `ambigdocs retrieve` and pass its output with --retrieved)"
            )
        retrieved = parse_documents(row["retrieved"], where, ("title", "text"), "retrieved")
        seen = {d["pid"] for d in shown}
        for d in retrieved:
            if len(shown) >= num_docs:
                break
            doc = _shown(d)
            if doc["pid"] is not None and doc["pid"] in seen:
                continue
            seen.add(doc["pid"])
            shown.append(doc)
    rng.shuffle(shown)
    return shown
