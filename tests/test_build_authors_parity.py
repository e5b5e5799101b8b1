"""Data creation as the authors ran it (issues 11 and 15): the toolkit against references written
from their published scripts (tests/authors_reference.py), byte for byte, on fuzzed outputs and
hand-made pages."""

from __future__ import annotations

import json
import random

import authors_reference as ref
import pytest

from generation.authors_prompts import AUTHORS_EXPANSION_PROMPT, AUTHORS_QUESTION_EXEMPLARS
from generation.datagen import expand, questions
from generation.datagen import filter as filter_stage
from generation.datagen.entailment import disambiguate_question
from generation.datagen.gather_rules import (
    api_link_order,
    authors_dump_entities,
    authors_entities,
    authors_valid_title,
    dump_plain_text,
)
from generation.io.records import read_records
from generation.prompts import render_expansion_prompt, render_question_prompt

# --- the strings --------------------------------------------------------------------------------


def test_authors_strings_match_the_transcription_of_their_source():
    assert AUTHORS_EXPANSION_PROMPT == ref.EXPAND_BASE_PROMPT
    assert AUTHORS_QUESTION_EXEMPLARS == ref.GPT_COMP_PROMPT
    # the escapes of their source are characters at run time
    assert len(AUTHORS_EXPANSION_PROMPT) == 3191 and len(AUTHORS_QUESTION_EXEMPLARS) == 2896
    assert (
        '(, "PUP")' in AUTHORS_EXPANSION_PROMPT and "(60\u2013150 cm)" in AUTHORS_EXPANSION_PROMPT
    )
    assert AUTHORS_EXPANSION_PROMPT.startswith("[INST]Given") and "[/INST]\n\nPassage: Kiwi" in (
        AUTHORS_EXPANSION_PROMPT
    )
    assert AUTHORS_QUESTION_EXEMPLARS.count("Answer to Article ") == 2


def fuzz_text(rng: random.Random, n: int = 12) -> str:
    words = ["Mercury", "St.", "Louis", "é", "ř", "\u2013", "'", '"', "|", "(disambiguation)", "a"]
    return " ".join(rng.choice(words) for _ in range(rng.randint(0, n)))


def fuzz_seed(rng: random.Random):
    suffix = rng.choice(["", " (disambiguation)", " (Disambiguation)", " (DISAMBIGUATION) "])
    sn = rng.choice(["Mercury", "Judge Day", "Ji\u0159\u00ed", " Ace & Co"]) + suffix
    docs = [
        {"pid": str(k), "title": fuzz_text(rng, 4) or "T", "text": fuzz_text(rng, 40)}
        for k in range(2)
    ]
    return sn, docs


def test_question_prompts_byte_for_byte_on_fuzzed_seeds():
    rng = random.Random(11)
    for _ in range(300):
        sn, docs = fuzz_seed(rng)
        assert render_question_prompt(sn, docs, prompt_format="authors") == ref.gpt_messages(
            sn, docs
        )
        assert render_question_prompt(sn, docs, prompt_format="instruction") == ref.llama_prompt(
            sn, docs
        )


def test_expansion_prompt_byte_for_byte_on_fuzzed_passages():
    rng = random.Random(15)
    for _ in range(300):
        passage = {"title": fuzz_text(rng, 4), "text": fuzz_text(rng, 60)}
        question = fuzz_text(rng, 10) + "?"
        got = render_expansion_prompt(
            passage["title"], passage["text"], question, prompt_format="authors"
        )
        assert got == ref.expand_prompt(passage, question)


def test_authors_formats_refuse_user_exemplars():
    with pytest.raises(ValueError, match="fixed exemplars"):
        render_question_prompt("X", [{"title": "a", "text": "b"}] * 2, prompt_format="authors",
                               exemplars=[])  # fmt: skip
    with pytest.raises(ValueError, match="fixed exemplars"):
        render_expansion_prompt("a", "b", "q", prompt_format="authors", exemplars=[])


# --- parsing the generators' outputs -----------------------------------------------------------

LABELS = ["Answer to Passage {k}: ", "Answer to Article {k}: ", "Answer {k}: ", "", "Passage {k}: "]
ANSWERS = ["St. Louis, Missouri", "Texas", "", "a. b. c. d. e", "U.S. Navy. Later", " x ", "1.5"]


def fuzz_output(rng: random.Random) -> str:
    lines = [rng.choice(["", " ", "Question: "]) + rng.choice(["Where is X?", "Q", ""])]
    for k in (1, 2):
        if rng.random() < 0.9:
            lines.append(rng.choice(LABELS).format(k=k) + rng.choice(ANSWERS))
    for _ in range(rng.randint(0, 2)):
        lines.append(rng.choice(["", "Entity: Y", "Answer to Passage 2: z", "</s>more"]))
    sep = rng.choice(["\n", "\n", "\n\n", " "])
    return rng.choice(["", "\n", " "]) + sep.join(lines) + rng.choice(["", "\n", "</s>"])


def _as_ref(parsed):
    return None if parsed is None else (parsed[0], *parsed[1])


def test_each_generator_parsed_with_its_own_rule_on_fuzzed_outputs():
    rng = random.Random(4000)
    outputs = [fuzz_output(rng) for _ in range(4000)]
    differ = 0
    for text in outputs:
        lines = questions.parse_lines_output(text)
        markers = questions.parse_question_output(text)
        assert _as_ref(lines) == ref.gpt_parse(text), text
        assert _as_ref(markers) == ref.llama_parse(text), text
        differ += lines != markers
    assert differ > 500  # the two rules do differ on these outputs: the test can fail
    # the cases of the issue: "Article" labels pass, a second answer is not cut at ". "
    text = "Q?\nAnswer to Article 1: St. Louis, Missouri\nAnswer to Article 2: St. Paul. MN"
    assert questions.parse_lines_output(text) == ("Q?", ["St. Louis, Missouri", "St. Paul. MN"])
    assert questions.parse_question_output(text) is None


@pytest.mark.parametrize(
    "prompt_format, rule", [("chat", "lines"), ("authors", "lines"), ("plain", "lines"),
                            ("instruction", "markers")],
)  # fmt: skip
def test_auto_parse_rule_and_token_budget_follow_the_generator(prompt_format, rule):
    assert questions.resolve_parse_rule(prompt_format) == rule
    assert questions.resolve_parse_rule(prompt_format, "markers") == "markers"
    budget = 150 if prompt_format == "instruction" else 200
    assert questions.default_max_new_tokens(prompt_format) == budget


# --- the not-ambiguous filter and q_DE: "(disambiguation)" stripped case-sensitively -----------


def test_not_ambiguous_filter_matches_theirs_on_fuzzed_lines():
    rng = random.Random(96)
    names = ["Mercury", "Mercury (Disambiguation)", "Mercury (disambiguation)", "Day"]
    titles = ["Mercury (planet)", "Mercury", "Day (band)", "Freddie Mercury"]
    words = ["Mercury", "mercury", "planet", "day", "passage", "Where", "is", "band", "(planet)"]
    mismatches = 0
    for _ in range(4000):
        sn = rng.choice(names)
        pair = rng.sample(titles, 2)
        q = " ".join(rng.choice(words) for _ in range(rng.randint(1, 6))) + "?"
        a1, a2 = (" ".join(rng.choice(words) for _ in range(rng.randint(1, 3))) for _ in "ab")
        ours = filter_stage.ambiguity_problem(q, [a1, a2], sn, pair) is not None
        assert ours == ref.not_ambiguous(sn, pair, q, a1, a2), (sn, pair, q, a1, a2)
        loose = filter_stage.ambiguity_problem(q, [a1, a2], sn, pair, suffix_rule="any-case")
        mismatches += (loose is not None) != ours
        de = disambiguate_question(q, sn, pair[0], case_sensitive_suffix=True)
        assert de == ref.question_de(q, sn, pair[0])
    assert mismatches > 0  # "(Disambiguation)" changes verdicts: the option matters


# --- gather's entity rule -------------------------------------------------------------------------


def fuzz_page(rng: random.Random):
    titles = ["Mercury (planet)", "Mercury", "1984", "1984 (film)", "Help:Disambiguation",
              "Day", "Ace & Co", "\u00c9cole", "See also"]  # fmt: skip
    pieces = titles + ["may refer to:", "refer to", "See also", "\n", "\n", ", a planet", " x "]
    text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 25)))
    links = rng.sample(titles, rng.randint(0, len(titles)))
    return text, links


def test_gather_rule_matches_theirs_on_fuzzed_pages():
    rng = random.Random(1984)
    nonempty = 0
    for _ in range(4000):
        text, links = fuzz_page(rng)
        got = authors_entities(text, links)
        assert got == ref.gather_page("Page", text, links), (text, links)
        nonempty += bool(got)
    assert nonempty > 200
    for title in ["1984", "1984 (film)", "Help:Disambiguation", "\u00c9cole", "(x)", "2-3", " a"]:
        assert authors_valid_title(title) == ref.isvalid(title), title


def test_api_link_order_is_binary_title_order():
    titles = ["Mercury (planet)", "Mercury (Mercury album)", "Mercury", "Mercury_x", "\u00c9cole"]
    # "_" (0x5F) sorts between upper- and lower-case letters, "É" (UTF-8 0xC3) after both
    assert api_link_order(titles) == [
        "Mercury", "Mercury (Mercury album)", "Mercury (planet)", "Mercury_x", "\u00c9cole",
    ]  # fmt: skip


HAND_MADE = """{{wiktionary|mercury}}
'''Mercury''' commonly refers to:
* [[Mercury (planet)]], a planet
'''Mercury''' may also refer to:
== Music ==
* ''[[Mercury (film)]]'', a 1998 film<ref>[[Ghost (ref)]]</ref>
* [[Mercury (band)|Mercury]], a band (piped: shown as "Mercury")
** [[mercury_(element)]], as typed: first letter lower-case
* [[1984 (album)]] and [[1984]]
* {{nowrap|[[Mercury (template)]]}}, written by a template
* A [[Freddie Mercury]] line; [[Freddie Mercury]]
* [[Category:Mercury]] [[wikt:mercury]]
== See also ==
* [[Mercury (mythology)]]
{{disambiguation}}"""


def test_dump_rendering_and_rule_on_a_hand_made_page():
    text = dump_plain_text(HAND_MADE)
    # what a reader sees: links by their shown text, no templates, references or list markers
    assert "\nMercury (film), a 1998 film\n" in text and "Ghost" not in text
    assert "\nMercury, a band" in text and "\nmercury (element), as typed" in text
    assert "Mercury (template)" not in text and "\nSee also\n" in text
    got = authors_dump_entities(HAND_MADE, ["Category", "wikt"])
    # planet: before "refer to"; band: piped; element: shown lower-case; 1984: the title rule;
    # the template's entry: not rendered; Freddie Mercury: first occurrence inside a line;
    # mythology: after See also. Title order.
    assert got == ["1984 (album)", "Mercury (film)"]
    assert got == ref.gather_page("Mercury", text, api_link_order(
        ["Mercury (planet)", "Mercury (film)", "Ghost (ref)", "Mercury (band)",
         "Mercury (element)", "1984 (album)", "1984", "Mercury (template)", "Freddie Mercury",
         "Mercury (mythology)"]
    ))  # fmt: skip


# --- dry runs ---------------------------------------------------------------------------------


def build(argv: list[str]) -> int:
    """`ambigdocs build ARGV...` as the console script runs it."""
    from generation.cli import main

    return main(["build", *argv])


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_questions_dry_run_writes_the_exact_inputs(tmp_path, capsys):
    rng = random.Random(5)
    rows = []
    for i in range(4):
        sn, docs = fuzz_seed(rng)
        rows.append({"surface_name": f"{sn} {i}", "documents": docs})
    src = write_jsonl(tmp_path / "seeds.jsonl", rows)
    out = tmp_path / "dry.jsonl"
    argv = ["questions", "--input", str(src), "--output", str(out), "--backend", "openai",
            "--model", "gpt-4", "--prompt-format", "authors", "--dry-run"]  # fmt: skip
    assert build(argv) == 0  # no API key needed: nothing is sent
    got = read_records(out)
    assert [g["surface_name"] for g in got] == [r["surface_name"] for r in rows]
    for g, r in zip(got, rows, strict=True):
        assert g["messages"] == ref.gpt_messages(r["surface_name"], r["documents"])
        assert g["docs"] == r["documents"] and "prompt" not in g
    argv[argv.index("authors")] = "instruction"
    assert build(argv) == 0
    for g, r in zip(read_records(out), rows, strict=True):
        assert g["prompt"] == ref.llama_prompt(r["surface_name"], r["documents"])
    # bad input: one line, exit 2
    ex = write_jsonl(tmp_path / "ex.jsonl", [])
    capsys.readouterr()
    assert (
        build([*argv[:-3], "--prompt-format", "authors", "--exemplars", str(ex), "--dry-run"]) == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fixed exemplars" in err
    write_jsonl(src, [{"surface_name": "X", "documents": [{"title": "a"}]}])
    assert build(argv) == 2
    assert "row 0" in capsys.readouterr().err


def test_expand_dry_run_writes_every_prompt_in_their_order(tmp_path, capsys):
    from generation.io.passages import write_passages_tsv

    mapping = {"Mercury (disambiguation)": ["Mercury (planet)", "Mercury (band)",
               "Mercury (film)", "Mercury (none)", "Mercury (god)"]}  # fmt: skip
    tsv = [("1", "band text one", "Mercury (band)"), ("2", "planet text", "Mercury (planet)"),
           ("3", "film text", "Mercury (film)"), ("4", "band text two", "Mercury (band)"),
           ("5", "god text", "Mercury (god)")]  # fmt: skip
    write_passages_tsv(tmp_path / "psgs.tsv", tsv)
    (tmp_path / "map.json").write_text(json.dumps(mapping))
    q = "Where did Mercury (Disambiguation) play?"
    row = {"surface_name": "Mercury (disambiguation)", "question": q, "status": "ok",
           "documents": [{"pid": "2", "title": "Mercury (planet)", "text": "planet text"},
                         {"pid": "3", "title": "Mercury (film)", "text": "film text"}],
           "answers": ["a", "b"]}  # fmt: skip
    src = write_jsonl(tmp_path / "f.jsonl", [row, {**row, "surface_name": "Y", "status": "x"}])
    out = tmp_path / "dry.jsonl"
    argv = ["expand", "--input", str(src), "--output", str(out), "--passages",
            str(tmp_path / "psgs.tsv"), "--disambiguation", str(tmp_path / "map.json"),
            "--backend", "hf", "--model", "no/such-model", "--dry-run", "--no-progress"]  # fmt: skip
    assert build(argv) == 0  # the model is never loaded
    # theirs: the page's entities in map order, seeds and entities without passages skipped,
    # every passage in file order
    passages = {"Mercury (band)": ["band text one", "band text two"], "Mercury (god)": ["god text"]}
    expected = [
        ref.expand_prompt({"title": e, "text": t}, q)
        for e in mapping["Mercury (disambiguation)"]
        if e not in ("Mercury (planet)", "Mercury (film)")
        for t in passages.get(e, [])
    ]
    got = read_records(out)
    assert [g["prompt"] for g in got] == expected
    assert [(g["entity"], g["pid"]) for g in got] == [
        ("Mercury (band)", "1"), ("Mercury (band)", "4"), ("Mercury (god)", "5"),
    ]  # fmt: skip
    capsys.readouterr()
    assert build([*argv, "--exemplars", str(src)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_expand_q_de_strips_only_the_lower_case_suffix():
    from build_fakes import ScriptedBackend, ScriptedChecker

    row = {"surface_name": "Mercury (Disambiguation)", "question": "Is Mercury (Disambiguation) red?",
           "documents": [{"pid": "1", "title": "A", "text": "a"}], "answers": ["x"]}  # fmt: skip
    backend = ScriptedBackend(lambda p: "Red", score=lambda p: 0.01)
    for rule in ("exact", "any-case"):
        checker = ScriptedChecker(lambda it: True)
        expand.expand_rows([row], {row["surface_name"]: ["A", "B"]}, {"B": [("2", "b")]},
                           backend, checker, suffix_rule=rule)  # fmt: skip
        asked = checker.batches[0][0].question
        sn = "Mercury (Disambiguation)" if rule == "exact" else "Mercury"
        assert asked == row["question"].replace(sn, "B")
