"""The seed stage's passage-pair test, fast: word-set Jaccard and longest common word sequence.

Decides what the authors' quadratic DP decides (docs/pipeline.md §2), the reported overlap
included: n >= 4 exactly when two passages share a 4-word sequence, so a set test rejects nearly
every pair, and only shared starts are extended (capped at 10). How and why:
docs/building-seed.md, "Speed". `reference_overlap` is the authors' DP (`--method dp`, tests).
"""

from __future__ import annotations

# A pair is a candidate when MIN_EXCLUSIVE < n < MAX_EXCLUSIVE (docs/pipeline.md §2).
MIN_EXCLUSIVE = 3
MAX_EXCLUSIVE = 10
JACCARD_MAX = 0.4

# Shared sequences shorter than this cannot make a candidate, so they are never looked at.
_GRAM = MIN_EXCLUSIVE + 1


def words_of(text: str) -> list[str]:
    """The words the rule compares: lower-cased, split on any whitespace (as `str.split()`)."""
    return text.lower().split()


class PreparedPassage:
    """One passage, ready for many pair tests.

    Attributes:
        words: the lower-cased words.
        grams: the set of its 4-word sequences (tuples of words).
    """

    __slots__ = ("words", "grams", "_word_set", "_first", "_repeats")

    def __init__(self, text: str):
        words = words_of(text)
        self.words = words
        # zip builds the tuples in C: preparing a passage costs ~15 microseconds, so even pages
        # with one pair per passage stay far below the DP's cost (~1 ms per pair).
        self.grams = set(zip(words, words[1:], words[2:], words[3:], strict=False))
        self._word_set: set[str] | None = None
        self._first: dict[tuple[str, ...], int] | None = None
        self._repeats = False

    @property
    def word_set(self) -> set[str]:
        """The set of its words (Jaccard), built on first use."""
        if self._word_set is None:
            self._word_set = set(self.words)
        return self._word_set

    def starts(self, gram: tuple[str, ...]) -> list[int]:
        """The start positions of one of its 4-word sequences, ascending."""
        if self._first is None:
            w = self.words
            grams = list(zip(w, w[1:], w[2:], w[3:], strict=False))
            # Built in C from the end, so each sequence keeps its first position.
            self._first = dict(zip(reversed(grams), range(len(grams) - 1, -1, -1), strict=True))
            self._repeats = len(self._first) != len(grams)
        first = self._first[gram]
        if not self._repeats:
            return [first]
        w = self.words
        return [s for s in range(first, len(w) - _GRAM + 1) if tuple(w[s : s + _GRAM]) == gram]


def too_similar(a_set: frozenset | set, b_set: frozenset | set) -> bool:
    """The Jaccard skip, computed with the same integer counts and float division as the authors.

    Two empty passages have no defined overlap (the authors' script divides by zero); they are
    treated as not too similar, and then have n = 0, so they are never a candidate either way.
    """
    inter = len(a_set & b_set)
    union = len(a_set) + len(b_set) - inter
    return union > 0 and inter / union > JACCARD_MAX


def pair_overlap(a: PreparedPassage, b: PreparedPassage) -> tuple[int, int]:
    """The pair's value under the rule, and where passage `a`'s overlap starts.

    Args:
        a: the first passage (entity i, the one whose words are reported).
        b: the second passage (entity j).

    Returns:
        (n, start): n is the longest common word sequence length when it makes a candidate
        (3 < n < 10) and the Jaccard test passes, else 0; start is the position in `a.words` of
        the reported overlap (the DP's first maximum), meaningful only when n > 0.
    """
    if a.grams.isdisjoint(b.grams):
        return 0, 0  # n <= 3: by far the most common case
    if too_similar(a.word_set, b.word_set):
        return 0, 0
    a_words, b_words = a.words, b.words
    la, lb = len(a_words), len(b_words)
    best, best_start = 0, 0
    for gram in a.grams & b.grams:
        b_starts = b.starts(gram)
        for s in a.starts(gram):
            for t in b_starts:
                n = _GRAM
                # Only lengths up to MAX_EXCLUSIVE matter: reaching it rejects the pair.
                while (
                    n < MAX_EXCLUSIVE
                    and s + n < la
                    and t + n < lb
                    and a_words[s + n] == b_words[t + n]
                ):
                    n += 1
                if n >= MAX_EXCLUSIVE:
                    return 0, 0
                if n > best or (n == best and s < best_start):
                    best, best_start = n, s
    return best, best_start


def reference_overlap(text_1: str, text_2: str) -> str:
    """The authors' rule for one pair with their quadratic DP: the overlap words, or "".

    Reproduces the authors' per-pair function (Jaccard skip on lower-cased word sets, then the
    longest-common-substring DP over lower-cased words, first maximum in row-major order). Used by
    `--method dp` and the tests; about 100-1000x slower than `pair_overlap`.

    Returns:
        The reported overlapping words joined by single spaces ("" when skipped or none).
    """
    w1, w2 = words_of(text_1), words_of(text_2)
    if too_similar(set(w1), set(w2)):
        return ""
    prev = [0] * (len(w2) + 1)
    best, best_end = 0, 0
    for i in range(1, len(w1) + 1):
        cur = [0] * (len(w2) + 1)
        wi = w1[i - 1]
        for j in range(1, len(w2) + 1):
            if wi == w2[j - 1]:
                cur[j] = prev[j - 1] + 1
                if cur[j] > best:
                    best, best_end = cur[j], i
        prev = cur
    return " ".join(w1[best_end - best : best_end])


def overlap_words(a: PreparedPassage, n: int, start: int) -> str:
    """The reported overlap: `a`'s n words from `start`, joined by single spaces."""
    return " ".join(a.words[start : start + n])
