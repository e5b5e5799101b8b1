"""`ambigdocs build STAGE ...`: each stage of the data pipeline is its own module with `main(argv)`."""

from __future__ import annotations

import importlib
import sys

STAGES: dict[str, tuple[str, str]] = {
    "gather": (
        "generation.datagen.gather",
        "disambiguation map from a MediaWiki XML dump (or the API)",
    ),
    "seed": ("generation.datagen.seed", "seed document pair per surface name (pipeline.md 2)"),
    "questions": ("generation.datagen.questions", "question + two answers per seed pair (3)"),
    "filter": ("generation.datagen.filter", "not formatted / not ambiguous / not entailed (3)"),
    "expand": ("generation.datagen.expand", "answer set expansion (4)"),
    "split": ("generation.datagen.split", "train/validation/test with no shared passage (5)"),
    "all": ("generation.datagen.pipeline", "the whole chain from a YAML config, resumable"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in STAGES:
        width = max(map(len, STAGES))
        print("usage: ambigdocs build STAGE [ARGS ...]\n\nstages:")
        for name, (_, desc) in STAGES.items():
            print(f"  {name.ljust(width)}  {desc}")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    return int(importlib.import_module(STAGES[argv[0]][0]).main(argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
