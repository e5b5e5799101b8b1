"""Test-wide settings: offline, caches in a temporary folder, shared tiny models."""

import os
import sys
import tempfile
from pathlib import Path

# Before any Hugging Face library is imported: never touch the network, never write to ~/.cache.
_CACHE = tempfile.mkdtemp(prefix="ambigdocs-test-cache-")
for _var, _value in {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HOME": os.path.join(_CACHE, "hf"),
    "HF_DATASETS_CACHE": os.path.join(_CACHE, "datasets"),
    "TOKENIZERS_PARALLELISM": "false",
}.items():
    os.environ[_var] = _value

import pytest  # noqa: E402
from hypothesis import settings as hypothesis_settings  # noqa: E402

# Hypothesis profiles. `ci` (chosen when CI=true, or with HYPOTHESIS_PROFILE=ci) draws the same
# examples on every run (derandomize) and keeps no example database, so one run's failures never
# leak into the next and a failure reproduces from the command alone. `dev` (the default) is
# Hypothesis's own: random examples, failures replayed from .hypothesis/.
hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
hypothesis_settings.register_profile("dev")


def hypothesis_profile(env) -> str:
    """The profile a run uses: HYPOTHESIS_PROFILE if set, else `ci` when CI is true."""
    return env.get("HYPOTHESIS_PROFILE") or (
        "ci" if env.get("CI", "").lower() in ("1", "true", "yes") else "dev"
    )


HYPOTHESIS_PROFILE = hypothesis_profile(os.environ)
hypothesis_settings.load_profile(HYPOTHESIS_PROFILE)


def pytest_report_header(config):
    return (
        f"hypothesis profile: {HYPOTHESIS_PROFILE} (CI=true or HYPOTHESIS_PROFILE=ci: derandomized)"
    )


REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
SAMPLE_DIR = REPO / "generation" / "resources" / "sample"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    return SAMPLE_DIR


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory) -> Path:
    """A random tiny Llama with a plain (template-free) tokenizer, saved to a folder."""
    from tiny_models import make_tiny_llama

    return make_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def tiny_chat_llama_dir(tmp_path_factory) -> Path:
    """The same tiny Llama whose tokenizer has a chat template."""
    from tiny_models import make_tiny_llama

    return make_tiny_llama(tmp_path_factory.mktemp("tiny-chat-llama"), chat_template=True)
