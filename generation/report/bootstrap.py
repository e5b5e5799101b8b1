"""Bootstrap confidence intervals for the means in `summary.json`, resampling examples
(docs/report.md, "Intervals"); each mean leaves out the examples without its score, as
`scoring.aggregate` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from generation.report.layout import SCORE_KEYS
from metric.ambigdocs_metric.scoring import CATEGORIES

if TYPE_CHECKING:
    import numpy as np

# numpy is imported where the resampling needs it: `--bootstrap 0` (and the plain means of the
# slices) keep `ambigdocs evaluate` free of it, as the scorer is.
LEVEL = 0.95
# Below this many examples, intervals and p-values rest on too few questions to mean much
# (the usual rule of thumb for a mean's sampling distribution).
SMALL_SAMPLE = 30
# Resamples drawn at once: bounds the (chunk x examples) weight matrix to a few tens of MB.
CHUNK = 100
# The most resamples `ambigdocs evaluate --bootstrap` takes: far past the point where more
# change an interval (10,000 already fix a 95% bound to about a thousandth), still seconds.
MAX_RESAMPLES = 1_000_000


def value_matrix(records: Sequence[dict], keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per-example values of `keys` as (values, defined): two (examples x keys) float arrays.

    A score key takes the record's value; a category key the indicator of that category.
    `defined` is 1 where the value counts towards the mean (0 for None, or no category).
    """
    import numpy as np

    values = np.zeros((len(records), len(keys)))
    defined = np.zeros((len(records), len(keys)))
    for j, key in enumerate(keys):
        if key in CATEGORIES:
            cats = [rec.get("category") for rec in records]
            defined[:, j] = [c is not None for c in cats]
            values[:, j] = [c == key for c in cats]
        else:
            column = [rec.get(key) for rec in records]
            defined[:, j] = [v is not None for v in column]
            values[:, j] = [0.0 if v is None else v for v in column]
    return values, defined


def summary_keys(summary: dict) -> list[str]:
    """The means of a summary that get an interval: its scores and category fractions."""
    return [k for k in (*SCORE_KEYS, *CATEGORIES) if k in summary]


def resample_weights(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """How often each of `n` examples is drawn in each of `size` resamples: (size x n)."""
    import numpy as np

    draws = rng.integers(0, n, size=(size, n)) + (np.arange(size) * n)[:, None]
    return np.bincount(draws.ravel(), minlength=size * n).reshape(size, n).astype(float)


def resampled_means(
    values: np.ndarray, defined: np.ndarray, n_resamples: int, seed: int
) -> np.ndarray:
    """The means of every column in each resample: (n_resamples x keys); NaN where a resample
    drew no example with a defined value."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = values.shape[0]
    weighted = values * defined
    out = []
    for start in range(0, n_resamples, CHUNK):
        w = resample_weights(rng, n, min(CHUNK, n_resamples - start))
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append((w @ weighted) / (w @ defined))
    return np.concatenate(out) if out else np.zeros((0, values.shape[1]))


def percentile_interval(samples: np.ndarray, level: float = LEVEL) -> list[list[float | None]]:
    """The percentile interval of each column, ignoring NaN; [None, None] for an empty one."""
    import numpy as np

    tail = 100 * (1 - level) / 2
    out = []
    for column in samples.T:
        column = column[~np.isnan(column)]
        bounds = np.percentile(column, [tail, 100 - tail]) if column.size else [None, None]
        out.append([None if b is None else float(b) for b in bounds])
    return out


def bootstrap_ci(
    records: Sequence[dict],
    keys: Sequence[str],
    n_resamples: int = 1000,
    seed: int = 0,
    level: float = LEVEL,
) -> dict[str, list[float | None]]:
    """Percentile-bootstrap intervals {key: [low, high]} of the means of `keys` (score and
    category names) over per-example records; 0 resamples or no records give none ({})."""
    if n_resamples <= 0 or not records or not keys:
        return {}
    values, defined = value_matrix(records, keys)
    samples = resampled_means(values, defined, n_resamples, seed)
    return dict(zip(keys, percentile_interval(samples, level), strict=True))


def point_means(records: Sequence[dict], keys: Sequence[str]) -> dict[str, float | None]:
    """The mean of each key over the records where it is defined (None where nowhere)."""
    out = {}
    for key in keys:
        if key in CATEGORIES:
            cats = [c for c in (rec.get("category") for rec in records) if c is not None]
            out[key] = sum(c == key for c in cats) / len(cats) if cats else None
        else:
            values = [v for v in (rec.get(key) for rec in records) if v is not None]
            out[key] = sum(values) / len(values) if values else None
    return out


def small_sample_note(n: int, what: str = "intervals") -> str | None:
    """A warning when `n` examples are too few for `what` (intervals, p-values) to mean much,
    else None."""
    if n >= SMALL_SAMPLE:
        return None
    return (
        f"Only {n} examples: the 95% {what} rest on very few questions and can mislead "
        f"(fewer than {SMALL_SAMPLE})."
    )
