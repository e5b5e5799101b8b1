"""lm-eval's logged samples of the AmbigDocs tasks as the toolkit's answers file.

    python -m generation.lm_eval_tasks.samples SAMPLES.jsonl --output answers.jsonl

SAMPLES.jsonl is what `lm_eval --log_samples` writes for the task; each answer row is the logged
doc (with `docs`, the documents shown), `gen_answer` (the filtered response lm-eval scored) and
`prompt`, in data order: the layout `ambigdocs answer` writes, which `ambigdocs evaluate` reads.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from pathlib import Path

from generation.io.records import atomic_write_jsonl, iter_jsonl
from generation.options import option, run_command


def sample_to_answer(sample: Mapping, where: str) -> dict:
    """One logged sample as an answer row.

    Raises:
        ValueError: no `doc` with shown documents (`docs`), or no response (names `where`).
    """
    doc = sample.get("doc")
    if not isinstance(doc, Mapping) or not isinstance(doc.get("docs"), list):
        raise ValueError(
            f"{where}: no field 'doc' with the shown documents 'docs' (not a sample of the "
            "ambigdocs tasks?)"
        )
    response = sample.get("filtered_resps")
    if isinstance(response, list):
        response = response[0] if response else None
    if not isinstance(response, str):
        raise ValueError(f"{where}: field 'filtered_resps' holds no answer text")
    arguments = sample.get("arguments") or {}
    first = next(iter(arguments.values()), {}) if isinstance(arguments, Mapping) else {}
    row = {**doc, "gen_answer": response}
    if isinstance(first, Mapping) and "arg_0" in first:
        row["prompt"] = first["arg_0"]
    return row


def samples_to_answers(path: str | Path) -> list[dict]:
    """The answer rows of an lm-eval samples file, in data order (by `doc_id`).

    Raises:
        ValueError: a malformed line or sample, a repeated `doc_id` (names file and line), or
            no sample at all.
    """
    keyed = []
    for lineno, sample in enumerate(iter_jsonl(path), 1):
        where = f"{path}: line {lineno}"
        doc_id = sample.get("doc_id")
        if isinstance(doc_id, bool) or not isinstance(doc_id, int):
            raise ValueError(f"{where}: field 'doc_id' must be an integer, got {doc_id!r}")
        keyed.append((doc_id, sample_to_answer(sample, where)))
    if not keyed:
        # An empty file would otherwise become an empty answers file, scored as nothing.
        raise ValueError(f"{path}: no samples (the file is empty)")
    ids = [doc_id for doc_id, _ in keyed]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: a doc_id repeats (more than one filter or repeat logged?)")
    return [row for _, row in sorted(keyed, key=lambda pair: pair[0])]


@dataclasses.dataclass
class SamplesOptions:
    """The options of `python -m generation.lm_eval_tasks.samples`."""

    samples: str = option(
        help="samples_<task>_<date>.jsonl written by lm_eval --log_samples", positional=True
    )
    output: str = option(help="the answers file to write (JSONL)")


def main(argv: list[str] | None = None) -> int:
    description = (
        "Convert lm-eval samples of the ambigdocs tasks to an answers file (JSONL) that "
        "`ambigdocs evaluate` reads."
    )

    def run(o: SamplesOptions) -> None:
        rows = samples_to_answers(o.samples)
        atomic_write_jsonl(o.output, rows)
        print(f"wrote {len(rows)} answers to {o.output}", file=sys.stderr)

    prog = "python -m generation.lm_eval_tasks.samples"
    return run_command(prog, description, [SamplesOptions], run, argv)


if __name__ == "__main__":
    sys.exit(main())
