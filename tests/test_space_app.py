"""The Space that `ambigdocs push-metric` writes runs: its `app.py` is started with the Gradio
the Space declares, opened in headless Chromium, one prediction and one reference row are typed
in and submitted, and the scores shown are the metric's `compute` in this process.

Gradio conflicts with the pinned requirements (`pip install --dry-run gradio==6.31.0` in the
`make setup` environment would downgrade its pillow 13.0.0 to 12.3.0; and the Space's declared
Gradio must be the one tested), so it is installed from the package index into a virtual
environment of its own, kept under the user's cache folder and
keyed by the Gradio version and the Space's requirements: later runs start at once. The Hub is
never asked (offline); only that first install needs the package index.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import selectors
import shutil
import subprocess
import sys
import time
from pathlib import Path

import evaluate
import pytest
from huggingface_hub import SpaceCard
from report_browser import CHROMEDRIVER, chromium_binary, headless_chromium

from generation.hub import push_metric

pytestmark = [
    pytest.mark.network,
    pytest.mark.skipif(
        chromium_binary() is None or not os.path.exists(CHROMEDRIVER),
        reason="needs Debian's chromium and chromium-driver (apt-get install chromium "
        "chromium-driver; .ci/run installs them)",
    ),
]

REPO_ID = "me/ambigdocs_metric"
# The widget never passes a QA model (its inputs are the module's features), so the Space's
# Disambig-F1 requirements are left out of the test's environment (gigabytes of torch).
DF1_ONLY = {"torch", "transformers"}
# The README's first example: the answer names two of the three Judge Days.
ANSWER = "Charles Bernard Day was born in Alabama, and William Louis Day in Ohio."


def _requirement_name(line: str) -> str:
    return re.split(r"[<>=!~\[; ]", line.strip(), maxsplit=1)[0].lower()


def _space_requirements(folder: Path) -> list[str]:
    gradio = SpaceCard.load(folder / "README.md").data["sdk_version"]
    lines = (folder / "requirements.txt").read_text(encoding="utf-8").splitlines()
    kept = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    return [f"gradio=={gradio}"] + [r for r in kept if _requirement_name(r) not in DF1_ONLY]


def _cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ambigdocs"


def space_python(requirements: list[str]) -> Path:
    """The Python of a virtual environment holding `requirements`, made once and cached.

    It is built beside its final place and renamed into it when complete, so an interrupted
    install is never reused.
    """
    key = hashlib.sha256("\n".join(requirements).encode()).hexdigest()[:12]
    gradio = requirements[0].split("==")[1]
    venv = _cache_root() / f"space-venv-gradio-{gradio}-{key}"
    python = venv / "bin" / "python"
    if python.is_file():
        return python
    building = venv.with_name(f"{venv.name}.building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(building)], check=True, timeout=300)
    pip = [str(building / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    install = subprocess.run(
        [*pip, *requirements], capture_output=True, text=True, timeout=1200, check=False
    )
    if install.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        pytest.fail(f"cannot install the Space's requirements {requirements}: {install.stderr}")
    try:
        building.rename(venv)
    except OSError:  # another run finished first: use its environment
        shutil.rmtree(building, ignore_errors=True)
    return python


@pytest.fixture(scope="module")
def space(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("space") / "ambigdocs_metric"
    push_metric.build_space_folder(REPO_ID, folder)
    return folder


@pytest.fixture(scope="module")
def server_url(space, tmp_path_factory):
    """`python app.py` in the Space's folder, as the Space runs it; yields the URL it reports.

    Gradio tries its ports in turn and moves to the next when the server cannot bind one, then
    prints the address it bound: the test reads that line (no port chosen beforehand, no race).
    """
    python = space_python(_space_requirements(space))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADIO_")}
    env.pop("PYTHONPATH", None)
    env.update(
        HF_HUB_OFFLINE="1",
        HF_HOME=str(tmp_path_factory.mktemp("space-hf")),
        GRADIO_ANALYTICS_ENABLED="False",
        GRADIO_SERVER_NAME="127.0.0.1",
        PYTHONUNBUFFERED="1",
    )
    proc = subprocess.Popen(
        [str(python), "app.py"],
        cwd=space,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield _reported_url(proc)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _reported_url(proc: subprocess.Popen, limit_s: float = 240) -> str:
    """The `Running on local URL: ...` address the app prints, or the app's output on failure."""
    seen: list[str] = []
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if not selector.select(timeout=deadline - time.monotonic()):
            break
        line = proc.stdout.readline()
        if not line:  # the app exited
            break
        seen.append(line)
        found = re.search(r"Running on local URL:\s*(http://\S+)", line)
        if found:
            return found.group(1)
    proc.kill()
    pytest.fail("the Space's app.py did not start:\n" + "".join(seen[-40:]))


def _reference(sample_dir) -> dict:
    """The sample's first row (Judge Day) as a user types it: the fields the metric reads."""
    row = json.loads((sample_dir / "test.json").read_text(encoding="utf-8"))[0]
    documents = [{"title": d["title"], "answer": d["answer"]} for d in row["documents"]]
    return {
        "question": row["question"],
        "ambiguous_entity": row["ambiguous_entity"],
        "documents": documents,
    }


def _wait(driver, seconds: float):
    """Polls until a condition holds; an element re-rendered meanwhile is looked up again."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    ignored = (NoSuchElementException, StaleElementReferenceException)
    return WebDriverWait(driver, seconds, ignored_exceptions=ignored)


def _type_into_cell(driver, column: int, text: str) -> None:
    """Selects the first row's cell, opens its editor (Enter), types `text`, commits (Enter).

    Each step waits for the page to show the previous one (the table re-renders its cells)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    selector = f'[data-testid="cell-0-{column}"]'

    def cell(d):
        return d.find_element(By.CSS_SELECTOR, selector)

    _wait(driver, 60).until(lambda d: cell(d).is_displayed())
    cell(driver).click()
    _wait(driver, 10).until(lambda d: "cell-selected" in cell(d).get_attribute("class"))
    driver.switch_to.active_element.send_keys(Keys.ENTER)

    def editor(d):
        boxes = cell(d).find_elements(By.TAG_NAME, "textarea")
        return boxes[0] if boxes and boxes[0] == d.switch_to.active_element else None

    box = _wait(driver, 10).until(editor)
    box.send_keys(text)
    box.send_keys(Keys.ENTER)
    try:
        _wait(driver, 10).until(lambda d: text in cell(d).text)
    except Exception:
        pytest.fail(f"cell {column} shows {cell(driver).text!r} after typing {text!r}")


def _scores_or_error(driver) -> str | None:
    """The output box's text once filled, `error: ...` once Gradio shows an error toast."""
    from selenium.webdriver.common.by import By

    toasts = driver.find_elements(By.CSS_SELECTOR, '[data-testid="toast-body"]')
    if toasts:
        return "error: " + " ".join(t.text for t in toasts)
    return driver.find_element(By.CSS_SELECTOR, '[data-testid="textbox"]').get_attribute("value")


def test_the_space_scores_a_typed_row_as_compute_does(server_url, sample_dir, tmp_path):
    from selenium.webdriver.common.by import By

    reference = _reference(sample_dir)
    driver = headless_chromium(user_data_dir=str(tmp_path / "chromium-profile"))
    try:
        driver.get(server_url)
        _type_into_cell(driver, 0, ANSWER)
        _type_into_cell(driver, 1, json.dumps(reference))
        driver.find_element(By.XPATH, "//button[normalize-space()='Submit']").click()
        output = _wait(driver, 120).until(_scores_or_error)
        assert not output.startswith("error:"), output
        shown = ast.literal_eval(output)
    finally:
        driver.quit()

    local = evaluate.load(str(push_metric.METRIC_DIR / push_metric.MODULE_FILE))
    assert shown == local.compute(predictions=[ANSWER], references=[reference])
    # The values the README states for this answer (two of the three Judge Days named).
    assert {k: round(v, 3) for k, v in shown.items() if k.endswith("recall")} == {
        "answer_recall": 0.667,
        "entity_recall": 0.833,
        "entity_answer_recall": 0.667,
    }
    assert shown["partial"] == 1.0
