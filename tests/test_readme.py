"""The README's code runs as pasted: every Python block (except those marked as downloading),
and the scoring section's command on the bundled sample, offline, from a folder that is not the
clone (as in a notebook), with this checkout first on the path."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"

# A block whose first line says it downloads is skipped (the tests never use the network).
DOWNLOADS = "# downloads"


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def _env(repo_root) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo_root), env.get("PYTHONPATH")]))
    return env


def python_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    return [b for b in _blocks(text, "python") if not b.startswith(DOWNLOADS)]


def test_the_readme_has_runnable_blocks_and_marks_the_others(repo_root):
    text = (repo_root / "README.md").read_text(encoding="utf-8")
    every = _blocks(text, "python")
    assert len(python_blocks()) >= 2
    assert [b for b in every if b.startswith(DOWNLOADS)], "the download block is marked"
    scoring = text[text.index("## Scoring answers") :]
    # The {qid, answer} route comes first in the scoring section.
    assert scoring.index("--config sample") < scoring.index("whole rows")


@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_python_block_runs_as_pasted(index, repo_root, tmp_path):
    code = python_blocks()[index]
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=_env(repo_root),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"block {index}:\n{code}\n{run.stderr[-3000:]}"
    # A printed line followed by `# value` in the block: the value is what it prints.
    printed = iter(run.stdout.splitlines())
    for line in code.splitlines():
        expected = re.match(r"print\(.*\)  # ([^:(]+?)(?::|  |$)", line)
        if expected and "..." not in expected.group(1) and "rounded" not in line:
            assert next(printed).strip() == expected.group(1).strip(), line
        elif line.startswith("print("):
            next(printed)


def test_scoring_command_on_the_sample_runs_as_pasted(repo_root, tmp_path):
    text = (repo_root / "README.md").read_text(encoding="utf-8")
    scoring = text[text.index("## Scoring answers") :]
    block = _blocks(scoring, "bash")[0]
    first = block.split("\n# ")[0].replace("\\\n", " ").splitlines()
    command = shlex.split(next(line for line in first if line.startswith("ambigdocs ")))
    command = [a if a != "scores" else str(tmp_path / "scores") for a in command]
    run = subprocess.run(
        [sys.executable, "-m", "generation.cli", *command[1:]],
        cwd=repo_root,
        env=_env(repo_root),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads((tmp_path / "scores" / "summary.json").read_text())
    assert summary["system"] == "paper" and summary["n"] == 10
    assert summary["labels"]["agreed"] == 10  # the paper's labels, all matched
    assert (tmp_path / "scores" / "report.html").exists()
