"""`ambigdocs build expand`: docs/pipeline.md section 4 on a hand-made page, and the real hf back-end."""

from __future__ import annotations

import json

import authors_reference as ref
import pytest
from build_fakes import ScriptedBackend, ScriptedChecker

from generation.datagen import expand
from generation.io.passages import write_passages_tsv
from generation.io.records import read_records
from generation.io.resume import partial_path

SN = "Judge Day"
QUESTION = "What is the state where Judge Day was born?"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Ohio.", "Ohio"),
        ("  Ohio\nQuestion: next one", "Ohio"),
        ("Canton, Ohio..", "Canton, Ohio."),  # one final period only
        ("U.S.A.", "U.S.A"),  # 3 pieces after the period is removed
        ("a. b. c. d. e", None),  # 5 pieces
        ("a. b. c. d.", "a. b. c. d"),  # 4 pieces after removing the final period
        ("", None),
        (".", None),
        ("\n\n", None),
    ],
)
def test_clean_answer(text, expected):
    assert expand.clean_answer(text) == expected


def test_other_entities_keeps_page_order_once():
    assert expand.other_entities(["A", "B", "C", "A", "D", "C"], ["B", "D"]) == ["A", "C"]


# The seed stage's passage rule, which the mechanics tests use to keep their worlds small.
SEED_RULE = {"max_passages": 20, "drop_last_passage": True}


def make_world(tmp_path, n_pages=1):
    """Pages with 5 entities each: two seed entities and three others (E3 has 21 passages, E4 a
    single one, E5 four; with the seed stage's rule, `max_passages=20, drop_last_passage=True`,
    only E5's first three are used)."""
    rows, mapping, tsv = [], {}, []
    pid = 0

    def add(title, n):
        nonlocal pid
        for k in range(n):
            pid += 1
            tsv.append((str(pid), f"{title} passage {k} born in State{k}", title))

    for p in range(n_pages):
        page = f"{SN} {p} (disambiguation)" if p else SN
        sn = page.replace(" (disambiguation)", "")
        ents = [f"{sn} E{k}" for k in range(1, 6)]
        mapping[page] = ents
        add(ents[0], 3)
        add(ents[1], 3)
        add(ents[2], 21)  # over 20: no passages
        add(ents[3], 1)  # only the last passage: none left
        add(ents[4], 4)  # passages 0, 1, 2 usable (3 is the last)
        rows.append(
            {
                "surface_name": page,
                "documents": [
                    {"pid": "s1", "title": ents[0], "text": "seed one"},
                    {"pid": "s2", "title": ents[1], "text": "seed two"},
                ],
                "question": QUESTION.replace(SN, sn),
                "answers": ["Alabama", "Ohio"],
                "status": "ok",
                "filter_reason": None,
            }
        )
    rows.append({**rows[0], "surface_name": "Skipped", "status": "not_entailed"})
    (tmp_path / "map.json").write_text(json.dumps(mapping))
    write_passages_tsv(tmp_path / "psgs.tsv", tsv)
    src = tmp_path / "filtered.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return src, rows


def passage_index(prompt: str) -> int:
    body = prompt.split("Passage: ")[-1]
    return int(body.split(" passage ")[1].split()[0])


def test_rule_threshold_entailment_lowest_score(tmp_path):
    src, rows = make_world(tmp_path)
    # passage k of E5 answers State{k}; scores 0.15, 0.05, 0.1 -> passage 1 is the lowest, but the
    # NLI rejects it, so passage 2 (0.1) wins; E3 and E4 have no usable passages
    scores = {0: 0.15, 1: 0.05, 2: 0.1}
    backend = ScriptedBackend(
        reply=lambda p: f"State{passage_index(p)}.\nQuestion: more",
        score=lambda p: scores[passage_index(p)],
    )
    checker = ScriptedChecker(lambda it: it.answer != "State1")
    out_path = tmp_path / "expanded.jsonl"
    stats = expand.expand_answers(
        src, out_path, backend, passages=tmp_path / "psgs.tsv", disambiguation=tmp_path / "map.json",
        checker=checker, show_progress=False, max_passages=20, drop_last_passage=True,
    )  # fmt: skip
    out = read_records(out_path)
    assert len(out) == 1  # the not-ok line is left out
    row = out[0]
    assert row["surface_name"] == SN and row["question"] == QUESTION
    assert [d["answer"] for d in row["documents"]] == ["Alabama", "Ohio", "State2"]
    assert row["documents"][2]["title"] == f"{SN} E5"
    assert row["documents"][2]["text"] == f"{SN} E5 passage 2 born in State2"
    assert set(row["documents"][0]) == {"pid", "title", "text", "answer"}
    assert row["answer_scores"] == [None, None, 0.1]
    # scores 0.15, 0.05, 0.1: each threshold counts the formatted candidates strictly below it,
    # and the entities (here only E5, best 0.05) with one such candidate
    grid = {"0.05": 0, "0.1": 1, "0.2": 3, "0.3": 3, "0.5": 3, "1.0": 3, "inf": 3}
    assert row["expansion"] == {
        "candidates": 3, "unformatted": 0, "above_threshold": 0, "not_entailed": 1, "added": 1,
        "threshold_candidates": grid,
        "threshold_entities": {k: int(v > 0) for k, v in grid.items()},
    }  # fmt: skip
    # the prompts are the authors' (default) with q_sn; greedy 50 tokens with scores
    call = backend.calls[0]
    assert call["max_new_tokens"] == 50 and call["return_scores"]
    assert call["prompts"][0] == ref.expand_prompt(
        {"title": f"{SN} E5", "text": f"{SN} E5 passage 0 born in State0"}, QUESTION
    )
    assert call["prompts"][0].startswith("[INST]Given a passage")
    # the NLI sees q_DE (sn replaced by the entity) and the passage as premise
    items = checker.batches[0]
    assert items[0].question == f"What is the state where {SN} E5 was born?"
    assert items[0].text == f"{SN} E5 passage 0 born in State0"
    assert stats["questions"] == 1 and stats["skipped_not_ok"] == 1
    assert stats["questions_with_3_answers"] == 1 and stats["expansion_added"] == 1
    assert stats["entailment"] == "checked"
    assert stats["threshold_candidates"] == grid
    assert not partial_path(out_path).exists()


def test_default_tries_every_passage_of_every_other_entity(tmp_path):
    # The authors' expansion: no 20-passage limit and no dropped last passage.
    src, _ = make_world(tmp_path)
    backend = ScriptedBackend(reply=lambda p: "State0", score=lambda p: 0.1)
    out_path = tmp_path / "expanded.jsonl"
    expand.expand_answers(
        src, out_path, backend, passages=tmp_path / "psgs.tsv", disambiguation=tmp_path / "map.json",
        checker=None, show_progress=False,
    )  # fmt: skip
    tried = [passage_index(p) for call in backend.calls for p in call["prompts"]]
    titles = [p.split("Passage: ")[-1].split(" | ")[0] for c in backend.calls for p in c["prompts"]]
    assert sorted(set(titles)) == [f"{SN} E3", f"{SN} E4", f"{SN} E5"]
    assert len(tried) == 21 + 1 + 4
    row = read_records(out_path)[0]
    assert [d["title"] for d in row["documents"][2:]] == [f"{SN} E3", f"{SN} E4", f"{SN} E5"]


def test_threshold_is_strict_and_configurable(tmp_path):
    src, _ = make_world(tmp_path)
    backend = ScriptedBackend(reply=lambda p: "Ohio", score=lambda p: 0.2)
    kwargs = dict(passages=tmp_path / "psgs.tsv", disambiguation=tmp_path / "map.json",
                  checker=None, show_progress=False, **SEED_RULE)  # fmt: skip
    expand.expand_answers(src, tmp_path / "a.jsonl", backend, **kwargs)
    row = read_records(tmp_path / "a.jsonl")[0]
    assert len(row["documents"]) == 2 and row["expansion"]["above_threshold"] == 3
    expand.expand_answers(src, tmp_path / "b.jsonl", backend, threshold=0.25, **kwargs)
    row = read_records(tmp_path / "b.jsonl")[0]
    # equal scores: the first passage in file order wins
    assert row["documents"][2]["text"].endswith("passage 0 born in State0")


def test_unformatted_answers_are_dropped_before_scoring(tmp_path):
    src, _ = make_world(tmp_path)
    backend = ScriptedBackend(reply=lambda p: "a. b. c. d. e", score=lambda p: 0.0)
    checker = ScriptedChecker(lambda it: True)
    expand.expand_answers(
        src, tmp_path / "o.jsonl", backend, passages=tmp_path / "psgs.tsv",
        disambiguation=tmp_path / "map.json", checker=checker, show_progress=False, **SEED_RULE,
    )  # fmt: skip
    row = read_records(tmp_path / "o.jsonl")[0]
    assert row["expansion"]["unformatted"] == 3 and len(row["documents"]) == 2
    assert checker.batches == []  # nothing under the threshold reached the NLI


def test_resume_after_crash(tmp_path):
    src, rows = make_world(tmp_path, n_pages=3)
    out_path = tmp_path / "o.jsonl"
    kwargs = dict(passages=tmp_path / "psgs.tsv", disambiguation=tmp_path / "map.json",
                  checker=None, chunk_size=1, show_progress=False, **SEED_RULE)  # fmt: skip

    class Boom(Exception):
        pass

    state = {"calls": 0}

    def flaky(prompt):
        if state["calls"] >= 3 * 2:  # two chunks of one page (3 prompts each) then a crash
            raise Boom()
        state["calls"] += 1
        return "X"

    with pytest.raises(Boom):
        expand.expand_answers(src, out_path, ScriptedBackend(flaky, score=lambda p: 0.0), **kwargs)
    assert len(read_records(partial_path(out_path))) == 2
    backend = ScriptedBackend(lambda p: "X", score=lambda p: 0.0)
    expand.expand_answers(src, out_path, backend, **kwargs)
    assert sum(len(c["prompts"]) for c in backend.calls) == 3  # only the third page
    assert [r["surface_name"] for r in read_records(out_path)] == [
        r["surface_name"] for r in rows if r["status"] == "ok"
    ]


def test_bad_input(tmp_path):
    src, rows = make_world(tmp_path)
    (tmp_path / "map.json").write_text(json.dumps({"Other": ["a", "b"]}))
    with pytest.raises(ValueError, match=r"row 0 .*surface_name.*not a page"):
        expand.expand_answers(
            src, tmp_path / "o.jsonl", ScriptedBackend(lambda p: "X"), passages=tmp_path / "psgs.tsv",
            disambiguation=tmp_path / "map.json", checker=None, show_progress=False,
        )  # fmt: skip


def test_backend_without_scores_is_refused(tmp_path):
    src, _ = make_world(tmp_path)
    with pytest.raises(ValueError, match="mean_nll"):
        expand.expand_answers(
            src, tmp_path / "o.jsonl", ScriptedBackend(lambda p: "X"), passages=tmp_path / "psgs.tsv",
            disambiguation=tmp_path / "map.json", checker=None, show_progress=False,
        )  # fmt: skip


def test_cli_with_real_hf_backend(tmp_path, tiny_llama_dir):
    """`ambigdocs build expand` through the shared transformers back-end on the tiny Llama:
    every kept answer's score is the back-end's mean NLL and the lowest per entity."""
    from generation.backends import load_backend
    from generation.cli import main as ambigdocs_main

    src, _ = make_world(tmp_path)
    out_path = tmp_path / "o.jsonl"
    rc = ambigdocs_main(
        ["build",
            "expand", "--input", str(src), "--output", str(out_path),
            "--passages", str(tmp_path / "psgs.tsv"), "--disambiguation", str(tmp_path / "map.json"),
            "--backend", "hf", "--model", str(tiny_llama_dir), "--max-new-tokens", "6",
            "--threshold", "1e9", "--no-entailment", "--batch-size", "2",
            "--backend-option", "dtype=float32", "--no-progress",
            "--max-passages", "20", "--drop-last-passage",
        ]
    )  # fmt: skip
    assert rc == 0
    row = read_records(out_path)[0]
    # recompute the three E5 candidates directly with the same back-end
    backend = load_backend("hf", str(tiny_llama_dir), dtype="float32", device="cpu")
    texts = [f"{SN} E5 passage {k} born in State{k}" for k in range(3)]
    gens = backend.generate(
        [ref.expand_prompt({"title": f"{SN} E5", "text": t}, QUESTION) for t in texts],
        max_new_tokens=6,
        return_scores=True,
    )
    kept = [(g.mean_nll, t, expand.clean_answer(g.text)) for g, t in zip(gens, texts, strict=True)]
    kept = [k for k in kept if k[2] is not None]
    assert row["expansion"]["candidates"] == 3
    if kept:
        score, text, answer = min(kept, key=lambda k: k[0])
        assert row["documents"][2]["text"] == text and row["documents"][2]["answer"] == answer
        assert row["answer_scores"][2] == pytest.approx(score, rel=1e-4)
    else:
        assert len(row["documents"]) == 2
