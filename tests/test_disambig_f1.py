"""Disambig-F1: run_qa's post-processing on hand-made logits, and the QA model end to end with a
tiny random BERT QA head on the real WordPiece tokenizer of all-MiniLM-L6-v2."""

import json

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
    """A random BERT QA head (2 layers, width 32) on the real all-MiniLM-L6-v2 WordPiece tokenizer,
    scoring question and padding tokens low as a trained model does (tests/qa_models.py)."""
    from qa_models import make_qa_model

    model, tokenizer = make_qa_model()
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


# --- padding only to the batch's longest window ----------------------------------------------------


def random_pairs(tokenizer, n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """Questions and long-form answers of real words, from a few words to several windows."""
    import random

    rng = random.Random(seed)
    words = [w for w in tokenizer.get_vocab() if w.isalpha() and w.isascii() and len(w) > 2]
    words.sort()
    questions, contexts = [], []
    for k in range(n):
        entity = " ".join(rng.sample(words, rng.randint(1, 3))).title()
        questions.append(("  " if k % 7 == 0 else "") + f"What is {entity} known for?")
        n_words = rng.choice([rng.randint(1, 20), rng.randint(30, 120), rng.randint(300, 700)])
        text = " ".join(rng.choice(words) for _ in range(n_words))
        contexts.append(f"{entity} was {text}.")
    return questions, contexts


def test_dynamic_padding_gives_the_spans_of_run_qas_padding(tiny_qa):
    model, tokenizer, _ = tiny_qa
    questions, contexts = random_pairs(tokenizer, 240)
    padded = QAExtractor((model, tokenizer), batch_size=8, padding="max_length")
    dynamic = QAExtractor((model, tokenizer), batch_size=64, batch_tokens=2048)
    want = padded.extract(questions, contexts)
    got = dynamic.extract(questions, contexts)
    assert got == want
    # Not a vacuous comparison: most pairs get a span, and long answers span several windows.
    assert sum(span not in ("", "empty") for span in got) > len(got) / 2
    windows = dynamic._tokenize(questions, contexts)
    assert len(windows.sample_of) > len(questions) + 50
    assert max(len(ids) for ids in windows.input_ids) == padded.max_length
    assert min(len(ids) for ids in windows.input_ids) < 40


def test_real_tokens_get_the_same_logits_in_both_routes(tiny_qa):
    model, tokenizer, _ = tiny_qa
    questions, contexts = random_pairs(tokenizer, 40, seed=1)
    padded = QAExtractor((model, tokenizer), padding="max_length")
    dynamic = QAExtractor((model, tokenizer))
    windows = dynamic._tokenize(questions, contexts)
    full = padded._logits(windows, progress=False)
    short = dynamic._logits(windows, progress=False)
    for ids, (fs, fe, padded_offsets), (ss, se, offsets) in zip(
        windows.input_ids, full, short, strict=True
    ):
        assert len(fs) == len(padded_offsets) == padded.max_length
        assert len(ss) == len(offsets) == len(ids)
        assert padded_offsets[: len(ids)] == offsets
        np.testing.assert_allclose(ss, fs[: len(ids)], atol=1e-4)
        np.testing.assert_allclose(se, fe[: len(ids)], atol=1e-4)
        # As in a trained model, padding scores below every context token, so it never takes a
        # context token's place among run_qa's 20 best candidates.
        context = [k for k, o in enumerate(offsets) if o is not None]
        for logits in (fs, fe):
            assert logits[len(ids) :].max(initial=-np.inf) < logits[context].min()


def test_batches_respect_both_limits_and_cover_every_window_once(tiny_qa):
    model, tokenizer, _ = tiny_qa
    qa = QAExtractor((model, tokenizer), batch_size=5, batch_tokens=300)
    lengths = [12, 384, 90, 90, 91, 30, 30, 30, 30, 30, 30, 30, 200, 7]
    batches = qa._batches(lengths)
    assert sorted(i for members, _ in batches for i in members) == list(range(len(lengths)))
    widths = [width for _, width in batches]
    assert widths == sorted(widths, reverse=True)
    for members, width in batches:
        assert width == max(lengths[i] for i in members)
        assert len(members) <= 5
        assert len(members) == 1 or len(members) * width <= 300
    assert ([1], 384) in batches  # a window over the budget goes alone

    padded = QAExtractor((model, tokenizer), batch_size=4, padding="max_length")
    batches = padded._batches(lengths)
    assert [m for m, _ in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13]]
    assert {w for _, w in batches} == {384}


def test_batch_limits_do_not_change_the_spans(tiny_qa):
    model, tokenizer, _ = tiny_qa
    questions, contexts = random_pairs(tokenizer, 60, seed=2)
    results = [
        QAExtractor((model, tokenizer), batch_size=b, batch_tokens=t).extract(questions, contexts)
        for b, t in [(64, 8192), (1, 8192), (64, 1), (7, 500)]
    ]
    assert all(r == results[0] for r in results[1:])


def test_bad_options_are_refused(tiny_qa):
    model, tokenizer, _ = tiny_qa
    with pytest.raises(ValueError, match="padding"):
        QAExtractor((model, tokenizer), padding="do_not_pad")
    with pytest.raises(ValueError, match="dtype"):
        QAExtractor((model, tokenizer), dtype="int8")
    with pytest.raises(ValueError, match="batch_tokens"):
        QAExtractor((model, tokenizer), batch_tokens=0)


def test_bfloat16_option_runs_in_bfloat16():
    import torch
    from qa_models import make_qa_model

    model, tokenizer = make_qa_model(seed=3)
    qa = QAExtractor((model, tokenizer), dtype="bfloat16")
    assert next(model.parameters()).dtype == torch.bfloat16
    questions, contexts = random_pairs(tokenizer, 10, seed=3)
    for span, ctx in zip(qa.extract(questions, contexts), contexts, strict=True):
        assert span in ("", "empty") or span in ctx


def test_cli_padding_routes_agree_and_bad_batch_limits_exit_2(tiny_qa, sample_dir, tmp_path):
    from generation.report.evaluate import main

    _, _, path = tiny_qa
    answers = str(sample_dir / "answers.json")
    scores = []
    for padding in ("longest", "max_length"):
        out = tmp_path / padding
        argv = [
            answers,
            "--allow-duplicate-qids",
            "--output-dir",
            str(out),
            "--qa-model",
            str(path),
        ]
        assert main([*argv, "--qa-padding", padding, "--qa-batch-tokens", "1000"]) == 0
        lines = (out / "per_example.jsonl").read_text().splitlines()
        scores.append([json.loads(line)["disambig_f1"] for line in lines])
    assert scores[0] == scores[1]
    argv = [answers, "--allow-duplicate-qids", "--output-dir", str(tmp_path / "bad")]
    assert main([*argv, "--qa-model", str(path), "--qa-batch-tokens", "0"]) == 2


def test_a_tokenizer_padding_on_the_left_takes_run_qas_padded_route():
    """Context first, question second, windows padded on the left to 384: as run_qa did it."""
    import torch
    from qa_models import make_qa_model

    model, tokenizer = make_qa_model(seed=4, mark=False)
    tokenizer.padding_side = "left"
    questions, contexts = random_pairs(tokenizer, 12, seed=4)
    got = QAExtractor((model, tokenizer)).extract(questions, contexts)

    enc = tokenizer(
        contexts,
        [q.lstrip() for q in questions],
        truncation="only_first",
        max_length=384,
        stride=128,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding="max_length",
    )
    keys = ("input_ids", "attention_mask", "token_type_ids")
    with torch.inference_mode():
        out = model(**{k: torch.tensor(enc[k]) for k in keys})
    windows = [[] for _ in questions]
    for w, j in enumerate(enc["overflow_to_sample_mapping"]):
        seq = enc.sequence_ids(w)
        offs = [o if seq[k] == 0 else None for k, o in enumerate(enc["offset_mapping"][w])]
        windows[j].append((out.start_logits[w].numpy(), out.end_logits[w].numpy(), offs))
    assert enc["attention_mask"][0][0] == 0  # really padded on the left
    want = [postprocess_example(c, w) for c, w in zip(contexts, windows, strict=True)]
    assert got == want
    assert sum(span not in ("", "empty") for span in got) > 0
