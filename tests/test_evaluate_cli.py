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
    "qid",
    "answer_recall",
    "entity_recall",
    "entity_answer_recall",
    "k_precision",
    "answer_length",
    "category",
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
    assert set(summary) == SUMMARY_KEYS | {"k_precision", "n", "ci95", "slices", "provenance"}
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
    strip = lambda r: {k: v for k, v in r.items() if k != "k_precision"}  # noqa: E731
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
    assert "row 0 (qid 3) has no field 'gen_answer'" in capsys.readouterr().err
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
    without_kp = {k: v for k, v in expected.items() if k != "k_precision"}
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
