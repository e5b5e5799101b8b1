"""The AmbigDocs builder: sources, validation, stable keys, exact text, the release's record."""

from __future__ import annotations

import json
import os
from pathlib import Path

import datasets
import pytest

import ambigdocs
from ambigdocs import FEATURES, AmbigDocs, load_ambigdocs

# Text that a careless loader would change: outer spaces, a decomposed accent (NFD), a newline,
# a tab, quotes, an emoji, an empty answer.
TRICKY = [" leading and trailing  ", "Beyonce\u0301", "two\nlines\tand a tab", "“quoted” 🍒", ""]


def make_row(qid: int, n_docs: int = 2, pid_as_int: bool = False) -> dict:
    """A raw release row; qid-dependent text so that rows differ."""
    return {
        "qid": qid,
        "ambiguous_entity": f"Name {qid}{TRICKY[qid % len(TRICKY)]}",
        "question": f"Where was Name {qid} born?{TRICKY[(qid + 1) % len(TRICKY)]}",
        "documents": [
            {
                "title": f"Name {qid} ({d})",
                "text": f"Passage {qid}.{d} {TRICKY[(qid + d) % len(TRICKY)]}",
                "pid": (1000 * qid + d) if pid_as_int else f"p{qid}-{d}",
                "answer": TRICKY[(qid + d + 2) % len(TRICKY)],
            }
            for d in range(n_docs)
        ],
    }


def expected_row(raw: dict) -> dict:
    """What the builder must return for a raw row: the same text; an int pid as its digits."""
    row = json.loads(json.dumps(raw))
    for doc in row["documents"]:
        doc["pid"] = str(doc["pid"])
    return row


def write_json(path: Path, rows: list[dict]) -> Path:
    path.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


@pytest.fixture
def raw_release(tmp_path) -> tuple[Path, dict[str, list[dict]]]:
    """A folder in the release layout: train.json, dev.json (JSON arrays), test.jsonl."""
    folder = tmp_path / "raw"
    folder.mkdir()
    splits = {
        "train": [make_row(q, n_docs=2 + q % 3) for q in (7, 3, 11, 5)],
        "validation": [make_row(q, pid_as_int=True) for q in (20, 21)],
        "test": [make_row(q, n_docs=3) for q in (30, 31, 32)],
    }
    write_json(folder / "train.json", splits["train"])
    write_json(folder / "dev.json", splits["validation"])
    write_jsonl(folder / "test.jsonl", splits["test"])
    return folder, splits


def test_sample_config_is_the_bundled_file(sample_dir):
    raw = json.loads((sample_dir / "test.json").read_text(encoding="utf-8"))
    ds = load_ambigdocs(config="sample")
    assert list(ds) == ["test"]
    assert ds["test"].features == FEATURES
    assert ds["test"].to_list() == [expected_row(r) for r in raw]
    # One split asked for: a Dataset, in file order.
    test = load_ambigdocs("test", config="sample")
    assert isinstance(test, datasets.Dataset)
    assert list(test["qid"]) == [r["qid"] for r in raw]


def test_release_layout_rows_features_and_exact_text(raw_release, tmp_path):
    folder, splits = raw_release
    ds = load_ambigdocs(data_dir=folder, cache_dir=str(tmp_path / "cache"))
    assert list(ds) == ["train", "validation", "test"]
    for split, rows in splits.items():
        assert ds[split].features == FEATURES
        assert ds[split].to_list() == [expected_row(r) for r in rows]
    # The tricky text survived byte for byte (the NFD accent is still two code points).
    train = ds["train"].to_list()
    assert any("Beyonce\u0301" in r["ambiguous_entity"] + r["question"] for r in train)


def test_validation_json_name_is_accepted(tmp_path):
    write_json(tmp_path / "validation.json", [make_row(1)])
    ds = load_ambigdocs(data_dir=tmp_path, cache_dir=str(tmp_path / "cache"))
    assert list(ds) == ["validation"] and list(ds["validation"]["qid"]) == [1]


def test_data_files_override_data_dir(raw_release, tmp_path):
    folder, _ = raw_release
    mine = write_jsonl(tmp_path / "mine.jsonl", [make_row(99), make_row(98)])
    ds = load_ambigdocs(
        data_dir=folder, data_files={"test_new": str(mine)}, cache_dir=str(tmp_path / "c")
    )
    assert list(ds) == ["test_new"]
    assert list(ds["test_new"]["qid"]) == [99, 98]


def test_editing_a_raw_file_is_not_hidden_by_the_cache(tmp_path):
    folder = tmp_path / "raw"
    folder.mkdir()
    path = write_json(folder / "test.json", [make_row(1)])
    cache = str(tmp_path / "cache")
    assert list(load_ambigdocs("test", data_dir=folder, cache_dir=cache)["qid"]) == [1]
    write_json(path, [make_row(1), make_row(2)])
    os.utime(path, (1, 1))  # a different mtime even on coarse-grained file systems
    assert list(load_ambigdocs("test", data_dir=folder, cache_dir=cache)["qid"]) == [1, 2]


def _break(row: dict, how: str) -> dict:
    row = json.loads(json.dumps(row))
    if how == "missing question":
        del row["question"]
    elif how == "answer not text":
        row["documents"][1]["answer"] = 1912
    elif how == "title missing":
        del row["documents"][0]["title"]
    elif how == "qid float":
        row["qid"] = 3.5
    elif how == "qid bool":
        row["qid"] = True
    elif how == "documents empty":
        row["documents"] = []
    elif how == "document not object":
        row["documents"][1] = "just text"
    elif how == "pid null":
        row["documents"][0]["pid"] = None
    elif how == "qid above int64":
        row["qid"] = 2**63
    elif how == "qid below int64":
        row["qid"] = -(2**63) - 1
    return row


@pytest.mark.parametrize(
    ("how", "field"),
    [
        ("missing question", "'question' is missing"),
        ("answer not text", "'documents[1].answer' must be a string, got int"),
        ("title missing", "'documents[0].title' is missing"),
        ("qid float", "'qid' must be an integer, got float"),
        ("qid bool", "'qid' must be an integer, got bool"),
        ("documents empty", "'documents' is missing or empty"),
        ("document not object", "'documents[1]' must be an object, got str"),
        ("pid null", "'documents[0].pid' must be a string, got NoneType"),
        ("qid above int64", "'qid' is outside int64"),
        ("qid below int64", "'qid' is outside int64"),
    ],
)
def test_malformed_row_names_file_row_and_field(tmp_path, how, field):
    rows = [make_row(1), make_row(2), _break(make_row(3), how)]
    path = write_json(tmp_path / "test.json", rows)
    with pytest.raises(ValueError) as err:
        load_ambigdocs(data_dir=tmp_path, cache_dir=str(tmp_path / "cache"))
    message = str(err.value)
    assert str(path) in message and "row 2" in message and field in message


def test_repeated_qid_is_an_error(tmp_path):
    path = write_jsonl(tmp_path / "test.jsonl", [make_row(4), make_row(5), make_row(4)])
    with pytest.raises(ValueError, match=r"row 2: field 'qid' repeats qid 4") as err:
        load_ambigdocs(data_dir=tmp_path, cache_dir=str(tmp_path / "cache"))
    assert str(path) in str(err.value)


def test_qid_as_decimal_text_and_extra_fields():
    raw = make_row(8)
    raw["qid"] = "8"
    raw["gen_answer"] = "an extra field"
    assert ambigdocs.parse_row(raw, source="x", index=0)["qid"] == 8
    assert "gen_answer" not in ambigdocs.parse_row(raw, source="x", index=0)
    kept = ambigdocs.parse_row(raw, source="x", index=0, keep_extra=True)
    assert kept["gen_answer"] == "an extra field"


def test_int64_bounds_are_accepted():
    for qid in (2**63 - 1, -(2**63)):
        raw = make_row(1)
        raw["qid"] = qid
        assert ambigdocs.parse_row(raw, source="x", index=0)["qid"] == qid


@pytest.mark.parametrize("text", ["", "[]", "  \n", "[\n]\n"])
def test_empty_split_file_is_a_clear_error(tmp_path, text):
    write_json(tmp_path / "train.json", [make_row(1)])
    (tmp_path / "test.json").write_text(text)
    with pytest.raises(ValueError, match="test.json: no rows"):
        load_ambigdocs(data_dir=tmp_path, cache_dir=str(tmp_path / "cache"))


def test_json_object_file_is_not_an_array_of_rows(tmp_path):
    (tmp_path / "test.json").write_text(json.dumps({"data": [make_row(1)]}))
    with pytest.raises(ValueError, match=r"test\.json: not a JSON array of rows"):
        load_ambigdocs(data_dir=tmp_path, cache_dir=str(tmp_path / "cache"))
    # One row on one line (JSONL under a .json name) is still a file of one row.
    (tmp_path / "test.json").write_text(json.dumps(make_row(2)) + "\n")
    ds = load_ambigdocs("test", data_dir=tmp_path, cache_dir=str(tmp_path / "cache2"))
    assert list(ds["qid"]) == [2]


def test_empty_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="none of the release's raw files"):
        load_ambigdocs(data_dir=tmp_path)


def test_release_download_uses_the_url_constant_and_checks_table6_sizes(
    raw_release, tmp_path, monkeypatch
):
    """The default config downloads RELEASE_URLS and checks the sizes of the paper's Table 6.

    The Hub is unreachable here, so the download manager is intercepted: each release URL is
    served from the small raw folder, whose sizes are not Table 6's.
    """
    folder, splits = raw_release
    served = {
        ambigdocs.RELEASE_URLS["train"]: folder / "train.json",
        ambigdocs.RELEASE_URLS["validation"]: folder / "dev.json",
        ambigdocs.RELEASE_URLS["test"]: folder / "test.jsonl",
    }
    asked = []

    def fake_download(self, url_or_urls):
        asked.append(url_or_urls)
        return {k: str(served[v]) for k, v in url_or_urls.items()}

    monkeypatch.setattr(datasets.DownloadManager, "download", fake_download)
    builder = AmbigDocs(cache_dir=str(tmp_path / "cache"))
    assert {s: i.num_examples for s, i in builder.info.splits.items()} == {
        "train": 25_268,
        "validation": 3_610,
        "test": 7_220,
    }
    with pytest.raises(datasets.exceptions.NonMatchingSplitsSizesError):
        builder.download_and_prepare()
    assert asked == [ambigdocs.RELEASE_URLS]
    assert all(
        url.startswith("https://huggingface.co/datasets/yoonsanglee/AmbigDocs/resolve/")
        for url in ambigdocs.RELEASE_URLS.values()
    )
    ds = load_ambigdocs(cache_dir=str(tmp_path / "cache2"), verification_mode="no_checks")
    assert ds["validation"].to_list() == [expected_row(r) for r in splits["validation"]]


def test_dataset_infos_json_matches_the_builder(repo_root):
    infos = json.loads((repo_root / "dataset_infos.json").read_text(encoding="utf-8"))
    assert set(infos) == {"default", "sample"}
    for config in infos.values():
        assert datasets.Features.from_dict(config["features"]) == FEATURES
    release = {k: v["num_examples"] for k, v in infos["default"]["splits"].items()}
    assert release == ambigdocs.RELEASE_SPLIT_SIZES
    assert sum(release.values()) == 36_098  # the paper's total
    # Unknown sizes are left out, not invented.
    assert all("num_bytes" not in v for v in infos["default"]["splits"].values())
    sample = load_ambigdocs(config="sample")
    assert {k: v["num_examples"] for k, v in infos["sample"]["splits"].items()} == {
        k: len(v) for k, v in sample.items()
    }
    assert {k: v["num_bytes"] for k, v in infos["sample"]["splits"].items()} == {
        k: v.data.nbytes for k, v in sample.items()
    }


@pytest.mark.parametrize("qid", ["007", "+7", "7.0", " 7"])
def test_qid_text_must_be_canonical_decimal(qid):
    raw = make_row(7)
    raw["qid"] = qid
    with pytest.raises(ValueError, match=r"x, row 3: field 'qid' must be an integer, got str"):
        ambigdocs.parse_row(raw, source="x", index=3)


def test_one_split_of_a_folder_is_read_alone(tmp_path, sample_dir):
    # Scoring the test split must not read (or trip over) the train file beside it.
    folder = tmp_path / "raw"
    folder.mkdir()
    (folder / "test.json").write_text((sample_dir / "test.json").read_text())
    (folder / "train.json").write_text("not JSON at all")
    test = load_ambigdocs("test", data_dir=folder, cache_dir=str(tmp_path / "c"))
    assert len(test) == len(json.loads((sample_dir / "test.json").read_text()))
    assert len(load_ambigdocs("test[:2]", data_dir=folder, cache_dir=str(tmp_path / "c"))) == 2
    with pytest.raises(ValueError, match="train.json"):
        load_ambigdocs(data_dir=folder, cache_dir=str(tmp_path / "c"))  # all splits: all read
