"""`ambigdocs export`: the script-free copy loads with `datasets.load_dataset` exactly as built."""

from __future__ import annotations

import json
import os
import stat

import datasets
import pytest
from huggingface_hub import DatasetCard
from test_builder import expected_row, make_row, write_json, write_jsonl

from ambigdocs import FEATURES, AmbigDocs, load_ambigdocs
from generation.cli import main as cli_main
from generation.hub import export


def test_acceptance_raw_release_layout_build_export_reload(tmp_path, capsys):
    """Build from raw files in the release layout, compare, export, reload, compare again."""
    raw = tmp_path / "raw"
    raw.mkdir()
    splits = {
        "train": [make_row(q, n_docs=2 + q % 4) for q in (12, 4, 9, 1, 30)],
        "validation": [make_row(q, pid_as_int=True) for q in (40, 41)],
        "test": [make_row(q, n_docs=3) for q in (50, 52, 51)],
    }
    write_json(raw / "train.json", splits["train"])
    write_json(raw / "dev.json", splits["validation"])
    write_jsonl(raw / "test.jsonl", splits["test"])

    built = load_ambigdocs(data_dir=raw, cache_dir=str(tmp_path / "cache"))
    assert list(built) == ["train", "validation", "test"]
    for split, rows in splits.items():
        assert built[split].features == FEATURES
        assert built[split].to_list() == [expected_row(r) for r in rows]

    # The builder class used directly gives the same.
    builder = AmbigDocs(data_dir=str(raw), cache_dir=str(tmp_path / "cache-b"))
    builder.download_and_prepare()
    direct = builder.as_dataset()
    for split in built:
        assert direct[split].features == FEATURES
        assert direct[split].to_list() == built[split].to_list()

    out = tmp_path / "export"
    assert (
        cli_main(["export", "--data-dir", str(raw), "--cache-dir", str(tmp_path / "c2"), str(out)])
        == 0
    )
    assert "wrote 4 files" in capsys.readouterr().out

    # Script-free: Parquet and a card, no Python.
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == [
        "README.md",
        "data/test-00000-of-00001.parquet",
        "data/train-00000-of-00001.parquet",
        "data/validation-00000-of-00001.parquet",
    ]
    reloaded = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "c3"))
    assert list(reloaded) == list(built)
    for split in built:
        assert reloaded[split].features == built[split].features == FEATURES
        assert reloaded[split].to_list() == built[split].to_list()


def test_card_yaml_and_text(tmp_path):
    out = tmp_path / "export"
    assert (
        export.main(
            [
                "--config",
                "default",
                "--config",
                "sample",
                "--data-dir",
                str(_raw(tmp_path)),
                "--repo-id",
                "me/ambig",
                str(out),
            ]
        )
        == 0
    )
    card = DatasetCard.load(out / "README.md")
    configs = {c["config_name"]: c["data_files"] for c in card.data["configs"]}
    assert configs == {
        "default": [{"split": "test", "path": "data/test-*"}],
        "sample": [{"split": "test", "path": "sample/test-*"}],
    }
    infos = {i["config_name"]: i for i in card.data["dataset_info"]}
    assert infos["sample"]["splits"][0]["num_examples"] == 5
    assert infos["default"]["splits"][0]["num_examples"] == 2
    assert datasets.Features._from_yaml_list(infos["default"]["features"]) == FEATURES
    text = card.text
    for needle in (
        "## Fields",
        "## Splits",
        "| sample | test | 5 |",
        "| default | test | 2 |",
        'load_dataset("me/ambig")',
        "load_ambigdocs",
        "## License",
        "@inproceedings",
    ):
        assert needle in text
    # Both configs load from the folder; the sample equals the builder's sample.
    sample = datasets.load_dataset(str(out), "sample", split="test", cache_dir=str(tmp_path / "c"))
    assert sample.to_list() == load_ambigdocs("test", config="sample").to_list()


def _raw(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    write_json(raw / "test.json", [make_row(1), make_row(2)])
    return raw


def test_export_refuses_a_non_empty_folder_and_overwrites_atomically(tmp_path, capsys):
    out = tmp_path / "export"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert export.main(["--config", "sample", str(out)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert (out / "keep.txt").exists()
    assert export.main(["--config", "sample", "--overwrite", str(out)]) == 0
    assert not (out / "keep.txt").exists() and (out / "README.md").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left


def test_sharding_keeps_rows_and_order(tmp_path):
    ds = load_ambigdocs(config="sample")
    written = export.export_dataset({"default": ds}, tmp_path / "out", max_shard_bytes=1000)
    shards = [f for f in written if f.endswith(".parquet")]
    assert len(shards) == 3 and shards[0] == "data/test-00000-of-00003.parquet"
    reloaded = datasets.load_dataset(
        str(tmp_path / "out"), split="test", cache_dir=str(tmp_path / "c")
    )
    assert reloaded.to_list() == ds["test"].to_list()


def test_bad_split_name_is_refused_before_writing(tmp_path):
    ds = load_ambigdocs(config="sample")
    with pytest.raises(ValueError, match="split name 'test-ood'"):
        export.export_dataset({"default": {"test-ood": ds["test"]}}, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_malformed_raw_file_fails_the_export_with_the_row(tmp_path, capsys):
    raw = tmp_path / "raw"
    raw.mkdir()
    bad = make_row(2)
    bad["documents"][0]["text"] = ["not", "text"]
    write_json(raw / "test.json", [make_row(1), bad])
    assert export.main(["--data-dir", str(raw), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "row 1" in err and "'documents[0].text'" in err and str(raw / "test.json") in err
    assert not (tmp_path / "out").exists()
    json.loads((raw / "test.json").read_text())  # the source is untouched


def test_release_unreachable_is_a_clear_error(tmp_path, capsys):
    # Tests run offline (HF_HUB_OFFLINE=1), so the default config cannot download the release.
    assert export.main(["--cache-dir", str(tmp_path / "c"), str(tmp_path / "out")]) == 2
    assert "give the raw files with --data-dir" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["0", "-1", "x"])
def test_max_shard_mb_below_one_is_an_argument_error(tmp_path, capsys, value):
    assert export.main(["--config", "sample", "--max-shard-mb", value, str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "max-shard-mb" in err or "max_shard_mb" in err
    assert not (tmp_path / "o").exists()


def test_write_split_refuses_a_non_positive_shard_size(tmp_path):
    from generation.hub.layout import write_split

    with pytest.raises(ValueError, match="max_shard_bytes must be positive"):
        write_split(load_ambigdocs("test", config="sample"), tmp_path, "default", "test", 0)


@pytest.mark.parametrize(
    ("umask", "folder_mode", "file_mode"), [(0o022, 0o755, 0o644), (0o077, 0o700, 0o600)]
)
def test_export_follows_the_umask(tmp_path, umask, folder_mode, file_mode):
    old = os.umask(umask)
    try:
        out = tmp_path / "export"
        export.export_dataset({"sample": load_ambigdocs(config="sample")}, out)
    finally:
        os.umask(old)
    paths = [out, *out.rglob("*")]
    assert len(paths) == 4  # the folder, README.md, sample/, one Parquet shard
    for path in paths:
        expected = folder_mode if path.is_dir() else file_mode
        assert stat.S_IMODE(path.stat().st_mode) == expected, path


def test_output_under_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "a_file").write_text("x")
    assert export.main(["--config", "sample", str(tmp_path / "a_file" / "out")]) == 2
    err = capsys.readouterr().err
    assert err == f"ambigdocs export: error: {tmp_path / 'a_file' / 'out'}: cannot be created, " + (
        f"{tmp_path / 'a_file'} is a file\n"
    )
