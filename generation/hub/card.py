"""The dataset card (README.md) of a script-free AmbigDocs repository.

The card's YAML is what `datasets.load_dataset` reads: `configs` (which files make which split)
and `dataset_info` (features and split sizes). It is written with the `datasets` helpers that
`push_to_hub` uses (`MetadataConfigs`, `DatasetInfosDict`), so the YAML is exactly the form the
loader expects. The prose follows below it; its split table sits between two markers so that
`push` can refresh it without touching text someone edited on the Hub.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import datasets
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard, DatasetCardData

import ambigdocs
from generation.hub.layout import split_pattern
from metric.ambigdocs_metric.scoring import CITATION

SPLITS_START = "<!-- ambigdocs:splits:start -->"
SPLITS_END = "<!-- ambigdocs:splits:end -->"

_BODY = """\
# AmbigDocs

{description}
Paper: *AmbigDocs: Reasoning across Documents on Different Entities under the Same Name*
(Lee, Ye and Choi, COLM 2024). Homepage: {homepage}. Original release:
[`{release}`](https://huggingface.co/datasets/{release}).

This copy is script-free (Parquet files and this card): `datasets` 4 and later no longer run
loading scripts, and read it directly.

## Fields

- `qid` (int64): the question id, unique within the data set.
- `ambiguous_entity` (string): the ambiguous surface name (a Wikipedia disambiguation page).
- `question` (string): a question that mentions only the ambiguous name.
- `documents` (list of structs): the gold documents, one per entity sharing the name, each
  with `title` (the disambiguated entity), `text` (its 100-word Wikipedia passage), `pid` (the
  passage id) and `answer` (the answer to the question for this entity).

Text is exactly as in the raw release files (no stripping or normalisation).

## Splits

{splits}

## How to load

```python
from datasets import load_dataset

ds = load_dataset("{repo_id}")                  # this repository on the Hub
ds = load_dataset("path/to/this/folder")        # a local copy of it
```

With the AmbigDocs toolkit installed, the builder reads the raw release files directly:

```python
from ambigdocs import load_ambigdocs

test = load_ambigdocs("test")                        # raw files of the release
local = load_ambigdocs(data_dir="path/to/raw")       # train.json, dev.json, test.json
```

## License

{license}. The passages are Wikipedia text (CC BY-SA 3.0).

## Citation

```bibtex
{citation}```
"""


def _split_table(infos: Mapping[str, datasets.DatasetInfo]) -> str:
    """The card's split table, between its markers."""
    lines = [SPLITS_START, "| config | split | rows |", "|---|---|---:|"]
    for config in sorted(infos):
        for name, info in (infos[config].splits or {}).items():
            lines.append(f"| {config} | {name} | {info.num_examples:,} |")
    return "\n".join([*lines, SPLITS_END])


def card_configs(card: DatasetCard) -> MetadataConfigs:
    """The `configs` of a card's YAML ({config: {"data_files": [...], ...}})."""
    return MetadataConfigs.from_dataset_card_data(card.data)


def card_infos(card: DatasetCard) -> DatasetInfosDict:
    """The `dataset_info` of a card's YAML ({config: DatasetInfo})."""
    return DatasetInfosDict.from_dataset_card_data(card.data)


def split_entries(entry: Mapping, config: str, where: str) -> list[dict]:
    """The `data_files` of one config, checked to be the form `push` can extend.

    `push` adds or replaces one `{split, path}` item and keeps the others. The other forms the
    loader accepts (a plain pattern, a list of patterns, a `data_dir` with or without
    `data_files`) name the splits by the files' names, so adding an item to them would change or
    hide the splits already there: they are refused, not rewritten.

    Args:
        entry: the config's entry of `configs` (`{"data_files": ..., ...}`).
        config: the config's name (for the message).
        where: the repository or card (for the message).

    Returns:
        The `{split, path}` items (empty for a config with no `data_files` and no `data_dir`).

    Raises:
        ValueError: the config declares its files in another form.
    """
    files = entry.get("data_files")
    if entry.get("data_dir") is not None:
        form = f"data_dir {entry['data_dir']!r}"
    elif files is None:
        return []
    elif isinstance(files, list) and all(
        isinstance(item, dict) and isinstance(item.get("split"), str) and "path" in item
        for item in files
    ):
        return [dict(item) for item in files]
    else:
        form = repr(files)
    raise ValueError(
        f"{where}: config {config!r} declares its files as {form}; push only extends configs "
        "whose data_files is a list of {split, path} (without data_dir)"
    )


def set_split(card: DatasetCard, config: str, split: str, dataset: datasets.Dataset) -> None:
    """Adds or replaces one split of one config in the card's YAML (in place): its files (the
    layout's pattern), its row count and Arrow size, and the config's features (all its splits
    share them); other splits are kept.

    Raises:
        ValueError: the config declares its files in a form other than `{split, path}` items.
    """
    entry = dict(card_configs(card).get(config, {}))
    files = split_entries(entry, config, "the card")
    # Replaced where it stands, else added at the end.
    at = next((i for i, item in enumerate(files) if item["split"] == split), len(files))
    files[at : at + 1] = [{"split": split, "path": split_pattern(config, split)}]
    entry["data_files"] = files
    MetadataConfigs({config: entry}).to_dataset_card_data(card.data)

    old = card_infos(card).get(config)
    info = datasets.SplitInfo(name=split, num_examples=len(dataset), num_bytes=dataset.data.nbytes)
    splits = {**(old.splits or {} if old else {}), split: info}
    # List the splits in the order of the config's data_files (kept stable across pushes).
    order = [item["split"] for item in files]
    ordered = datasets.SplitDict()
    for name in sorted(splits, key=lambda n: order.index(n) if n in order else len(order)):
        ordered.add(splits[name])
    new_info = datasets.DatasetInfo(features=dataset.features, splits=ordered)
    new_info.dataset_size = sum(s.num_bytes for s in ordered.values())
    DatasetInfosDict({config: new_info}).to_dataset_card_data(card.data)


def new_card(repo_id: str) -> DatasetCard:
    """A card with the AmbigDocs description, fields, loading, license and citation; no splits.

    Args:
        repo_id: the Hub id shown in the loading example (`NAMESPACE/NAME`).
    """
    data = DatasetCardData(
        pretty_name="AmbigDocs",
        language=["en"],
        license="unknown",
        task_categories=["question-answering"],
        tags=["ambiguity", "multi-document", "retrieval-augmented-generation"],
    )
    body = _BODY.format(
        description=ambigdocs._DESCRIPTION,
        homepage=ambigdocs._HOMEPAGE,
        release=ambigdocs.RELEASE_REPO_ID,
        splits=_split_table({}),
        repo_id=repo_id,
        license=ambigdocs._LICENSE,
        citation=CITATION,
    )
    return DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{body}")


def render(card: DatasetCard) -> str:
    """The card's text as it is written to README.md (YAML, then the prose), its split table
    (between the markers; none: unchanged) rewritten from the YAML."""
    pattern = re.compile(re.escape(SPLITS_START) + r".*?" + re.escape(SPLITS_END), re.DOTALL)
    table = _split_table(card_infos(card))
    card.text = pattern.sub(lambda _: table, card.text)
    return str(card)
