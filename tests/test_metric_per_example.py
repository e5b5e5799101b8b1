"""The metric module in a training loop: per-example values (`use_aggregator=False`), the QA
model kept between `compute` calls, and `QAModelError` under a name users can `except`."""

from __future__ import annotations

import json
import sys

import evaluate
import pytest
from qa_models import save_qa_model

import ambigdocs
from metric.ambigdocs_metric.scoring import CATEGORIES


@pytest.fixture(scope="module")
def qa_dir(tmp_path_factory):
    return save_qa_model(tmp_path_factory.mktemp("qa"))


@pytest.fixture
def metric(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return evaluate.load(ambigdocs.METRIC_PATH)


@pytest.fixture(scope="module")
def inputs(sample_dir):
    runs = json.loads((sample_dir / "answers.json").read_text(encoding="utf-8"))
    return [r["gen_answer"] for r in runs], runs, [r["docs"] for r in runs]


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values)


@pytest.mark.parametrize("score_documents", ["first5", "shown"])
def test_per_example_values_average_to_the_aggregate(metric, inputs, qa_dir, score_documents):
    predictions, references, contexts = inputs
    # One example shown none of its gold documents: with "shown" it has no scored document,
    # so its recalls and category are None and it is left out of those means.
    contexts = [list(c) for c in contexts]
    contexts[3] = [{"title": "Elsewhere", "text": "nothing", "pid": "x"}]
    kwargs = dict(predictions=predictions, references=references, contexts=contexts)
    kwargs.update(score_documents=score_documents, qa_model=str(qa_dir))
    means = metric.compute(**kwargs)
    each = metric.compute(**kwargs, use_aggregator=False)
    # `k_precision_n` is a count (as squad_v2's `total`), not a mean: no per-example list.
    assert means["k_precision_n"] == len(predictions)
    counts = {"k_precision_n"}
    assert set(each) == set(means) - counts | {"category"}
    assert all(len(values) == len(predictions) for values in each.values())
    for key, mean in means.items():
        if key not in counts:
            assert _mean(each[key]) == pytest.approx(mean), key
    if score_documents == "shown":
        assert each["answer_recall"][3] is None and each["category"][3] is None
        assert each["complete"][3] is None and each["answer_length"][3] is not None
    # The categories are the per-example names behind the fractions.
    for i, category in enumerate(each["category"]):
        if category is not None:
            assert [each[c][i] for c in CATEGORIES] == [float(c == category) for c in CATEGORIES]


def test_qa_model_loaded_once_for_the_same_name_and_settings(metric, inputs, qa_dir, monkeypatch):
    module = sys.modules[type(metric).__module__]  # the copy evaluate runs
    loads = []
    real = module.load_qa_extractor

    def counting(*args, **kwargs):
        loads.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "load_qa_extractor", counting)
    predictions, references, _ = inputs
    first = metric.compute(predictions=predictions, references=references, qa_model=str(qa_dir))
    for _ in range(3):  # a training loop evaluating every N steps
        again = metric.compute(predictions=predictions, references=references, qa_model=str(qa_dir))
        assert again == first
    assert loads == [str(qa_dir)]
    metric.compute(
        predictions=predictions, references=references, qa_model=str(qa_dir), qa_batch_size=8
    )
    assert len(loads) == 2  # other settings: loaded again


def test_qa_model_error_is_caught_by_its_stable_name(metric, inputs, tmp_path):
    predictions, references, _ = inputs
    with pytest.raises(ambigdocs.QAModelError, match="no such folder"):
        metric.compute(
            predictions=predictions[:1],
            references=references[:1],
            qa_model=str(tmp_path / "missing"),
        )
    from metric.ambigdocs_metric.qa_loading import QAModelError

    assert ambigdocs.QAModelError is QAModelError
