"""`ambigdocs push-metric`: the would-be Space loads with `evaluate.load` and scores the same."""

from __future__ import annotations

import json
import runpy
import sys
import types
from pathlib import Path

import evaluate
import pytest
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, SpaceCard
from test_hub_push import FakeHub

from generation.hub import push_metric

TOY_MODULE = '''\
"""A toy metric with a relative import, laid out like metric/ambigdocs_metric."""

import datasets
import evaluate

from .helper import overlap


class ToyMetric(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="toy",
            citation="",
            inputs_description="",
            features=datasets.Features(
                {"predictions": datasets.Value("string"),
                 "references": {"answer": datasets.Value("string")}}
            ),
        )

    def _compute(self, predictions, references):
        scores = [overlap(p, r["answer"]) for p, r in zip(predictions, references)]
        return {"overlap": sum(scores) / len(scores)}
'''

TOY_HELPER = """\
def overlap(prediction, answer):
    words = set(prediction.lower().split())
    gold = answer.lower().split()
    return sum(w in words for w in gold) / len(gold)
"""

TOY_README = """---
title: Toy
tags:
- toy
---

# Toy metric

Counts words.
"""


@pytest.fixture
def toy_metric_dir(tmp_path) -> Path:
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "ambigdocs_metric.py").write_text(TOY_MODULE)
    (folder / "helper.py").write_text(TOY_HELPER)
    (folder / "README.md").write_text(TOY_README)
    (folder / "requirements.txt").write_text("numpy>=1.20\n")
    return folder


TOY_PREDICTIONS = ["born in Rhode Island", "Ohio"]
TOY_REFERENCES = [{"answer": "Rhode Island"}, {"answer": "Alabama"}]


def test_space_folder_layout_and_card(toy_metric_dir, tmp_path):
    folder = tmp_path / "space" / "toy_space"
    files = push_metric.build_space_folder("me/toy_space", folder, toy_metric_dir)
    assert files == ["README.md", "app.py", "helper.py", "requirements.txt", "toy_space.py"]
    assert (folder / "toy_space.py").read_text() == TOY_MODULE
    assert (folder / "helper.py").read_text() == TOY_HELPER
    card = SpaceCard.load(folder / "README.md")
    assert card.data["title"] == "Toy"  # the metric card's own keys are kept
    assert card.data["tags"] == ["toy", "evaluate", "metric"]
    assert (card.data["sdk"], card.data["app_file"]) == ("gradio", "app.py")
    assert card.data["sdk_version"] == push_metric.DEFAULT_GRADIO_SDK_VERSION
    assert card.text.strip().startswith("# Toy metric")
    assert (folder / "requirements.txt").read_text() == "numpy>=1.20\nevaluate\n"
    app = (folder / "app.py").read_text()
    # The app loads the module beside it (the Space's own copy), not through the Hub.
    assert 'evaluate.load(str(Path(__file__).resolve().parent / "toy_space.py"))' in app
    assert "launch_gradio_widget(module)" in app
    compile(app, "app.py", "exec")


def test_space_folder_loads_with_evaluate_like_the_local_module(toy_metric_dir, tmp_path):
    folder = tmp_path / "space" / "toy_space"
    push_metric.build_space_folder("me/toy_space", folder, toy_metric_dir)
    local = evaluate.load(str(toy_metric_dir / "ambigdocs_metric.py"))
    space = evaluate.load(str(folder))
    expected = local.compute(predictions=TOY_PREDICTIONS, references=TOY_REFERENCES)
    assert expected == {"overlap": 0.5}  # by hand: 2/2 words of "Rhode Island", 0/1 of "Alabama"
    assert space.compute(predictions=TOY_PREDICTIONS, references=TOY_REFERENCES) == expected


def _fake_gradio(captured: dict, major: int) -> types.ModuleType:
    """Just enough of Gradio's API for the app: `gr.inputs`/`gr.outputs` up to 3, not after."""
    gr = types.ModuleType("gradio")

    class Interface:
        def __init__(self, fn, inputs, outputs, **kwargs):
            captured.update(fn=fn, inputs=inputs, outputs=outputs, **kwargs)

        def launch(self, **options):
            captured["launched"] = options

    gr.Interface = Interface
    if major < 4:
        gr.inputs = types.SimpleNamespace(Dataframe=lambda **kw: ("Dataframe", kw))
        gr.outputs = types.SimpleNamespace(Textbox=lambda **kw: ("Textbox", kw))
    else:
        gr.Dataframe = lambda **kw: ("Dataframe", kw)
        gr.Textbox = lambda **kw: ("Textbox", kw)
    return gr


def _run_app(folder: Path, monkeypatch, major: int = 3) -> dict:
    """Runs the Space's app.py with a stand-in Gradio (the app loads the module beside it)."""
    captured: dict = {}
    monkeypatch.setitem(sys.modules, "gradio", _fake_gradio(captured, major))
    # As `python app.py` on the Space: the app's folder first on sys.path (evaluate's widget
    # finds README.md there).
    monkeypatch.syspath_prepend(str(folder))
    runpy.run_path(str(folder / "app.py"), run_name="__main__")
    return captured


def _widget_compute(captured, predictions, references):
    import pandas as pd

    table = pd.DataFrame(
        {
            "predictions": [json.dumps(p) for p in predictions],
            "references": [json.dumps(r) for r in references],
        }
    )
    return captured["fn"](table)


@pytest.mark.parametrize("major", [3, 5])
def test_app_builds_the_widget_and_it_computes_the_metric(
    toy_metric_dir, tmp_path, monkeypatch, major
):
    folder = tmp_path / "space" / "toy_space"
    push_metric.build_space_folder("me/toy_space", folder, toy_metric_dir)
    captured = _run_app(folder, monkeypatch, major)
    assert captured["launched"] == ({} if major < 4 else {"show_error": True})
    kind, table = captured["inputs"]
    assert kind == "Dataframe" and tuple(table["headers"]) == ("predictions", "references")
    assert table["datatype"] == ["str", "str"]  # references are typed as JSON text
    assert captured["outputs"][0] == "Textbox"
    assert "Counts words." in captured["article"]  # the metric card, below the widget
    got = _widget_compute(captured, TOY_PREDICTIONS, TOY_REFERENCES)
    assert got == {"overlap": 0.5}


def test_metric_card_sdk_version_is_kept(toy_metric_dir, tmp_path):
    readme = toy_metric_dir / "README.md"
    readme.write_text(TOY_README.replace("title: Toy", "title: Toy\nsdk_version: 4.44.1"))
    folder = tmp_path / "space" / "toy_space"
    push_metric.build_space_folder("me/toy_space", folder, toy_metric_dir)
    assert SpaceCard.load(folder / "README.md").data["sdk_version"] == "4.44.1"


def test_push_metric_commits_exactly_the_space_files(toy_metric_dir, tmp_path, capsys):
    hub = FakeHub(tmp_path / "downloads")
    push_metric.push_metric("me/toy_space", metric_dir=toy_metric_dir, api=hub, private=True)
    create = [kw for name, kw in hub.calls if name == "create_repo"]
    assert create == [{"repo_id": "me/toy_space", "private": True, "space_sdk": "gradio"}]
    files = hub.files("me/toy_space", repo_type="space")
    assert sorted(files) == ["README.md", "app.py", "helper.py", "requirements.txt", "toy_space.py"]
    assert files["toy_space.py"].decode() == TOY_MODULE
    # The uploaded files, written out under the Space's name, load and score as the local module.
    folder = tmp_path / "hub-copy" / "toy_space"
    hub.materialize("me/toy_space", folder, repo_type="space")
    assert evaluate.load(str(folder)).compute(
        predictions=TOY_PREDICTIONS, references=TOY_REFERENCES
    ) == {"overlap": 0.5}
    assert 'evaluate.load("me/toy_space")' in capsys.readouterr().out

    # A helper renamed in the module folder: the old file is deleted from the Space.
    (toy_metric_dir / "helper.py").rename(toy_metric_dir / "helpers.py")
    (toy_metric_dir / "ambigdocs_metric.py").write_text(TOY_MODULE.replace(".helper ", ".helpers "))
    hub.seed(
        "me/toy_space", "space", {**hub.files("me/toy_space", "space"), ".gitattributes": b"*"}
    )
    push_metric.push_metric("me/toy_space", metric_dir=toy_metric_dir, api=hub)
    ops = hub.commits()[-1]["operations"]
    assert [o.path_in_repo for o in ops if isinstance(o, CommitOperationDelete)] == ["helper.py"]
    assert "helpers.py" in [o.path_in_repo for o in ops if isinstance(o, CommitOperationAdd)]
    assert ".gitattributes" in hub.files("me/toy_space", "space")


def test_dry_run_uploads_nothing(toy_metric_dir, tmp_path, capsys):
    hub = FakeHub(tmp_path / "downloads")
    push_metric.push_metric("me/toy_space", metric_dir=toy_metric_dir, api=hub, dry_run=True)
    out = capsys.readouterr().out
    assert "would publish the metric to Space me/toy_space (new)" in out
    for name in ("README.md", "app.py", "helper.py", "requirements.txt", "toy_space.py"):
        assert f"+ {name} (" in out
    assert "sdk: gradio" in out
    assert not [c for c in hub.calls if c[0].startswith("create")]


@pytest.mark.parametrize("repo_id", ["me/ambig-docs", "me/ambig.docs", "no-namespace", "a/b/c"])
def test_unusable_space_names(repo_id, capsys):
    assert push_metric.main(["--repo-id", repo_id, "--dry-run"]) == 2
    assert "repo id" in capsys.readouterr().err


def test_missing_metric_files_are_named(tmp_path):
    (tmp_path / "m").mkdir()
    with pytest.raises(
        ValueError, match="missing ambigdocs_metric.py, README.md, requirements.txt"
    ):
        push_metric.build_space_folder("me/x", tmp_path / "x", tmp_path / "m")


# --- the real module: metric/ambigdocs_metric ----------------------------------------------------


@pytest.fixture
def real_metric_dir(repo_root) -> Path:
    folder = repo_root / "metric" / "ambigdocs_metric"
    missing = [
        f
        for f in ("ambigdocs_metric.py", "README.md", "requirements.txt")
        if not (folder / f).is_file()
    ]
    # the metric ships these files: one missing is a regression, never a reason to skip
    assert not missing, f"metric/ambigdocs_metric is missing {', '.join(missing)}"
    return folder


def _sample_inputs(sample_dir):
    runs = json.loads((sample_dir / "answers.json").read_text(encoding="utf-8"))
    predictions = [r["gen_answer"] for r in runs]
    references = [
        {k: r[k] for k in ("qid", "question", "ambiguous_entity", "documents")} for r in runs
    ]
    contexts = [r["docs"] for r in runs]
    return predictions, references, contexts


def test_real_metric_space_scores_like_the_local_module(
    real_metric_dir, sample_dir, tmp_path, monkeypatch
):
    folder = tmp_path / "space" / "ambigdocs"
    files = push_metric.build_space_folder("me/ambigdocs", folder, real_metric_dir)
    assert "ambigdocs.py" in files and "app.py" in files
    assert {p.name for p in real_metric_dir.glob("*.py")} - {"ambigdocs_metric.py"} <= set(files)
    predictions, references, contexts = _sample_inputs(sample_dir)
    local = evaluate.load(str(real_metric_dir))
    space = evaluate.load(str(folder))
    expected = local.compute(predictions=predictions, references=references, contexts=contexts)
    got = space.compute(predictions=predictions, references=references, contexts=contexts)
    assert got == expected
    assert set(expected) >= {
        "answer_recall",
        "entity_recall",
        "entity_answer_recall",
        "k_precision",
    }
    # The Space's widget computes the same (without contexts: the widget's inputs are the
    # module's features, predictions and references).
    expected_widget = local.compute(predictions=predictions, references=references)
    for major in (3, 5):
        captured = _run_app(folder, monkeypatch, major)
        assert _widget_compute(captured, predictions, references) == expected_widget
