"""Every documented bound, reached exactly on both sides, with expectations derived by hand.

- Disambig-F1 and the recalls score the first five gold documents (docs/metric.md §5): rows with
  seven gold documents, with a stub QA model so the expected value is plain arithmetic.
- Seed selection (docs/building-seed.md): pages of 1, 2, 10 and 11 entities; entities of 20 and
  21 passages; longest common sequences of 3, 4, 9 and 10 words; word-set Jaccard of exactly 0.4
  and just above.
"""

from __future__ import annotations

import json

import pytest
from test_build_seed_reference import authors_seed

from generation.datagen import seed
from generation.io.passages import write_passages_tsv
from metric.ambigdocs_metric.disambig_f1 import disambig_f1
from metric.ambigdocs_metric.scoring import parse_reference, score_example

# --- the first five gold documents ----------------------------------------------------------------

SEVEN = [
    ("Charles Day", "Alabama"),
    ("William Day", "Canton, Ohio"),
    ("Edward Day", "Texas"),
    ("Louis Day", "Rhode Island"),
    ("Robert Day", "Rome"),
    ("James Day", "Maine"),
    ("Henry Day", "Utah"),
]
ROW = {
    "qid": 1,
    "question": "Where was Judge Day born?",
    "ambiguous_entity": "Judge Day",
    "documents": [
        {"pid": str(k), "title": t, "text": f"{t} was born in {a}.", "answer": a}
        for k, (t, a) in enumerate(SEVEN)
    ],
}


class LookupQA:
    """A QA model stub: the span for each disambiguated question, whatever the answer text."""

    def __init__(self, spans: dict[str, str]):
        self.spans = spans
        self.seen: list[str] = []

    def extract(self, questions, contexts, progress=False):
        self.seen += questions
        return [self.spans[q] for q in questions]


SPANS = {
    "Where was Charles Day born?": "Alabama",  # F1 1
    "Where was William Day born?": "Canton",  # P 1, R 1/2: F1 2/3
    "Where was Edward Day born?": "",  # no answer: F1 0
    "Where was Louis Day born?": "Rhode Island",  # F1 1
    "Where was Robert Day born?": "Paris",  # F1 0
    "Where was James Day born?": "Maine",  # F1 1 (the sixth document)
    "Where was Henry Day born?": "Utah",  # F1 1 (the seventh)
}


def test_disambig_f1_scores_the_first_five_gold_documents():
    qa = LookupQA(SPANS)
    (got,) = disambig_f1(["anything"], [ROW], qa)
    # first five: (1 + 2/3 + 0 + 1 + 0) / 5 = 8/15; all seven would be (8/3 + 2) / 7 = 2/3
    assert got == pytest.approx(8 / 15)
    assert sorted(qa.seen) == sorted(list(SPANS)[:5])
    (everything,) = disambig_f1(["anything"], [ROW], LookupQA(SPANS), score_documents="all")
    assert everything == pytest.approx(2 / 3)
    # shown: the documents shown by pid (first, sixth, seventh): (1 + 1 + 1) / 3
    shown = [ROW["documents"][k] for k in (0, 5, 6)]
    (on_shown,) = disambig_f1(
        ["anything"], [ROW], LookupQA(SPANS), contexts=[shown], score_documents="shown"
    )
    assert on_shown == 1.0


def test_recalls_score_the_first_five_gold_documents():
    # names and answers of the sixth and seventh documents only: nothing of the first five
    s = score_example("James Day was born in Maine and Henry Day in Utah.", parse_reference(ROW))
    assert s.answer_recall == 0.0 and s.entity_recall == 0.0 and s.category == "no_answer"
    # the first five, each with its name ("day" is the surface name's, so one word per entity)
    five = "Charles Alabama, William Canton Ohio, Edward Texas, Louis Rhode Island, Robert Rome."
    s = score_example(five, parse_reference(ROW))
    assert s.answer_recall == 1.0 and s.entity_recall == 1.0 and s.category == "complete"


# --- seed selection ---------------------------------------------------------------------------


def _words(tag: str, n: int) -> list[str]:
    return [f"{tag}w{i}" for i in range(n)]


def _pair_texts(tag: str, shared: int, own: int = 12) -> tuple[str, str]:
    """Two passages sharing exactly `shared` contiguous words, each with `own` words of its own
    (Jaccard shared / (shared + 2 * own) stays far below 0.4)."""
    common = _words(tag + "c", shared)
    return (
        " ".join(_words(tag + "a", own) + common),
        " ".join(common + _words(tag + "b", own)),
    )


def _corpus():
    """(rows, map): pages named after the bound they reach."""
    rows, pages = [], {}

    def entity(title, texts):
        # every entity gets one more passage: the last one is dropped (the authors' rule)
        for text in [*texts, f"{title} last passage fragment"]:
            rows.append((str(len(rows)), text, title))

    def page(name, n_entities, shared=5):
        titles = [f"{name} E{k}" for k in range(n_entities)]
        first, last = _pair_texts(name.replace(" ", ""), shared)
        for k, title in enumerate(titles):
            if k == 0:
                text = first
            elif k == n_entities - 1:
                text = last
            else:
                text = " ".join(_words(f"{name.replace(' ', '')}u{k}", 10))
            entity(title, [text])
        pages[name] = titles

    page("one entity", 1)
    page("two entities", 2)
    page("ten entities", 10)
    page("eleven entities", 11)
    for n in (3, 4, 9, 10):
        page(f"overlap {n}", 2, shared=n)
    # 20 passages (19 used) and 21 (none used): the phrase sits in the entity's first passage
    for count in (20, 21):
        name = f"passages {count}"
        a, b = _pair_texts(f"p{count}", 5)
        entity(f"{name} A", [a] + [f"p{count} filler {k}" for k in range(count - 2)])
        entity(f"{name} B", [b])
        pages[name] = [f"{name} A", f"{name} B"]
    # Jaccard exactly 0.4 (4 shared of 10 distinct words: kept) and 4/9 (> 0.4: skipped)
    entity("jaccard 0.4 A", ["j1 j2 j3 j4 ja1 ja2 ja3"])
    entity("jaccard 0.4 B", ["j1 j2 j3 j4 jb1 jb2 jb3"])
    pages["jaccard 0.4"] = ["jaccard 0.4 A", "jaccard 0.4 B"]
    entity("jaccard 4/9 A", ["k1 k2 k3 k4 ka1 ka2 ka3"])
    entity("jaccard 4/9 B", ["k1 k2 k3 k4 kb1 kb2"])
    pages["jaccard 4/9"] = ["jaccard 4/9 A", "jaccard 4/9 B"]
    return rows, pages


SELECTED = {  # page -> the words the pair shares (by construction above)
    "two entities": " ".join(_words("twoentitiesc", 5)),
    "ten entities": " ".join(_words("tenentitiesc", 5)),
    "overlap 4": " ".join(_words("overlap4c", 4)),
    "overlap 9": " ".join(_words("overlap9c", 9)),
    "passages 20": " ".join(_words("p20c", 5)),
    "jaccard 0.4": "j1 j2 j3 j4",
}


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bounds")
    rows, pages = _corpus()
    tsv, map_path = tmp / "psgs.tsv", tmp / "map.json"
    write_passages_tsv(tsv, rows)
    map_path.write_text(json.dumps(pages))
    out = tmp / "seeds.jsonl"
    stats = seed.run(tsv, map_path, out, progress=False)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    return rows, pages, records, stats


def test_seed_selection_at_every_bound(seeds):
    rows, pages, records, stats = seeds
    assert {r["surface_name"]: r["overlap"] for r in records} == SELECTED
    ten = next(r for r in records if r["surface_name"] == "ten entities")
    assert [d["title"] for d in ten["documents"]] == ["ten entities E0", "ten entities E9"]
    # pages kept: every page but those of 1 and 11 entities
    assert stats["pages_with_2_to_10_entities"] == len(pages) - 2
    assert stats["titles_over_20_passages"] == 1
    # the independent transcription of the authors' script agrees page by page
    assert records == authors_seed(rows, pages)


def test_entity_limits_are_options(seeds, tmp_path):
    rows, pages, _, _ = seeds
    tsv, map_path = tmp_path / "psgs.tsv", tmp_path / "map.json"
    write_passages_tsv(tsv, rows)
    map_path.write_text(json.dumps(pages))
    out = tmp_path / "seeds.jsonl"
    seed.run(tsv, map_path, out, max_entities=11, max_passages=21, progress=False)
    got = {json.loads(line)["surface_name"] for line in out.read_text().splitlines()}
    assert got == set(SELECTED) | {"eleven entities", "passages 21"}


# --- Disambig-F1's batch limits ------------------------------------------------------------------


def test_batch_token_budget_and_batch_size_are_inclusive():
    # docs/metric.md ("QA batch tokens": padded tokens per forward pass) and the docstring: at
    # most batch_size windows and batch_tokens padded tokens a batch;
    # four windows of 100 tokens fill a budget of 300 with three (exactly 300), 299 with two.
    from qa_models import make_qa_model

    from metric.ambigdocs_metric.disambig_f1 import QAExtractor

    model, tokenizer = make_qa_model(hidden_size=8, num_layers=1, num_heads=1)
    lengths = [100, 100, 100, 100]

    def batches(size, tokens):
        qa = QAExtractor((model, tokenizer), batch_size=size, batch_tokens=tokens)
        return [members for members, _ in qa._batches(lengths)]

    assert batches(8, 300) == [[0, 1, 2], [3]]
    assert batches(8, 299) == [[0, 1], [2, 3]]
    assert batches(3, 10_000) == [[0, 1, 2], [3]]  # batch_size 3: exactly three
    assert batches(8, 99) == [[0], [1], [2], [3]]  # a window over the budget goes alone
