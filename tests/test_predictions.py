"""`{qid, answer}` predictions joined with their data set (generation/report/predictions.py),
through Python and through both command routes (`ambigdocs evaluate`, `python -m
generation.report.evaluate`)."""

from __future__ import annotations

import json

import pytest
from test_evaluate_cli import ROUTES, random_results
from test_evaluate_cli import run_evaluate as _run

from generation.io.data_sources import load_split_rows
from generation.report.evaluate import evaluate_rows, main
from generation.report.predictions import (
    ANSWER_FIELDS,
    join_predictions,
    read_predictions,
)

DATA_FIELDS = ("qid", "ambiguous_entity", "question", "documents")


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def split_rows(rows):
    """The data set's side of full rows: the four fields of the release."""
    return [{k: r[k] for k in DATA_FIELDS} for r in rows]


def predictions_of(rows, field="answer", with_docs=True):
    out = []
    for r in rows:
        p = {"qid": r["qid"], field: r["gen_answer"]}
        if with_docs:
            p["docs"] = r["docs"]
        out.append(p)
    return out


@pytest.fixture
def raw_dir(tmp_path):
    """A folder of the release's raw layout holding 40 random rows as test.json."""
    rows = random_results(40, seed=3)
    folder = tmp_path / "raw"
    folder.mkdir()
    (folder / "test.json").write_text(json.dumps(split_rows(rows)))
    return folder, rows


def _lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


# --- the join in Python ------------------------------------------------------------------------


@pytest.mark.parametrize("field", ANSWER_FIELDS)
def test_join_gives_the_full_rows_and_their_scores(field):
    rows = random_results(25, seed=1)
    joined = join_predictions(predictions_of(rows, field), split_rows(rows))
    assert joined == [{**r, "gen_answer": r["gen_answer"]} for r in rows]
    assert evaluate_rows(joined) == evaluate_rows(rows)


def test_join_keeps_prediction_order_and_own_fields_but_data_from_the_data_set():
    rows = random_results(6, seed=2)
    preds = predictions_of(rows)[::-1]
    preds[0]["setting"] = "gold-only"
    preds[0]["question"] = "a question the prediction carries, not the data set's"
    preds[1]["qid"] = str(preds[1]["qid"])  # qids match as text
    joined = join_predictions(preds, split_rows(rows))
    assert [r["qid"] for r in joined] == [r["qid"] for r in rows[::-1]]
    assert joined[0]["setting"] == "gold-only"
    assert joined[0]["question"] == rows[-1]["question"]
    assert joined[1]["qid"] == rows[-2]["qid"]  # the data set's qid (an int)


def test_answer_field_choice_and_conflicts():
    rows = random_results(3, seed=4)
    preds = [{"qid": r["qid"], "text": r["gen_answer"]} for r in rows]
    with pytest.raises(ValueError, match=r"predictions: row 0 \(qid 0\) has no answer: none of"):
        join_predictions(preds, split_rows(rows))
    joined = join_predictions(preds, split_rows(rows), answer_field="text")
    assert [r["gen_answer"] for r in joined] == [r["gen_answer"] for r in rows]
    two = [{"qid": 0, "answer": "a", "response": "b"}]
    with pytest.raises(ValueError, match="different answers in 'answer', 'response'"):
        join_predictions(two, split_rows(rows), subset=True)
    with pytest.raises(ValueError, match="field 'answer' must be a string, got None"):
        join_predictions([{"qid": 0, "answer": None}], split_rows(rows), subset=True)


def test_missing_qids_refused_unless_subset_and_unknown_always():
    rows = random_results(12, seed=5)
    preds = predictions_of(rows)[:4]
    with pytest.raises(ValueError) as err:
        join_predictions(preds, split_rows(rows), source="p.jsonl")
    assert str(err.value) == (
        "p.jsonl: answers 4 of the data set's 12 questions; 8 missing (qids 4, 5, 6, 7, 8, "
        "...); score the shared questions with --subset"
    )
    joined = join_predictions(preds, split_rows(rows), subset=True)
    assert [r["qid"] for r in joined] == [0, 1, 2, 3]
    unknown = [*preds, {"qid": 99, "answer": "x"}, {"qid": "abc", "answer": "y"}]
    for subset in (False, True):
        with pytest.raises(ValueError) as err:
            join_predictions(unknown, split_rows(rows), subset=subset, source="p.jsonl")
        assert str(err.value) == (
            "p.jsonl: 2 of 6 qids are not in the data set (qids 99, abc): another split or "
            "data set?"
        )


def test_repeated_qids_name_the_option_and_rows_without_data_name_the_data_set_options():
    rows = random_results(3, seed=6)
    preds = predictions_of(rows) + [{"qid": 1, "answer": "again"}]
    with pytest.raises(ValueError, match=r"rows 1 and 3 both have qid 1.*--allow-duplicate-qids"):
        join_predictions(preds, split_rows(rows))
    joined = join_predictions(preds, split_rows(rows), allow_duplicate_qids=True)
    assert [r["qid"] for r in joined] == [0, 1, 2, 1]
    with pytest.raises(ValueError, match=r"has no 'question'.*--data-dir DIR, --config sample"):
        join_predictions(predictions_of(rows))


def test_object_wrapping_the_rows_is_refused_by_name(tmp_path):
    rows = random_results(3, seed=7)
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({"results": rows}))
    with pytest.raises(ValueError, match=r"expected a list of rows .* keys \['results'\]"):
        read_predictions(path)
    path.write_text(json.dumps({"results": rows}, indent=1))  # over several lines
    with pytest.raises(ValueError, match=r"expected a list of rows .* keys \['results'\]"):
        read_predictions(path)
    one = tmp_path / "one.jsonl"
    write_jsonl(one, rows[:1])  # one row is still a list of one row
    assert read_predictions(one) == rows[:1]


def test_json_nested_deeper_than_the_parser_follows_is_one_value_error(tmp_path):
    # The wrapped-object check reads the whole file again: by the one reader, so the depth
    # that the row reader refuses cannot crash it with a RecursionError.
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match=r"deep\.json: JSON nested too deeply"):
        read_predictions(path)


def lm_eval_samples(rows):
    """Samples in the layout lm-eval's --log_samples writes (the fields samples.py reads;
    tests/test_lm_eval_task.py checks that layout against a real lm-eval run)."""
    return [
        {
            "doc_id": i,
            "doc": {k: v for k, v in r.items() if k != "gen_answer"},
            "arguments": {"gen_args_0": {"arg_0": f"prompt {i}", "arg_1": {}}},
            "resps": [[r["gen_answer"]]],
            "filtered_resps": [r["gen_answer"]],
            "filter": "none",
        }
        for i, r in enumerate(rows)
    ]


def test_lm_eval_samples_are_read_directly(tmp_path):
    rows = random_results(8, seed=8)
    path = write_jsonl(tmp_path / "samples_ambigdocs_2026.jsonl", lm_eval_samples(rows)[::-1])
    joined = join_predictions(path)  # whole rows: no data set needed
    assert [r["qid"] for r in joined] == list(range(8))  # data order, by doc_id
    assert evaluate_rows(joined) == evaluate_rows(rows)
    assert joined == join_predictions(path, split_rows(rows))


def test_sample_config_and_folders_load_the_same_rows(sample_dir, tmp_path):
    sample = load_split_rows(config="sample")
    assert [r["qid"] for r in sample] == [0, 1, 2, 3, 4]
    assert load_split_rows(data_dir=sample_dir) == sample
    # Any folder plain `datasets.load_dataset` reads: the same rows.
    assert load_split_rows(dataset=str(sample_dir), split="test") == sample
    with pytest.raises(ValueError, match="give one data set"):
        load_split_rows(config="sample", data_dir=sample_dir)


# --- the command, both routes ------------------------------------------------------------------


@pytest.mark.parametrize("route", list(ROUTES))
def test_command_scores_predictions_as_the_full_rows(route, raw_dir, tmp_path, repo_root):
    folder, rows = raw_dir
    full = tmp_path / "full.json"
    full.write_text(json.dumps(rows))
    preds = write_jsonl(tmp_path / "preds.jsonl", predictions_of(rows, "prediction"))
    common = ["--no-df1", "--bootstrap", "50"]
    a = _run(route, [full, "--output-dir", tmp_path / "a", *common], repo_root)
    b = _run(
        route,
        [preds, "--data-dir", folder, "--split", "test", "--output-dir", tmp_path / "b", *common],
        repo_root,
    )
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    sa = json.loads((tmp_path / "a" / "summary.json").read_text())
    sb = json.loads((tmp_path / "b" / "summary.json").read_text())
    for key in ("answer_recall", "entity_answer_recall", "k_precision", "complete", "ci95"):
        assert sa[key] == sb[key], key
    strip = lambda r: {k: v for k, v in r.items() if k != "system"}  # noqa: E731
    assert [strip(r) for r in _lines(tmp_path / "a" / "per_example.jsonl")] == [
        strip(r) for r in _lines(tmp_path / "b" / "per_example.jsonl")
    ]


@pytest.mark.parametrize("route", list(ROUTES))
def test_command_refuses_missing_qids_in_one_line_and_subset_scores_them(
    route, raw_dir, tmp_path, repo_root
):
    folder, rows = raw_dir
    preds = write_jsonl(tmp_path / "few.jsonl", predictions_of(rows[:10]))
    base = [preds, "--data-dir", folder, "--no-df1", "--bootstrap", "0"]
    run = _run(route, [*base, "--output-dir", tmp_path / "o"], repo_root)
    assert run.returncode == 2
    assert run.stderr == (
        f"ambigdocs evaluate: error: {preds}: answers 10 of the data set's 40 questions; 30 "
        "missing (qids 10, 11, 12, 13, 14, ...); score the shared questions with --subset\n"
    )
    run = _run(route, [*base, "--subset", "--output-dir", tmp_path / "o"], repo_root)
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["n"] == 10


def test_sample_config_route_with_subset(sample_dir, tmp_path, capsys):
    answers = json.loads((sample_dir / "answers.json").read_text())
    preds = write_jsonl(
        tmp_path / "preds.jsonl",
        [{"qid": r["qid"], "answer": r["gen_answer"], "docs": r["docs"]} for r in answers],
    )
    args = [str(preds), "--config", "sample", "--no-df1", "--allow-duplicate-qids"]
    assert main([*args, "--output-dir", str(tmp_path / "o")]) == 2
    assert "answers 2 of the data set's 5 questions; 3 missing" in capsys.readouterr().err
    assert main([*args, "--subset", "--output-dir", str(tmp_path / "o")]) == 0
    full_args = [str(sample_dir / "answers.json"), *args[3:], "--output-dir", str(tmp_path / "f")]
    assert main(full_args) == 0
    joined = _lines(tmp_path / "o" / "per_example.jsonl")
    full = _lines(tmp_path / "f" / "per_example.jsonl")
    assert [{**r, "system": None} for r in joined] == [{**r, "system": None} for r in full]


def test_data_set_options_need_each_other(sample_dir, tmp_path, capsys):
    preds = write_jsonl(tmp_path / "p.jsonl", [{"qid": 0, "answer": "x"}])
    out = ["--output-dir", str(tmp_path / "o"), "--no-df1"]
    assert main([str(preds), "--subset", *out]) == 2
    assert capsys.readouterr().err == (
        "ambigdocs evaluate: error: --subset needs a data set: --data-dir DIR, --config sample "
        "or --dataset ID\n"
    )
    assert main([str(preds), "--data-dir", str(sample_dir), "--split", "dev", *out]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ambigdocs evaluate: error:") and len(err.splitlines()) == 1


@pytest.mark.parametrize("qid", [True, 0.0, [0], {"id": 0}])
def test_a_qid_of_the_wrong_type_is_named_as_such(qid):
    # Not "not in the data set (qids True)": the field's type is what is wrong.
    data = split_rows(random_results(3, seed=4))
    with pytest.raises(ValueError, match=r"row 0 .*'qid' must be an integer or a string"):
        join_predictions([{"qid": qid, "answer": "x"}], data, source="p.jsonl")
