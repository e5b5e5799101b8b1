"""Creating AmbigDocs-style data (paper Section 3, docs/pipeline.md): one module per stage.

gather -> seed -> questions -> filter -> expand -> split; `all` runs the chain from a YAML config.
"""

# build stage -> (module with main(argv), one-line description), in chain order
STAGES: dict[str, tuple[str, str]] = {
    "gather": (
        "generation.datagen.gather",
        "disambiguation map from a MediaWiki XML dump (or the API)",
    ),
    "seed": ("generation.datagen.seed", "seed document pair per surface name (docs/pipeline.md 2)"),
    "questions": ("generation.datagen.questions", "question + two answers per seed pair (3)"),
    "filter": ("generation.datagen.filter", "not formatted / not ambiguous / not entailed (3)"),
    "expand": ("generation.datagen.expand", "answer set expansion (4)"),
    "split": ("generation.datagen.split", "train/validation/test with no shared passage (5)"),
    "all": ("generation.datagen.pipeline", "the whole chain from a YAML config, resumable"),
}
