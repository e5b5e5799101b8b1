"""Bootstrap intervals and the paired comparison (generation/report/bootstrap.py, compare.py)."""

import math
import random
from collections import Counter

import numpy as np
import pytest

from generation.report.bootstrap import bootstrap_ci, point_means, resample_weights
from generation.report.compare import compare_files, compare_pair, format_comparison_markdown
from metric.ambigdocs_metric.scoring import CATEGORIES


def records(n, seed=0, shift=0.0, qids=None):
    rng = random.Random(seed)
    out = []
    for i, q in enumerate(qids if qids is not None else range(n)):
        out.append(
            {
                "qid": q,
                "answer_recall": min(1.0, rng.random() * 0.8 + shift),
                "entity_recall": rng.random(),
                "answer_length": rng.randint(5, 60),
                "k_precision": None if i % 7 == 0 else rng.random(),
                "category": rng.choice(CATEGORIES),
            }
        )
    return out


def test_resample_weights_draw_every_example_n_times_in_total():
    w = resample_weights(np.random.default_rng(0), 50, 30)
    assert w.shape == (30, 50) and (w.sum(axis=1) == 50).all()


def test_interval_of_a_proportion_matches_the_normal_approximation():
    rng = random.Random(3)
    recs = [{"category": "complete" if rng.random() < 0.3 else "merged"} for _ in range(3000)]
    p = point_means(recs, ["complete"])["complete"]
    low, high = bootstrap_ci(recs, ["complete"], n_resamples=2000, seed=1)["complete"]
    half = 1.96 * math.sqrt(p * (1 - p) / len(recs))
    assert low < p < high
    assert (high - low) / 2 == pytest.approx(half, rel=0.15)


def test_intervals_are_seeded_and_skip_missing_values():
    recs = records(200)
    a = bootstrap_ci(recs, ["answer_recall", "k_precision", "merged"], 300, seed=5)
    assert a == bootstrap_ci(recs, ["answer_recall", "k_precision", "merged"], 300, seed=5)
    assert a != bootstrap_ci(recs, ["answer_recall", "k_precision", "merged"], 300, seed=6)
    means = point_means(recs, ["k_precision"])
    defined = [r["k_precision"] for r in recs if r["k_precision"] is not None]
    assert means["k_precision"] == pytest.approx(sum(defined) / len(defined))
    assert a["k_precision"][0] < means["k_precision"] < a["k_precision"][1]


def test_no_intervals_when_turned_off_or_undefined():
    recs = [{"answer_recall": None, "category": None}] * 5
    assert bootstrap_ci(recs, ["answer_recall"], 0) == {}
    assert bootstrap_ci(recs, ["answer_recall"], 50) == {"answer_recall": [None, None]}


def test_identical_files_differ_by_nothing():
    a = records(60)
    c = compare_pair(a, [dict(r) for r in a], ("a", "b"), n_resamples=200)
    for s in c["scores"].values():
        assert s["difference"] == 0 and s["ci95"] == [0, 0] and s["p_value"] == 1.0
    m = c["transitions"]
    counts = Counter(r["category"] for r in a)
    assert all(m[x][y] == (counts[x] if x == y else 0) for x in m for y in m)


def test_a_consistent_improvement_is_significant_and_its_interval_covers_it():
    a = records(80, seed=1)
    b = [dict(r, answer_recall=r["answer_recall"] + 0.1) for r in a]
    s = compare_pair(a, b, ("a", "b"), n_resamples=500, seed=0)["scores"]["answer_recall"]
    assert s["difference"] == pytest.approx(0.1)
    assert s["ci95"][0] == pytest.approx(0.1) and s["ci95"][1] == pytest.approx(0.1)
    assert s["p_value"] == pytest.approx(1 / 501)  # no sign flip reaches the observed mean


def test_noise_is_not_significant():
    a, b = records(300, seed=2), records(300, seed=3)
    s = compare_pair(a, b, ("a", "b"), n_resamples=500)["scores"]["entity_recall"]
    assert s["p_value"] > 0.05 and s["ci95"][0] < 0 < s["ci95"][1]


def test_compared_on_shared_qids_and_left_out_counted():
    a = records(10, qids=list(range(10)))
    b = records(8, seed=4, qids=list(range(4, 12)))
    c = compare_files({"a": a, "b": b}, n_resamples=100)["comparisons"][0]
    assert (c["n_shared"], c["only_in_baseline"], c["only_in_system"]) == (6, 4, 2)
    shared_a = [r for r in a if r["qid"] >= 4]
    shared_b = [r for r in b if r["qid"] < 10]
    want = (
        sum(
            y["answer_recall"] - x["answer_recall"] for x, y in zip(shared_a, shared_b, strict=True)
        )
        / 6
    )
    assert c["scores"]["answer_recall"]["difference"] == pytest.approx(want)
    # k_precision is None for some examples: only pairs where both have it count.
    both = [
        (x, y)
        for x, y in zip(shared_a, shared_b, strict=True)
        if None not in (x["k_precision"], y["k_precision"])
    ]
    assert c["scores"]["k_precision"]["n"] == len(both)
    assert sum(sum(row.values()) for row in c["transitions"].values()) == 6
    md = format_comparison_markdown(compare_files({"a": a, "b": b}, n_resamples=100))
    assert "6 shared questions; left out: 4 only in `a`, 2 only in `b`" in md
    assert "Answer Length (\\|y\\|)" in md


def test_repeated_or_missing_qids_are_refused():
    a = records(3)
    with pytest.raises(ValueError, match="b: qid 1 appears twice"):
        compare_pair(a, [*a, a[1]], ("a", "b"))
    with pytest.raises(ValueError, match="b: example 0 has no field 'qid'"):
        compare_pair(a, [{"category": "merged"}], ("a", "b"))
