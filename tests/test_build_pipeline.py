"""`ambigdocs build all`: the chain end to end on a tiny synthetic wiki with tiny random models,
and its resume rules. Asserts on the mechanics (files, statuses, schema, what reruns), never on
what the random models say."""

from __future__ import annotations

import json
import os
import time

import pytest
import yaml
from build_fakes import make_tiny_t5

from generation.backends import base as backends_base
from generation.datagen import pipeline
from generation.datagen.filter import STATUSES
from generation.datagen.stage_io import stats_path
from generation.io.passages import write_passages_tsv
from generation.io.records import read_records

DUMP = "tests/data/wiki/enwiki-mini.xml"  # the gather stage's hand-made dump
SHARED = "was first described in the old"  # 6 common words: a seed candidate (3 < n < 10)
NO_PAIR_PAGE = "Ace & Co"  # its passages share nothing: no seed pair
MISSING = "Mercury (band)"  # not in the passage file


def synthetic_passages(mapping, path):
    """A passage TSV for the map's entities: 3 passages each (the seed rule drops the last);
    the first passages of a page's entities share SHARED, except on NO_PAIR_PAGE."""
    rows, pid = [], 0
    for page, titles in mapping.items():
        for title in titles:
            if title == MISSING:
                continue
            slug = "".join(ch for ch in title.lower() if ch.isalnum())
            for k in range(3):
                words = [f"{slug}{k}w{i}" for i in range(12)]
                if k == 0 and page != NO_PAIR_PAGE:
                    words[4:4] = SHARED.split()
                pid += 1
                rows.append((str(pid), " ".join(words), title))
    write_passages_tsv(path, rows)


@pytest.fixture
def chain(tmp_path, tiny_llama_dir, monkeypatch, repo_root):
    """A config for gather -> seed -> questions -> filter -> expand -> split."""
    from generation.datagen import gather

    # A plug-in back-end kind: the question model writes parseable output, so that lines reach
    # the later stages (a random model's output never parses).
    monkeypatch.setitem(backends_base.BACKENDS, "scripted", "build_fakes:make_question_backend")
    dump = repo_root / DUMP
    # The passage file needs the map's titles: a scratch gather run (outside the workdir).
    gather.run(dump, tmp_path / "probe" / "map.json", progress=False)
    mapping = json.loads((tmp_path / "probe" / "map.json").read_text())
    synthetic_passages(mapping, tmp_path / "psgs.tsv")
    t5 = make_tiny_t5(tmp_path / "tiny-t5")
    config = {
        "workdir": "work",
        "stages": {
            "gather": {"dump": str(dump), "output": "map.json", "progress": False},
            "seed": {"passages": str(tmp_path / "psgs.tsv"), "output": "seeds.jsonl", "progress": False},
            "questions": {
                "backend": "scripted", "model": "none", "output": "questions.jsonl",
                "chunk_size": 1, "progress": False,
            },
            "filter": {"output": "filtered.jsonl", "entailment": False, "progress": False},
            "expand": {
                "backend": "hf", "model": str(tiny_llama_dir), "output": "expanded.jsonl",
                "threshold": 1.0e9, "max_new_tokens": 4, "converter_model": str(t5),
                "nli_model": str(t5), "nli_device": "cpu", "converter_max_new_tokens": 4,
                "backend_option": {"dtype": "float32", "device": "cpu"}, "progress": False,
                "max_passages": 20, "drop_last_passage": True,
            },
            # Two examples (one page has no seed pair): one each in train and test; dev gets
            # fraction 0 (a split that comes out empty otherwise is an error).
            "split": {"output_dir": "release", "progress": False, "fractions": [0.5, 0.0, 0.5]},
        },
    }  # fmt: skip
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(config))
    return path, config, mapping


def outputs(config_path):
    work = config_path.parent / "work"
    files = {"map": work / "map.json"}
    files.update({n: work / f"{n}.jsonl" for n in ("seeds", "questions", "filtered", "expanded")})
    files.update({n: work / "release" / f"{n}.json" for n in ("train", "dev", "test")})
    return files


def mtimes(paths):
    return {k: p.stat().st_mtime_ns for k, p in paths.items()}


def test_chain_end_to_end_then_resume(chain, capsys):
    config_path, config, mapping = chain
    assert pipeline.main(["--config", str(config_path)]) == 0
    files = outputs(config_path)
    for name, path in files.items():
        assert path.exists(), name
        if path.suffix == ".jsonl" or name == "map":
            assert stats_path(path).exists(), name
    assert (files["train"].parent / "split.stats.json").exists()

    assert json.loads(files["map"].read_text()) == mapping
    seeds = read_records(files["seeds"])
    with_pair = [p for p in mapping if p != NO_PAIR_PAGE]
    assert [r["surface_name"] for r in seeds] == with_pair
    questions = read_records(files["questions"])
    assert all(r["question"] and len(r["answers"]) == 2 for r in questions)
    filtered = read_records(files["filtered"])
    assert len(filtered) == len(questions) and {r["status"] for r in filtered} <= set(STATUSES)
    assert [r["status"] for r in filtered] == ["ok"] * len(with_pair)

    expanded = read_records(files["expanded"])
    assert [r["surface_name"] for r in expanded] == with_pair
    for row, q in zip(expanded, questions, strict=True):
        docs = row["documents"]
        # seed answers first, in seed order; the schema split and the release expect
        assert docs[:2] == [
            {**d, "answer": a} for d, a in zip(q["documents"], q["answers"], strict=True)
        ]
        assert all(set(d) == {"pid", "title", "text", "answer"} for d in docs)
        assert len(row["answer_scores"]) == len(docs)
        others = [
            t for t in mapping[row["surface_name"]] if t not in {d["title"] for d in docs[:2]}
        ]
        # two usable passages (of three) per other entity in the passage file
        counts = row["expansion"]
        assert counts["candidates"] == 2 * sum(t != MISSING for t in others)
        assert counts["added"] == len(docs) - 2 <= len(others)
        dropped = counts["unformatted"] + counts["above_threshold"] + counts["not_entailed"]
        assert dropped <= counts["candidates"]
        assert [d["title"] for d in docs[2:]] == [
            t for t in others if t in {d["title"] for d in docs}
        ]
    assert json.loads(stats_path(files["expanded"]).read_text())["questions"] == len(with_pair)

    # split: every expanded question lands in exactly one split, no passage in two splits
    splits = {n: json.loads(files[n].read_text()) for n in ("train", "dev", "test")}
    assert sorted(r["question"] for rows in splits.values() for r in rows) == sorted(
        r["question"] for r in expanded
    )
    pids = {n: {d["pid"] for r in rows for d in r["documents"]} for n, rows in splits.items()}
    assert not (
        pids["train"] & pids["dev"] or pids["train"] & pids["test"] or pids["dev"] & pids["test"]
    )

    # A second run does nothing: every stage is done.
    before = mtimes(files)
    capsys.readouterr()
    assert pipeline.main(["--config", str(config_path)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("done, skipped") == 6
    assert mtimes(files) == before

    # Overwriting a stage reruns it and, as their input is newer, the stages after it.
    assert pipeline.main(["--config", str(config_path), "--overwrite", "filter"]) == 0
    after = mtimes(files)
    for name in ("map", "seeds", "questions"):
        assert after[name] == before[name], name
    for name in ("filtered", "expanded", "train", "dev", "test"):
        assert after[name] > before[name], name

    # Changing a stage's options reruns that stage and the later ones only.
    config["stages"]["expand"]["threshold"] = 0.5
    config_path.write_text(yaml.safe_dump(config))
    before = mtimes(files)
    capsys.readouterr()
    assert pipeline.main(["--config", str(config_path), "--dry-run"]) == 0
    assert "expand: runs (its options changed" in capsys.readouterr().out
    assert mtimes(files) == before  # a dry run changes nothing
    assert pipeline.main(["--config", str(config_path)]) == 0
    after = mtimes(files)
    assert after["expanded"] > before["expanded"] and after["test"] > before["test"]
    for name in ("map", "seeds", "questions", "filtered"):
        assert after[name] == before[name], name

    # A stage's record lists every option with its value. One recorded before an option existed
    # (here `decoding` of questions) cannot vouch for it, so the recorded run does not win: the
    # stage and the later ones run again, and a non-default value must be repeated to skip.
    state_path = config_path.parent / "work" / pipeline.STATE_FILE
    state = json.loads(state_path.read_text())
    assert state["questions"]["options"]["decoding"] is None
    del state["questions"]["options"]["decoding"]
    state_path.write_text(json.dumps(state))
    capsys.readouterr()
    assert pipeline.main(["--config", str(config_path), "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert "questions: runs (its options changed" in printed
    assert "seed: done, skipped" in printed
    # a non-default value recorded, then left out of the config: runs again
    config["stages"]["questions"]["decoding"] = "greedy"
    config_path.write_text(yaml.safe_dump(config))
    assert pipeline.main(["--config", str(config_path)]) == 0
    assert json.loads(state_path.read_text())["questions"]["options"]["decoding"] == "greedy"
    del config["stages"]["questions"]["decoding"]
    config_path.write_text(yaml.safe_dump(config))
    capsys.readouterr()
    assert pipeline.main(["--config", str(config_path), "--dry-run"]) == 0
    assert "questions: runs (its options changed" in capsys.readouterr().out


def test_resumes_after_a_failed_stage(chain, tmp_path, capsys):
    config_path, config, _ = chain
    good_model = config["stages"]["expand"]["model"]
    config["stages"]["expand"]["model"] = str(tmp_path / "no-such-model")
    config_path.write_text(yaml.safe_dump(config))
    capsys.readouterr()
    # the missing model is found from its tokenizer, before the passage file is read
    assert pipeline.main(["--config", str(config_path)]) == 2
    err = capsys.readouterr().err
    assert "ambigdocs build expand: error: --model" in err and "no-such-model" in err
    assert "Traceback" not in err
    files = outputs(config_path)
    assert files["filtered"].exists() and not files["expanded"].exists()
    done = ("map", "seeds", "questions", "filtered")
    assert not files["train"].exists()
    before = mtimes({k: files[k] for k in done})

    config["stages"]["expand"]["model"] = good_model
    config_path.write_text(yaml.safe_dump(config))
    assert pipeline.main(["--config", str(config_path)]) == 0
    assert files["expanded"].exists() and files["train"].exists()
    assert mtimes({k: files[k] for k in done}) == before


def test_hand_run_stage_counts_as_done_when_newer_than_inputs(chain, capsys):
    config_path, _, _ = chain
    only = ["--config", str(config_path), "--only", "gather", "seed"]
    assert pipeline.main(only) == 0
    state = config_path.parent / "work" / pipeline.STATE_FILE
    state.unlink()  # as if the files had been made by `ambigdocs build gather|seed` by hand
    capsys.readouterr()
    assert pipeline.main([*only, "--dry-run"]) == 0
    assert capsys.readouterr().out.count("done, skipped") == 2
    # a work file left by an interrupted (e.g. forced) rerun: not done, the stage resumes it
    partial = config_path.parent / "work" / "seeds.jsonl.partial.jsonl"
    partial.write_text("")
    assert pipeline.main([*only, "--dry-run"]) == 0
    assert "seed: runs (an interrupted run left" in capsys.readouterr().out
    partial.unlink()
    # an input newer than the output makes it run again
    later = time.time() + 5
    os.utime(config_path.parent / "psgs.tsv", (later, later))
    assert pipeline.main([*only, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "gather: done, skipped" in out and "psgs.tsv is newer than" in out


def test_config_wiring_and_paths(tmp_path):
    config = {
        "workdir": "w",
        "stages": {
            "seed": {
                "passages": "/abs/psgs.tsv",
                "disambiguation": "map.json",
                "output": "s.jsonl",
            },
            "questions": {"backend": "hf", "model": "org/model", "output": "q.jsonl"},
            "filter": {"output": "f.jsonl", "entailment": False},
            "expand": {"backend": "hf", "model": "m", "output": "e.jsonl"},
        },
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    workdir, stages = pipeline.load_config(path)
    w = tmp_path / "w"
    assert workdir == w
    assert stages["questions"]["input"] == str(w / "s.jsonl")
    assert stages["questions"]["model"] == "org/model"  # not a path option: left alone
    assert stages["filter"]["input"] == str(w / "q.jsonl")
    assert stages["expand"]["input"] == str(w / "f.jsonl")
    assert stages["expand"]["passages"] == "/abs/psgs.tsv"
    assert stages["expand"]["disambiguation"] == str(w / "map.json")
    # what `--dry-run` prints: the options that differ from their defaults, as typed
    argv = pipeline.command_line(pipeline._stage_options("filter", stages["filter"], str(path)))
    assert "--no-entailment" in argv and "--no-progress" not in argv
    assert argv[argv.index("--output") + 1] == str(w / "f.jsonl")


def test_command_line_of_options():
    from generation.datagen.expand import ExpandOptions
    from generation.datagen.model_options import ModelOptions

    options = (
        ExpandOptions(input="i", output="o", passages="p", disambiguation="m", progress=False),
        ModelOptions(backend="hf", model="m", backend_option={"dtype": "float32"}),
    )
    assert pipeline.command_line(options) == [
        "--input", "i", "--output", "o", "--passages", "p", "--disambiguation", "m",
        "--no-progress", "--backend", "hf", "--model", "m", "--backend-option", "dtype=float32",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "config, message",
    [
        ({"stages": {"sed": {"output": "x"}}}, "stage 'sed'"),
        ({"stages": {"seed": {"passages": "p"}}}, "stage 'seed': give its `output`"),
        ({"stages": {"seed": ["x"]}}, "stage 'seed': options must be a mapping"),
        ({"steps": {}}, "`stages:`"),
    ],
)
def test_bad_config(tmp_path, config, message):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ValueError, match=message):
        pipeline.load_config(path)


@pytest.mark.parametrize(
    ("stage_options", "message"),
    [
        ({"num_proc": "four"}, r"stage 'seed'.*option 'num_proc': 'four' is not a int"),
        (
            {"tie_break": "last"},
            r"stage 'seed'.*'tie_break': 'last' is not one of 'first', 'random'",
        ),
        ({"colour": "red"}, r"stage 'seed'.*unknown option\(s\) \['colour'\]"),
    ],
)
def test_bad_stage_options_are_reported_before_anything_runs(tmp_path, stage_options, message):
    config = {
        "stages": {
            "seed": {"passages": "p.tsv", "disambiguation": "m.json", "output": "s.jsonl"},
            "split": {"output_dir": "release", "fractions": "0.6 0.1 0.3"},
        }
    }
    config["stages"]["seed"].update(stage_options)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ValueError, match=message):
        pipeline.run(path)
    assert pipeline.main(["--config", str(path)]) == 2
    assert not (tmp_path / "s.jsonl").exists()


def test_example_config_parses(repo_root):
    _, stages = pipeline.load_config(repo_root / "configs" / "pipeline.yaml")
    assert list(stages) == [s for s in pipeline.ORDER if s in stages]
    assert stages["filter"]["nli_model"] == "google/t5_xxl_true_nli_mixture"
    assert stages["expand"]["threshold"] == 0.2
    assert stages["questions"]["input"] == stages["seed"]["output"]
