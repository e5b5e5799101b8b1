"""Benchmark: `report.html` on the test split's size, rendered lazily against all at once.

Builds results files shaped like the test split (7,220 questions; `bench_evaluate.make_results`)
for several systems (the same questions, each system with its own answers), runs

    ambigdocs evaluate S1 ... Sk --output-dir DIR --no-df1 --report

and reports the time the intervals, comparison and page add to the command, the page's size,
and, in headless Chromium (Selenium with the system chromedriver), the time to open the page
from disk and to apply a filter:

- naive: every example rendered at once (the page opened with `#eager`);
- ours: the default, which renders a screenful at a time as the reader scrolls.

    .venv/bin/python benchmarks/bench_report.py [--n 7220] [--systems 4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tests"))

from bench_evaluate import make_results  # noqa: E402


def system_answer(rng: random.Random, row: dict) -> str:
    """An answer in the style of bench_evaluate's, drawn with this system's generator."""
    parts = []
    for d in row["docs"]:
        gold = next(g for g in row["documents"] if g["pid"] == d["pid"])
        r = rng.random()
        if r < 0.45:
            parts.append(f"{d['title']} is known for {gold['answer']}.")
        elif r < 0.7:
            parts.append(f"{row['ambiguous_entity']} was {gold['answer']} in the provided context.")
    parts.append(" ".join(rng.choices(row["docs"][0]["text"].split(), k=rng.randint(5, 40))))
    return " ".join(parts)


def write_systems(tmp: Path, n: int, k: int) -> list[Path]:
    rows = make_results(n, seed=0)
    paths = []
    for s in range(k):
        rng = random.Random(100 + s)
        path = tmp / f"system{s + 1}.jsonl"
        with path.open("w") as f:
            for row in rows:
                f.write(json.dumps({**row, "gen_answer": system_answer(rng, row)}) + "\n")
        paths.append(path)
    return paths


def evaluate_seconds(paths: list[Path], out: Path, extra: list[str], repeat: int) -> float:
    cmd = [sys.executable, "-m", "generation.cli", "evaluate", *map(str, paths)]
    cmd += ["--output-dir", str(out), "--no-df1", *extra]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=REPO)
        times.append(time.perf_counter() - t0)
    return min(times)


def browser_times(page: Path, fragment: str, repeat: int) -> dict:
    """Best open and filter times (seconds) and the number of examples in the DOM."""
    from report_browser import file_url, headless_chromium

    driver = headless_chromium()
    best = {"open": float("inf"), "filter": float("inf")}
    try:
        for _ in range(repeat):
            driver.get("about:blank")
            t0 = time.perf_counter()
            driver.get(file_url(page) + fragment)  # returns after the load event
            best["open"] = min(best["open"], time.perf_counter() - t0)
            t0 = time.perf_counter()
            driver.execute_script(
                "const s = document.getElementById('f-category'); s.value = 'merged';"
                "s.dispatchEvent(new Event('change'));"
            )
            best["filter"] = min(best["filter"], time.perf_counter() - t0)
        best["rendered"] = driver.execute_script(
            "return document.querySelectorAll('article[data-qid]').length"
        )
        best["errors"] = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    finally:
        driver.quit()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=7220)
    parser.add_argument("--systems", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        paths = write_systems(tmp, args.n, args.systems)
        plain = evaluate_seconds(paths, tmp / "plain", ["--bootstrap", "0"], args.repeat)
        full = evaluate_seconds(paths, tmp / "full", ["--report"], args.repeat)
        page = tmp / "full" / "report.html"
        print(f"{args.n} questions x {args.systems} systems")
        print(f"evaluate --bootstrap 0:                 {plain:6.2f}s")
        print(f"evaluate (1000 resamples) --report:     {full:6.2f}s   (+{full - plain:.2f}s)")
        print(f"report.html: {page.stat().st_size / 2**20:.1f} MiB")
        eager = browser_times(page, "#eager", args.repeat)
        lazy = browser_times(page, "", args.repeat)
        for name, t in (("naive (all at once)", eager), ("ours (lazy)", lazy)):
            print(
                f"{name:>20}: open {t['open']:6.2f}s  filter {t['filter']:6.2f}s  "
                f"examples in the page {t['rendered']:5d}  console errors {len(t['errors'])}"
            )
        print(
            f"speed-up: open {eager['open'] / lazy['open']:.1f}x, "
            f"filter {eager['filter'] / lazy['filter']:.1f}x"
        )


if __name__ == "__main__":
    main()
