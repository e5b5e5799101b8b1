"""The metric's `evaluate` module as users call it: from any folder, batch by batch, with the
shown documents per batch, with `ds[:n]` as references, and with a QA model that cannot load."""

from __future__ import annotations

import json
import re

import datasets
import evaluate
import pytest

import ambigdocs


@pytest.fixture(scope="module")
def inputs(sample_dir):
    runs = json.loads((sample_dir / "answers.json").read_text(encoding="utf-8"))
    predictions = [r["gen_answer"] for r in runs]
    references = [
        {k: r[k] for k in ("qid", "question", "ambiguous_entity", "documents")} for r in runs
    ]
    contexts = [r["docs"] for r in runs]
    return predictions, references, contexts


@pytest.fixture
def metric(tmp_path, monkeypatch):
    # Loaded from a folder that is not the repository root: the installed path is what counts.
    monkeypatch.chdir(tmp_path)
    return evaluate.load(ambigdocs.METRIC_PATH)


def test_metric_loads_from_any_folder(tmp_path, monkeypatch, inputs):
    predictions, references, contexts = inputs
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"metric/ambigdocs_metric"):  # the old form
        evaluate.load("metric/ambigdocs_metric")
    result = ambigdocs.load_metric().compute(
        predictions=predictions, references=references, contexts=contexts
    )
    assert {"answer_recall", "entity_answer_recall", "k_precision"} <= set(result)
    assert 0.0 <= result["k_precision"] <= 1.0


def test_contexts_per_batch_give_what_contexts_at_compute_give(metric, inputs):
    predictions, references, contexts = inputs
    expected = metric.compute(predictions=predictions, references=references, contexts=contexts)
    for start in range(0, len(predictions), 3):
        end = start + 3
        metric.add_batch(
            predictions=predictions[start:end],
            references=references[start:end],
            contexts=contexts[start:end],
        )
    assert metric.compute() == expected
    for p, r, c in zip(predictions, references, contexts, strict=True):
        metric.add(prediction=p, reference=r, context=c)
    assert metric.compute() == expected
    # And without any contexts, no K-Precision, as with compute() alone.
    for start in range(0, len(predictions), 4):
        metric.add_batch(
            predictions=predictions[start : start + 4], references=references[start : start + 4]
        )
    without = metric.compute()
    assert "k_precision" not in without
    assert without == metric.compute(predictions=predictions, references=references)


def test_examples_without_contexts_are_left_out_of_k_precision_only(metric, inputs):
    # As `ambigdocs evaluate` does for rows without `docs`: K-Precision is the mean over the
    # examples that have their shown documents, and `k_precision_n` says how many.
    predictions, references, contexts = inputs
    metric.add_batch(predictions=predictions[:2], references=references[:2], contexts=contexts[:2])
    metric.add_batch(predictions=predictions[2:4], references=references[2:4])
    batched = metric.compute()
    given = metric.compute(
        predictions=predictions[:4], references=references[:4], contexts=[*contexts[:2], None, None]
    )
    alone = metric.compute(
        predictions=predictions[:2], references=references[:2], contexts=contexts[:2]
    )
    assert batched == given
    assert given["k_precision"] == alone["k_precision"] and given["k_precision_n"] == 2
    assert given["answer_recall"] != alone["answer_recall"] or predictions[:2] == predictions[2:4]
    each = metric.compute(
        predictions=predictions[:4],
        references=references[:4],
        contexts=[*contexts[:2], None, None],
        use_aggregator=False,
    )
    assert each["k_precision"][2:] == [None, None] and None not in each["k_precision"][:2]


def test_contexts_twice_or_of_the_wrong_length_are_refused(metric, inputs):
    predictions, references, contexts = inputs
    metric.add_batch(predictions=predictions[:2], references=references[:2], contexts=contexts[:2])
    with pytest.raises(ValueError, match="both to add_batch/add and to compute"):
        metric.compute(contexts=contexts[:2])
    with pytest.raises(ValueError, match="contexts has 1 items but predictions has 2"):
        metric.add_batch(
            predictions=predictions[:2], references=references[:2], contexts=contexts[:1]
        )
    with pytest.raises(ValueError, match=r"contexts\[0\] field 'text' must be a string"):
        metric.add_batch(
            predictions=predictions[:1], references=references[:1], contexts=[[{"title": "t"}]]
        )


def test_references_as_a_dict_of_columns(metric, inputs):
    predictions, references, _ = inputs
    ds = datasets.Dataset.from_list(references)
    expected = metric.compute(predictions=predictions[:5], references=references[:5])
    assert metric.compute(predictions=predictions[:5], references=ds[:5]) == expected
    metric.add_batch(predictions=predictions[:5], references=ds[:5])
    assert metric.compute() == expected


def test_one_row_as_references_is_named(metric, inputs):
    predictions, references, _ = inputs
    with pytest.raises(ValueError, match=r"references is one row .*pass a list of rows"):
        metric.compute(predictions=predictions[:1], references=references[0])
    with pytest.raises(ValueError, match="columns of different lengths"):
        metric.compute(
            predictions=predictions[:1], references={"question": ["a", "b"], "documents": [[]]}
        )


def test_qa_model_that_cannot_be_loaded_is_one_error(metric, inputs, tmp_path):
    from metric.ambigdocs_metric.qa_loading import QAModelError

    predictions, references, _ = inputs
    cases = [
        (str(tmp_path / "missing"), "no such folder", False),
        # Tests run offline and this model is in no cache.
        ("someone/qa-model", "the Hub cannot be reached and it is not in the local cache", True),
    ]
    for name, reason, unreachable in cases:
        with pytest.raises(OSError) as caught:
            metric.compute(predictions=predictions[:2], references=references[:2], qa_model=name)
        err = caught.value
        # The module evaluate loaded has its own copy of the class: compare by name.
        assert type(err).__name__ == QAModelError.__name__
        assert str(err).startswith(f"cannot load the QA model {name!r} for Disambig-F1")
        assert reason in str(err) and "\n" not in str(err)
        assert err.unreachable is unreachable
        assert err.__cause__ is None and (err.__context__ is None or err.__suppress_context__)


@pytest.mark.parametrize(
    ("where", "field"),
    [
        ("prediction", "'prediction'"),
        ("question", "'question'"),
        ("answer", "'documents[1].answer'"),
        ("context", "'contexts[0].text'"),
    ],
)
@pytest.mark.parametrize("call", ["compute", "add_batch", "add"])
def test_a_lone_surrogate_is_named_before_arrow_sees_it(metric, inputs, where, field, call):
    # A "\ud800" JSON escape decodes to a lone surrogate: Arrow cannot store it as UTF-8.
    predictions, references, contexts = (list(x) for x in inputs)
    i = 2
    reference = json.loads(json.dumps(references[i]))
    shown = json.loads(json.dumps(contexts[i]))
    if where == "prediction":
        predictions[i] = "Born in \ud800 Ohio"
    elif where == "question":
        reference["question"] += "\udfff"
    elif where == "answer":
        reference["documents"][1]["answer"] = "\ud800"
    else:
        shown[0]["text"] = "x\udc80"
    references[i], contexts[i] = reference, shown
    if call == "compute" and where == "context":
        # Documents given to compute go straight to the scorer, never into Arrow storage: the
        # scorer reads such text (UTF-8 bytes with "surrogatepass"), as the authors' code does.
        metric.compute(predictions=predictions, references=references, contexts=contexts)
        return
    pattern = rf"example \d \(qid [^)]*\): field {re.escape(field)} holds a lone"
    with pytest.raises(ValueError, match=pattern) as err:
        if call == "compute":
            metric.compute(predictions=predictions, references=references, contexts=contexts)
        elif call == "add_batch":
            metric.add_batch(predictions=predictions, references=references, contexts=contexts)
        else:
            metric.add(prediction=predictions[i], reference=references[i], context=contexts[i])
    assert "\n" not in str(err.value)
    assert str(err.value).startswith(f"example {0 if call == 'add' else i}")


def test_a_lone_surrogate_in_the_qid_gives_a_printable_message(metric, inputs):
    predictions, references, _ = inputs
    bad = {**references[0], "qid": "q\ud800"}
    with pytest.raises(ValueError, match="example 0: field 'qid' holds a lone") as err:
        metric.compute(predictions=predictions[:1], references=[bad])
    str(err.value).encode("utf-8")  # printable: no surrogate of its own


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m, p, r: m.compute(predictions=p), "predictions were given without references"),
        (lambda m, p, r: m.add_batch(references=r), "references were given without predictions"),
        (lambda m, p, r: m.add(prediction=p[0]), "prediction was given without its reference"),
        (lambda m, p, r: m.add(reference=r[0]), "reference was given without its prediction"),
        (
            lambda m, p, r: m.compute(predictions=p[0], references=r[:1]),
            "predictions must be a list of strings, got one str",
        ),
    ],
)
def test_half_an_input_or_a_string_for_a_list_is_named(metric, inputs, call, message):
    predictions, references, _ = inputs
    with pytest.raises(ValueError, match=message):
        call(metric, predictions, references)
