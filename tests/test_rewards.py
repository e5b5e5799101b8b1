"""The trl rewards (`generation/rewards.py`) and the dry-run dataset trl reads.

The expected values are what the real `ambigdocs evaluate` writes in per_example.jsonl for the
same answers; the columns reach the rewards as trl passes them (the dry-run file loaded with
`datasets`, one list per column). A real `trl grpo` run trains two steps on a dry-run file with
the rewards named by dotted path.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import prompt_literals as lit
import pytest

from generation import rewards
from generation.answering.answer import main as answer_main

NO_MODEL = "nobody/no-such-model"  # the authors' format needs no tokenizer: nothing may load
SCORES = ("answer_recall", "entity_recall", "entity_answer_recall", "k_precision")
# The paper's label of each bundled answer, with the value docs/training.md gives it.
LABEL_VALUES = {"complete": 1.0, "partial": 0.5, "no_answer": 0.0, "ambiguous": -0.25,
                "merged": -0.5}  # fmt: skip


def _env(**extra) -> dict:
    repo = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": repo, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env.update(TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", **extra)
    return env


def _dry_run(folder: Path, *extra: str, model: str = NO_MODEL) -> Path:
    """`ambigdocs answer --dry-run` on the bundled sample, written as FOLDER/train.jsonl."""
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "train.jsonl"
    argv = ["--config", "sample", "--model", model, "--dry-run", "--output", str(out), *extra]
    assert answer_main(argv) == 0
    return out


def _trl_columns(inputs: list[dict]) -> dict:
    """The keyword arguments trl's GRPOTrainer passes a reward function for these rows."""
    keys = [k for k in inputs[0] if k not in ("prompt", "completion", "completion_ids")]
    return {k: [row[k] for row in inputs] for k in keys}


def _answers(rows: list[dict], sample_dir: Path) -> tuple[list[dict], list[str], list[str]]:
    """(row per answer, answers, paper labels or ""): the paper's printed answers, then answers
    built from each row's documents to reach every category, K-Precision's edges and the
    length penalty."""
    by_qid = {r["qid"]: r for r in rows}
    printed = json.loads((sample_dir / "answers.json").read_text())
    out = [(by_qid[a["qid"]], a["gen_answer"], a["paper_label"]) for a in printed]
    for row in rows:
        docs = row["documents"]
        pairs = ". ".join(f"{d['title']} {d['answer']}" for d in docs)
        shown = " ".join(f"{d['title']} | {d['text']}" for d in row["docs"])
        for answer in (
            pairs,  # every entity with its answer
            ", ".join(d["answer"] for d in docs),  # the answers without names: merged
            f"{row['ambiguous_entity']}: {docs[0]['answer']}",  # one answer under the name
            "",  # nothing
            f"{docs[0]['title']}\u2019s \u2013 {docs[0]['answer']}\n\n(the) An a",  # odd text
            " ".join([shown] * 6),  # the shown documents copied out, many times over
        ):
            out.append((row, answer, ""))
    return [r for r, _, _ in out], [a for _, a, _ in out], [label for _, _, label in out]


def _evaluate(rows: list[dict], answers: list[str], out: Path) -> list[dict]:
    """The real `ambigdocs evaluate` on these answers: its per_example.jsonl."""
    out.mkdir()
    path = out / "answers.jsonl"
    lines = [json.dumps({**r, "gen_answer": a}) + "\n" for r, a in zip(rows, answers, strict=True)]
    path.write_text("".join(lines))
    cmd = [sys.executable, "-m", "generation.cli", "evaluate", str(path), "--output-dir",
           str(out / "scores"), "--no-df1", "--allow-duplicate-qids", "--bootstrap", "0"]  # fmt: skip
    done = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return [
        json.loads(line) for line in (out / "scores/per_example.jsonl").read_text().splitlines()
    ]


@pytest.fixture(scope="module")
def scored(tmp_path_factory, sample_dir):
    """The dry-run rows as trl reads them, the answers, their labels and evaluate's records."""
    from datasets import load_dataset

    tmp = tmp_path_factory.mktemp("rewards")
    _dry_run(tmp / "ds", "--prompt-format", "authors")
    dataset = load_dataset(str(tmp / "ds"))["train"]
    rows = [dataset[i] for i in range(len(dataset))]
    inputs, answers, labels = _answers(rows, sample_dir)
    return inputs, answers, labels, _evaluate(inputs, answers, tmp / "eval")


@pytest.mark.parametrize("chat", [False, True])
def test_rewards_equal_the_per_example_scores_of_evaluate(scored, chat):
    inputs, answers, labels, records = scored
    completions = [[{"role": "assistant", "content": a}] for a in answers] if chat else answers
    columns = _trl_columns(inputs)
    prompts = [row["prompt"] for row in inputs]
    for name in SCORES:
        got = getattr(rewards, name)(prompts=prompts, completions=completions, **columns)
        assert got == [r[name] for r in records], name
        assert all(type(v) is float for v in got)
    got = rewards.category(prompts=prompts, completions=completions, **columns)
    assert got == [LABEL_VALUES[r["category"]] for r in records]
    # The paper's labels of its printed answers, an independent source: every category.
    printed = [(v, label) for v, label in zip(got, labels, strict=True) if label]
    assert {label for _, label in printed} == set(LABEL_VALUES)
    assert [v for v, _ in printed] == [LABEL_VALUES[label] for _, label in printed]
    # The length penalty: 15 words per scored document (at most five) free, then minus the
    # excess over that budget, down to -1.
    budgets = [15 * min(5, len(row["documents"])) for row in inputs]
    expected = [
        -min(1.0, max(0, r["answer_length"] - b) / b) for r, b in zip(records, budgets, strict=True)
    ]
    assert rewards.length(completions=completions, **columns) == expected
    assert min(expected) == -1.0 and max(expected) == 0.0 and -1 < sorted(set(expected))[1] < 0


def test_every_category_and_edge_is_reached(scored):
    _, _, _, records = scored
    assert {r["category"] for r in records} == set(LABEL_VALUES)
    kp = [r["k_precision"] for r in records]
    assert 0.0 in kp and 1.0 in kp and any(0 < v < 1 for v in kp)


def test_missing_columns_and_bad_rows_name_the_example_and_field(scored):
    inputs, answers, _, _ = scored
    columns = _trl_columns(inputs[:3])
    completions = answers[:3]
    for field in ("question", "ambiguous_entity", "documents"):
        partial = {k: v for k, v in columns.items() if k != field}
        with pytest.raises(ValueError, match=rf"^example 0 \(qid 0\): no field '{field}'"):
            rewards.entity_answer_recall(completions=completions, **partial)
    without_docs = {k: v for k, v in columns.items() if k != "docs"}
    with pytest.raises(ValueError, match=r"^example 0 \(qid 0\): no field 'docs'"):
        rewards.k_precision(completions=completions, **without_docs)
    assert rewards.answer_recall(completions=completions, **without_docs)  # docs not needed
    holes = {**columns, "docs": [columns["docs"][0], None, columns["docs"][2]]}
    with pytest.raises(ValueError, match=r"^example 1 \(qid 0\): no field 'docs'"):
        rewards.k_precision(completions=completions, **holes)
    holes = {**columns, "documents": [columns["documents"][0], None, columns["documents"][2]]}
    with pytest.raises(ValueError, match=r"^example 1 \(qid 0\): field 'documents'"):
        rewards.category(completions=completions, **holes)
    with pytest.raises(ValueError, match=r"^example 2 \(qid 0\): field 'completion'"):
        rewards.answer_recall(completions=["a", "b", [{"role": "user", "content": "c"}]], **columns)
    with pytest.raises(ValueError, match="field 'question' has 2 values for 3 completions"):
        rewards.answer_recall(completions=completions, **{**columns, "question": ["q", "q"]})


def test_chat_dry_run_is_a_conversational_dataset(tmp_path, tiny_chat_llama_dir):
    """Chat prompts are trl's conversational `prompt`; a template that refuses a system turn
    gets the messages the back-ends render instead (system text moved into the user turn)."""
    from datasets import load_dataset
    from transformers import AutoTokenizer
    from trl.data_utils import is_conversational

    _dry_run(tmp_path / "chat", model=str(tiny_chat_llama_dir))
    row = load_dataset(str(tmp_path / "chat"))["train"][0]
    assert is_conversational(row) and [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert row["prompt"] == lit.answer_chat(row["question"], row["docs"])  # an independent literal
    _dry_run(tmp_path / "text", "--prompt-format", "plain")
    assert not is_conversational(load_dataset(str(tmp_path / "text"))["train"][0])

    no_system = tmp_path / "no-system"
    tokenizer = AutoTokenizer.from_pretrained(tiny_chat_llama_dir)
    tokenizer.chat_template = (
        "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
        "{% endif %}" + tokenizer.chat_template
    )
    tokenizer.save_pretrained(no_system)
    merged = json.loads(_dry_run(tmp_path / "m", model=str(no_system)).read_text().split("\n")[0])
    assert [m["role"] for m in merged["prompt"]] == ["user"]
    system, user = row["prompt"]
    assert merged["prompt"][0]["content"] == system["content"] + "\n" + user["content"]
    rendered = tokenizer.apply_chat_template(
        merged["prompt"], tokenize=False, add_generation_prompt=True
    )
    assert merged["prompt_text"] == rendered


@pytest.mark.slow
def test_trl_grpo_trains_on_a_dry_run_dataset_with_the_rewards(tmp_path, tiny_chat_llama_dir):
    """trl's own GRPO script, two steps on CPU, the rewards given as dotted paths."""
    _dry_run(tmp_path / "ds", model=str(tiny_chat_llama_dir))  # chat: conversational prompts
    names = ("entity_answer_recall", "category", "k_precision")
    cmd = [sys.executable, "-m", "trl.scripts.grpo", "--model_name_or_path",
           str(tiny_chat_llama_dir), "--dataset_name", str(tmp_path / "ds"),
           "--reward_funcs", *[f"generation.rewards.{n}" for n in names],
           "--reward_weights", "1.0", "0.5", "0.2",
           "--output_dir", str(tmp_path / "out"), "--max_steps", "2",
           "--per_device_train_batch_size", "2", "--num_generations", "2",
           "--max_completion_length", "8", "--logging_steps", "1", "--report_to", "none",
           "--save_strategy", "no", "--use_cpu", "true", "--bf16", "false", "--seed", "0",
           "--disable_tqdm", "true"]  # fmt: skip
    done = subprocess.run(
        cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    logs = [line for line in done.stdout.splitlines() if "rewards/" in line]
    assert len(logs) == 2, done.stdout[-3000:]  # one line per step
    for line in logs:
        for name in names:
            found = re.search(rf"'rewards/{name}/mean': '?([-0-9.e]+)", line)
            assert found, (name, line)
            low = -0.5 if name == "category" else 0.0
            assert low <= float(found.group(1)) <= 1.0


def test_the_batch_cache_never_returns_stale_scores(scored):
    """trl calls every reward on the same batch; the later calls reuse the scores, but lists
    changed in place (an answer, a shown document) are scored again."""
    from metric.ambigdocs_metric.scoring import score_examples

    inputs, answers, _, _ = scored
    inputs = [json.loads(json.dumps(row)) for row in inputs[10:16]]  # the first row's answers
    columns = _trl_columns(inputs)
    completions = list(answers[10:16])

    def fresh(name):
        refs = [
            {k: row[k] for k in ("question", "ambiguous_entity", "documents")} for row in inputs
        ]
        ctx = [row["docs"] for row in inputs]
        return [getattr(s, name) for s in score_examples(completions, refs, ctx)]

    before = rewards.entity_answer_recall(completions=completions, **columns)
    assert before == fresh("entity_answer_recall") and before[0] == 1.0
    columns["documents"][0][0]["answer"] = "Nowhere Land"  # the same list objects, changed
    after = rewards.entity_answer_recall(completions=completions, **columns)
    assert after == fresh("entity_answer_recall") and after[0] < before[0]
    kp = rewards.k_precision(completions=completions, **columns)
    columns["docs"][0][0]["text"] = "nothing of the answer"
    assert rewards.k_precision(completions=completions, **columns) == fresh("k_precision") != kp
    completions[0] = ""
    assert rewards.entity_answer_recall(completions=completions, **columns)[0] == 0.0


def _docs_block(marker: str) -> str:
    """The Python code block of docs/training.md that holds `marker`."""
    text = (Path(__file__).resolve().parents[1] / "docs/training.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    (block,) = [b for b in blocks if marker in b]
    return block


@pytest.mark.slow
def test_grpo_trainer_recipe_with_lora_weights_and_the_metric_callback(
    tmp_path, tiny_chat_llama_dir
):
    """docs/training.md's Python recipe at toy size: three weighted rewards, a LoRA adapter,
    and the docs' own evaluation callback scoring dev answers with the metric (a tiny QA
    model: Disambig-F1 included)."""
    from datasets import load_dataset
    from peft import LoraConfig, PeftModel
    from qa_models import save_qa_model
    from trl import GRPOConfig, GRPOTrainer

    namespace: dict = {}
    exec(_docs_block("class AmbigDocsEval"), namespace)  # the documented callback, as written
    _dry_run(tmp_path / "ds", model=str(tiny_chat_llama_dir))
    data = load_dataset(str(tmp_path / "ds"))
    callback = namespace["AmbigDocsEval"](
        data["train"].select(range(2)), every=1, max_new_tokens=8,
        qa_model=str(save_qa_model(tmp_path / "qa")),
    )  # fmt: skip
    trainer = GRPOTrainer(
        model=str(tiny_chat_llama_dir),
        reward_funcs=[rewards.entity_answer_recall, rewards.category, rewards.length],
        args=GRPOConfig(
            output_dir=str(tmp_path / "out"),
            reward_weights=[1.0, 0.5, 0.5],
            max_steps=2,
            num_generations=2,
            per_device_train_batch_size=2,
            max_completion_length=8,
            logging_steps=1,
            report_to="none",
            save_strategy="no",
            use_cpu=True,
            bf16=False,
            disable_tqdm=True,
            seed=0,
        ),  # fmt: skip
        train_dataset=data["train"],
        peft_config=LoraConfig(
            r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"
        ),
    )
    trainer.add_callback(callback)
    trainer.train()
    assert isinstance(trainer.model, PeftModel)
    logged = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logged) == 2
    for name in ("entity_answer_recall", "category", "length"):
        assert all(f"rewards/{name}/mean" in h for h in logged), name
    assert [h["step"] for h in callback.history] == [1, 2]
    for scores in callback.history:
        assert 0.0 <= scores["disambig_f1"] <= 1.0 and "k_precision" in scores
        assert sum(scores[c] for c in rewards.CATEGORY_VALUES) == pytest.approx(1.0)


def test_the_reward_hacks_docs_training_md_describes(sample_dir):
    """Figure 1's question: the shortcuts and how each term scores them (by hand from the
    definitions: tokens anywhere in the answer, the categories' rules)."""
    row = json.loads((sample_dir / "test.json").read_text())[0]
    names = "Charles Bernard Day, Edward William Day, William Louis Day"
    hacks = [
        names,  # every entity's name: entity recall 1, no answer
        "Judge Day was born in Alabama, Rhode Island, and Ohio.",  # answers under the name
        names + "; Ohio, Alabama, Rhode Island",  # an unpaired bag: the scorer sees complete
        " ".join([names + " Alabama Rhode Island Ohio"] * 3),  # 39 words, budget 45: no penalty
        " ".join([names + " Alabama Rhode Island Ohio"] * 6),  # 78 words: -(78 - 45) / 45
    ]
    columns = {k: [row[k]] * len(hacks) for k in ("question", "ambiguous_entity", "documents")}
    assert rewards.entity_recall(completions=hacks, **columns) == [1.0, 0.0, 1.0, 1.0, 1.0]
    assert rewards.entity_answer_recall(completions=hacks, **columns) == [0.0, 0.0, 1.0, 1.0, 1.0]
    assert rewards.category(completions=hacks, **columns) == [0.0, -0.5, 1.0, 1.0, 1.0]
    assert rewards.length(completions=hacks, **columns) == [0.0, 0.0, 0.0, 0.0, -33 / 45]
