#!/usr/bin/env python3
"""CI step: a plain `pip install CLONE` into a fresh virtual environment is the light core.

Checks, in the fresh environment, offline for the Hub (the package index is used to install):

- no torch and no transformers got installed;
- the environment measures at most 800 MB (`du`);
- `ambigdocs evaluate --no-df1` on the bundled sample works, and without `--no-df1` the
  default Disambig-F1 is skipped with one line naming the `df1` extra (exit status 0);
- `load_ambigdocs(config="sample")` and `load_metric().compute(...)` work, run from the folder
  above a clone named `ambigdocs` (the installed module wins over the folder);
- `ambigdocs export ambigdocs --config sample`, then `load_dataset("ambigdocs")` on it.

Stdlib only; run with any Python >= 3.10: `python3 .ci/fresh_install.py [--keep DIR]`.
Exit status 1 on the first failed check (the reason printed), 0 when all pass.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_MB = 800
NOT_IN_A_CLONE = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", "*.egg-info", "build", "demo-output", ".*_cache"
)
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
}

CHECK_IMPORTS = """
import importlib.util, sys
heavy = [m for m in ("torch", "transformers") if importlib.util.find_spec(m)]
sys.exit(f"installed though not asked for: {heavy}" if heavy else 0)
"""

# From the folder above a clone named `ambigdocs` (the clone folder is on sys.path first).
CHECK_LIBRARY = """
import ambigdocs, sysconfig
from pathlib import Path
assert Path(ambigdocs.__file__).parent == Path(sysconfig.get_paths()["purelib"]), ambigdocs.__file__
sample = ambigdocs.load_ambigdocs("test", config="sample")
assert sample.num_rows == 5, sample
metric = ambigdocs.load_metric()
scores = metric.compute(predictions=["Charles Bernard Day was born in Alabama."],
                        references=sample.select([0]))
assert 0 < scores["answer_recall"] < 1, scores
print("load_ambigdocs and load_metric: ok", scores["answer_recall"])
"""

CHECK_EXPORT = """
from datasets import load_dataset
ds = load_dataset("ambigdocs", split="test")
assert ds.num_rows == 5, ds
print("load_dataset('ambigdocs') on the export: ok")
"""


def run(cmd: list[str], cwd: Path, env: dict, expect: int = 0) -> subprocess.CompletedProcess:
    print("+", " ".join(cmd), flush=True)
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)
    if done.returncode != expect:
        sys.stdout.write(done.stdout[-4000:])
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"FAILED (exit status {done.returncode}, expected {expect}): {cmd}")
    return done


def size_mb(folder: Path) -> float:
    out = subprocess.run(["du", "-sk", str(folder)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="ambigdocs-fresh-"))
    try:
        return check(work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def check(work: Path) -> int:
    work.mkdir(parents=True, exist_ok=True)
    clone = work / "above" / "ambigdocs"  # as a plain `git clone URL` names it
    shutil.copytree(REPO, clone, ignore=NOT_IN_A_CLONE)
    venv = work / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    run([sys.executable, "-m", "venv", str(venv)], work, env)
    python, ambigdocs = str(venv / "bin" / "python"), str(venv / "bin" / "ambigdocs")
    run([python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"], work, env)
    run([python, "-m", "pip", "install", "--quiet", str(clone)], work, env)

    run([python, "-c", CHECK_IMPORTS], work, env)
    mb = size_mb(venv)
    print(f"fresh virtual environment with the core: {mb:.0f} MB (at most {MAX_MB})")
    if mb > MAX_MB:
        raise SystemExit(f"FAILED: the core install is {mb:.0f} MB, more than {MAX_MB} MB")

    env.update(OFFLINE, HF_HOME=str(work / "hf"), MPLBACKEND="Agg")
    answers = str(clone / "generation" / "resources" / "sample" / "answers.json")
    common = [answers, "--allow-duplicate-qids"]
    run([ambigdocs, "evaluate", "--no-df1", *common, "--output-dir", "a"], work, env)
    done = run([ambigdocs, "evaluate", *common, "--output-dir", "b", "--plot"], work, env)
    skip = [line for line in done.stderr.splitlines() if "Disambig-F1 skipped" in line]
    if len(skip) != 1 or not skip[0].endswith("pip install 'ambigdocs[df1]'"):
        raise SystemExit(f"FAILED: no one-line Disambig-F1 skip naming the extra: {done.stderr}")
    if not (work / "b" / "categories.png").is_file():
        raise SystemExit("FAILED: --plot wrote no categories.png")
    print(done.stdout.strip().splitlines()[-1])

    print(run([python, "-c", CHECK_LIBRARY], clone.parent, env).stdout.strip())

    exported = work / "exported"
    exported.mkdir()
    run([ambigdocs, "export", "ambigdocs", "--config", "sample"], exported, env)
    print(run([python, "-c", CHECK_EXPORT], exported, env).stdout.strip())
    print("fresh install: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
