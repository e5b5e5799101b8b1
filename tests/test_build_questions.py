"""`ambigdocs build questions`: parsing, prompts, resuming, and the real hf back-end end to end."""

from __future__ import annotations

import json

import prompt_literals as lit
import pytest
from build_fakes import ScriptedBackend

from generation.datagen import questions
from generation.io.records import read_records
from generation.io.resume import partial_path


def seed_rows(n=3):
    return [
        {
            "surface_name": f"Name {i} (disambiguation)",
            "documents": [
                {"pid": f"{i}1", "title": f"Name {i} (river)", "text": f"A river {i} flows."},
                {"pid": f"{i}2", "title": f"Name {i} (town)", "text": f"A town {i} stands."},
            ],
            "overlap": "a b c d",
        }
        for i in range(n)
    ]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


GOOD = "Where is Name?\nAnswer to Passage 1: in the hills\nAnswer to Passage 2: by the sea"


@pytest.mark.parametrize(
    "text, expected",
    [
        (GOOD, ("Where is Name?", ["in the hills", "by the sea"])),
        # A made-up next exemplar after the answers is cut at the second answer's newline.
        (
            "\nQ?\n\nAnswer to Passage 1: a\nAnswer to Passage 2: b\n\nEntity: X\nPassage 1: ...",
            ("Q?", ["a", "b"]),
        ),
        # A one-line second answer is cut at its first ". ", and at "</s>".
        ("Q?\nAnswer to Passage 1: a. x\nAnswer to Passage 2: b. More", ("Q?", ["a. x", "b"])),
        ("Q?\nAnswer to Passage 1: a\nAnswer to Passage 2: b</s>c", ("Q?", ["a", "b"])),
        # Empty parts parse (the not-ambiguous filter judges them).
        ("Q?\nAnswer to Passage 1: \nAnswer to Passage 2: b", ("Q?", ["", "b"])),
        ("Answer to Passage 1: a\nAnswer to Passage 2: b\nmore", ("", ["a", "b"])),
        ("Q?\nAnswer to Passage 1: a", None),  # one answer
        ("Q?\nAnswer to Passage 2: b\nAnswer to Passage 1: a", None),  # wrong order
        ("Question: Q?\nAnswer to Article 1: a\nAnswer to Article 2: b", None),  # other label
        ("Q?\nThe answers are a and b.\nAnswer to Passage 2: b", None),
        ("", None),
    ],
)
def test_parse_question_output(text, expected):
    assert questions.parse_question_output(text) == expected


def test_run_writes_question_answers_raw_output_in_input_order(tmp_path):
    rows = seed_rows(3)
    src = write_jsonl(tmp_path / "seeds.jsonl", rows)
    replies = {rows[0]["surface_name"]: GOOD, rows[1]["surface_name"]: "nonsense"}

    def reply(prompt):
        user = prompt[1]["content"]
        # the query is the last block of the user turn: "Entity: Name k" ...
        for r in rows:
            if f"Entity: {r['surface_name'].replace(' (disambiguation)', '')}\n" in user:
                return replies.get(r["surface_name"], GOOD)
        raise AssertionError("query not found")

    backend = ScriptedBackend(reply)
    out_path = tmp_path / "q.jsonl"
    stats = questions.generate_questions(src, out_path, backend, chunk_size=2, show_progress=False)
    out = read_records(out_path)
    assert [r["surface_name"] for r in out] == [r["surface_name"] for r in rows]
    assert out[0]["question"] == "Where is Name?"
    assert out[0]["answers"] == ["in the hills", "by the sea"]
    assert out[0]["raw_output"] == GOOD
    assert out[0]["overlap"] == "a b c d" and out[0]["documents"] == rows[0]["documents"]
    assert out[1]["question"] is None and out[1]["answers"] is None
    assert out[1]["raw_output"] == "nonsense"
    assert stats["total"] == 3 and stats["parsed"] == 2 and stats["unparsed"] == 1
    saved = json.loads((tmp_path / "q.jsonl.stats.json").read_text())
    assert saved["parsed"] == 2 and saved["stage"] == "questions"
    # chunks of 2: two back-end calls; the chat prompt is the shared Figure 9 template
    assert [len(c["prompts"]) for c in backend.calls] == [2, 1]
    assert backend.calls[0]["prompts"][0] == lit.question_chat(
        rows[0]["surface_name"], rows[0]["documents"]
    )
    assert not partial_path(out_path).exists()


def test_instruction_format_and_user_exemplars(tmp_path):
    rows = seed_rows(1)
    src = write_jsonl(tmp_path / "seeds.jsonl", rows)
    backend = ScriptedBackend(lambda p: GOOD)
    questions.generate_questions(
        src, tmp_path / "a.jsonl", backend, prompt_format="instruction", show_progress=False
    )
    prompt = backend.calls[0]["prompts"][0]
    assert isinstance(prompt, str) and prompt.startswith("### Instruction:")
    assert prompt.endswith("### Response:\nQuestion: ")

    exemplar = {
        **seed_rows(1)[0],
        "surface_name": "Mercury",
        "question": "Q?",
        "answers": ["x", "y"],
    }
    ex_path = write_jsonl(tmp_path / "ex.jsonl", [exemplar])
    loaded = questions.load_exemplars(str(ex_path))
    questions.generate_questions(
        src,
        tmp_path / "b.jsonl",
        backend,
        prompt_format="plain",
        exemplars=loaded,
        show_progress=False,
    )
    prompt = backend.calls[-1]["prompts"][0]
    assert "Entity: Mercury\n" in prompt and "Young Conservatives" not in prompt


def test_resume_after_crash_skips_finished_chunks(tmp_path):
    rows = seed_rows(5)
    src = write_jsonl(tmp_path / "seeds.jsonl", rows)
    out_path = tmp_path / "q.jsonl"

    class Crash(Exception):
        pass

    calls = {"n": 0}

    def flaky(prompt):
        calls["n"] += 1
        if calls["n"] > 4:  # the third chunk of two crashes
            raise Crash()
        return GOOD

    with pytest.raises(Crash):
        questions.generate_questions(
            src, out_path, ScriptedBackend(flaky), chunk_size=2, show_progress=False
        )
    assert not out_path.exists()
    assert len(read_records(partial_path(out_path))) == 4

    backend = ScriptedBackend(lambda p: GOOD)
    questions.generate_questions(src, out_path, backend, chunk_size=2, show_progress=False)
    assert sum(len(c["prompts"]) for c in backend.calls) == 1  # only the unfinished row
    assert [r["surface_name"] for r in read_records(out_path)] == [r["surface_name"] for r in rows]


def test_resume_with_other_settings_is_refused(tmp_path):
    rows = seed_rows(2)
    src = write_jsonl(tmp_path / "seeds.jsonl", rows)
    out_path = tmp_path / "q.jsonl"

    calls = []

    def crash_on_second(prompt):  # the first chunk is saved, then the run dies
        calls.append(prompt)
        if len(calls) > 1:
            raise RuntimeError("boom")
        return GOOD

    with pytest.raises(RuntimeError, match="^boom$"):
        questions.generate_questions(
            src,
            out_path,
            ScriptedBackend(crash_on_second),
            settings={"model": "a"},
            chunk_size=1,
            show_progress=False,
        )
    with pytest.raises(ValueError, match="model"):
        questions.generate_questions(
            src,
            out_path,
            ScriptedBackend(lambda p: GOOD),
            settings={"model": "b"},
            show_progress=False,
        )
    questions.generate_questions(
        src,
        out_path,
        ScriptedBackend(lambda p: GOOD),
        settings={"model": "b"},
        overwrite=True,
        show_progress=False,
    )
    assert out_path.exists()


def test_bad_input_names_row_and_field(tmp_path):
    rows = seed_rows(2)
    rows[1]["documents"] = rows[1]["documents"][:1]
    src = write_jsonl(tmp_path / "seeds.jsonl", rows)
    with pytest.raises(ValueError, match=r"row 1 .*'documents'"):
        questions.generate_questions(
            src, tmp_path / "q.jsonl", ScriptedBackend(lambda p: GOOD), show_progress=False
        )
    dup = write_jsonl(tmp_path / "dup.jsonl", seed_rows(1) * 2)
    with pytest.raises(ValueError, match="occurs twice"):
        questions.generate_questions(
            dup, tmp_path / "q.jsonl", ScriptedBackend(lambda p: GOOD), show_progress=False
        )


@pytest.mark.parametrize(
    "model_fixture, prompt_format",
    [("tiny_llama_dir", "instruction"), ("tiny_chat_llama_dir", "chat")],
)
def test_cli_with_real_hf_backend_on_tiny_llama(tmp_path, request, model_fixture, prompt_format):
    """End to end through `ambigdocs build questions` and the shared transformers back-end."""
    from generation.cli import main as ambigdocs_main

    tiny_llama_dir = request.getfixturevalue(model_fixture)

    rows = seed_rows(3)
    src = write_jsonl(tmp_path / "seeds.jsonl", rows)
    out_path = tmp_path / "q.jsonl"
    rc = ambigdocs_main(
        ["build",
            "questions", "--input", str(src), "--output", str(out_path), "--backend", "hf",
            "--model", str(tiny_llama_dir), "--prompt-format", prompt_format,
            "--max-new-tokens", "8", "--batch-size", "2", "--chunk-size", "2",
            "--backend-option", "dtype=float32", "--no-progress",
        ]
    )  # fmt: skip
    assert rc == 0
    out = read_records(out_path)
    assert [r["surface_name"] for r in out] == [r["surface_name"] for r in rows]
    for r in out:
        assert isinstance(r["raw_output"], str)
        # a random model: whatever it wrote was parsed by the same rule
        parsed = questions.parse_question_output(r["raw_output"])
        assert (r["question"], r["answers"]) == (parsed if parsed else (None, None))
    stats = json.loads((tmp_path / "q.jsonl.stats.json").read_text())
    assert stats["total"] == 3
