"""A reference for the seed stage: the authors' selection, transcribed loop for loop.

`authors_seed` follows the authors' seed script as docs/pipeline.md §2 describes it, on an in-memory
passage list: index every title's passages (in file order), keep titles with <= 20 and drop their
last passage, keep pages with 2..10 entities, then for i < j, k, m compare with the Jaccard skip
and the full-matrix longest-common-substring DP, keeping a strictly longer candidate only. It
shares no code with `generation/datagen/`, so the seed tests and `benchmarks/bench_seed.py` compare
the fast stage against an independent implementation.

The tests in this file check the reference itself on hand-computed examples.
"""

from __future__ import annotations


def authors_longest_common_words(s1: str, s2: str) -> str:
    """The authors' n-gram DP: longest common contiguous word sequence, first max in row order."""
    a, b = s1.split(), s2.split()
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    best, end = 0, 0
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                table[i][j] = table[i - 1][j - 1] + 1
                if table[i][j] > best:
                    best, end = table[i][j], i
            else:
                table[i][j] = 0
    return "" if best == 0 else " ".join(a[end - best : end])


def authors_pair(text_1: str, text_2: str) -> str:
    """Jaccard skip on lower-cased word sets (> 0.4), then the DP on the lower-cased texts."""
    t1, t2 = text_1.lower().split(), text_2.lower().split()
    union = set(t1) | set(t2)
    # The authors divide by zero here; two empty passages simply have no overlap.
    if union and len(set(t1) & set(t2)) / len(union) > 0.4:
        return ""
    return authors_longest_common_words(text_1.lower(), text_2.lower())


def authors_seed(rows, disamb) -> list[dict]:
    """The authors' selection on (pid, text, title) rows in file order and a map {page: titles}.

    Returns:
        One record per page with a selected pair, in map order, in the stage's output schema.
    """
    by_title: dict[str, list[int]] = {}
    for idx, (_, _, title) in enumerate(rows):
        by_title.setdefault(title, []).append(idx)
    ttoi = {t: idx[: len(idx) - 1] for t, idx in by_title.items() if len(idx) <= 20}
    out = []
    for page, titles in disamb.items():
        if not 2 <= len(titles) <= 10:
            continue
        chosen = None
        for i in range(len(titles)):
            if titles[i] not in ttoi:
                continue
            for j in range(i + 1, len(titles)):
                if titles[j] not in ttoi:
                    continue
                for k in ttoi[titles[i]]:
                    for m in ttoi[titles[j]]:
                        words = authors_pair(rows[k][1], rows[m][1])
                        n = len(words.split())
                        if 3 < n < 10 and (chosen is None or n > len(chosen[2].split())):
                            chosen = (k, m, words)
        if chosen is not None:
            k, m, words = chosen
            out.append(
                {
                    "surface_name": page,
                    "documents": [
                        {"pid": rows[k][0], "title": rows[k][2], "text": rows[k][1]},
                        {"pid": rows[m][0], "title": rows[m][2], "text": rows[m][1]},
                    ],
                    "overlap": words,
                }
            )
    return out


def test_dp_reports_first_longest_in_passage_one_order():
    # Two longest common sequences of length 2: "c d" (ends at word 4 of s1) and "x y" (ends
    # at word 2); the DP meets "x y" first in row order.
    assert authors_longest_common_words("x y c d", "c d q x y") == "x y"
    assert authors_longest_common_words("a b c d e", "z b c d e y") == "b c d e"
    assert authors_longest_common_words("a b", "c d") == ""


def test_pair_skips_jaccard_above_0_4():
    # sets {a,b,c,d,e} vs {a,b,c,d,f}: 4/6 > 0.4 -> skipped although n = 4.
    assert authors_pair("a b c d e", "a b c d f") == ""
    # 4 shared of 4+6+... : {a b c d e f g h} vs {a b c d w x y z q}: 4/13 <= 0.4.
    assert authors_pair("A b c d e f g h", "w x a B c d y z q") == "a b c d"


def test_authors_seed_keeps_first_strictly_longest():
    rows = [
        ("1", "p q r s t1 t2 t3 t4 t5 t6 t7", "E1"),
        ("2", "last passage of E1 is dropped", "E1"),
        ("3", "x p q r s y1 y2 y3 y4 y5 y6", "E2"),
        ("4", "dropped", "E2"),
        ("5", "z p q r s k1 k2 k3 k4 k5 k6", "E3"),
        ("6", "dropped", "E3"),
    ]
    out = authors_seed(rows, {"P": ["E1", "E2", "E3"], "Q": ["E1"]})
    assert [r["surface_name"] for r in out] == ["P"]
    assert [d["pid"] for d in out[0]["documents"]] == ["1", "3"]  # (E1,E2) ties (E1,E3), first
    assert out[0]["overlap"] == "p q r s"
