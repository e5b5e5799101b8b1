"""AmbigDocs: a `datasets` builder for the benchmark of Lee, Ye and Choi (2024).

The release's row schema is defined here once (`FEATURES`) and imported by the rest of the
project. `datasets` >= 4 no longer runs loading scripts, so use this builder by importing it:

    from ambigdocs import load_ambigdocs
    test = load_ambigdocs("test")                       # the release, from the Hub
    sample = load_ambigdocs("test", config="sample")    # the paper's worked examples, offline
    local = load_ambigdocs(data_dir="path/to/raw")      # train.json, dev.json, test.json
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import datasets

_CITATION = """\
@inproceedings{lee2024ambigdocs,
  title={AmbigDocs: Reasoning across Documents on Different Entities under the Same Name},
  author={Lee, Yoonsang and Ye, Xi and Choi, Eunsol},
  booktitle={Conference on Language Modeling (COLM)},
  year={2024}
}
"""

_DESCRIPTION = """\
AmbigDocs pairs a question that mentions an ambiguous name (a Wikipedia disambiguation page's
surface name) with gold documents about different entities sharing that name, each document
with the answer for its entity. 36,098 examples: train 25,268 / validation 3,610 / test 7,220.
"""

_HOMEPAGE = "https://huggingface.co/datasets/yoonsanglee/AmbigDocs"
_LICENSE = "Unknown (Wikipedia text: CC BY-SA 3.0)"

# One document of a row: the disambiguated entity (title), its 100-word passage, the passage id
# and the answer for this entity.
DOCUMENT_FEATURES = {
    "title": datasets.Value("string"),
    "text": datasets.Value("string"),
    "pid": datasets.Value("string"),
    "answer": datasets.Value("string"),
}

# The release's row schema. `documents` is a list of structs (`datasets.List`), so rows give a
# list of dicts, as `datasets` >= 4 loads the Hub release.
FEATURES = datasets.Features(
    {
        "qid": datasets.Value("int64"),
        "ambiguous_entity": datasets.Value("string"),
        "question": datasets.Value("string"),
        "documents": datasets.List(DOCUMENT_FEATURES),
    }
)

SAMPLE_DIR = Path(__file__).resolve().parent / "generation" / "resources" / "sample"

# Raw file names per split, in order of preference (the release calls validation "dev").
RAW_FILE_NAMES = {
    "train": ["train.json", "train.jsonl"],
    "validation": ["dev.json", "validation.json", "dev.jsonl", "validation.jsonl"],
    "test": ["test.json", "test.jsonl"],
}


class AmbigDocsConfig(datasets.BuilderConfig):
    """A BuilderConfig for AmbigDocs."""


class AmbigDocs(datasets.GeneratorBasedBuilder):
    """AmbigDocs: questions about ambiguous names with per-entity gold documents and answers."""

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIGS = [
        AmbigDocsConfig(name="default", version=VERSION, description="The released data set."),
        AmbigDocsConfig(
            name="sample",
            version=VERSION,
            description="The paper's worked examples (Figure 1, Tables 3 and 8); offline.",
        ),
    ]
    DEFAULT_CONFIG_NAME = "default"

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=FEATURES,
            homepage=_HOMEPAGE,
            license=_LICENSE,
            citation=_CITATION,
        )

    def _split_generators(self, dl_manager):
        if self.config.data_files:
            files = {split: list(paths) for split, paths in self.config.data_files.items()}
        else:
            folder = SAMPLE_DIR if self.config.name == "sample" else self.config.data_dir
            if folder is None:
                raise ValueError(
                    "the default config needs data_dir=FOLDER with the release's raw files "
                    "(train.json, dev.json, test.json)"
                )
            files = {}
            for split, names in RAW_FILE_NAMES.items():
                found = [Path(folder) / n for n in names if (Path(folder) / n).exists()]
                if found:
                    files[split] = [str(found[0])]
        return [
            datasets.SplitGenerator(name=split, gen_kwargs={"paths": paths})
            for split, paths in files.items()
        ]

    def _generate_examples(self, paths):
        # Keys are the qids: unique and stable across runs.
        for path in paths:
            for row in _read_raw(path):
                yield row["qid"], row


def _read_raw(path: str | os.PathLike):
    from generation.io_utils import read_records

    for row in read_records(path):
        yield {
            "qid": int(row["qid"]),
            "ambiguous_entity": row["ambiguous_entity"],
            "question": row["question"],
            "documents": [
                {k: (None if d.get(k) is None else str(d[k])) for k in DOCUMENT_FEATURES}
                for d in row["documents"]
            ],
        }


def load_ambigdocs(
    split: str | None = None,
    config: str = "default",
    data_dir: str | os.PathLike | None = None,
    **kwargs,
):
    """Loads AmbigDocs with the builder (no loading script involved).

    Args:
        split: `train`, `validation`, `test`, or None for a `DatasetDict` of all.
        config: `default` (the release) or `sample` (the paper's examples, offline).
        data_dir: a folder with the release's raw files instead of the download.
        **kwargs: passed to the builder (`cache_dir`, `data_files`, ...).

    Returns:
        A `datasets.Dataset` (one split) or `datasets.DatasetDict`.
    """
    builder = AmbigDocs(config_name=config, data_dir=str(data_dir) if data_dir else None, **kwargs)
    builder.download_and_prepare()
    return builder.as_dataset(split=split)


if __name__ == "__main__":
    print(json.dumps(load_ambigdocs("test", config="sample")[0], indent=1, ensure_ascii=False))
