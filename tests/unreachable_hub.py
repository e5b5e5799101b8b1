"""The environment of a test that runs a command with no offline switch and no Hub (no tests).

The offline variables are removed and the Hub endpoint points at a loopback port where nothing
listens, so every Hub request fails at once with a refused connection, as on a machine without
a network; the caches sit in the test's own folder, so nothing cached elsewhere answers.
"""

from __future__ import annotations

import os
from pathlib import Path

# Port 9 (discard) on loopback: nothing listens there on these machines.
CLOSED_ENDPOINT = "http://127.0.0.1:9"


def unreachable_hub_env(tmp_path: Path, endpoint: str = CLOSED_ENDPOINT, **extra: str) -> dict:
    """os.environ without the `*_OFFLINE` switches, the Hub at `endpoint`, `HF_HOME` under
    `tmp_path`, and `extra` variables set."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_OFFLINE")}
    env.pop("HF_DATASETS_CACHE", None)
    env.update(HF_ENDPOINT=endpoint, HF_HOME=str(tmp_path / "hf"), **extra)
    return env
