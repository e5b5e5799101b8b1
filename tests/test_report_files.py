"""Slices, table files, provenance and the report page's data (generation/report/)."""

import csv
import hashlib
import io
import json
import subprocess
import sys

import pytest
from test_disambig_f1 import tiny_qa  # noqa: F401  (a fixture, used by name)
from test_evaluate_cli import random_results

import generation
from generation.answering.answer import meta_path
from generation.report.evaluate import evaluate_rows, main
from generation.report.html import example_payload, render_report, script_json
from generation.report.provenance import (
    file_sha256,
    folder_sha256,
    hub_revision,
    qa_model_record,
)
from generation.report.slices import compute_slices, gold_bin
from generation.report.tables import format_csv, format_latex, format_markdown


def test_gold_bins():
    assert [gold_bin(m) for m in (2, 3, 4, 5, 6, 10)] == ["2", "3", "4-5", "4-5", "6+", "6+"]


def test_slices_agree_with_scoring_each_subset_alone():
    rows = random_results(300, seed=4)
    for i, row in enumerate(rows):
        row["setting"] = "gold-only" if i % 3 else "retrieved-only"
    records, _ = evaluate_rows(rows)
    slices = compute_slices(rows, records)
    assert sum(g["n"] for g in slices["gold_documents"].values()) == 300
    for label, group in slices["gold_documents"].items():
        subset = [r for r in rows if gold_bin(len(r["documents"])) == label]
        _, want = evaluate_rows(subset)
        assert group["n"] == len(subset)
        for key in ("answer_recall", "entity_answer_recall", "k_precision", "complete", "merged"):
            assert group[key] == pytest.approx(want[key]), (label, key)
    _, want = evaluate_rows([r for r in rows if r["setting"] == "retrieved-only"])
    assert slices["setting"]["retrieved-only"]["answer_recall"] == pytest.approx(
        want["answer_recall"]
    )
    merged = [rec for rec in records if rec["category"] == "merged"]
    assert slices["category"]["merged"]["n"] == len(merged)
    assert slices["category"]["merged"]["entity_recall"] == pytest.approx(
        sum(r["entity_recall"] for r in merged) / len(merged)
    )


def test_setting_slice_from_the_run_or_absent():
    rows = random_results(20)
    records, _ = evaluate_rows(rows)
    assert "setting" not in compute_slices(rows, records)
    assert list(compute_slices(rows, records, "gold-retrieved")["setting"]) == ["gold-retrieved"]


COLUMNS = {
    "model_a": {
        "answer_recall": 0.5,
        "answer_length": 20.25,
        "complete": 0.25,
        "partial": 0.75,
        "no_answer": 0.0,
        "ambiguous": 0.0,
        "merged": 0.0,
        "ci95": {"answer_recall": [0.4, 0.6], "complete": [0.1, 0.3]},
    },
    "b&c": {
        "answer_recall": 0.7,
        "answer_length": 30.0,
        "complete": 0.5,
        "partial": 0.5,
        "no_answer": 0.0,
        "ambiguous": 0.0,
        "merged": 0.0,
        "ci95": {},
    },
}


def test_table_files():
    md = format_markdown(COLUMNS, with_ci=True).splitlines()
    assert md[0] == "| | model_a | b&amp;c |"  # shown as b&c
    assert "| Answer Recall | 0.500 [0.400, 0.600] | 0.700 |" in md
    assert "| Answer Length (\\|y\\|) | 20.2 | 30.0 |" in md
    assert "0.250 [0.100, 0.300]" in md[-5]
    rows = list(csv.reader(io.StringIO(format_csv(COLUMNS, with_ci=True))))
    assert rows[0] == [
        "metric",
        "model_a",
        "model_a ci95 low",
        "model_a ci95 high",
        "b&c",
        "b&c ci95 low",
        "b&c ci95 high",
    ]
    assert rows[2] == ["Answer Recall", "0.5", "0.4", "0.6", "0.7", "", ""]
    assert rows[3][0] == "Answer category: Complete"
    tex = format_latex(COLUMNS, with_ci=True)
    assert tex.startswith("\\begin{tabular}{lrr}\n\\toprule\n & model\\_a & b\\&c \\\\\n\\midrule")
    assert "Answer Length ($|y|$) & 20.2 & 30.0 \\\\" in tex
    assert "Answer Recall & 0.500 {\\scriptsize[0.400, 0.600]} & 0.700 \\\\" in tex
    assert tex.rstrip().endswith("\\bottomrule\n\\end{tabular}")
    assert "[" not in format_markdown(COLUMNS)


def test_provenance_digests(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(b"abc" * 1_000_000)
    assert file_sha256(f) == hashlib.sha256(b"abc" * 1_000_000).hexdigest()
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    first = qa_model_record(str(model), qa=object(), absent_reason=None)
    (model / "config.json").write_text('{"a": 1}')
    assert first["local_sha256"] != folder_sha256(model) and first["used"]
    assert qa_model_record("org/not-cached", object(), None)["revision"] == "unknown"
    assert qa_model_record("org/qa", None, "offline")["reason"] == "offline"


def test_hub_revision_from_the_cache(tmp_path):
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "models--org--qa"
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    assert hub_revision("org/qa", cache_dir=tmp_path) == commit
    assert hub_revision("org/other", cache_dir=tmp_path) is None


def test_provenance_in_summary_with_the_answer_run(tmp_path):
    results = tmp_path / "run.jsonl"
    rows = random_results(30)
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    meta = {"model": "tiny", "setting": "gold-retrieved", "seed": 7, "prompt_format": "plain"}
    meta_path(results).write_text(json.dumps(meta))
    assert (
        main(
            [
                str(results),
                "--output-dir",
                str(tmp_path / "o"),
                "--no-df1",
                "--bootstrap",
                "50",
                "--bootstrap-seed",
                "3",
            ]
        )
        == 0
    )
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    p = summary["provenance"]
    assert p["toolkit_version"] == generation.__version__
    assert p["input"] == {"path": str(results.resolve()), "sha256": file_sha256(results)}
    assert p["answer_run"] == meta and p["score_documents"] == "first5"
    assert p["qa_model"]["used"] is False and "--no-df1" in p["qa_model"]["reason"]
    assert p["bootstrap"]["resamples"] == 50 and p["bootstrap"]["seed"] == 3
    assert "numpy" in p["libraries"] and "python" in p["libraries"]
    assert list(summary["slices"]["setting"]) == ["gold-retrieved"]
    for key, (low, high) in summary["ci95"].items():
        assert low <= summary[key] <= high, key


def test_malformed_meta_file_is_a_one_line_error(tmp_path, capsys):
    results = tmp_path / "run.jsonl"
    results.write_text(json.dumps(random_results(2)[0]) + "\n")
    meta_path(results).write_text("{not json")
    assert main([str(results), "--output-dir", str(tmp_path / "o"), "--no-df1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ambigdocs evaluate:") and "run.jsonl.meta.json" in err
    assert len(err.splitlines()) == 1


def test_payload_pairs_systems_and_repeated_qids(sample_dir):
    rows = json.loads((sample_dir / "answers.json").read_text())  # qids 0 and 1, five times each
    records, _ = evaluate_rows(rows, unique_qids=False)
    other = [dict(r, gen_answer="Charles Bernard Day: Alabama") for r in rows[:3]]
    other_records, _ = evaluate_rows(other, unique_qids=False)
    payload = example_payload({"a": (rows, records), "b": (other, other_records)})
    assert len(payload) == 10 and [e["q"] for e in payload] == [str(r["qid"]) for r in rows]
    assert [e["o"][0][0] for e in payload] == [r["gen_answer"] for r in rows]
    assert [e["o"][1] is not None for e in payload] == [True] * 3 + [False] * 7
    first = payload[0]
    assert first["o"][1][1] == other_records[0]["category"]
    assert "alabama" in first["ta"] and "charles" in first["te"]
    assert "judge" not in first["te"]  # the surface name's words never name the entity


def test_page_is_self_contained_and_escapes_its_data(sample_dir):
    rows = json.loads((sample_dir / "answers.json").read_text())
    rows[0] = dict(rows[0], gen_answer="</script><script>alert(1)</script> Ohio")
    records, summary = evaluate_rows(rows, unique_qids=False)
    page = render_report(
        columns={"s": summary},
        systems={"s": (rows, records)},
        comparison=None,
        slices={},
        provenance={},
    )
    assert page.count("</script>") == 2  # the data block's and the viewer's, nothing else
    assert "http://" not in page and "https://" not in page
    assert "{{" not in page
    text = script_json({"x": "</b><!-- <script>"})
    assert "<" not in text and json.loads(text) == {"x": "</b><!-- <script>"}
    assert page_data(page)["examples"][0]["o"][0][0].startswith("</script><script>alert(1)")


def test_cli_writes_every_report_file(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    rows = random_results(40, seed=1)
    a.write_text("".join(json.dumps(r) + "\n" for r in rows))
    b.write_text("".join(json.dumps(r) + "\n" for r in random_results(45, seed=2)[5:]))
    out = tmp_path / "out"
    assert (
        main(
            [
                str(a),
                str(b),
                "--output-dir",
                str(out),
                "--no-df1",
                "--report",
                "--table-ci",
                "--bootstrap",
                "100",
            ]
        )
        == 0
    )
    names = {p.name for p in out.iterdir()}
    assert {
        "table.md",
        "table.csv",
        "table.tex",
        "comparison.json",
        "comparison.md",
        "report.html",
        "summary.json",
        "a",
        "b",
    } <= names
    comparison = json.loads((out / "comparison.json").read_text())["comparisons"][0]
    assert (comparison["n_shared"], comparison["only_in_baseline"]) == (35, 5)
    assert "[" in (out / "table.md").read_text()
    assert (out / "report.html").stat().st_size > 10_000


def test_default_intervals_import_numpy_only(sample_dir, tmp_path):
    code = (
        "import sys; from generation.report.evaluate import main; "
        f"main([{str(sample_dir / 'answers.json')!r}, '--allow-duplicate-qids', '--output-dir', {str(tmp_path)!r}, "
        "'--no-df1', '--report']); "
        "print([m for m in ('torch', 'transformers', 'datasets', 'evaluate') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.slow
def test_disambig_f1_gets_an_interval_and_its_model_a_digest(tiny_qa, sample_dir, tmp_path):  # noqa: F811
    _, _, model_dir = tiny_qa
    args = [
        str(sample_dir / "answers.json"),
        "--allow-duplicate-qids",
        "--output-dir",
        str(tmp_path),
        "--report",
    ]
    assert main([*args, "--qa-model", str(model_dir), "--bootstrap", "200"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    low, high = summary["ci95"]["disambig_f1"]
    assert low <= summary["disambig_f1"] <= high
    qa = summary["provenance"]["qa_model"]
    assert qa == {"name": str(model_dir), "used": True, "local_sha256": folder_sha256(model_dir)}
    assert "disambig_f1" in summary["slices"]["gold_documents"]["2"]
    examples = page_data((tmp_path / "report.html").read_text())["examples"]
    per_example = [
        json.loads(x) for x in (tmp_path / "per_example.jsonl").read_text().split("\n")[:-1]
    ]
    shown_df1 = [ex["o"][0][5] for ex in examples]  # answer, category, AR, ER, EAR, DF1
    assert shown_df1 == [pytest.approx(r["disambig_f1"], abs=5e-4) for r in per_example]


def page_data(page: str) -> dict:
    """The examples block of a report page."""
    start = page.index('<script id="report-data" type="application/json">')
    body = page[page.index(">", start) + 1 : page.index("</script>", start)]
    return json.loads(body)


def test_bad_report_input_is_a_one_line_error(sample_dir, tmp_path, capsys):
    sample = str(sample_dir / "answers.json")  # qids 0 and 1, five answers each
    assert main([sample, "--output-dir", str(tmp_path / "a"), "--no-df1", "--bootstrap", "-1"]) == 2
    assert (
        capsys.readouterr().err.strip()
        == "ambigdocs evaluate: error: --bootstrap must be between 0 and 1,000,000, got -1"
    )
    # An unbounded count would never finish: refused before any scoring.
    huge = ["--bootstrap", "100000000000"]
    assert main([sample, "--output-dir", str(tmp_path / "a"), "--no-df1", *huge]) == 2
    assert capsys.readouterr().err.strip() == (
        "ambigdocs evaluate: error: --bootstrap must be between 0 and 1,000,000, got 100000000000"
    )
    assert main([sample, "--output-dir", str(tmp_path / "b"), "--no-df1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        f"ambigdocs evaluate: error: {sample}: rows 0 and 1 both have qid 0; each question "
        "may be scored once (to score several answers to one question, pass "
        "--allow-duplicate-qids)"
    )
    assert "\n" not in err
    # Allowed for one file, several answers to a question still cannot be paired across files.
    two = [sample, sample, "--output-dir", str(tmp_path / "c"), "--no-df1"]
    assert main([*two, "--allow-duplicate-qids"]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err
        == "ambigdocs evaluate: error: answers: qid 0 appears twice; comparison needs unique qids"
    )


def test_python_example_in_the_docs_runs(repo_root):
    text = (repo_root / "docs" / "report.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=repo_root, capture_output=True, text=True, check=True
    )
    complete, interval, n = res.stdout.replace(", ", ",").split()
    low, high = json.loads(interval)
    assert float(complete) == pytest.approx(0.2) and low <= 0.2 <= high and n == "5"
