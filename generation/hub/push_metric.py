"""`ambigdocs push-metric`: publish the AmbigDocs metric as a Hub Space for `evaluate.load`.

`evaluate-cli create` no longer starts with current `huggingface_hub`, so this command writes the
Space the way evaluate's template lays one out and uploads it in one commit (docs/datasets.md,
"Publishing the metric").
"""

from __future__ import annotations

import ast
import dataclasses
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, SpaceCard

from ambigdocs import RELEASE_REPO_ID
from generation.boundary import one_line
from generation.hub import remote
from generation.options import option, run_command

REPO_TYPE = "space"
METRIC_DIR = Path(__file__).resolve().parents[2] / "metric" / "ambigdocs_metric"
MODULE_FILE = "ambigdocs_metric.py"
# The Gradio of a Space whose card does not name one (the metric card's own choice is kept).
# Gradio 5.0.0 imports `HfFolder`, which huggingface_hub 1 removed (and datasets >= 4.7 needs
# huggingface_hub >= 1): the Space would not start. tests/test_space_app.py runs this one.
DEFAULT_GRADIO_SDK_VERSION = "6.31.0"
# Files the Hub manages itself: never deleted as stale.
_KEEP = {".gitattributes"}

# evaluate's usual widget. `launch_gradio_widget` still builds it from `gr.inputs` /
# `gr.outputs`, which Gradio 4 removed; on Gradio >= 4 the same widget is built from the current
# component names with evaluate's own helpers, so the Space runs on either.
APP_TEMPLATE = '''\
"""The Space's widget: evaluate's `launch_gradio_widget` for {repo_id}."""

import inspect
from pathlib import Path

import evaluate
import gradio as gr
from evaluate.utils import launch_gradio_widget
from evaluate.utils.gradio import (
    infer_gradio_input_types,
    json_to_string_type,
    parse_gradio_data,
    parse_readme,
)

# The module beside this file: the Space's own copy of `{name}.py` (the same files that
# `evaluate.load("{repo_id}")` fetches), so the widget needs no download and runs the same from a
# local copy of the Space.
module = evaluate.load(str(Path(__file__).resolve().parent / "{name}.py"))

if hasattr(gr, "inputs"):  # Gradio 3
    launch_gradio_widget(module)
else:  # Gradio >= 4: no gr.inputs / gr.outputs
    features = module.features[0] if isinstance(module.features, list) else module.features
    names, types = zip(*features.items())
    input_types = infer_gradio_input_types(types)

    def compute(data):
        return module.compute(**parse_gradio_data(data, input_types))

    def takes(factory, name):  # option names changed between Gradio 4, 5 and 6
        return name in inspect.signature(factory).parameters

    columns = "column_count" if takes(gr.Dataframe, "column_count") else "col_count"
    flagging = "flagging_mode" if takes(gr.Interface, "flagging_mode") else "allow_flagging"
    gr.Interface(
        fn=compute,
        inputs=gr.Dataframe(
            headers=list(names),
            datatype=json_to_string_type(input_types),
            row_count=1,
            # One empty row to type into (Gradio 6 shows none for `row_count=1` alone).
            value=[[""] * len(names)],
            **{{columns: len(names)}},
        ),
        outputs=gr.Textbox(label=module.name),
        description=module.info.description
        + "\\nWrap text in double quotes; give structured inputs as JSON.",
        title=f"Metric: {{module.name}}",
        article=parse_readme(Path(__file__).parent / "README.md"),
        # Flagging would store what visitors type on the Space's disk.
        **{{flagging: "never"}},
    ).launch(show_error=True)  # the metric's one-line ValueError names the field to fix
'''


def space_name(repo_id: str) -> str:
    """The Space's NAME, which is also the module's file name (`NAME.py`).

    Raises:
        ValueError: `repo_id` is not `NAMESPACE/NAME`, or NAME is not a Python identifier
            (evaluate imports `NAME.py` as a module; `evaluate-cli` refuses dashes too).
    """
    remote.check_repo_id(repo_id)
    name = repo_id.split("/")[1]
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ValueError(f"repo id {repo_id!r}: NAME must be letters, digits and '_' (no '-', '.')")
    return name


def _front_matter(readme: str) -> str:
    """The metric card with the Space's settings merged into its YAML (its own keys kept)."""
    card = SpaceCard(readme)
    data = card.data
    data["title"] = data.get("title") or "AmbigDocs"
    data["sdk"] = "gradio"
    data["sdk_version"] = data.get("sdk_version") or DEFAULT_GRADIO_SDK_VERSION
    data["app_file"] = "app.py"
    data["pinned"] = bool(data.get("pinned", False))
    tags = list(data.get("tags") or [])
    data["tags"] = tags + [t for t in ("evaluate", "metric") if t not in tags]
    data["description"] = data.get("description") or (
        "AmbigDocs metric: answer/entity recall, answer categories, K-Precision, Disambig-F1."
    )
    data["datasets"] = data.get("datasets") or [RELEASE_REPO_ID]
    return str(card)


def _requirements(text: str) -> str:
    lines = text.splitlines()
    names = {re.split(r"[<>=!~\[;@ ]", line.strip(), maxsplit=1)[0].lower() for line in lines}
    if "evaluate" not in names:
        lines.append("evaluate")
    return "\n".join(lines).strip("\n") + "\n"


def build_space_folder(
    repo_id: str, output_dir: str | Path, metric_dir: str | Path = METRIC_DIR
) -> list[str]:
    """Writes the would-be Space of the metric into `output_dir` (created; must not exist).

    `evaluate.load(output_dir)` loads it as the Hub would when `output_dir`'s name is NAME.

    Returns:
        The files written, relative to `output_dir`, sorted.

    Raises:
        ValueError: a required file of the module is missing, or the repo id is unusable.
        FileExistsError: `output_dir` exists.
    """
    name = space_name(repo_id)
    metric_dir, output_dir = Path(metric_dir), Path(output_dir)
    if not metric_dir.is_dir():
        kind = "a file, not a folder" if metric_dir.exists() else "no such folder"
        raise ValueError(f"--metric-dir {metric_dir}: {kind}")
    missing = [
        f for f in (MODULE_FILE, "README.md", "requirements.txt") if not (metric_dir / f).is_file()
    ]
    if missing:
        raise ValueError(f"{metric_dir}: missing {', '.join(missing)}")
    output_dir.mkdir(parents=True)
    for path in sorted(metric_dir.glob("*.py")):
        target = f"{name}.py" if path.name == MODULE_FILE else path.name
        if target == "app.py" or (path.name != MODULE_FILE and target == f"{name}.py"):
            raise ValueError(f"{path}: its name clashes with the Space's {target}")
        shutil.copyfile(path, output_dir / target)
    readme = (metric_dir / "README.md").read_text(encoding="utf-8")
    try:
        card = _front_matter(readme)
    except yaml.YAMLError as err:  # the library names no file
        raise ValueError(f"{metric_dir / 'README.md'}: front matter {one_line(err)}") from None
    (output_dir / "README.md").write_text(card, encoding="utf-8")
    requirements = (metric_dir / "requirements.txt").read_text(encoding="utf-8")
    (output_dir / "requirements.txt").write_text(_requirements(requirements), encoding="utf-8")
    app = APP_TEMPLATE.format(repo_id=repo_id, name=name)
    (output_dir / "app.py").write_text(app, encoding="utf-8")
    return sorted(p.name for p in output_dir.iterdir())


def push_metric(repo_id: str, *, metric_dir: str | Path = METRIC_DIR, **publish_options: Any):
    """Builds the Space folder and uploads it in one commit (stale files deleted).

    Args:
        repo_id: `NAMESPACE/NAME` of the Space (created with the Gradio SDK if missing).
        metric_dir: the evaluate module's folder.
        **publish_options: `private`, `dry_run`, `api`, `out`, as `remote.publish` takes them.

    Returns:
        The `CommitInfo`, or None on a dry run.
    """
    with tempfile.TemporaryDirectory(prefix="ambigdocs-space-") as tmp:
        # Offline first: the name, the module's files, their Python and the card.
        folder = Path(tmp) / space_name(repo_id)
        files = build_space_folder(repo_id, folder, metric_dir)
        check_space_folder(folder)

        def plan(state: remote.RepoState, _card: str | None) -> tuple[list, str]:
            operations: list = [CommitOperationAdd(f, str(folder / f)) for f in files]
            operations += [
                CommitOperationDelete(f) for f in state.files if f not in files and f not in _KEEP
            ]
            return operations, (folder / "README.md").read_text(encoding="utf-8")

        info = remote.publish(
            repo_id,
            REPO_TYPE,
            plan,
            "Publish the AmbigDocs metric",
            verb="publish",
            what="the metric to Space",
            space_sdk="gradio",
            **publish_options,
        )
    if not publish_options.get("dry_run"):
        out = publish_options.get("out") or sys.stdout
        print(f'load it with: evaluate.load("{repo_id}")', file=out)
    return info


def check_space_folder(folder: Path) -> None:
    """Checks the Space's Python offline: every file compiles, every relative import is there.

    `evaluate.load` imports `NAME.py` and fetches the files it imports relatively (`from .x
    import ...`); a missing one would only fail on the Hub, after the upload.

    Raises:
        ValueError: a file does not compile, or imports a module that is not in the folder.
    """
    for path in sorted(folder.glob("*.py")):
        source = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(source, filename=path.name)
        except SyntaxError as err:
            raise ValueError(
                f"{path.name}, line {err.lineno}: does not compile ({err.msg})"
            ) from None
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                target = node.module.split(".")[0]
                if not (folder / f"{target}.py").is_file():
                    raise ValueError(
                        f"{path.name}, line {node.lineno}: imports .{node.module}, "
                        f"but {target}.py is not in the metric folder"
                    )


@dataclasses.dataclass
class PushMetricOptions:
    """The options of `ambigdocs push-metric`."""

    repo_id: str = option(help="NAMESPACE/NAME of the Space")
    private: bool = option(False, help="create the Space private")
    dry_run: bool = option(False, help="print what would be uploaded")
    metric_dir: str = option(str(METRIC_DIR), help="the evaluate module folder to publish")


def main(argv: list[str] | None = None) -> int:
    description = "Publish metric/ambigdocs_metric as a Hub Space for evaluate.load."

    def run(o: PushMetricOptions) -> None:
        push_metric(o.repo_id, metric_dir=o.metric_dir, private=o.private, dry_run=o.dry_run)

    return run_command("ambigdocs push-metric", description, [PushMetricOptions], run, argv)


if __name__ == "__main__":
    sys.exit(main())
