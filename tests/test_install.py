"""How the toolkit installs: the extras and what they provide, the one missing-extra error, and
an `import ambigdocs` that a folder named `ambigdocs` cannot shadow.

The plain install into a fresh virtual environment (no torch, size, the three core commands) is
a CI step of its own (`.ci/fresh_install.py`): it downloads from the package index.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from generation import extras
from generation.backends import base
from generation.extras import EXTRAS, MissingExtraError, require
from generation.report.evaluate import main as evaluate_main

_NOT_IN_A_CLONE = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", "*.egg-info", ".pytest_cache", "demo-output", ".ruff_cache"
)


def _pyproject(repo_root) -> dict:
    return tomllib.loads((repo_root / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _distributions(project: dict, extra: str) -> set[str]:
    """The distributions an extra installs, following `ambigdocs[...]` self-references."""
    names: set[str] = set()
    for req in project["optional-dependencies"][extra]:
        inner = re.fullmatch(r"ambigdocs\[([\w,-]+)\]", req)
        if inner:
            for other in inner.group(1).split(","):
                names |= _distributions(project, other)
        else:
            names.add(_name(req))
    return names


def test_core_dependencies_hold_no_torch(repo_root):
    core = {_name(r) for r in _pyproject(repo_root)["dependencies"]}
    assert not core & {"torch", "transformers", "accelerate", "sentence-transformers", "trl"}
    # What the core commands import at all (README, Install).
    assert core >= {"datasets", "evaluate", "huggingface-hub", "numpy", "pyarrow", "matplotlib"}


_NOT_HERE = {"vllm": "vllm", "wikipediaapi": "wikipedia-api"}


def test_each_extra_installs_the_modules_its_check_asks_for(repo_root):
    """generation/extras.py names import names; pyproject.toml names distributions. The installed
    packages' own metadata says which distribution provides which import name."""
    project = _pyproject(repo_root)
    assert set(EXTRAS) | {"all", "test"} == set(project["optional-dependencies"])
    providers = importlib.metadata.packages_distributions()
    for extra, modules in EXTRAS.items():
        installs = _distributions(project, extra)
        for module in modules:
            # Not installed in every test environment (vllm needs a CUDA GPU): named by hand.
            dists = {_name(d) for d in providers.get(module, [])} or {_NOT_HERE[module]}
            assert dists & installs, (extra, module, dists)
    assert _distributions(project, "all") >= set().union(
        *(_distributions(project, e) for e in EXTRAS if e != "vllm")
    )


def test_require_names_the_extra_in_one_line(monkeypatch):
    require("df1")  # installed here
    monkeypatch.setitem(sys.modules, "transformers", None)  # as if not installed
    with pytest.raises(MissingExtraError) as caught:
        require("df1", what="Disambig-F1")
    assert str(caught.value) == (
        "Disambig-F1 needs transformers, not installed: pip install 'ambigdocs[df1]'"
    )
    assert isinstance(caught.value, ValueError) and caught.value.extra == "df1"
    with pytest.raises(KeyError):
        require("df1", "openai")  # not a module of that extra: a programming error


def test_backend_checks_its_extra_before_importing(monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)
    # Checking option names needs no extra (a dry run loads nothing); loading names the extra.
    base.check_backend_options("openai", {})
    with pytest.raises(MissingExtraError, match=r"the openai back-end needs openai, not installed"):
        base.load_backend("openai", "gpt-4o")
    with pytest.raises(MissingExtraError, match=r"pip install 'ambigdocs\[answer\]'$"):
        base.load_backend("openai", "gpt-4o")
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'ambigdocs\[vllm\]'$"):
        base.load_backend("vllm", "some/model")


@pytest.mark.parametrize(
    ("blocked", "argv", "line"),
    [
        (
            "faiss",
            ["retrieve", "--passages", "p.tsv", "--output", "OUT", "--split", "test"],
            "ambigdocs retrieve: error: dense retrieval needs faiss, not installed: "
            "pip install 'ambigdocs[retrieval]'",
        ),
        (
            "mwxml",
            ["build", "gather", "--dump", "x.xml", "--output", "OUT"],
            "ambigdocs build gather: error: reading a MediaWiki dump needs mwxml, not "
            "installed: pip install 'ambigdocs[build]'",
        ),
    ],
)
def test_a_command_needing_a_missing_extra_ends_in_one_line(
    blocked, argv, line, tmp_path, capsys, monkeypatch
):
    from generation.cli import main

    monkeypatch.setitem(sys.modules, blocked, None)
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines() == [line]
    assert not (tmp_path / "out").exists()


def _sample_args(sample_dir, out) -> list[str]:
    return [str(sample_dir / "answers.json"), "--allow-duplicate-qids", "--output-dir", str(out)]


def test_evaluate_without_df1_extra_skips_the_default_and_refuses_a_named_model(
    sample_dir, tmp_path, capsys, monkeypatch
):
    monkeypatch.setitem(sys.modules, "torch", None)
    assert evaluate_main(_sample_args(sample_dir, tmp_path / "a")) == 0
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "Disambig-F1 skipped: the QA model needs torch, not installed: pip install 'ambigdocs[df1]'"
    ]
    summary = (tmp_path / "a" / "summary.json").read_text(encoding="utf-8")
    assert '"disambig_f1"' not in summary

    code = evaluate_main([*_sample_args(sample_dir, tmp_path / "b"), "--qa-model", "some/qa"])
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "ambigdocs evaluate: error: --qa-model some/qa needs torch, not installed: "
        "pip install 'ambigdocs[df1]'"
    ]


def test_a_missing_module_is_found_without_importing_it(monkeypatch):
    assert extras.missing_modules(["json", "no_such_module_xyz"]) == ["no_such_module_xyz"]
    monkeypatch.delitem(sys.modules, "faiss", raising=False)
    extras.missing_modules(["faiss"])
    assert "faiss" not in sys.modules


# --- an `import ambigdocs` that a folder named `ambigdocs` cannot shadow ------------------------


@pytest.fixture(scope="module")
def clone_named_ambigdocs(repo_root, tmp_path_factory) -> Path:
    """A copy of the repository in a folder named `ambigdocs`, as a plain `git clone` names it."""
    folder = tmp_path_factory.mktemp("above") / "ambigdocs"
    shutil.copytree(repo_root, folder, ignore=_NOT_IN_A_CLONE)
    return folder


def _editable_install(clone: Path, prefix: Path, *options: str) -> Path:
    """pip's editable install of `clone` into `prefix`; returns its site-packages folder."""
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
        # --ignore-installed: without it pip first uninstalls the environment's own ambigdocs
        # (the developer's `make setup` install, its console script included).
        + ["--ignore-installed", "--no-index", "--prefix", str(prefix), "-e", str(clone)]
        + list(options),
        check=True,
        capture_output=True,
        timeout=300,
    )
    (site_packages,) = prefix.glob("lib/python*/site-packages")
    return site_packages


# Run from the folder above the clone, as a notebook beside it: the clone folder is on sys.path
# first (''). Only the install's own site folder is processed (its .pth files), then the test
# interpreter's packages are appended unprocessed, so no other install of ambigdocs interferes.
_IMPORT = """
import site, sys
site.addsitedir({site!r})
sys.path += {packages!r}
import ambigdocs
print(ambigdocs.__file__, hasattr(ambigdocs, "load_ambigdocs"))
"""


def _import_from_above(clone: Path, site_packages: Path) -> tuple[str, str]:
    import site

    code = _IMPORT.format(site=str(site_packages), packages=site.getsitepackages())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=clone.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    return tuple(run.stdout.split())


@pytest.mark.slow
def test_import_from_above_a_clone_named_ambigdocs_after_make_setup(
    clone_named_ambigdocs, tmp_path
):
    # The Makefile's editable install (compat mode): the clone itself goes on sys.path.
    makefile = (clone_named_ambigdocs / "Makefile").read_text(encoding="utf-8")
    assert "-e . --config-settings editable_mode=compat" in makefile
    compat = _editable_install(
        clone_named_ambigdocs, tmp_path / "compat", "--config-settings", "editable_mode=compat"
    )
    module_file, has_loader = _import_from_above(clone_named_ambigdocs, compat)
    assert Path(module_file) == clone_named_ambigdocs / "ambigdocs.py" and has_loader == "True"


@pytest.mark.slow
def test_the_default_editable_mode_is_shadowed_as_the_issue_found(clone_named_ambigdocs, tmp_path):
    # Why the Makefile asks for compat mode: the default mode's finder is asked only after
    # sys.path, where the clone folder is found first as an empty namespace package.
    lenient = _editable_install(clone_named_ambigdocs, tmp_path / "lenient")
    assert _import_from_above(clone_named_ambigdocs, lenient) == ("None", "False")
