"""The pure scorer against docs/metric.md: hand-checked numbers, the paper's labelled examples, an
independent per-call reference implementation, and bad input."""

import json
import random

import pytest
import reference_scorer as ref
from hypothesis import given, settings
from hypothesis import strategies as st

from metric.ambigdocs_metric import scoring
from metric.ambigdocs_metric.scoring import (
    _words,
    normalize,
    parse_reference,
    score_example,
    score_examples,
    tokens,
)


def judge_day(**overrides):
    row = {
        "qid": 7,
        "question": "What is the state where Judge Day was born?",
        "ambiguous_entity": "Judge Day",
        "documents": [
            {"title": "Charles Bernard Day", "text": "...", "pid": "1", "answer": "Alabama"},
            {"title": "Edward William Day", "text": "...", "pid": "2", "answer": "Rhode Island"},
            {"title": "William Louis Day", "text": "...", "pid": "3", "answer": "Ohio"},
        ],
    }
    row.update(overrides)
    return row


def score(answer, row, shown=None, mode="first5"):
    return score_example(answer, parse_reference(row), shown, mode)


# --- normalisation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "The cat, a dog and AN owl.",
        "the\u2019s a\u2013b an\u00b7the",  # non-ASCII punctuation splits words around articles
        "x\x00the\x01a y",  # control characters are not word characters either
        "  \u00c9cole   d\u2019Art  ",
        "th\u0308e a\u0301",  # combining marks are not alphanumeric
        "",
    ],
)
def test_fast_words_equal_squad_normalisation(text):
    assert _words(text) == normalize(text).split() == ref.normalize_answer(text).split()


@settings(max_examples=400, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("a nthe\u2019\u2013.,_-\x00\u00e9\u0301XT"))
        | st.characters(),
        max_size=40,
    )
)
def test_fast_tokens_equal_reference_on_any_text(text):
    assert tokens(text) == ref.get_tokens(text)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(
            alphabet=st.sampled_from(list("a nthe\u2019\u2013.,_-\x00\u00e9\u0301\x1cXT\n"))
            | st.characters(),
            max_size=20,
        ),
        max_size=8,
    )
)
def test_batched_tokens_equal_one_by_one(strings):
    assert scoring.tokens_many(strings) == [ref.get_tokens(s) for s in strings]


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=30)
    | st.text(alphabet=st.sampled_from(list("ab \t\x1c\x00\u2013\u00e9\xa0")), max_size=30)
)
def test_only_words_check(text):
    text = text.replace("_", "")  # its precondition: punctuation, "_" included, is gone
    assert scoring._only_words(text) == all(w.isalnum() for w in text.split())


def test_stopwords_are_nltk_list_and_removed():
    assert len(scoring.STOPWORDS) == 179
    assert tokens("What is the state where he was born?") == ["state", "born"]
    # Contractions in the list never match: punctuation goes first ("don't" -> "dont").
    assert tokens("don't") == ["dont"]


def test_surface_name_drops_disambiguation_suffix():
    assert scoring.surface_name("  Judge Day (disambiguation) ") == "judge day"
    assert scoring.surface_name("Cherry Bomb") == "cherry bomb"


# --- hand-checked scores ---------------------------------------------------------------------------


def test_partial_answer_hand_checked():
    s = score(
        "William Louis Day was born in Ohio, and Charles Bernard Day was born in Alabama.",
        judge_day(),
    )
    # answers: Alabama 1, Rhode Island 0, Ohio 1 -> 2/3
    assert s.answer_recall == pytest.approx(2 / 3)
    # entity tokens minus {judge, day}: charles bernard 2/2; edward william 1/2; william louis 2/2
    assert s.entity_recall == pytest.approx((1 + 0.5 + 1) / 3)
    assert s.entity_answer_recall == pytest.approx((1 + 0 + 1) / 3)
    assert s.answer_length == 15
    assert s.category == "partial"


def test_newlines_and_spaces_are_cleaned_before_scoring():
    a = score("Charles Bernard Day:\nAlabama.\n\nEdward   William Day: Rhode\nIsland.", judge_day())
    assert a.answer_recall == pytest.approx(2 / 3)
    assert a.answer_length == 9


def test_empty_entity_tokens_use_exact_title_match():
    row = judge_day(ambiguous_entity="Lake Whitney (disambiguation)")
    row["documents"] = [
        {"title": "Lake Whitney", "text": "", "pid": "1", "answer": "reservoir"},
        {"title": "Lake Whitney (Texas)", "text": "", "pid": "2", "answer": "flood control"},
    ]
    hit = score("Lake Whitney is a reservoir.", row)
    miss = score("Whitney lake is a reservoir.", row)
    assert hit.entity_recall == pytest.approx(0.5)  # exact match of "lake whitney"; texas absent
    assert miss.entity_recall == 0.0
    assert hit.category == "partial" and miss.category == "ambiguous"


def test_entity_mentioned_by_one_token_counts_as_disambiguated():
    row = judge_day()
    row["documents"] = [
        {"title": "Ann Marie Day", "text": "", "pid": "1", "answer": "Ohio"},
        {"title": "Bob Day", "text": "", "pid": "2", "answer": "Iowa"},
    ]
    # One of [ann, marie] is enough (threshold 1/|E| = 1/2): answered with disambiguation.
    assert score("Ann Day: Ohio.", row).category == "partial"
    # The answer without the entity: answered without disambiguation.
    assert score("Judge Day was born in Ohio.", row).category == "ambiguous"
    # Both answers, one with its entity: c_p = 1, c_np = 1 -> merged.
    assert score("Ann was born in Ohio; Judge Day in Iowa.", row).category == "merged"


def test_long_answer_needs_recall_above_threshold():
    row = judge_day()
    row["documents"] = [
        {"title": "Ann Day", "text": "", "pid": "1", "answer": "northern southern dynasties era"},
        {"title": "Bob Day", "text": "", "pid": "2", "answer": "Iowa"},
    ]
    # |A| = 4, threshold 1/4: recall exactly 1/4 without entity is not enough (strictly greater).
    assert score("Judge Day lived in the northern part.", row).category == "no_answer"
    assert score("Judge Day lived in the northern southern part.", row).category == "ambiguous"


def test_sample_matches_paper_labels(sample_dir):
    rows = json.loads((sample_dir / "answers.json").read_text())
    scores = score_examples([r["gen_answer"] for r in rows], rows, [r["docs"] for r in rows])
    assert [s.category for s in scores] == [r["paper_label"] for r in rows]


# --- which documents are scored --------------------------------------------------------------------


def seven_documents():
    row = judge_day()
    row["documents"] = [
        {"title": f"Person{k} Day", "text": "", "pid": str(k), "answer": f"place{k}"}
        for k in range(7)
    ]
    return row


def test_first5_scores_first_five_gold_documents_whatever_was_shown():
    row = seven_documents()
    shown = [{"title": f"Person{k} Day", "text": "", "pid": str(k)} for k in (6, 5, 0)]
    answer = "Person6 Day: place6. Person5 Day: place5. Person0 Day: place0."
    first5 = score(answer, row, shown)
    assert first5.answer_recall == pytest.approx(1 / 5) and first5.category == "partial"
    shown_only = score(answer, row, shown, "shown")
    assert shown_only.answer_recall == 1.0 and shown_only.category == "complete"
    everything = score(answer, row, shown, "all")
    assert everything.answer_recall == pytest.approx(3 / 7) and everything.n_scored == 7


def test_shown_mode_without_gold_documents_is_left_out_of_means():
    row = seven_documents()
    scores = score_examples(
        ["Person0 Day: place0.", "nothing"],
        [row, row],
        [
            [{"title": "Person0 Day", "text": "", "pid": "0"}],
            [{"title": "Other", "text": "x", "pid": "99"}],
        ],
        score_documents="shown",
    )
    assert scores[1].category is None and scores[1].n_scored == 0
    summary = scoring.aggregate(scores)
    assert (
        summary["answer_recall"] == 1.0
        and summary["complete"] == 1.0
        and summary["n_unscored"] == 1
    )


# --- agreement with the per-call reference ---------------------------------------------------------

VOCAB = (
    "alabama ohio rhode island day judge charles william louis bernard edward the a an of in was "
    "born 1829 1838 december river (texas) lake whitney temple nct 127 tyler creator album ep "
    "école d’art 19th–century don't it's u.s. co-op the’s a–z “an x\u2019the"
).split()


def random_row(rng: random.Random, qid: int):
    sn_words = rng.sample(VOCAB, rng.randint(1, 2))
    sn = " ".join(sn_words)
    docs = []
    for j in range(rng.randint(2, 10)):
        title_words = rng.sample(sn_words, rng.randint(0, len(sn_words))) + rng.sample(
            VOCAB, rng.randint(0, 3)
        )
        title = " ".join(title_words) or sn
        if rng.random() < 0.3:
            title += f" ({rng.choice(VOCAB)})"
        answer = " ".join(rng.choice(VOCAB) for _ in range(rng.randint(0, 5)))
        docs.append(
            {
                "title": title.title() if rng.random() < 0.5 else title,
                "text": " ".join(rng.choices(VOCAB, k=20)),
                "pid": str(qid * 100 + j),
                "answer": answer,
            }
        )
    entity = sn.title() + (" (disambiguation)" if rng.random() < 0.2 else "")
    return {"qid": qid, "question": f"What is {sn}?", "ambiguous_entity": entity, "documents": docs}


def random_answer(rng: random.Random, row) -> str:
    parts = []
    for d in row["documents"]:
        r = rng.random()
        if r < 0.3:
            parts.append(f"{d['title']} is {d['answer']}.")
        elif r < 0.5:
            parts.append(f"{row['ambiguous_entity']} is {d['answer']}\n")
        elif r < 0.6:
            parts.append(" ".join(rng.choices(VOCAB, k=rng.randint(0, 6))))
    if rng.random() < 0.05:
        return rng.choice(["", "   ", "\n", "\u2026", "The context does not say."])
    return " ".join(parts)


def test_agrees_with_reference_scorer_on_random_examples():
    rng = random.Random(1234)
    rows, answers, shown_docs = [], [], []
    for qid in range(1500):
        row = random_row(rng, qid)
        rows.append(row)
        answers.append(random_answer(rng, row))
        shown_docs.append(
            [
                {"title": d["title"], "text": d["text"]}
                for d in rng.sample(row["documents"], min(5, len(row["documents"])))
            ]
        )
    batched = score_examples(answers, rows, shown_docs)  # the batched path
    for row, answer, shown, from_batch in zip(rows, answers, shown_docs, batched, strict=True):
        got = score(answer, row, shown)  # the one-example path
        assert got == from_batch
        want = ref.score(answer, row, shown)
        assert got.category == want[4], (answer, row)
        assert got.answer_length == want[3]
        for a, b in zip(
            (got.answer_recall, got.entity_recall, got.entity_answer_recall, got.k_precision),
            (want[0], want[1], want[2], want[5]),
            strict=True,
        ):
            assert a == pytest.approx(b, abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(answer=st.text(max_size=200), seed=st.integers(0, 10_000))
def test_any_answer_gives_scores_in_unit_interval(answer, seed):
    row = random_row(random.Random(seed), seed)
    s = score(answer, row, [{"title": "t", "text": "x"}])
    for v in (s.answer_recall, s.entity_recall, s.entity_answer_recall, s.k_precision):
        assert 0.0 <= v <= 1.0
    assert s.category in scoring.CATEGORIES
    want = ref.score(answer, row, [{"title": "t", "text": "x"}])
    assert s.category == want[4]


@pytest.mark.parametrize(
    "answer", ["", "   ", "\n\n", "\u00e9\u00e8\u2013\u2019", "\U0001f600 the a an"]
)
def test_empty_and_odd_answers(answer):
    s = score(answer, judge_day(), [])
    assert s.category == "no_answer"
    assert s.answer_recall == 0.0 and s.k_precision == 0.0


# --- layouts and bad input -------------------------------------------------------------------------


def test_dict_of_lists_layout_scores_the_same():
    row = judge_day()
    old = dict(row, documents={k: [d[k] for d in row["documents"]] for k in row["documents"][0]})
    answer = "Charles Bernard Day was born in Alabama."
    assert score(answer, row) == score(answer, old)


def test_bad_input_names_example_and_field():
    good = judge_day()
    with pytest.raises(ValueError, match="predictions has 1 items but references has 2"):
        score_examples(["x"], [good, good])
    with pytest.raises(
        ValueError, match=r"example 1 \(qid 9\): field 'documents' is missing or empty"
    ):
        score_examples(["x", "y"], [good, judge_day(qid=9, documents=[])])
    no_answer = judge_day()
    no_answer["documents"] = [{"title": "A Day", "text": "", "pid": "1"}]
    with pytest.raises(
        ValueError, match=r"example 0 \(qid 7\): field 'documents\[0\]\.answer' is missing"
    ):
        score_examples(["x"], [no_answer])
    with pytest.raises(
        ValueError, match=r"example 1 \(qid 7\): prediction must be a string, got int"
    ):
        score_examples(["x", 3], [good, good])
    with pytest.raises(ValueError, match="field 'question'"):
        score_examples(["x"], [judge_day(question=None)])
    with pytest.raises(ValueError, match="contexts has 2 items"):
        score_examples(["x"], [good], [[], []])
    with pytest.raises(ValueError, match="score_documents"):
        score_examples(["x"], [good], score_documents="some")


def test_k_precision_reference_is_the_zero_shot_prompt():
    from generation.prompts import render_answer_prompt

    docs = [
        {"title": "Felix Grundy", "text": "served"},
        {"title": "Joseph R. Grundy", "text": "too"},
    ]
    assert scoring.k_precision_reference("Q?", docs) == render_answer_prompt("Q?", docs)


def test_k_precision_hand_checked():
    shown = [{"title": "William Louis Day", "text": "Born in Canton, Ohio."}]
    # tokens(y) = [judge, day, born, ohio, 1900]; K holds judge, day, born, ohio -> 4/5
    s = score("Judge Day was born in Ohio in 1900.", judge_day(), shown)
    assert s.k_precision == pytest.approx(4 / 5)


def test_ascii_punctuation_is_deleted_not_replaced():
    assert tokens("a.b,c!d") == ["abcd"]
    assert tokens("U.S. co-op") == ["us", "coop"]


def test_k_precision_applies_the_article_regex_inside_prompt_words():
    # In K, "the’s" and "x–the" become "’s" and "x–" (the regex removes the article runs);
    # the answer's words are exactly those pieces.
    shown = [{"title": "Doc", "text": "the\u2019s x\u2013the"}]
    answer = "\u2019s x\u2013"
    s = score(answer, judge_day(), shown)
    assert s.k_precision == ref.score(answer, judge_day(), shown)[5] == 1.0
    assert score_examples([answer], [judge_day()], [shown])[0].k_precision == 1.0
