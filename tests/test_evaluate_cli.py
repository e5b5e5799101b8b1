"""`ambigdocs evaluate` end to end, and the `evaluate` module loaded offline."""

import doctest
import json
import subprocess
import sys

import pytest
import reference_scorer as ref
from test_scoring import random_answer, random_row

from generation.report import evaluate as evaluate_results
from generation.report.evaluate import main

PER_EXAMPLE_FIELDS = [
    "index",
    "qid",
    "system",
    "answer_recall",
    "entity_recall",
    "entity_answer_recall",
    "k_precision",
    "answer_length",
    "category",
    "answer",
]
SUMMARY_KEYS = {
    "answer_recall",
    "entity_recall",
    "entity_answer_recall",
    "answer_length",
    "complete",
    "partial",
    "ambiguous",
    "merged",
    "no_answer",
}


def random_results(n, seed=0):
    import random

    rng = random.Random(seed)
    rows = []
    for qid in range(n):
        row = random_row(rng, qid)
        row["docs"] = [
            {"pid": d["pid"], "title": d["title"], "text": d["text"]} for d in row["documents"][:5]
        ]
        row["gen_answer"] = random_answer(rng, row)
        rows.append(row)
    return rows


def test_sample_demo_outputs(sample_dir, tmp_path, capsys):
    code = main(
        [
            str(sample_dir / "answers.json"),
            "--allow-duplicate-qids",
            "--output-dir",
            str(tmp_path),
            "--no-df1",
            "--plot",
            "--labels-field",
            "paper_label",
            "--show-examples",
        ]
    )
    assert code == 0
    rows = json.loads((sample_dir / "answers.json").read_text())
    lines = [json.loads(x) for x in (tmp_path / "per_example.jsonl").read_text().splitlines()]
    assert [list(r) for r in lines] == [PER_EXAMPLE_FIELDS] * len(rows)
    assert [r["category"] for r in lines] == [r["paper_label"] for r in rows]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary) == SUMMARY_KEYS | {
        *("k_precision", "k_precision_n", "n", "system", "notes", "labels"),
        *("ci95", "slices", "provenance"),
    }
    assert summary["n"] == 10
    assert summary["complete"] == pytest.approx(0.2) and summary["ambiguous"] == pytest.approx(0.3)
    assert (tmp_path / "categories.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = capsys.readouterr().out
    assert "agreement 10/10 = 1.000, Cohen's kappa 1.000" in out
    # EAR per example from the independent reference: 2/3, 1, 1/2 and 1 for four of the ten,
    # 0 for the rest, so the mean is (19/6) / 10 = 19/60 = 0.3167, printed as 0.317
    ear = [ref.score(r["gen_answer"], r)[2] for r in rows]
    assert sum(ear) / len(ear) == pytest.approx(19 / 60, abs=1e-12)
    (line,) = [x for x in out.splitlines() if "Entity-Answer Recall" in x]
    assert f"{19 / 60:.3f}" == "0.317" and "0.317" in line
    assert (
        "       0  merged      merged      Judge Day was born in Alabama, Rhode Island, and Ohio."
        in out
    )


def test_jsonl_input_several_files_and_unknown_shown_documents(tmp_path):
    rows = random_results(30)
    (tmp_path / "a.json").write_text(json.dumps(rows))
    no_docs = [{k: v for k, v in r.items() if k != "docs"} for r in rows]
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in no_docs))
    out = tmp_path / "out"
    assert (
        main(
            [
                str(tmp_path / "a.json"),
                str(tmp_path / "b.jsonl"),
                "--output-dir",
                str(out),
                "--no-df1",
            ]
        )
        == 0
    )
    combined = json.loads((out / "summary.json").read_text())
    assert set(combined) == {"a", "b"}
    assert "k_precision" in combined["a"] and "k_precision" not in combined["b"]
    a = [json.loads(x) for x in (out / "a" / "per_example.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (out / "b" / "per_example.jsonl").read_text().splitlines()]
    assert [r["qid"] for r in a] == list(range(30))
    assert all(r["k_precision"] is None for r in b)
    # Same answers, same lexical scores, whatever the file format.
    strip = lambda r: {k: v for k, v in r.items() if k not in ("k_precision", "system")}  # noqa: E731
    assert [strip(r) for r in a] == [strip(r) for r in b]


def test_workers_do_not_change_the_scores(monkeypatch):
    rows = random_results(300, seed=5)
    one = evaluate_results.evaluate_rows(rows, workers=1)
    monkeypatch.setattr(evaluate_results, "MIN_EXAMPLES_PER_WORKER", 50)
    two = evaluate_results.evaluate_rows(rows, workers=2)
    assert one == two


def test_unloadable_qa_model_asked_for_is_an_error_in_one_line(sample_dir, tmp_path, capsys):
    """A --qa-model that cannot be loaded is an error, as `compute(qa_model=...)` in Python."""
    for name in (str(tmp_path / "missing"), "someone/not-cached-qa-model"):
        args = [str(sample_dir / "answers.json"), "--allow-duplicate-qids"]
        code = main([*args, "--output-dir", str(tmp_path / "o"), "--qa-model", name])
        err = capsys.readouterr().err
        assert code == 2
        assert err.startswith(f"ambigdocs evaluate: error: cannot load the QA model {name!r}")
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert not (tmp_path / "o" / "summary.json").exists()


def test_default_qa_model_unreachable_is_skipped_in_one_line(sample_dir, tmp_path, capsys):
    # Tests run offline and the default model is not in the test cache.
    args = [str(sample_dir / "answers.json"), "--allow-duplicate-qids"]
    assert main([*args, "--output-dir", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "Disambig-F1 skipped: the QA model 'deepset/roberta-base-squad2'" in err
    assert "--no-df1" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "disambig_f1" not in json.loads((tmp_path / "summary.json").read_text())


def test_bad_results_file_fails_with_a_message(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps([{"qid": 3, "question": "q", "ambiguous_entity": "x", "documents": []}])
    )
    assert main([str(bad), "--output-dir", str(tmp_path / "o"), "--no-df1"]) == 2
    assert "row 0 (qid 3) has no answer: none of the fields 'answer'" in capsys.readouterr().err
    bad.write_text(
        json.dumps(
            [
                {
                    "qid": 3,
                    "question": "q",
                    "ambiguous_entity": "x",
                    "documents": [],
                    "gen_answer": "y",
                }
            ]
        )
    )
    assert main([str(bad), "--output-dir", str(tmp_path / "o"), "--no-df1"]) == 2
    assert "example 0 (qid 3): field 'documents' is missing or empty" in capsys.readouterr().err


def test_lexical_scoring_imports_nothing_heavy(sample_dir, tmp_path):
    code = (
        "import sys; from generation.report.evaluate import main; "
        f"main([{str(sample_dir / 'answers.json')!r}, '--allow-duplicate-qids', '--output-dir', {str(tmp_path)!r}, '--no-df1', "
        "'--bootstrap', '0']); "
        "print([m for m in ('torch', 'transformers', 'datasets', 'evaluate', 'numpy') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "[]"


# --- the evaluate module -----------------------------------------------------------------------------


def test_evaluate_module_offline_both_layouts_and_add_batch(repo_root, sample_dir):
    import evaluate

    from metric.ambigdocs_metric.scoring import aggregate, score_examples

    metric = evaluate.load(str(repo_root / "metric" / "ambigdocs_metric"))
    rows = json.loads((sample_dir / "answers.json").read_text())
    preds = [r["gen_answer"] for r in rows]
    contexts = [r["docs"] for r in rows]
    expected = aggregate(score_examples(preds, rows, contexts))
    assert metric.compute(predictions=preds, references=rows, contexts=contexts) == pytest.approx(
        expected
    )
    old = [
        dict(r, documents={k: [d[k] for d in r["documents"]] for k in r["documents"][0]})
        for r in rows
    ]
    without_kp = {k: v for k, v in expected.items() if k not in ("k_precision", "k_precision_n")}
    assert metric.compute(predictions=preds, references=old) == pytest.approx(without_kp)
    for i in range(0, len(rows), 3):
        metric.add_batch(predictions=preds[i : i + 3], references=old[i : i + 3])
    assert metric.compute(contexts=contexts) == pytest.approx(expected)
    with pytest.raises(ValueError, match=r"example 0 \(qid 0\): prediction must be a string"):
        metric.compute(predictions=[1], references=rows[:1])


def test_metric_card_and_usage_doctest(repo_root, monkeypatch):
    from metric.ambigdocs_metric import ambigdocs_metric

    monkeypatch.chdir(repo_root)  # any folder would do: the doctest loads ambigdocs.METRIC_PATH
    results = doctest.testmod(ambigdocs_metric, extraglobs={}, verbose=False)
    assert results.attempted >= 5 and results.failed == 0
    card = (repo_root / "metric" / "ambigdocs_metric" / "README.md").read_text()
    assert card.startswith("---\n") and "title: AmbigDocs" in card
    for section in (
        "## Metric Description",
        "## How to Use",
        "### Output Values",
        "## Limitations",
        "## Citation",
    ):
        assert section in card


# --- names, per-example columns, labels, notes -------------------------------------------------

ROUTES = {
    "ambigdocs": [sys.executable, "-m", "generation.cli", "evaluate"],
    "python -m": [sys.executable, "-m", "generation.report.evaluate"],
}


def run_evaluate(route, args, cwd):
    """`ambigdocs evaluate ARGS` by one of the two routes, offline, in a fresh process."""
    import os

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run(
        [*ROUTES[route], *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True
    )


def _lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


@pytest.mark.parametrize("route", list(ROUTES))
def test_names_reach_every_table_the_comparison_the_page_and_the_folders(
    route, tmp_path, repo_root
):
    rows = random_results(12, seed=9)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "answers.json").write_text(json.dumps(rows))
    out = tmp_path / "out"
    files = [tmp_path / "a" / "answers.json", tmp_path / "b" / "answers.json"]
    names = ["Mistral 7B", "GPT-4/turbo"]
    args = [*files, "--output-dir", out, "--no-df1", "--report", "--bootstrap", "20"]
    run = run_evaluate(route, [*args, "--name", names[0], "--name", names[1]], repo_root)
    assert run.returncode == 0, run.stderr
    assert list(json.loads((out / "summary.json").read_text())) == names
    assert (
        names[0] in (out / "table.md").read_text() and names[1] in (out / "table.csv").read_text()
    )
    comparison = json.loads((out / "comparison.json").read_text())
    assert comparison["baseline"] == names[0]
    assert comparison["comparisons"][0]["system"] == names[1]
    page = (out / "report.html").read_text()
    assert "GPT-4/turbo vs Mistral 7B" in page
    assert names[0] in run.stdout.splitlines()[1] and names[1] in run.stdout.splitlines()[1]
    # Folder names go through the outputs helper: the slash cannot make a folder "GPT-4".
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["GPT-4_turbo", "Mistral 7B"]
    assert {r["system"] for r in _lines(out / "GPT-4_turbo" / "per_example.jsonl")} == {names[1]}
    # Without --name: the stems, told apart by their folders (not answers-2).
    run = run_evaluate(route, args, repo_root)
    assert run.returncode == 0, run.stderr
    assert list(json.loads((out / "summary.json").read_text())) == ["a/answers", "b/answers"]
    run = run_evaluate(route, [*args, "--name", "only one"], repo_root)
    assert run.returncode == 2
    assert run.stderr == (
        "ambigdocs evaluate: error: --name was given 1 times for 2 results files: give one "
        "name per file, in the same order\n"
    )


def test_default_names():
    from pathlib import Path

    names = evaluate_results.system_names
    assert names([Path("runs/mistral.gold.jsonl"), Path("runs/gpt4.gold.json")]) == [
        "mistral.gold",
        "gpt4.gold",
    ]
    assert names([Path("x/a/answers.jsonl"), Path("y/a/answers.jsonl"), Path("z/b.json")]) == [
        "x/a/answers",
        "y/a/answers",
        "b",
    ]
    assert names([Path("a.json"), Path("a.json")]) == ["a", "a (2)"]
    with pytest.raises(ValueError, match="--name 'x' names two files"):
        names([Path("a.json"), Path("b.json")], ["x", "x"])


def test_per_example_rows_carry_index_qid_system_and_answer(sample_dir, tmp_path):
    rows = json.loads((sample_dir / "answers.json").read_text())
    args = [str(sample_dir / "answers.json"), "--allow-duplicate-qids", "--no-df1"]
    assert main([*args, "--output-dir", str(tmp_path), "--name", "paper"]) == 0
    lines = _lines(tmp_path / "per_example.jsonl")
    assert [(r["index"], r["qid"], r["system"], r["answer"]) for r in lines] == [
        (i, r["qid"], "paper", r["gen_answer"]) for i, r in enumerate(rows)
    ]


def _labelled_sample(sample_dir, tmp_path, relabel=None):
    rows = json.loads((sample_dir / "answers.json").read_text())
    if relabel is not None:
        rows[0]["paper_label"] = relabel
    path = tmp_path / "labelled.json"
    path.write_text(json.dumps(rows))
    return rows, path


def test_label_agreement_in_summary_and_page_and_legend_only_when_labels_differ(
    sample_dir, tmp_path, capsys
):
    rows, path = _labelled_sample(sample_dir, tmp_path)
    args = [str(path), "--allow-duplicate-qids", "--no-df1", "--report", "--show-examples"]
    args += ["--labels-field", "paper_label", "--bootstrap", "0"]
    assert main([*args, "--output-dir", str(tmp_path / "same")]) == 0
    assert "(* the automatic category differs" not in capsys.readouterr().out
    labels = json.loads((tmp_path / "same" / "summary.json").read_text())["labels"]
    # The sample's paper labels: 2 complete, 2 partial, 1 no answer, 3 ambiguous, 2 merged,
    # every one matched by the automatic category (Figure 1 and Table 3 of the paper).
    assert labels["field"] == "paper_label" and labels["n"] == 10 and labels["agreed"] == 10
    assert labels["kappa"] == 1.0
    diagonal = {k: labels["confusion"][k][k] for k in labels["confusion"]}
    assert diagonal == {"complete": 2, "partial": 2, "no_answer": 1, "ambiguous": 3, "merged": 2}
    page = (tmp_path / "same" / "report.html").read_text()
    assert "Agreement with labels (Figure 5)" in page and 'href="#agreement"' in page
    assert "agreement 10/10 = 1.000, Cohen's kappa 1.000" in page

    # The first answer (automatically "ambiguous") labelled "merged" instead: agreement 9/10;
    # label totals 2, 2, 1, 2, 3 and category totals 2, 2, 1, 3, 2 (complete, partial,
    # no answer, ambiguous, merged): chance agreement (4 + 4 + 1 + 6 + 6) / 100 = 0.21, so
    # kappa = (0.9 - 0.21) / (1 - 0.21).
    _, path = _labelled_sample(sample_dir, tmp_path, relabel="merged")
    assert main([*args, "--output-dir", str(tmp_path / "diff")]) == 0
    out = capsys.readouterr().out
    assert "(* the automatic category differs from 'paper_label')" in out
    labels = json.loads((tmp_path / "diff" / "summary.json").read_text())["labels"]
    assert labels["agreed"] == 9 and labels["confusion"]["merged"]["ambiguous"] == 1
    assert labels["kappa"] == pytest.approx((0.9 - 0.21) / 0.79)
    assert (
        f"Cohen's kappa {(0.9 - 0.21) / 0.79:.3f}"
        in (tmp_path / "diff" / "report.html").read_text()
    )


def test_k_precision_over_the_rows_with_shown_documents_said_in_words(tmp_path, capsys):
    rows = random_results(30, seed=11)
    (tmp_path / "all.json").write_text(json.dumps(rows))
    rows[7] = {k: v for k, v in rows[7].items() if k != "docs"}
    (tmp_path / "some.json").write_text(json.dumps(rows))
    common = ["--no-df1", "--bootstrap", "0", "--report"]
    assert main([str(tmp_path / "all.json"), "--output-dir", str(tmp_path / "a"), *common]) == 0
    assert main([str(tmp_path / "some.json"), "--output-dir", str(tmp_path / "s"), *common]) == 0
    out = capsys.readouterr().out
    every = [r["k_precision"] for r in _lines(tmp_path / "a" / "per_example.jsonl")]
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    others = every[:7] + every[8:]
    assert summary["k_precision"] == pytest.approx(sum(others) / 29)
    assert summary["k_precision_n"] == 29
    note = "K-Precision is over the 29 of 30 rows with shown documents ('docs'); 1 have none."
    assert note in summary["notes"] and f"Note: {note}" in out
    assert "K-Precision is over the 29 of 30 rows" in (tmp_path / "s" / "report.html").read_text()


def test_no_answer_rule_and_small_samples_are_said(tmp_path, capsys):
    rows = random_results(12, seed=12)
    (tmp_path / "x.json").write_text(json.dumps(rows))
    other = [dict(r, gen_answer=r["gen_answer"] + " Ohio.") for r in rows]
    (tmp_path / "y.json").write_text(json.dumps(other))
    files = [str(tmp_path / "x.json"), str(tmp_path / "y.json")]
    assert main([*files, "--output-dir", str(tmp_path / "o"), "--no-df1", "--report"]) == 0
    out = capsys.readouterr().out
    assert "counts as No Answer, even when it confidently gives a wrong one" in out
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())["x"]
    assert any(n.startswith("Only 12 examples: the 95% intervals") for n in summary["notes"])
    comparison = json.loads((tmp_path / "o" / "comparison.json").read_text())
    assert comparison["comparisons"][0]["note"].startswith("Only 12 examples")
    assert "Only 12 examples" in (tmp_path / "o" / "comparison.md").read_text()
    page = (tmp_path / "o" / "report.html").read_text()
    assert "confidently gives a wrong one" in page and "Only 12 examples" in page
    # Enough examples, or no intervals: no such note.
    big = random_results(40, seed=13)
    (tmp_path / "big.json").write_text(json.dumps(big))
    assert main([str(tmp_path / "big.json"), "--output-dir", str(tmp_path / "b"), "--no-df1"]) == 0
    notes = json.loads((tmp_path / "b" / "summary.json").read_text())["notes"]
    assert not any(n.startswith("Only") for n in notes)


def test_help_names_the_data_set_options_and_exits_0(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--data-dir", "--config", "--dataset", "--subset", "--answer-field", "--name"):
        assert flag in out
    assert "95% intervals" in out


def test_names_are_one_printable_line_each():
    from pathlib import Path

    from generation.report.evaluate import system_names

    # A stem with a line break is folded (it would split the table's header); a --name with
    # one is refused rather than changed behind the user's back.
    assert system_names([Path("a\nb.json"), Path("c\td.jsonl")]) == ["a b", "c d"]
    with pytest.raises(ValueError, match=r"--name 'x\\ny': a name must be one line"):
        system_names([Path("a.json")], ["x\ny"])
