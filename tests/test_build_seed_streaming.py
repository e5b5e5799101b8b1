"""`ambigdocs build seed` streams the passage file: passages of titles that no page names (the
bulk of Wikipedia) change nothing in the selection, wherever they sit in the file."""

from __future__ import annotations

import random

from test_build_seed import _synthetic

from generation.cli import main
from generation.io.passages import write_passages_tsv


def test_selection_is_unchanged_by_unrelated_passages(tmp_path):
    rows, pages, tsv, map_path = _synthetic(tmp_path, n_pages=20, rng_seed=3)
    rng = random.Random(7)
    wanted = {t for ts in pages.values() for t in ts}
    # Unrelated titles that look like wanted ones (same words, a page's own title, a different
    # case, trailing space), with quotes and tabs in the text, spread through the file while the
    # relevant passages keep their order.
    near = [t.replace("(", "[") for t in wanted] + [p for p in pages] + [t.upper() for t in wanted]
    near += [t + " " for t in wanted] + ["Unrelated", "Other (thing)"]
    mixed = list(rows)
    for i in range(3000):
        text = f'filler {i} "quoted\ttext" ' + " ".join(
            rng.choice(["the", "of"]) for _ in range(30)
        )
        mixed.insert(rng.randint(0, len(mixed)), (f"x{i}", text, rng.choice(near)))
    assert not {t for _, _, t in mixed if _.startswith("x")} & wanted
    big = tmp_path / "with_unrelated.tsv"
    write_passages_tsv(big, mixed)

    outputs = []
    for name, path in (("alone", tsv), ("mixed", big)):
        out = tmp_path / f"{name}.jsonl"
        argv = ["build", "seed", "--passages", str(path), "--disambiguation", str(map_path)]
        assert main([*argv, "--output", str(out), "--no-progress"]) == 0
        outputs.append(out.read_text())
    assert outputs[0].count("\n") >= 3  # the corpus does exercise selection
    assert outputs[1] == outputs[0]
