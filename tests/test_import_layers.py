"""The import graph of the toolkit: no cycle, and every arrow points down the layers.

Read from the source with `ast` (nothing is imported), counting every `import`, also those
inside functions: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Bottom to top. A module may import modules of its own layer or of any layer below; the longest
# matching prefix places a module.
LAYERS: list[tuple[str, ...]] = [
    ("metric",),  # the scorer, self-contained
    ("ambigdocs",),  # the builder: the schema and the loaders; nothing of generation/
    ("generation", "generation.secrets", "generation.boundary"),  # the package, filter, boundary
    ("generation.io", "generation.prompts", "generation.authors_prompts", "generation.documents"),
    ("generation.options", "generation.backends"),
    (
        "generation.answering",
        "generation.datagen",
        "generation.distill",
        "generation.hub",
        "generation.report",
        "generation.lm_eval_tasks",
    ),  # the commands
    ("generation.cli",),  # the dispatcher
]


def module_files() -> dict[str, Path]:
    mods = {"ambigdocs": ROOT / "ambigdocs.py"}
    for base in ("generation", "metric"):
        for path in (ROOT / base).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            mods[".".join(parts)] = path
    return mods


def import_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the project modules it imports (a name resolves to its longest known prefix)."""

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for module, path in mods.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {resolve(alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parent + ([node.module] if node.module else []))
                targets |= {resolve(f"{base}.{a.name}") or resolve(base) for a in node.names}
        graph[module] = {t for t in targets if t and t != module}
    return graph


def layer(module: str) -> int:
    matches = [
        (len(prefix), rank)
        for rank, prefixes in enumerate(LAYERS)
        for prefix in prefixes
        if module == prefix or module.startswith(prefix + ".")
    ]
    assert matches, f"{module} is in no layer: add it to LAYERS"
    return max(matches)[1]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


GRAPH = import_graph(module_files())


def test_the_graph_is_read():
    # The reader must see lazy imports too, or the checks below would pass on nothing.
    assert "metric.ambigdocs_metric.scoring" in GRAPH["metric.ambigdocs_metric.disambig_f1"]
    assert "generation.report.evaluate" in GRAPH["generation.answering.answer"]  # lazy import
    assert "generation.boundary" in GRAPH["generation.options"]


def test_no_import_cycle():
    assert cycles(GRAPH) == []


def test_every_arrow_points_down():
    upward = [f"{a} -> {b}" for a, targets in GRAPH.items() for b in targets if layer(b) > layer(a)]
    assert upward == []


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set()}, []),
    ],
)
def test_the_cycle_finder(graph, expected):
    assert cycles(graph) == expected


def test_the_layer_rule_sees_an_upward_arrow():
    assert layer("generation.io.resume") < layer("generation.options") < layer("generation.cli")
    assert layer("generation.report.provenance") == layer("generation.answering.answer")
    assert layer("generation.datagen.gather") > layer("generation.prompts")
