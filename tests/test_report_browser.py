"""report.html in a real browser: headless Chromium opens it from disk (Selenium with the
system chromedriver: `apt-get install chromium chromium-driver`)."""

import json

import pytest
from report_browser import CHROMEDRIVER, chromium_binary, file_url, headless_chromium
from test_evaluate_cli import random_results

from generation.report.evaluate import main

pytestmark = pytest.mark.skipif(
    chromium_binary() is None or not __import__("os").path.exists(CHROMEDRIVER),
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)",
)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A report over two systems: 120 and 100 examples (80 shared)."""
    tmp = tmp_path_factory.mktemp("report")
    for name, seed, qids in (("alpha", 1, range(0, 120)), ("beta", 2, range(40, 140))):
        rows = [r for r in random_results(140, seed=seed) if r["qid"] in qids]
        (tmp / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp / "out"
    args = [str(tmp / "alpha.jsonl"), str(tmp / "beta.jsonl"), "--output-dir", str(out)]
    assert main([*args, "--no-df1", "--report", "--bootstrap", "100"]) == 0
    per = {
        n: [json.loads(x) for x in (out / n / "per_example.jsonl").read_text().splitlines()]
        for n in ("alpha", "beta")
    }
    return out / "report.html", per


@pytest.fixture(scope="module")
def browser():
    driver = headless_chromium()
    yield driver
    driver.quit()


def shown_qids(driver):
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('article[data-qid]'), a => a.dataset.qid)"
    )


def select(driver, element_id, value):
    driver.execute_script(
        "const s = document.getElementById(arguments[0]); s.value = arguments[1];"
        "s.dispatchEvent(new Event('change'));",
        element_id,
        value,
    )


def search(driver, text, shown):
    """Types `text` into the search box and waits until the count says `shown(n)` holds for the
    n questions shown: the page filters once typing pauses (a 150 ms debounce), so the test
    waits for that DOM change, not for a time."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_script(
        "const s = document.getElementById('f-search'); s.value = arguments[0];"
        "s.dispatchEvent(new Event('input'));",
        text,
    )

    def filtered(d):
        count = d.find_element("id", "count").text  # "N of 140 questions"
        return shown(int(count.split(" of ")[0]))

    WebDriverWait(driver, 30, poll_frequency=0.05).until(filtered)


def test_report_renders_filters_and_logs_no_errors(report, browser, tmp_path):
    path, per = report
    browser.get(file_url(path))
    assert browser.execute_script("return document.body.dataset.ready") == "1"
    first = shown_qids(browser)
    # Rendered lazily: the first screenfuls, in file order (alpha's qids, then beta's new ones).
    assert 0 < len(first) < 140 and first[:3] == ["0", "1", "2"]
    assert "140 of 140 questions" in browser.find_element("id", "count").text
    assert "Entity-Answer Recall" in browser.find_element("id", "summary").text
    assert "80 shared questions" in browser.find_element("id", "comparison").text

    # A filter changes what is shown: beta's merged answers only, exactly those.
    select(browser, "f-system", "1")
    select(browser, "f-category", "merged")
    want = [str(r["qid"]) for r in per["beta"] if r["category"] == "merged"]
    browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
    assert shown_qids(browser) == want[: len(shown_qids(browser))] and shown_qids(browser)
    assert f"{len(want)} of 140 questions" in browser.find_element("id", "count").text
    answers = browser.find_elements("css selector", "article.ex .answer")
    assert answers and all(a.text.startswith("beta") for a in answers)

    # Search narrows to the examples holding the text; disagreements jump to a disagreeing one.
    select(browser, "f-category", "")
    select(browser, "f-system", "-1")
    needle = browser.find_element("css selector", "article.ex .question").text
    search(browser, needle, lambda n: 0 < n < 140)
    found = browser.find_elements("css selector", "article.ex")
    assert found and all(needle.lower() in a.text.lower() for a in found)
    assert "140 of 140" not in browser.find_element("id", "count").text
    search(browser, "text-that-is-nowhere", lambda n: n == 0)
    assert shown_qids(browser) == []
    search(browser, "", lambda n: n == 140)
    browser.find_element("id", "next-disagree").click()
    flashed = browser.find_element("css selector", "article.flash")
    cats = {n: {str(r["qid"]): r["category"] for r in per[n]} for n in per}
    qid = flashed.get_attribute("data-qid")
    assert cats["alpha"][qid] != cats["beta"][qid]

    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    browser.execute_script("window.scrollTo(0, 0)")
    select(browser, "f-category", "")
    browser.execute_script("document.getElementById('examples').scrollIntoView()")
    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
