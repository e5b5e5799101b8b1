"""AmbigDocs: a `datasets` builder for the benchmark of Lee, Ye and Choi (2024).

The release's row schema is defined here once (`FEATURES`). `datasets` >= 4 runs no loading
script, so import the builder or call `load_ambigdocs`; `METRIC_PATH` and `load_metric` give the
metric's `evaluate` module from any folder. docs/datasets.md has every way to load the data.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datasets
from huggingface_hub import constants, hf_hub_url

# The metric's plain-Python reader and row parser: the builder imports nothing from generation/.
from metric.ambigdocs_metric import json_files, scoring

# The metric's error for a QA model that cannot be loaded, under a name users can `except`
# (`ambigdocs.QAModelError`), whether the metric came from `evaluate.load` or from Python.
from metric.ambigdocs_metric.qa_loading import QAModelError  # noqa: F401

_DESCRIPTION = """\
AmbigDocs pairs a question that mentions an ambiguous name (a Wikipedia disambiguation page's
surface name) with gold documents about different entities sharing that name, each document
with the answer for its entity. 36,098 examples: train 25,268 / validation 3,610 / test 7,220.
"""

_LICENSE = "Unknown (Wikipedia text: CC BY-SA 3.0)"

# Where the release lives. The raw files sit at the root of the Hub dataset repository
# `yoonsanglee/AmbigDocs` as JSON arrays named like the authors' splits (`dev` is the validation
# split). These URLs could NOT be checked from the development machines (no Hub access); the
# file names follow the authors' README ("[Dataset] .../yoonsanglee/AmbigDocs/tree/main") and
# third-party code that downloads `test.json` / `dev.json` from that repository. If the release
# moves, change RELEASE_REPO_ID / RELEASE_REVISION / RELEASE_FILES here, or pass `data_files`.
RELEASE_REPO_ID = "yoonsanglee/AmbigDocs"
_HOMEPAGE = f"https://huggingface.co/datasets/{RELEASE_REPO_ID}"
RELEASE_REVISION = "main"
RELEASE_FILES = {"train": "train.json", "validation": "dev.json", "test": "test.json"}
# On the endpoint in `HF_ENDPOINT` (a mirror) when one is set, like every other Hub download.
RELEASE_URLS = {
    split: hf_hub_url(RELEASE_REPO_ID, name, repo_type="dataset", revision=RELEASE_REVISION)
    for split, name in RELEASE_FILES.items()
}
# Split sizes of the release (paper, Table 6); checked after a download of the release.
RELEASE_SPLIT_SIZES = {"train": 25_268, "validation": 3_610, "test": 7_220}

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
# The one row parser (the metric's) checks rows against these fields.
assert tuple(FEATURES) == scoring.ROW_FIELDS and tuple(DOCUMENT_FEATURES) == scoring.DOCUMENT_FIELDS

_ROOT = Path(__file__).resolve().parent  # the clone, or site-packages once installed
SAMPLE_DIR = _ROOT / "generation" / "resources" / "sample"
# The `evaluate` module of the AmbigDocs metric: `evaluate.load(METRIC_PATH)` works from any
# folder (evaluate takes a local folder holding `ambigdocs_metric.py`); see `load_metric`.
METRIC_PATH = str(_ROOT / "metric" / "ambigdocs_metric")

# Raw file names per split, in order of preference (the release calls validation "dev").
RAW_FILE_NAMES = {
    "train": ["train.json", "train.jsonl"],
    "validation": ["dev.json", "validation.json", "dev.jsonl", "validation.jsonl"],
    "test": ["test.json", "test.jsonl"],
}


def raw_file_names(split: str) -> list[str]:
    """The raw file names that may hold `split` (the release's, or a new one such as
    `test_ood`) in a folder of the release layout, in order of preference."""
    return RAW_FILE_NAMES.get(split, [f"{split}.json", f"{split}.jsonl"])


def find_raw_files(folder: str | os.PathLike) -> dict[str, Path]:
    """{split: file} for the release's splits found in a folder of raw files (`train.json`,
    `dev.json` or `validation.json`, `test.json`, or `.jsonl`), in the order train, validation,
    test; missing splits are absent.

    Raises:
        ValueError: the folder does not exist or holds none of the files.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder}: not a folder")
    firsts = {
        s: next((folder / n for n in ns if (folder / n).is_file()), None)
        for s, ns in RAW_FILE_NAMES.items()
    }
    found = {split: path for split, path in firsts.items() if path is not None}
    if not found:
        expected = ", ".join(n for names in RAW_FILE_NAMES.values() for n in names)
        raise ValueError(
            f"{folder}: none of the release's raw files is there (looked for {expected})"
        )
    return found


def parse_row(row: Any, *, source: str, index: int, keep_extra: bool = False) -> dict:
    """One raw row of the release (row `index` of file `source`), checked, in the `FEATURES`
    schema: `scoring.parse_row` with the release's schema (decimal-text `qid` to int, int `pid`
    to text, text never altered); `keep_extra` keeps the fields outside it after its own.

    Raises:
        ValueError: naming the file, the row and the field (e.g. `documents[2].answer`).
    """
    return scoring.parse_row(row, f"{source}, row {index}", release=True, keep_extra=keep_extra)


def read_raw_rows(path: str | os.PathLike, keep_extra: bool = False) -> Iterator[dict]:
    """Yields the validated rows of one raw file (a JSON array, or JSONL; `keep_extra`: see
    `parse_row`).

    Raises:
        ValueError: the file or one of its rows is malformed (file, row and field named), or it
            holds no rows.
    """
    _refuse_top_level_object(Path(path))
    rows = json_files.read_records(path)
    if not rows:
        # An empty split would otherwise surface as `datasets`' "corresponds to no data".
        raise ValueError(f"{path}: no rows (the file is empty or an empty array)")
    for index, row in enumerate(rows):
        yield parse_row(row, source=str(path), index=index, keep_extra=keep_extra)


def _refuse_top_level_object(path: Path) -> None:
    """Refuses a .json file that holds one JSON object other than a row (`{"data": [...]}`),
    which would otherwise be read as JSONL and reported as a row missing `qid`; one row on one
    line (JSONL with a .json name) is still accepted."""
    if path.suffix != ".json":
        return
    try:
        text = path.read_text(encoding="utf-8").lstrip()
    except UnicodeDecodeError:
        return  # read_records names the file, line and byte
    if not text.startswith("{"):
        return
    try:
        data = json_files.loads(text, str(path))
    except ValueError:
        return  # several JSONL lines, or broken JSON: read_records names the line
    if isinstance(data, dict) and not all(field in data for field in FEATURES):
        raise ValueError(
            f"{path}: not a JSON array of rows (a JSON object with keys {sorted(data)[:5]})"
        )


class AmbigDocsConfig(datasets.BuilderConfig):
    """A BuilderConfig for AmbigDocs."""


class AmbigDocs(datasets.GeneratorBasedBuilder):
    """AmbigDocs: questions about ambiguous names with per-entity gold documents and answers.

    Sources, in order of precedence: `data_files` ({split: file(s)}, JSON arrays or JSONL),
    `data_dir` (a folder in the release layout), the bundled sample (config `sample`), the
    release's raw files downloaded from RELEASE_URLS (config `default`).
    """

    VERSION = datasets.Version("1.0.0")
    BUILDER_CONFIG_CLASS = AmbigDocsConfig
    BUILDER_CONFIGS = [
        AmbigDocsConfig(name="default", version=VERSION, description="The released data set."),
        AmbigDocsConfig(
            name="sample",
            version=VERSION,
            description="The paper's worked examples (Figure 1, Tables 3 and 8); offline.",
        ),
    ]
    DEFAULT_CONFIG_NAME = "default"

    def __init__(self, *args, config_name=None, data_dir=None, data_files=None, **kwargs):
        # A folder (data_dir, or the bundled sample) is turned into explicit data_files here:
        # `datasets` then records each file's mtime in the cache key, so editing a raw file
        # rebuilds the cache instead of silently serving the old rows.
        if data_files is None:
            folder = data_dir or (SAMPLE_DIR if config_name == "sample" else None)
            if folder is not None:
                data_files = {s: [str(p)] for s, p in find_raw_files(folder).items()}
        super().__init__(
            *args, config_name=config_name, data_dir=data_dir, data_files=data_files, **kwargs
        )

    def _info(self) -> datasets.DatasetInfo:
        splits = None
        if (
            self.config.name == "default"
            and not self.config.data_files
            and not self.config.data_dir
        ):
            # Recorded sizes make `download_and_prepare` check the download against Table 6.
            splits = datasets.SplitDict()
            for name, n in RELEASE_SPLIT_SIZES.items():
                splits.add(datasets.SplitInfo(name=name, num_examples=n))
        return datasets.DatasetInfo(
            description=_DESCRIPTION,
            features=FEATURES,
            homepage=_HOMEPAGE,
            license=_LICENSE,
            citation=scoring.CITATION,
            splits=splits,
        )

    def _split_generators(self, dl_manager):
        if self.config.data_files:  # also set for data_dir and the sample (see __init__)
            files = {split: list(paths) for split, paths in self.config.data_files.items()}
            files = dl_manager.download(files)  # local paths pass through; URLs are fetched
        else:
            files = {s: [p] for s, p in _download_release(dl_manager).items()}
        return [
            datasets.SplitGenerator(name=split, gen_kwargs={"paths": paths})
            for split, paths in files.items()
        ]

    def _generate_examples(self, paths):
        # Keys are the qids: unique and stable across runs. A repeated qid is an error rather
        # than a silent duplicate, since the metric and the resumable runners key on it.
        seen: dict[int, str] = {}
        for path in paths:
            for index, row in enumerate(read_raw_rows(path)):
                where = f"{path}, row {index}"
                if row["qid"] in seen:
                    raise ValueError(
                        f"{where}: field 'qid' repeats qid {row['qid']} (first at {seen[row['qid']]})"
                    )
                seen[row["qid"]] = where
                yield row["qid"], row


class ReleaseDownloadError(ConnectionError):
    """The release's raw files could not be downloaded (no network, offline mode, Hub error).

    Attributes:
        reason: what failed, in one line, without the advice on what works offline.
    """

    def __init__(self, reason: str):
        super().__init__(
            f'{reason}. Without the Hub: load_ambigdocs(config="sample") gives the bundled '
            "examples, load_ambigdocs(data_dir=FOLDER) reads raw files (train.json, dev.json, "
            "test.json)"
        )
        self.reason = reason


def _download_release(dl_manager) -> dict[str, str]:
    """Downloads RELEASE_URLS; any failure becomes one ReleaseDownloadError (the root cause in
    one line, and the offline ways to load)."""
    try:
        return dl_manager.download(RELEASE_URLS)
    except Exception as err:  # offline, refused, moved, no access: reported alike, in one line
        from metric.ambigdocs_metric.hub_errors import hub_unreachable, root_cause

        offline = datasets.config.HF_HUB_OFFLINE and hub_unreachable(err)
        detail = "HF_HUB_OFFLINE is set" if offline else root_cause(err)
        where = f"{RELEASE_REPO_ID} on {constants.ENDPOINT}"
        raise ReleaseDownloadError(
            f"cannot download the AmbigDocs release ({where}: {detail})"
        ) from None


# Arguments of `download_and_prepare` that `load_ambigdocs` routes there rather than to the
# builder's constructor.
_PREPARE_KWARGS = ("download_mode", "verification_mode", "download_config", "num_proc")


def load_ambigdocs(
    split: str | None = None,
    config: str = "default",
    data_dir: str | os.PathLike | None = None,
    **kwargs,
):
    """Loads AmbigDocs with the builder (no loading script involved).

    Args:
        split: `train`, `validation`, `test` (or any split the source has; slicing such as
            `test[:10]` works), or None for a `DatasetDict` of all.
        config: `default` (the release) or `sample` (the paper's examples, offline).
        data_dir: a folder with the release's raw files instead of the download.
        **kwargs: passed to the builder (`cache_dir`, `data_files`, ...) or, for
            `download_mode`, `verification_mode`, `download_config` and `num_proc`, to
            `download_and_prepare`.

    Returns:
        A `datasets.Dataset` (one split) or `datasets.DatasetDict`.

    Raises:
        ValueError: a source file or row is malformed, or `data_dir` holds no raw file.
        ReleaseDownloadError: the release could not be downloaded (a `ConnectionError`; the
            message says why in one line, and what works offline).
    """
    prepare = {k: kwargs.pop(k) for k in _PREPARE_KWARGS if k in kwargs}
    folder = data_dir or (SAMPLE_DIR if config == "sample" else None)
    wanted = split.split("[")[0] if isinstance(split, str) else None
    if folder is not None and wanted and "data_files" not in kwargs:
        found = find_raw_files(folder)
        if wanted in found:  # read (and check) only the split asked for, not its neighbours
            kwargs["data_files"] = {wanted: [str(found[wanted])]}
    builder = AmbigDocs(config_name=config, data_dir=str(data_dir) if data_dir else None, **kwargs)
    try:
        builder.download_and_prepare(**prepare)
    except ReleaseDownloadError as err:
        # A fresh exception: its traceback ends here, not deep inside `datasets`.
        raise ReleaseDownloadError(err.reason) from None
    except datasets.exceptions.DatasetGenerationError as err:
        # `datasets` wraps errors raised while generating; surface a malformed row as the
        # ValueError that names the file, the row and the field.
        if isinstance(err.__cause__, ValueError):
            raise err.__cause__ from None
        raise
    return builder.as_dataset(split=split)


def load_metric(**kwargs):
    """The AmbigDocs metric as an `evaluate` module, from wherever the toolkit is installed:
    `evaluate.load(ambigdocs.METRIC_PATH, **kwargs)`."""
    import evaluate

    return evaluate.load(METRIC_PATH, **kwargs)


if __name__ == "__main__":
    print(json.dumps(load_ambigdocs("test", config="sample")[0], indent=1, ensure_ascii=False))
