"""The seed stage (docs/pipeline.md §2): the fast pair test and selection equal the authors' DP."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_build_seed_reference import authors_pair, authors_seed

from generation.datagen import overlap as ov
from generation.datagen import seed
from generation.io.passages import collect_passages, write_passages_tsv

# ---------------------------------------------------------------------------------------------
# The pair test


def _value(text_a: str, text_b: str) -> tuple[int, str]:
    """The fast module's (n, overlap) for a pair, 0/"" when not a candidate."""
    a, b = ov.PreparedPassage(text_a), ov.PreparedPassage(text_b)
    n, start = ov.pair_overlap(a, b)
    return n, ov.overlap_words(a, n, start) if n else ""


def _authors_value(text_a: str, text_b: str) -> tuple[int, str]:
    words = authors_pair(text_a, text_b)
    n = len(words.split())
    return (n, words) if 3 < n < 10 else (0, "")


def test_hand_made_pairs():
    # n = 5 ("was born in the city"), sets far apart.
    a = "Alice Smith was born in the city of Paris and studied law"
    b = "The painter Bob was Born in the city near a lake with three boats"
    assert _value(a, b) == (5, "was born in the city")
    # n = 3: not a candidate.
    assert _value("one two three four", "zero two three four five six seven eight nine") == (0, "")
    # n = 10: too similar a pair, rejected although the word sets are far apart.
    shared = "q1 q2 q3 q4 q5 q6 q7 q8 q9 q10"
    a = f"{shared} " + " ".join(f"a{i}" for i in range(30))
    b = " ".join(f"b{i}" for i in range(30)) + f" {shared}"
    assert _value(a, b) == (0, "")
    assert _value(a.replace("q10", "zz"), b) == (9, "q1 q2 q3 q4 q5 q6 q7 q8 q9")
    # Jaccard 4/6 > 0.4: skipped.
    assert _value("a b c d e", "a b c d f") == (0, "")
    # Empty passages: no candidate (the authors' script would divide by zero).
    assert _value("", "") == (0, "")


def test_reported_words_are_the_first_longest_in_passage_one():
    # Two length-4 common sequences; the DP reports the one that ends first in passage 1.
    a = "w1 w2 w3 w4 filler0 filler1 filler2 v1 v2 v3 v4 filler3 filler4 filler5 filler6"
    b = "v1 v2 v3 v4 x0 x1 x2 x3 x4 x5 x6 x7 x8 w1 w2 w3 w4 x9"
    assert _value(a, b) == (4, "w1 w2 w3 w4")
    assert _value(b, a) == (4, "v1 v2 v3 v4")
    assert _value(a, b) == _authors_value(a, b)


_VOCAB = [f"w{i}" for i in range(12)] + ["The", "the", "THE", "a", "é", "Ünï", "x.y", "--"]
_word = st.sampled_from(_VOCAB)
# Mostly distinct filler around the shared fragment keeps the Jaccard overlap low enough that
# the longest common sequence is actually measured in most examples.
_filler = st.one_of(st.sampled_from([f"f{i}" for i in range(300)]), _word)
_sep = st.sampled_from([" ", "  ", "\t", "\n", " \u00a0"])


@st.composite
def _pair_texts(draw):
    """Two texts that share a fragment of 0..12 words, with varied case and whitespace."""
    shared = draw(st.lists(_word, max_size=12))
    parts = []
    for _ in range(2):
        words = draw(st.lists(_filler, max_size=25)) + shared + draw(st.lists(_filler, max_size=25))
        seps = [draw(_sep) for _ in words]
        parts.append("".join(w + s for w, s in zip(words, seps, strict=True)))
    return parts


@settings(max_examples=400, deadline=None)
@given(_pair_texts())
def test_pair_value_equals_the_authors_dp(texts):
    a, b = texts
    assert _value(a, b) == _authors_value(a, b)
    assert ov.reference_overlap(a, b) == authors_pair(a, b)


# ---------------------------------------------------------------------------------------------
# Page selection


@st.composite
def _corpus(draw):
    """A few entities with passages built from shared phrases, and a map of 1..4 pages."""
    phrases = [" ".join(f"p{k}_{i}" for i in range(draw(st.integers(3, 11)))) for k in range(4)]
    rows, entities = [], [f"Entity {e}" for e in range(draw(st.integers(2, 6)))]
    pid = 0
    for ent in entities:
        for _ in range(draw(st.integers(0, 4))):
            words = [f"u{pid}_{i}" for i in range(draw(st.integers(0, 12)))]
            for phrase in draw(st.lists(st.sampled_from(phrases), max_size=3)):
                words.insert(draw(st.integers(0, len(words))), phrase)
            rows.append((str(pid), " ".join(words), ent))
            pid += 1
    draw(st.randoms(use_true_random=False)).shuffle(rows)
    names = entities + ["Missing entity"]
    pages = {
        f"Page {p}": draw(st.lists(st.sampled_from(names), min_size=0, max_size=11))
        for p in range(draw(st.integers(1, 4)))
    }
    return rows, pages


def _select_all(rows, pages, select, **kw):
    by_title: dict[str, list] = {}
    for pid, text, title in rows:
        by_title.setdefault(title, []).append((pid, text))
    usable = seed.entity_passages({t: ps for t, ps in by_title.items() if len(ps) <= 20})
    out = []
    for page, titles in seed.kept_pages(pages).items():
        rec = select(page, titles, {t: usable[t] for t in titles if t in usable}, **kw)
        if rec is not None:
            out.append(rec)
    return out


@settings(max_examples=150, deadline=None)
@given(_corpus())
def test_page_selection_equals_the_authors(corpus):
    rows, pages = corpus
    expected = authors_seed(rows, pages)
    assert _select_all(rows, pages, seed.select_seed_pair) == expected
    assert _select_all(rows, pages, seed.select_seed_pair_dp) == expected


@settings(max_examples=60, deadline=None)
@given(_corpus(), st.integers(0, 3))
def test_random_tie_break_is_the_same_draw_in_both_methods(corpus, rng_seed):
    rows, pages = corpus
    kw = {"tie_break": "random", "seed": rng_seed}
    fast = _select_all(rows, pages, seed.select_seed_pair, **kw)
    assert fast == _select_all(rows, pages, seed.select_seed_pair_dp, **kw)
    # Same pages and same overlap length as the default; only the tied pair may differ.
    first = authors_seed(rows, pages)
    assert [r["surface_name"] for r in fast] == [r["surface_name"] for r in first]
    assert [len(r["overlap"].split()) for r in fast] == [len(r["overlap"].split()) for r in first]


def test_random_tie_break_can_differ_from_first():
    # Eight entities, every pair ties at n = 4: some seed must pick another pair than the first.
    rows = []
    for e in range(8):
        own = " ".join(f"t{e}_{i}" for i in range(8))
        rows += [(f"{e}a", f"{own} the same four words", f"E{e}"), (f"{e}b", "x", f"E{e}")]
    pages = {"P": [f"E{e}" for e in range(8)]}
    first = _select_all(rows, pages, seed.select_seed_pair)
    assert first == authors_seed(rows, pages)
    assert [d["pid"] for d in first[0]["documents"]] == ["0a", "1a"]
    picks = {
        tuple(
            d["pid"]
            for d in _select_all(rows, pages, seed.select_seed_pair, tie_break="random", seed=s)[0][
                "documents"
            ]
        )
        for s in range(10)
    }
    assert len(picks) > 1


# ---------------------------------------------------------------------------------------------
# The stage: streaming, CLI, statistics, processes, resume, errors


def _synthetic(tmp_path, n_pages=12, rng_seed=0):
    rng = random.Random(rng_seed)
    phrases = [[f"ph{k}w{i}" for i in range(rng.randint(4, 11))] for k in range(6)]
    rows, pages, pid = [], {}, 0
    for p in range(n_pages):
        ents = [f"Name {p} ({kind})" for kind in ("band", "film", "album", "novel", "river")]
        ents = ents[: 1 if p % 7 == 6 else rng.randint(2, 5)]
        for ent in ents:
            for _ in range(rng.choice([1, 2, 3, 4, 22] if p % 5 == 0 else [1, 3, 4, 5])):
                words = [
                    rng.choice(["the", "a", "of"]) + str(rng.randint(0, 300)) for _ in range(40)
                ]
                for _ in range(rng.randint(0, 3)):
                    at = rng.randint(0, len(words))
                    words[at:at] = rng.choice(phrases)
                text = " ".join(words)
                if rng.random() < 0.2:
                    text = f'He said "{text}" \ttab'  # quoting and a tab inside the text
                rows.append((str(pid), text, ent))
                pid += 1
        pages[f"Name {p}" + (" (disambiguation)" if p % 3 == 0 else "")] = ents + (
            ["Missing (thing)"] if p % 4 == 0 else []
        )
    rng.shuffle(rows)
    rows.append(("99999", "unrelated text", "Unrelated"))
    tsv, map_path = tmp_path / "psgs.tsv", tmp_path / "map.json"
    write_passages_tsv(tsv, rows)
    map_path.write_text(json.dumps(pages))
    return rows, pages, tsv, map_path


def _read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_cli_matches_the_authors_page_by_page(tmp_path, capsys):
    from generation.cli import main

    rows, pages, tsv, map_path = _synthetic(tmp_path)
    out = tmp_path / "seeds.jsonl"
    argv = ["build", "seed", "--passages", str(tsv), "--disambiguation", str(map_path)]
    assert main([*argv, "--output", str(out), "--no-progress"]) == 0
    expected = authors_seed(rows, pages)
    assert len(expected) >= 3  # the corpus does exercise selection
    assert _read_jsonl(out) == expected
    stats = json.loads((tmp_path / "seeds.jsonl.stats.json").read_text())
    assert stats["pages_selected"] == len(expected)
    assert stats["pages_in_map"] == len(pages)
    assert stats["pages_without_candidate"] == stats["pages_with_2_to_10_entities"] - len(expected)
    assert stats["titles_over_20_passages"] >= 1
    assert "pages_selected" in capsys.readouterr().out
    assert not (tmp_path / "seeds.jsonl.partial.jsonl").exists()

    out2 = tmp_path / "seeds2.jsonl"
    assert main([*argv, "--output", str(out2), "--num-proc", "2", "--no-progress"]) == 0
    assert out2.read_text() == out.read_text()
    out3 = tmp_path / "seeds3.jsonl"
    assert main([*argv, "--output", str(out3), "--method", "dp", "--no-progress"]) == 0
    assert out3.read_text() == out.read_text()


def test_console_script(tmp_path):
    rows, pages, tsv, map_path = _synthetic(tmp_path, n_pages=4, rng_seed=1)
    out = tmp_path / "seeds.jsonl"
    exe = [sys.executable, "-m", "generation.cli"]
    proc = subprocess.run(
        [
            *exe,
            "build",
            "seed",
            "--passages",
            str(tsv),
            "--disambiguation",
            str(map_path),
            "--output",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert _read_jsonl(out) == authors_seed(rows, pages)


def test_streaming_keeps_only_needed_titles_and_caps_them(tmp_path):
    rows = [(str(i), f"text {i}", "Big") for i in range(25)]
    rows += [("a", "one", "Small"), ("b", "two", "Other"), ("c", "three", "Small")]
    tsv = tmp_path / "p.tsv"
    write_passages_tsv(tsv, rows)
    held, counts = collect_passages(tsv, {"Big", "Small", "Absent"}, 20, progress=False)
    assert held == {"Small": [("a", "one"), ("c", "three")]}
    assert counts == {"Big": 25, "Small": 2}


def test_resume_skips_finished_pages(tmp_path, monkeypatch):
    rows, pages, tsv, map_path = _synthetic(tmp_path, rng_seed=2)
    out = tmp_path / "seeds.jsonl"
    calls = []
    real = seed._select_task

    def crashing(task, **kw):
        calls.append(task[0])
        if len(calls) == 4:
            raise RuntimeError("simulated crash")
        return real(task, **kw)

    monkeypatch.setattr(seed, "_BATCH_PAGES", 1)
    monkeypatch.setattr(seed, "_select_task", crashing)
    with pytest.raises(RuntimeError, match="^simulated crash$"):
        seed.run(tsv, map_path, out, progress=False)
    assert not out.exists()
    assert len(_read_jsonl(tmp_path / "seeds.jsonl.partial.jsonl")) == 3
    calls.clear()
    monkeypatch.setattr(
        seed, "_select_task", lambda task, **kw: (calls.append(task[0]), real(task, **kw))[1]
    )
    seed.run(tsv, map_path, out, progress=False)
    kept = seed.kept_pages(pages)
    assert calls == list(kept)[3:]  # the three finished pages were not redone
    assert _read_jsonl(out) == authors_seed(rows, pages)


def test_resume_with_other_options_is_refused_and_overwrite_starts_again(
    tmp_path, monkeypatch, capsys
):
    rows, pages, tsv, map_path = _synthetic(tmp_path, rng_seed=3)
    out = tmp_path / "seeds.jsonl"
    real = seed._select_task
    calls = []

    def crashing(task, **kw):
        calls.append(task[0])
        if len(calls) == 3:
            raise RuntimeError("simulated crash")
        return real(task, **kw)

    monkeypatch.setattr(seed, "_BATCH_PAGES", 1)
    monkeypatch.setattr(seed, "_select_task", crashing)
    with pytest.raises(RuntimeError, match="^simulated crash$"):
        seed.run(tsv, map_path, out, progress=False)
    monkeypatch.setattr(seed, "_select_task", real)
    argv = ["--passages", str(tsv), "--disambiguation", str(map_path), "--output", str(out)]
    # Other options: the finished pages were made under another rule, so they are not reused.
    assert seed.main([*argv, "--tie-break", "random", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "tie_break: 'first' -> 'random'" in err and "--overwrite" in err
    assert "Traceback" not in err and not out.exists()
    # A changed input is refused the same way, naming the file.
    map_path.write_text(map_path.read_text().replace("}", ', "Extra page": ["X", "Y"]}', 1))
    assert seed.main([*argv, "--no-progress"]) == 2
    assert f"input {map_path}" in capsys.readouterr().err
    assert seed.main([*argv, "--overwrite", "--no-progress"]) == 0
    assert _read_jsonl(out) == authors_seed(rows, json.loads(map_path.read_text()))


def test_bad_inputs_name_the_place(tmp_path):
    tsv = tmp_path / "p.tsv"
    tsv.write_text("id\ttext\ttitle\n1\tsome text\tA\n2\tno title\n")
    good_map = tmp_path / "m.json"
    good_map.write_text(json.dumps({"P": ["A", "B"]}))
    with pytest.raises(ValueError, match=r"line 3.*3 tab-separated fields"):
        seed.run(tsv, good_map, tmp_path / "o.jsonl", progress=False)
    bad_map = tmp_path / "bad.json"
    bad_map.write_text(json.dumps({"P": ["A", "B"], "Q": "A"}))
    with pytest.raises(ValueError, match=r"page 'Q'.*list"):
        seed.run(tsv, bad_map, tmp_path / "o.jsonl", progress=False)
    bad_map.write_text(json.dumps({"P": ["A", 3]}))
    with pytest.raises(ValueError, match=r"page 'P', entity 1"):
        seed.run(tsv, bad_map, tmp_path / "o.jsonl", progress=False)
    with pytest.raises(ValueError, match="tie_break"):
        seed.run(tsv, good_map, tmp_path / "o.jsonl", tie_break="last", progress=False)
