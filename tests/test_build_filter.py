"""`ambigdocs build filter`: each rule of docs/pipeline.md section 3 on hand-made lines, and the
entailment mechanics on tiny random T5 models."""

from __future__ import annotations

import json

import pytest
from build_fakes import ScriptedChecker, make_tiny_t5

import generation.datagen.filter as filters
from generation.datagen.entailment import (
    EntailmentItem,
    ModelEntailmentChecker,
    Seq2SeqGenerator,
    converter_input,
    disambiguate_question,
    nli_input,
)
from generation.io.records import read_records
from generation.io.resume import partial_path

SN = "Judge Day (disambiguation)"
T1, T2 = "Charles Bernard Day", "William Louis Day"


def line(question="Where was Judge Day born?", answers=("Alabama", "Ohio"), sn=SN, titles=(T1, T2)):
    return {
        "surface_name": sn,
        "documents": [
            {"pid": "1", "title": titles[0], "text": "Born in Dothan, Alabama."},
            {"pid": "2", "title": titles[1], "text": "Born in Canton, Ohio."},
        ],
        "question": question,
        "answers": None if answers is None else list(answers),
        "raw_output": "...",
    }


# --- filter 1: not formatted -------------------------------------------------------------------


@pytest.mark.parametrize(
    "question, answers, reason",
    [
        (None, None, "unparsed"),
        ("Q?", ["only one"], "unparsed"),
        ("Q?", ["a", ""], None),  # parsed; the not-ambiguous filter judges an empty answer
        ("Q?", ["a. b. c. d.", "x"], "answer_too_long"),  # 5 pieces on "."
        ("Q?", ["a. b. c.", "x"], None),  # 4 pieces: kept
        ("Q?", ["1.5 m", "x"], None),
    ],
)
def test_format_rule(question, answers, reason):
    assert filters.format_problem(question, answers) == reason


def test_too_many_sentences_counts_pieces_not_sentences():
    assert not filters.too_many_sentences("U.S.A")  # 3 pieces
    assert filters.too_many_sentences("U.S.A. Inc.")  # 5 pieces


# --- filter 2: not ambiguous -------------------------------------------------------------------


@pytest.mark.parametrize(
    "question, answers, titles, reason",
    [
        # sn absent, both titles present
        (f"Where were {T1} and {T2} born?", ["Alabama", "Ohio"], (T1, T2), "names_both_entities"),
        # sn absent, one title: the authors' rule lets it through
        (f"Where was {T1} born?", ["Alabama", "Ohio"], (T1, T2), None),
        # sn absent, no title: also through (docs/pipeline.md: only "lacks sn while containing both")
        ("Where was he born?", ["Alabama", "Ohio"], (T1, T2), None),
        # sn and one title
        (
            f"Where was Judge Day, i.e. {T1}, born?",
            ["Alabama", "Ohio"],
            (T1, T2),
            "names_an_entity",
        ),
        # a title equal to sn is not counted
        ("Where was Judge Day born?", ["Alabama", "Ohio"], ("Judge Day", T2), None),
        (
            "Which passage says where Judge Day was born?",
            ["A", "B"],
            (T1, T2),
            "question_prompt_word",
        ),
        ("What entity is Judge Day?", ["A", "B"], (T1, T2), "question_prompt_word"),
        ("In what context is Judge Day known?", ["A", "B"], (T1, T2), "question_prompt_word"),
        ("Who did Judge Day mention?", ["A", "B"], (T1, T2), "question_prompt_word"),
        (
            "Where was Judge Day born?",
            ["not in the passage", "Ohio"],
            (T1, T2),
            "answer_prompt_word",
        ),
        ("Where was Judge Day born?", ["Ohio", "no mention"], (T1, T2), "answer_prompt_word"),
        ("Where was Judge Day born?", ["Canton, Ohio", "ohio"], (T1, T2), "answer_contains_other"),
        # IoU 3/4 = 0.75 is not > 0.75: kept; 4/5 = 0.8 is dropped
        ("Where was Judge Day born?", ["a b c d", "a b c"], (T1, T2), "answer_contains_other"),
        ("Where was Judge Day born?", ["a b c x", "a b c y"], (T1, T2), None),  # IoU 3/5
        ("Where was Judge Day born?", ["w x y z q", "q z y x w"], (T1, T2), "answers_too_similar"),
        ("Where was Judge Day born?", ["Alabama", "Ohio"], (T1, T2), None),
    ],
)
def test_ambiguity_rules(question, answers, titles, reason):
    assert filters.ambiguity_problem(question, answers, SN, titles) == reason


def test_word_iou_by_hand():
    assert filters.word_iou("a b c", "a b d") == pytest.approx(2 / 4)
    assert filters.word_iou("a b c x", "a b c y") == pytest.approx(3 / 5)
    assert filters.word_iou("a a b", "b a") == 1.0
    # the threshold is strict: 3 shared of 4 words is exactly 0.75 and passes
    assert filters.word_iou("a b c x", "a b c") == 0.75
    assert filters.ambiguity_problem("Judge Day?", ["a b c x y z", "a b c x y"], SN, (T1, T2)) == (
        "answer_contains_other"
    )


def test_ambiguity_tests_compare_lower_cased_text():
    # The authors lower-case the question, the names and the answers before every test.
    assert filters.ambiguity_problem("Passage of Judge Day?", ["A", "B"], SN, (T1, T2)) == (
        "question_prompt_word"
    )
    assert filters.ambiguity_problem("Where was JUDGE DAY born?", ["A", "B"], SN, (T1, T2)) is None
    assert (
        filters.ambiguity_problem("Was judge day CHARLES BERNARD DAY?", ["A", "B"], SN, (T1, T2))
        == "names_an_entity"
    )
    assert filters.ambiguity_problem("Q judge day?", ["The Mention", "B"], SN, (T1, T2)) == (
        "answer_prompt_word"
    )
    # the answers' word sets are split on single spaces, lower-cased: {a, b} vs {a, b, c}
    assert filters.word_iou("A B", "a b c") == 2 / 3
    assert filters.ambiguity_problem("Q judge day?", ["", "B"], SN, (T1, T2)) == (
        "answer_contains_other"
    )


# --- filter 3 and the stage --------------------------------------------------------------------


def test_disambiguated_question_and_model_inputs():
    q = disambiguate_question("Where was Judge Day born?", SN, T1)
    assert q == f"Where was {T1} born?"
    assert converter_input(q, "Alabama") == f"Where was {T1} born? </s> Alabama"
    assert nli_input(T1, "text", "s.") == f"premise: {T1} | text hypothesis: s."


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_stage_statuses_reasons_and_stats(tmp_path):
    rows = [
        line(),  # ok
        line(question=None, answers=None),  # not formatted
        {**line(), "surface_name": "B", "question": "What entity is B?"},  # not ambiguous
        {
            **line(),
            "surface_name": "C",
            "question": "Where was C born?",
            "answers": ["Al", "Cleveland"],
        },
        {**line(), "surface_name": "D", "question": "Where was D born?", "answers": ["Al", "Oh"]},
    ]
    rows[1]["surface_name"] = "A"
    src = write_jsonl(tmp_path / "q.jsonl", rows)
    # the NLI check fails for C's second answer only
    checker = ScriptedChecker(lambda it: it.answer != "Cleveland")
    out_path = tmp_path / "f.jsonl"
    stats = filters.filter_questions(
        src, out_path, checker=checker, chunk_size=2, show_progress=False
    )
    out = read_records(out_path)
    assert [r["status"] for r in out] == [
        "ok",
        "not_formatted",
        "not_ambiguous",
        "not_entailed",
        "ok",
    ]
    assert [r["filter_reason"] for r in out] == [
        None, "unparsed", "question_prompt_word", "not_entailed", None,
    ]  # fmt: skip
    assert out[0]["entailment"][0]["entailed"] and out[1]["entailment"] is None
    assert [e["entailed"] for e in out[3]["entailment"]] == [True, False]
    # only lines that passed filters 1 and 2 reach the checker, two items each, chunks of 2 lines
    assert [len(b) for b in checker.batches] == [4, 2]
    first = checker.batches[0][0]
    assert first == EntailmentItem(
        question=f"Where was {T1} born?",
        answer="Alabama",
        title=T1,
        text="Born in Dothan, Alabama.",
    )
    assert stats["total"] == 5 and stats["ok"] == 2 and stats["not_entailed"] == 1
    assert stats["not_formatted_fraction"] == pytest.approx(0.2)
    assert stats["reasons"] == {"unparsed": 1, "question_prompt_word": 1, "not_entailed": 1}
    saved = json.loads((tmp_path / "f.jsonl.stats.json").read_text())
    assert saved["entailment"] == "checked" and saved["ok"] == 2
    assert not partial_path(out_path).exists()


def test_no_entailment_option_skips_third_filter(tmp_path):
    src = write_jsonl(tmp_path / "q.jsonl", [line()])
    stats = filters.filter_questions(src, tmp_path / "f.jsonl", checker=None, show_progress=False)
    assert stats["ok"] == 1 and stats["entailment"] == "skipped"


def test_entailment_resumes_after_crash(tmp_path):
    rows = [
        {**line(), "surface_name": f"S{i}", "question": f"Where was S{i} born?"} for i in range(5)
    ]
    src = write_jsonl(tmp_path / "q.jsonl", rows)
    out_path = tmp_path / "f.jsonl"

    class Boom(Exception):
        pass

    class CrashingChecker(ScriptedChecker):
        def check(self, items):
            if len(self.batches) == 2:
                raise Boom()
            return super().check(items)

    with pytest.raises(Boom):
        filters.filter_questions(
            src,
            out_path,
            checker=CrashingChecker(lambda it: True),
            chunk_size=2,
            show_progress=False,
        )
    assert len(read_records(partial_path(out_path))) == 4
    checker = ScriptedChecker(lambda it: True)
    filters.filter_questions(src, out_path, checker=checker, chunk_size=2, show_progress=False)
    assert [len(b) for b in checker.batches] == [2]  # only S4's two answers
    assert [r["status"] for r in read_records(out_path)] == ["ok"] * 5


def test_bad_input_names_row_and_field(tmp_path):
    bad = line()
    del bad["documents"][1]["text"]
    src = write_jsonl(tmp_path / "q.jsonl", [line(), {**bad, "surface_name": "X"}])
    with pytest.raises(ValueError, match=r"row 1 .*documents\[1\]\.text"):
        filters.filter_questions(src, tmp_path / "f.jsonl", checker=None, show_progress=False)


# --- the converter + NLI mechanics on tiny random T5 models -------------------------------------


@pytest.fixture(scope="module")
def tiny_t5_dir(tmp_path_factory):
    return make_tiny_t5(tmp_path_factory.mktemp("tiny-t5"))


def test_seq2seq_generator_is_batch_size_independent(tiny_t5_dir):
    texts = ["Where was Judge Day born? </s> Ohio", "a", "premise: x | y hypothesis: z " * 3]
    one = Seq2SeqGenerator(str(tiny_t5_dir), batch_size=1, device="cpu").generate(texts, 5)
    three = Seq2SeqGenerator(str(tiny_t5_dir), batch_size=3, device="cpu").generate(texts, 5)
    assert one == three and len(one) == 3 and all(isinstance(t, str) for t in one)


class RecordingGenerator:
    """Wraps a real generator: records what it was asked and can override the decoded verdicts."""

    def __init__(self, inner, verdicts=None):
        self.inner, self.verdicts, self.seen = inner, verdicts, []

    def encode(self, texts):
        return self.inner.encode(texts)

    def generate(self, texts, max_new_tokens):
        self.seen.extend(texts)
        return self.inner.generate(texts, max_new_tokens)

    def generate_ids(self, encoded, max_new_tokens):
        decoded = [self.inner.tokenizer.decode(ids) for ids in encoded]
        self.seen.extend(decoded)
        real = self.inner.generate_ids(encoded, max_new_tokens)
        return [self.verdicts(d) for d in decoded] if self.verdicts else real


def test_checker_runs_converter_then_nli_with_token_limit(tiny_t5_dir):
    converter = RecordingGenerator(Seq2SeqGenerator(str(tiny_t5_dir), batch_size=2, device="cpu"))
    nli_gen = Seq2SeqGenerator(str(tiny_t5_dir), batch_size=2, device="cpu")
    # "1" for the Alabama passage, "0" otherwise: checks which output maps to which verdict
    nli = RecordingGenerator(nli_gen, verdicts=lambda text: "1" if "Dothan" in text else "0")
    items = [
        EntailmentItem(f"Where was {T1} born?", "Alabama", T1, "Born in Dothan, Alabama."),
        EntailmentItem(f"Where was {T2} born?", "Ohio", T2, "Born in Canton, Ohio."),
        EntailmentItem(f"Where was {T2} born?", "Ohio", T2, "Born in Dothan " + "word " * 400),
    ]
    limit = 120
    checker = ModelEntailmentChecker(
        converter, nli, max_nli_tokens=limit, converter_max_new_tokens=6
    )
    results = checker.check(items)
    assert converter.seen == [converter_input(it.question, it.answer) for it in items]
    lengths = [
        len(ids)
        for ids in nli_gen.encode(
            [
                nli_input(it.title, it.text, r.statement)
                for it, r in zip(items, results, strict=True)
            ]
        )
    ]
    assert lengths[0] <= limit and lengths[1] <= limit and lengths[2] > limit
    # the too-long input is never shown to the NLI model, and counts as not entailed
    assert len(nli.seen) == 2 and all(s.startswith("premise: ") for s in nli.seen)
    assert [r.entailed for r in results] == [True, False, False]
    assert [r.too_long for r in results] == [False, False, True]
    assert all(isinstance(r.statement, str) for r in results)


def test_nli_token_limit_is_inclusive_at_the_exact_length(tiny_t5_dir):
    # docs/pipeline.md §3.3: an input *longer* than the limit is not run; one of exactly the
    # limit's length is. The length is measured here, then used as the limit and limit - 1.
    gen = Seq2SeqGenerator(str(tiny_t5_dir), batch_size=2, device="cpu")
    item = EntailmentItem(f"Where was {T1} born?", "Alabama", T1, "Born in Dothan, Alabama.")
    statement = gen.generate([converter_input(item.question, item.answer)], 6)[0]
    (ids,) = gen.encode([nli_input(item.title, item.text, statement)])
    at = ModelEntailmentChecker(gen, gen, max_nli_tokens=len(ids), converter_max_new_tokens=6)
    below = ModelEntailmentChecker(
        gen, gen, max_nli_tokens=len(ids) - 1, converter_max_new_tokens=6
    )
    assert [r.too_long for r in at.check([item])] == [False]
    assert [r.too_long for r in below.check([item])] == [True]


def test_checker_on_real_tiny_models_maps_output_to_verdict(tiny_t5_dir):
    gen = Seq2SeqGenerator(str(tiny_t5_dir), batch_size=4, device="cpu")
    checker = ModelEntailmentChecker(gen, gen, converter_max_new_tokens=4)
    items = [EntailmentItem("Q?", "A", "T", "text")] * 3
    results = checker.check(items)
    # whatever the random model says, "entailed" is exactly "its decoded output is 1"
    statements = gen.generate([converter_input("Q?", "A")], 4)
    verdict = gen.generate([nli_input("T", "text", statements[0])], 2)[0]
    assert [r.entailed for r in results] == [verdict == "1"] * 3
    assert [r.statement for r in results] == statements * 3

    # A random model's verdict is never "1": make the NLI answer fixed (the real tokenizer still
    # encodes its inputs) so that both verdicts are seen through the real converter path.
    class Answers:
        def __init__(self, text):
            self.text = text

        def encode(self, texts):
            return gen.encode(texts)

        def generate_ids(self, ids, max_new_tokens):
            return [self.text] * len(ids)

    for text, entailed in (("1", True), ("0", False), ("1 ", False)):
        checked = ModelEntailmentChecker(gen, Answers(text), converter_max_new_tokens=4)
        assert [r.entailed for r in checked.check(items)] == [entailed] * 3, text


def test_cli_loads_models_only_when_a_line_reaches_the_third_filter(tmp_path, tiny_t5_dir):
    from generation.cli import main as ambigdocs_main

    unformatted = write_jsonl(tmp_path / "u.jsonl", [line(question=None, answers=None)])
    missing = str(tmp_path / "no-such-model")
    argv = ["--converter-model", missing, "--nli-model", missing, "--no-progress"]
    assert (
        ambigdocs_main(
            [
                "build",
                "filter",
                "--input",
                str(unformatted),
                "--output",
                str(tmp_path / "u.out"),
                *argv,
            ]
        )
        == 0
    )

    src = write_jsonl(tmp_path / "q.jsonl", [line(), {**line(), "surface_name": "B"}])
    out_path = tmp_path / "f.jsonl"
    rc = ambigdocs_main(
        ["build",
            "filter", "--input", str(src), "--output", str(out_path),
            "--converter-model", str(tiny_t5_dir), "--nli-model", str(tiny_t5_dir),
            "--nli-device", "cpu", "--nli-batch-size", "3", "--converter-max-new-tokens", "4",
            "--no-progress",
        ]
    )  # fmt: skip
    assert rc == 0
    out = read_records(out_path)
    for row in out:  # random models: only the mechanics are certain
        assert row["status"] in ("ok", "not_entailed")
        assert len(row["entailment"]) == 2
        assert all(isinstance(e["statement"], str) and not e["too_long"] for e in row["entailment"])
        assert (row["status"] == "ok") == all(e["entailed"] for e in row["entailment"])


def test_disambiguation_suffix_is_stripped_case_sensitively_by_default(tmp_path):
    """The authors' filter strips only "(disambiguation)"; "(Disambiguation)" stays in `sn`."""
    q = "Where was Judge Day born?"
    sn = "Judge Day (Disambiguation)"
    titles = ("Charles Day", "Judge Day")
    # exact (default): sn is not in the question, which names neither title alone -> passes;
    # any-case: sn "Judge Day" is in the question with a title equal to sn -> passes too;
    # a question naming one title shows the difference
    q2 = "Where was Judge Day, Charles Day's colleague, born?"
    assert filters.ambiguity_problem(q, ["Alabama", "Ohio"], sn, titles) is None
    assert filters.ambiguity_problem(q2, ["Alabama", "Ohio"], sn, ("Charles Day", "X")) is None
    loose = filters.ambiguity_problem(
        q2, ["Alabama", "Ohio"], sn, ("Charles Day", "X"), suffix_rule="any-case"
    )
    assert loose == "names_an_entity"
    src = write_jsonl(tmp_path / "q.jsonl", [line(question=q2, sn=sn, titles=("Charles Day", "X"))])
    with pytest.raises(ValueError, match="suffix_rule"):
        filters.filter_questions(src, tmp_path / "o.jsonl", checker=None, suffix_rule="lower")


def test_entailment_models_default_to_float32():
    from generation.options import parse_argv

    options, entailment = parse_argv("f", "", filters.OPTIONS, ["--input", "a", "--output", "b"])
    assert entailment.nli_dtype == "float32" and entailment.strip_disambiguation == "exact"
    assert filters.entailment_settings(entailment)["nli_dtype"] == "float32"
    assert entailment.entailment and options.progress
