"""`ambigdocs answer --dry-run`: the exact model inputs, with no model loaded and no request sent.

The expected prompts are rebuilt from the documents the dry run reports, with the independent
reference of the authors' script (`tests/authors_qa_reference.py`) or the paper's Figure 11-12
layout, and compared byte for byte.
"""

from __future__ import annotations

import json
import subprocess
import sys

import authors_qa_reference as ref
import prompt_literals as lit
import pytest

from generation.answering.answer import main as answer_main
from generation.documents import select_documents
from generation.io.records import iter_jsonl

SETTINGS = ("gold-only", "gold-retrieved", "retrieved-only")
NO_MODEL = "nobody/no-such-model"  # a Hub id that cannot be reached: nothing may load it


@pytest.fixture(scope="module")
def rows_file(tmp_path_factory):
    """Nine examples with 2 to 10 gold documents and 8 retrieved passages (some gold again)."""
    rows = []
    for m in range(2, 11):
        gold = [
            {"pid": f"{m}-{k}", "title": f"Entity {k} ({m})", "text": f'Doc {k} says "x" | it\'s {m}',
             "answer": f"a{k}"}
            for k in range(m)
        ]  # fmt: skip
        retrieved = [{**gold[0], "score": 9.0}] + [
            {"pid": f"r{m}-{k}", "title": f"R{k}", "text": f"retrieved \u2013 {k}", "score": 1.0}
            for k in range(7)
        ]
        rows.append({"qid": 100 + m, "question": f"What is {m}?", "documents": gold,
                     "retrieved": retrieved, "ambiguous_entity": "E"})  # fmt: skip
    path = tmp_path_factory.mktemp("rows") / "rows.json"
    path.write_text(json.dumps(rows))
    return path, rows


def _dry(rows_path, out, *extra, backend="hf", model=NO_MODEL):
    argv = ["--model", model, "--backend", backend, "--dataset", str(rows_path),
            "--output", str(out), "--dry-run", *extra]  # fmt: skip
    return answer_main(argv)


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("few_shot", [False, True])
@pytest.mark.parametrize("backend", ["hf", "vllm", "openai"])
def test_authors_format_matches_the_reference(
    rows_file, tmp_path, monkeypatch, setting, few_shot, backend
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # no key: no request can be sent
    path, rows = rows_file
    out = tmp_path / "dry.jsonl"
    extra = ["--setting", setting, "--prompt-format", "authors", "--seed", "3"]
    assert _dry(path, out, *extra, *(["--few-shot"] if few_shot else []), backend=backend) == 0
    got = list(iter_jsonl(out))
    assert [r["qid"] for r in got] == [r["qid"] for r in rows]
    for row, src in zip(got, rows, strict=True):
        docs = row["docs"]
        assert all(set(d) == {"pid", "title", "text"} for d in docs)
        assert docs == select_documents(src, setting, 3)  # the documents shown, in that order
        if setting == "gold-only":
            assert len(docs) == min(5, len(src["documents"]))
        else:
            assert len(docs) == 5
        # The row's own fields are carried (the rewards' columns), `retrieved` left out.
        assert {k: row[k] for k in src if k != "retrieved"} == {
            k: v for k, v in src.items() if k != "retrieved"
        }
        assert "retrieved" not in row and "messages" not in row
        if backend == "openai":
            assert row["prompt"] == ref.gpt_messages(src["question"], docs, few_shot)
        else:
            expected = ref.open_model_prompt(src["question"], docs, few_shot)
            assert row["prompt"].encode() == expected.encode()


def test_plain_and_chat_formats(rows_file, tmp_path, tiny_chat_llama_dir, monkeypatch):
    from transformers import AutoTokenizer

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path, rows = rows_file
    # plain for an open model: Figure 11 as one string.
    assert _dry(path, tmp_path / "p.jsonl", "--prompt-format", "plain") == 0
    for row, src in zip(iter_jsonl(tmp_path / "p.jsonl"), rows, strict=True):
        assert row["prompt"] == lit.answer_plain(src["question"], row["docs"])
        assert row["prompt"].startswith(ref.INSTRUCTION + "\nQuestion: ")
    # openai, default (chat): system = instruction, user = the rest, as the authors' zero-shot.
    assert _dry(path, tmp_path / "o.jsonl", backend="openai", model="gpt-4") == 0
    for row, src in zip(iter_jsonl(tmp_path / "o.jsonl"), rows, strict=True):
        assert row["prompt"] == ref.gpt_messages(src["question"], row["docs"], False)
    # openai, plain: the string is sent as one user turn.
    assert _dry(path, tmp_path / "op.jsonl", "--prompt-format", "plain", backend="openai") == 0
    first = next(iter_jsonl(tmp_path / "op.jsonl"))
    assert first["prompt"] == [{"role": "user", "content": lit.answer_plain(
        rows[0]["question"], first["docs"])}]  # fmt: skip
    # chat for an open model: the messages (trl renders them), and the text the tokenizer's
    # chat template renders from them (tokenizer only).
    out = tmp_path / "c.jsonl"
    assert _dry(path, out, "--few-shot", model=str(tiny_chat_llama_dir)) == 0
    tok = AutoTokenizer.from_pretrained(str(tiny_chat_llama_dir))
    for row, src in zip(iter_jsonl(out), rows, strict=True):
        messages = lit.answer_chat(src["question"], row["docs"], few_shot=True)
        expected = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        assert row["prompt_text"] == expected and row["prompt_format"] == "chat"
        assert row["prompt"] == messages


def test_chat_without_a_reachable_tokenizer_is_one_line(rows_file, tmp_path, repo_root):
    path, _ = rows_file
    cmd = [sys.executable, "-m", "generation.cli", "answer", "--model", NO_MODEL,
           "--dataset", str(path), "--output", str(tmp_path / "o.jsonl"), "--dry-run",
           "--prompt-format", "chat"]  # fmt: skip
    res = subprocess.run(cmd, cwd=repo_root, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    lines = [line for line in res.stderr.splitlines() if "error" in line]
    assert len(lines) == 1 and "needs the tokenizer of nobody/no-such-model" in lines[0]
    assert "Traceback" not in res.stderr and not (tmp_path / "o.jsonl").exists()


def test_dry_run_keeps_a_real_output(rows_file, tmp_path, tiny_llama_dir, capsys):
    path, _ = rows_file
    out = tmp_path / "answers.jsonl"
    argv = ["--model", str(tiny_llama_dir), "--dataset", str(path), "--limit", "1",
            "--max-new-tokens", "2", "--output", str(out)]  # fmt: skip
    assert answer_main(argv) == 0
    before = out.read_bytes()
    assert _dry(path, out, "--prompt-format", "authors") == 2
    assert "holds the answers of a run" in capsys.readouterr().err
    assert out.read_bytes() == before
    assert _dry(path, out, "--prompt-format", "authors", "--overwrite") == 0
    assert "prompt" in next(iter_jsonl(out))
    assert not (tmp_path / "answers.jsonl.meta.json").exists()
