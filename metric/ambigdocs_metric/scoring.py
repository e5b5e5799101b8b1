"""The AmbigDocs scorer: answer/entity/entity-answer recall, answer categories, K-Precision.

Pure Python, no framework import: the `evaluate` module, `ambigdocs evaluate` and the runner all
call it. The semantics are the authors' (their code made the paper's tables), specified in
docs/metric.md. Each string is normalised once per example, by a fast path exactly equivalent
to SQuAD-v2's (`_split_words`). Disambig-F1 needs a QA model and lives in `disambig_f1.py`.
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from .json_files import gc_paused
from .stopwords import STOPWORDS

# The paper this scorer reproduces: the citation of the metric and of the builder's dataset.
CITATION = """\
@inproceedings{lee2024ambigdocs,
  title={AmbigDocs: Reasoning across Documents on Different Entities under the Same Name},
  author={Lee, Yoonsang and Ye, Xi and Choi, Eunsol},
  booktitle={Conference on Language Modeling (COLM)},
  year={2024}
}
"""

# In the order of the paper's Figure 4 (best to worst): every table, chart and summary uses it.
CATEGORIES = ("complete", "partial", "no_answer", "ambiguous", "merged")
SCORE_DOCUMENTS = ("first5", "shown", "all")
# The authors score the first five gold documents, whatever the model was shown (docs/metric.md).
MAX_SCORED_DOCUMENTS = 5

# The instruction opening the zero-shot prompt (paper Figure 11); K-Precision's reference text
# is the whole prompt (docs/metric.md), built by `k_precision_reference`.
ZERO_SHOT_INSTRUCTION = "Answer for the given question using only the provided context."

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_PUNCTUATION_BYTES = string.punctuation.encode("ascii")
# The ASCII characters that are letters, digits, or whitespace to `str.split`.
_ASCII_WORD_OR_SPACE = bytes(c for c in range(128) if chr(c).isalnum() or chr(c).isspace())
# ... and every byte of a non-ASCII character in UTF-8.
_ASCII_WORD_OR_SPACE_OR_HIGH = _ASCII_WORD_OR_SPACE + bytes(range(128, 256))
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_ARTICLE_WORDS = frozenset(("a", "an", "the"))
_DISAMBIGUATION = "(disambiguation)"
assert _ARTICLE_WORDS <= STOPWORDS  # `tokens` relies on it


# --- normalisation -------------------------------------------------------------------------------


def normalize(s: str) -> str:
    """SQuAD-v2 normalisation: lower-case, drop ASCII punctuation, drop articles, fold spaces.

    This is the reference definition; the scorer uses the equivalent, faster `_words`.
    """
    s = s.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", s).split())


def _lower_without_punctuation(s: str) -> str:
    """`s.lower()` without ASCII punctuation.

    Done on UTF-8 bytes: `bytes.translate` has none of `str.translate`'s per-call set-up and
    per-character dictionary look-ups (5 to 50 times faster), and in UTF-8 the ASCII
    punctuation bytes stand only for themselves (every byte of a non-ASCII character is >= 0x80).
    "surrogatepass" carries lone surrogates through unchanged.
    """
    raw = s.lower().encode("utf-8", "surrogatepass")
    return raw.translate(None, _PUNCTUATION_BYTES).decode("utf-8", "surrogatepass")


# A character that is neither a word character nor whitespace (`\w` is `str.isalnum()` or "_",
# `\s` is `str.isspace()`, in `re` as in `str`).
_NON_WORD_NON_SPACE = re.compile(r"[^\w\s]")


def _only_words(s: str) -> bool:
    """Whether every non-space character of `s` is alphanumeric (`s` holds no "_": punctuation
    is removed first)."""
    if s.isascii():  # one C pass: delete letters, digits and spaces, and see if anything is left
        return not s.encode("ascii").translate(None, _ASCII_WORD_OR_SPACE)
    return _NON_WORD_NON_SPACE.search(s) is None


def _split_words(s: str) -> list[str]:
    """Splits lower-cased, punctuation-free text into words as `normalize` would, except that
    whole-word articles may be left in (callers drop them with the stopwords).

    Why this is exact: the article regex only acts on a maximal run of word characters (`\\w`,
    i.e. `str.isalnum()` or `_`, and `_` is punctuation, already gone) equal to a, an or the, and
    `\\b` sees whitespace and string ends alike, so it acts on each whitespace-separated word
    independently. A word made only of word characters is one run: the regex removes it exactly
    when it is an article. Only words holding other characters (non-ASCII punctuation such as
    "–" or "’", control characters) need the regex, and only within themselves.
    """
    words = s.split()
    return words if _only_words(s) else _apply_article_regex(words)


def _article_regex_pieces(words: list[str]):
    """Yields (index, pieces) for each word that the article regex changes (see `_split_words`).

    Only words holding a non-word character can change; they are found by C-level calls.
    """
    flags = list(map(str.isalnum, words))
    i = 0
    while True:
        try:
            i = flags.index(False, i)
        except ValueError:
            return
        word = words[i]
        pieces = _ARTICLES.sub(" ", word).split()
        if pieces != [word]:
            yield i, pieces
        i += 1


def _apply_article_regex(words: list[str]) -> list[str]:
    """`words` with every word that the article regex changes replaced by its pieces."""
    out: list[str] = []
    last = 0
    for i, pieces in _article_regex_pieces(words):
        out += words[last:i]
        out += pieces
        last = i + 1
    if not last:
        return words
    out += words[last:]
    return out


def _raw_words(s: str) -> list[str]:
    """`normalize(s).split()`, except that whole-word articles may be left in."""
    return _split_words(_lower_without_punctuation(s))


def _words(s: str) -> list[str]:
    """`normalize(s).split()`, computed faster (see `_raw_words`)."""
    return [w for w in _raw_words(s) if w not in _ARTICLE_WORDS]


def tokens(s: str) -> list[str]:
    """`normalize(s).split()` without NLTK's English stopwords; duplicates kept (a multiset)."""
    # The articles are stopwords too, so one filter removes both.
    return [w for w in _raw_words(s) if w not in STOPWORDS]


def tokens_many(strings: Sequence[str]) -> list[list[str]]:
    """`[tokens(s) for s in strings]`, with the per-string set-up paid once.

    The strings are joined by newlines and lower-cased and stripped of punctuation in one go;
    both act character by character (lower-casing looks at neighbours only for a final sigma,
    and a newline is a boundary for it as whitespace is), so each line is exactly what the
    string alone would give. Strings that hold a newline themselves take the one-by-one path.
    """
    if not strings:
        return []
    joined = "\n".join(strings)
    if joined.count("\n") != len(strings) - 1:
        return [tokens(s) for s in strings]
    normalised = _lower_without_punctuation(joined)
    # Which lines need the article regex: an ASCII line only if the text holds an ASCII
    # control character (one C pass over all of it); a non-ASCII line if it holds a character
    # that is neither a word character nor whitespace.
    ascii_lines_plain = not normalised.encode("utf-8", "surrogatepass").translate(
        None, _ASCII_WORD_OR_SPACE_OR_HIGH
    )
    out = []
    for line in normalised.split("\n"):
        if (ascii_lines_plain and line.isascii()) or _only_words(line):
            out.append([w for w in line.split() if w not in STOPWORDS])
        else:
            out.append([w for w in _apply_article_regex(line.split()) if w not in STOPWORDS])
    return out


def clean_prediction(y: str) -> str:
    """The authors' clean-up of a model answer: newlines to spaces, whitespace runs folded."""
    return " ".join(y.replace("\n", " ").split())


def surface_name(ambiguous_entity: str) -> str:
    """`sn`: the stored ambiguous entity, stripped, lower-cased, without `(disambiguation)`."""
    sn = ambiguous_entity.strip().lower()
    if sn.endswith(_DISAMBIGUATION):
        sn = sn[: -len(_DISAMBIGUATION)].strip()
    return sn


def bare_title(title: str) -> str:
    """The title without the characters ( and ) (the text inside stays)."""
    return title.replace("(", "").replace(")", "")


# --- recall and F1 -------------------------------------------------------------------------------


def _common(gold: Sequence[str], pred: Mapping[str, int]) -> int:
    """|gold ∩ pred| as multisets (`sum((Counter(gold) & Counter(pred)).values())`).

    Args:
        gold: a token list.
        pred: the prediction's token counts.
    """
    if len(gold) == 1:
        return 1 if gold[0] in pred else 0
    unique = set(gold)
    if len(unique) == len(gold):  # no repeated gold token: each present one counts once
        return len(unique & pred.keys())
    return sum(min(n, pred.get(w, 0)) for w, n in Counter(gold).items())


def token_recall(
    gold: Sequence[str], pred: Sequence[str], pred_counts: Mapping[str, int] | None = None
) -> float:
    """R(gold, y) on token lists: |G ∩ P| / |G|; 1 if both empty, 0 if only one is."""
    if not gold or not pred:
        return 1.0 if list(gold) == list(pred) else 0.0
    counts = Counter(pred) if pred_counts is None else pred_counts
    return 1.0 * _common(gold, counts) / len(gold)


def token_f1(pred: Sequence[str], gold: Sequence[str]) -> float:
    """SQuAD token F1 on token lists (stopwords already removed); 1 if both empty."""
    if not gold or not pred:
        return float(list(gold) == list(pred))
    num_same = _common(gold, Counter(pred))
    if num_same == 0:
        return 0.0
    precision = 1.0 * num_same / len(pred)
    recall = 1.0 * num_same / len(gold)
    return (2 * precision * recall) / (precision + recall)


# --- references ------------------------------------------------------------------------------------


class GoldDocument(NamedTuple):
    title: str
    answer: str
    pid: str | None = None


class Reference(NamedTuple):
    """One AmbigDocs row, as far as scoring needs it (tuples: cheap to build for every row)."""

    question: str
    ambiguous_entity: str
    documents: tuple[GoldDocument, ...]
    qid: object = None


def _where(index: int, qid: object) -> str:
    return f"example {index}" + (f" (qid {qid})" if qid is not None else "")


# --- the one parser of rows and documents ----------------------------------------------------------
#
# Every reader of AmbigDocs rows calls these: the builder (the release's schema, `release=True`),
# the scorer, `ambigdocs answer`, the lm-eval task, `distill` and the build stages (documents).

# The release's row and document fields, in the schema's order (ambigdocs.FEATURES).
ROW_FIELDS = ("qid", "ambiguous_entity", "question", "documents")
DOCUMENT_FIELDS = ("title", "text", "pid", "answer")
# The range of the `qid` column (int64); Arrow refuses anything outside it.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Decimal text that round-trips through int exactly (no "007", no "+7").
_INT_TEXT = re.compile(r"-?(0|[1-9][0-9]*)")


def _field_error(where: str, field: str, problem: str) -> ValueError:
    return ValueError(f"{where}: field {field!r} {problem}")


def _got(value: object) -> str:
    return f"got {type(value).__name__} {value!r:.40}"


def parse_string(value: object, where: str, field: str, non_empty: bool = False) -> str:
    """`value` if it is a string (and, with `non_empty`, not blank).

    Raises:
        ValueError: `{where}: field {field!r} must be a string, got ...`.
    """
    if not isinstance(value, str):
        raise _field_error(where, field, f"must be a string, {_got(value)}")
    if non_empty and not value.strip():
        raise _field_error(where, field, "is empty")
    return value


def parse_qid(qid: object, where: str, release: bool = False) -> int | str | None:
    """A row's qid: an integer or a string (None when absent, unless `release`).

    With `release`, the release's int64: decimal text becomes its int; anything else is refused.

    Raises:
        ValueError: naming `where` and the field.
    """
    if release and isinstance(qid, str) and _INT_TEXT.fullmatch(qid):
        qid = int(qid)
    if qid is None and not release:
        return None
    kinds = int if release else (int, str)
    if isinstance(qid, bool) or not isinstance(qid, kinds):
        need = "an integer" if release else "an integer or a string"
        raise _field_error(where, "qid", f"must be {need}, {_got(qid)}")
    if release and not INT64_MIN <= qid <= INT64_MAX:
        raise _field_error(where, "qid", f"is outside int64 ({str(qid)[:40]})")
    return qid


def parse_documents(
    documents: object,
    where: str,
    need: Sequence[str] = ("title", "answer"),
    field: str = "documents",
    dict_of_lists: bool = True,
    pid_text: bool = False,
) -> list[dict]:
    """The documents of a row, checked: a non-empty list of objects whose `need` fields are
    strings.

    Args:
        documents: the field's value.
        where: the row, as messages name it.
        need: the fields each document must hold as a string.
        field: the field's name (`documents`, `docs`).
        dict_of_lists: also take the older dict of lists (`datasets` sequence features).
        pid_text: a `pid` given as an integer becomes its decimal text (DPR ids are ints in the
            passage file, strings in the release's schema).

    Returns:
        The documents as new dicts (the row is not changed).

    Raises:
        ValueError: names `where` and the field (`documents[2].answer`).
    """
    if dict_of_lists and not isinstance(documents, list) and isinstance(documents, Mapping):
        keys = list(documents)
        for k in keys:
            if not isinstance(documents[k], (list, tuple)):
                raise _field_error(
                    where, f"{field}.{k}", f"must be a list (documents as a dict of lists), "
                    f"got {type(documents[k]).__name__}"
                )  # fmt: skip
        lengths = {len(documents[k]) for k in keys}
        if len(lengths) > 1:
            raise _field_error(where, field, "has lists of different lengths")
        n = lengths.pop() if lengths else 0
        documents = [{k: documents[k][j] for k in keys} for j in range(n)]
    if documents is not None and not isinstance(documents, (list, tuple)):
        raise _field_error(where, field, f"must be a list of objects, {_got(documents)}")
    if not documents:
        raise _field_error(where, field, "is missing or empty")
    out = []
    for j, doc in enumerate(documents):
        if not (isinstance(doc, dict) or isinstance(doc, Mapping)):
            raise _field_error(where, f"{field}[{j}]", f"must be an object, {_got(doc)}")
        doc = dict(doc)
        if pid_text and isinstance(doc.get("pid"), int) and not isinstance(doc["pid"], bool):
            doc["pid"] = str(doc["pid"])
        for key in need:
            if key not in doc:
                raise _field_error(where, f"{field}[{j}].{key}", "is missing")
            parse_string(doc[key], where, f"{field}[{j}].{key}")
        out.append(doc)
    return out


def parse_row(row: object, where: str, release: bool = False, keep_extra: bool = True) -> dict:
    """The one validator of an AmbigDocs row. Text is never altered.

    Args:
        row: the decoded row.
        where: its place, as messages name it (`file, row 3`, `example 3`).
        release: the release's schema exactly (the builder): every field present, `qid` an int64
            (decimal text becomes the int), each document `title`, `text`, `pid` and `answer`
            as strings; the result holds the schema's fields in order. Otherwise what scoring
            needs: `question` and `ambiguous_entity` strings, `qid` absent or an integer or a
            string, documents (a list, or a dict of lists) with string `title` and `answer`.
        keep_extra: keep the fields outside the schema (a model's `gen_answer`, `docs`).

    Returns:
        A new dict; `documents` a list of new dicts.

    Raises:
        ValueError: a field is missing or has the wrong type; names `where` (with the qid when
            there is one) and the field (e.g. `documents[2].answer`).
    """
    if not (isinstance(row, dict) or isinstance(row, Mapping)):
        raise ValueError(f"{where}: a {type(row).__name__}, not an object")
    for field in ROW_FIELDS if release else ():
        if field not in row:
            raise _field_error(where, field, "is missing")
    qid = parse_qid(row.get("qid"), where, release)
    at = where if qid is None or release else f"{where} (qid {qid})"
    out = {
        "qid": qid,
        "ambiguous_entity": parse_string(row.get("ambiguous_entity"), at, "ambiguous_entity"),
        "question": parse_string(row.get("question"), at, "question"),
    }
    need = DOCUMENT_FIELDS if release else ("title", "answer")
    docs = parse_documents(
        row.get("documents"), at, need, dict_of_lists=not release, pid_text=release
    )
    out["documents"] = [{k: d[k] for k in DOCUMENT_FIELDS} for d in docs] if release else docs
    if keep_extra:
        out.update((k, v) for k, v in row.items() if k not in out)
    return out


def parse_reference(row: Mapping, index: int = 0) -> Reference:
    """Reads an AmbigDocs row for scoring (`parse_row`, documents as a list or a dict of lists).

    Raises:
        ValueError: a field is missing, empty or not a string; names the example and field.
    """
    r = parse_row(row, f"example {index}", keep_extra=False)
    gold = tuple(
        GoldDocument(d["title"], d["answer"], None if d.get("pid") is None else str(d["pid"]))
        for d in r["documents"]
    )
    return Reference(r["question"], r["ambiguous_entity"], gold, r["qid"])


def scored_documents(
    reference: Reference, shown: Sequence[Mapping] | None, score_documents: str = "first5"
) -> tuple[GoldDocument, ...]:
    """The gold documents an example is scored on.

    Args:
        reference: the parsed row.
        shown: the documents shown to the model (needed for `shown`).
        score_documents: `first5` (the authors: the first min(5, m) in data-set order, whatever
            was shown), `all` (every gold document), or `shown` (the gold documents that were
            shown, matched by `pid`, or by title when a shown document has no pid).

    Raises:
        ValueError: unknown mode, or `shown` without shown documents.
    """
    if score_documents == "first5":
        return reference.documents[:MAX_SCORED_DOCUMENTS]
    if score_documents == "all":
        return reference.documents
    if score_documents == "shown":
        if shown is None:
            raise ValueError("score_documents='shown' needs the shown documents (contexts)")
        pids = {str(d["pid"]) for d in shown if d.get("pid") is not None}
        titles = {d.get("title") for d in shown if d.get("pid") is None}
        return tuple(d for d in reference.documents if d.pid in pids or d.title in titles)
    raise ValueError(f"score_documents must be one of {SCORE_DOCUMENTS}, got {score_documents!r}")


# --- per-example scores ----------------------------------------------------------------------------


class ExampleScores(NamedTuple):
    """The lexical scores of one answer. Recalls and category are None when no gold document
    was scored (only possible with score_documents='shown')."""

    answer_recall: float | None
    entity_recall: float | None
    entity_answer_recall: float | None
    answer_length: int
    category: str | None
    k_precision: float | None
    n_scored: int


def k_precision_reference(question: str, shown: Sequence[Mapping]) -> str:
    """K: the zero-shot prompt as the authors build it (Figure 11), the reference of K-Precision."""
    parts = [f"{ZERO_SHOT_INSTRUCTION}\nQuestion: {question}\n"]
    parts += [f"Context: {d['title']} | {d['text']}\n" for d in shown]
    parts.append("Answer:")
    return "".join(parts)


def _k_precision(k_words: list[str], pred_counts: Mapping[str, int]) -> float:
    """K-Precision from K's words as `str.split` gives them after lower-casing and punctuation
    removal, before the article regex (`_split_words`), whose effect is added here.

    Only the counts in K of P's words matter, and a word of P is never a stopword nor an
    article, so K's words need no filtering; counting only P's words (a C-level filter) is what
    makes K-Precision cheap: K is the whole prompt, ten times longer than the answer.

    The article regex changes only K's words that hold a non-word character next to an article
    run. No word of P is such a word (P went through the regex, which leaves no such run), so
    the regex adds to K's counts its pieces of those words and takes nothing away; and as every
    piece holds a non-word character, that only matters when some word of P does too.
    """
    n_pred = sum(pred_counts.values())
    if not n_pred:
        # tokens(K) always holds the instruction's words ("answer", "given", ...): never empty.
        return 0.0
    k_counts = Counter(filter(pred_counts.__contains__, k_words))
    if not "".join(pred_counts).isalnum():
        pieces = (p for _, ps in _article_regex_pieces(k_words) for p in ps)
        k_counts.update(filter(pred_counts.__contains__, pieces))
    common = sum(min(n, pred_counts[w]) for w, n in k_counts.items())
    return 1.0 * common / n_pred


def _k_words_many(questions: Sequence[str], shown: Sequence[Sequence[Mapping] | None]) -> list:
    """K's words for every example with shown documents (None for the others), in the form
    `_k_precision` takes, with the per-text set-up paid once, as in `tokens_many`.

    K's own newlines only separate words, so they become spaces and a newline can join the
    prompts; every step acts word by word, so each prompt's words are what it alone would give.
    """
    prompts = [
        None if docs is None else k_precision_reference(q, docs).replace("\n", " ")
        for q, docs in zip(questions, shown, strict=True)
    ]
    present = [k for k in prompts if k is not None]
    if not present:
        return prompts
    normalised = _lower_without_punctuation("\n".join(present))
    per_prompt = iter([line.split() for line in normalised.split("\n")])
    return [None if k is None else next(per_prompt) for k in prompts]


def categorize(c_p: int, c_np: int, n: int) -> str:
    """The answer category from the per-document counts, in the authors' order (docs/metric.md)."""
    if c_p == 0 and c_np == 0:
        return "no_answer"
    if c_p >= n:
        return "complete"
    if c_p == 0 and c_np == 1:
        return "ambiguous"
    if c_np == 0 and c_p > 0:
        return "partial"
    return "merged"


def score_example(
    prediction: str,
    reference: Reference,
    shown: Sequence[Mapping] | None = None,
    score_documents: str = "first5",
) -> ExampleScores:
    """Scores one long-form answer (docs/metric.md, "Per-example scores" and "Answer category").

    Args:
        prediction: the model's answer y.
        reference: the parsed AmbigDocs row (`parse_reference`).
        shown: the documents shown to the model (`title`, `text`, optionally `pid`), for
            K-Precision and for score_documents='shown'; None when unknown.
        score_documents: which gold documents are scored (see `scored_documents`).

    Returns:
        The example's scores.
    """
    contexts = None if shown is None else [shown]
    return score_parsed([prediction], [reference], contexts, score_documents)[0]


def _score_tokenized(
    y: str,
    toks: list[list[str]],
    docs: Sequence[GoldDocument],
    k_words: list[str] | None,
) -> ExampleScores:
    """The scores from tokens: toks = [P, tokens(sn), then tokens(a_i), tokens(bare DE_i) per
    scored document]; k_words: K's words (see `_k_precision`), None when the shown documents
    are unknown."""
    pred = toks[0]
    pred_counts = Counter(pred)
    sn_tokens = set(toks[1])
    kp = None if k_words is None else _k_precision(k_words, pred_counts)
    length = len(y.split())
    if not docs:
        return ExampleScores(None, None, None, length, None, kp, 0)

    y_lower = None
    ar_sum = er_sum = ear_sum = 0.0
    c_p = c_np = 0
    for k, doc in enumerate(docs):
        ans = toks[2 + 2 * k]
        ent = [t for t in toks[3 + 2 * k] if t not in sn_tokens] if sn_tokens else toks[3 + 2 * k]
        r = token_recall(ans, pred, pred_counts)
        if ent:
            e = 1.0 * _common(ent, pred_counts) / len(ent) if pred else 0.0
        else:
            # Nothing but the surface name in the title: exact match of the title instead.
            if y_lower is None:
                y_lower = y.lower()
            e = 1.0 if bare_title(doc.title).lower() in y_lower else 0.0
        ar_sum += r
        er_sum += e
        ear_sum += r * e

        thr_a = 1 / len(ans) if ans else 1.0
        thr_e = 1 / len(ent) if ent else 1.0
        if r >= thr_a and e >= thr_e:
            c_p += 1
        elif e < thr_e:  # docs/metric.md's form of the prose's e == 0 (the same for count recalls)
            if len(ans) <= 2 and r >= 0.5:
                c_np += 1
            elif r > thr_a:
                c_np += 1

    n = len(docs)
    return ExampleScores(
        answer_recall=ar_sum / n,
        entity_recall=er_sum / n,
        entity_answer_recall=ear_sum / n,
        answer_length=length,
        category=categorize(c_p, c_np, n),
        k_precision=kp,
        n_scored=n,
    )


# --- many examples ---------------------------------------------------------------------------------


def validate_inputs(
    predictions: Sequence,
    references: Sequence,
    contexts: Sequence | None = None,
    unique_qids: bool = False,
) -> list[Reference]:
    """Checks lengths and types; returns the parsed references.

    Args:
        unique_qids: refuse two examples with the same qid (each would count twice in every
            mean). `ambigdocs evaluate` asks for it; several answers to one question (the
            bundled sample) are scored when it is False.

    Raises:
        ValueError: naming the example index and the field.
    """
    if len(predictions) != len(references):
        raise ValueError(
            f"predictions has {len(predictions)} items but references has {len(references)}"
        )
    if not predictions:
        # Means over nothing would read as a score of 0: there is nothing to score.
        raise ValueError("no examples to score (predictions and references are empty)")
    if contexts is not None and len(contexts) != len(predictions):
        raise ValueError(
            f"contexts has {len(contexts)} items but predictions has {len(predictions)}"
        )
    parsed = [parse_reference(row, i) for i, row in enumerate(references)]
    if unique_qids:
        _check_unique_qids(parsed)
    for i, p in enumerate(predictions):
        if not isinstance(p, str):
            raise ValueError(
                f"{_where(i, parsed[i].qid)}: prediction must be a string, got {type(p).__name__}"
            )
    for i, ctx in enumerate(contexts if contexts is not None else ()):
        where = _where(i, parsed[i].qid)
        if ctx is not None and not isinstance(ctx, (list, tuple)):
            raise ValueError(
                f"{where}: contexts (the documents shown) must be a list of objects, got "
                f"{type(ctx).__name__}"
            )
        for j, d in enumerate(ctx or ()):
            if not (isinstance(d, dict) or isinstance(d, Mapping)):
                raise ValueError(f"{where}: contexts[{j}] is not an object")
            for field in ("title", "text"):
                if not isinstance(d.get(field), str):
                    raise ValueError(f"{where}: contexts[{j}] field {field!r} must be a string")
    return parsed


def _check_unique_qids(parsed: Sequence[Reference]) -> None:
    # The same example twice would be weighed twice in every mean, silently.
    first: dict = {}
    for i, reference in enumerate(parsed):
        if reference.qid is None:
            continue
        j = first.setdefault(reference.qid, i)
        if j != i:
            raise ValueError(
                f"example {i}: qid {reference.qid!r} is also example {j}'s; each example may be "
                "scored once (several answers to one question: allow duplicate qids)"
            )


def score_examples(
    predictions: Sequence[str],
    references: Sequence[Mapping],
    contexts: Sequence[Sequence[Mapping] | None] | None = None,
    score_documents: str = "first5",
    *,
    validated: bool = False,
) -> list[ExampleScores]:
    """Scores many answers (see `score_example`), every string tokenised in one batch.

    Args:
        validated: `references` are `validate_inputs`' parsed rows (`score_parsed`): no checks.

    Raises:
        ValueError: bad input, naming the example and the field.
    """
    if not validated:
        if score_documents not in SCORE_DOCUMENTS:
            raise ValueError(
                f"score_documents must be one of {SCORE_DOCUMENTS}, got {score_documents!r}"
            )
        references = validate_inputs(predictions, references, contexts)
    if contexts is None:
        contexts = [None] * len(references)
    with gc_paused():
        ys = [clean_prediction(p) for p in predictions]
        docs_of = [
            scored_documents(r, c, score_documents)
            for r, c in zip(references, contexts, strict=True)
        ]
        strings: list[str] = []
        for y, ref, docs in zip(ys, references, docs_of, strict=True):
            strings += [y, surface_name(ref.ambiguous_entity)]
            for d in docs:
                strings += [d.answer, bare_title(d.title)]
        toks = tokens_many(strings)
        k_words = _k_words_many([r.question for r in references], contexts)
        out, at = [], 0
        for y, docs, kw in zip(ys, docs_of, k_words, strict=True):
            width = 2 + 2 * len(docs)
            out.append(_score_tokenized(y, toks[at : at + width], docs, kw))
            at += width
        return out


# `score_examples` on `validate_inputs`' output.
score_parsed = functools.partial(score_examples, validated=True)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def aggregate(scores: Sequence[ExampleScores]) -> dict[str, float]:
    """Means over examples and the category distribution (fractions), as one flat dict.

    `k_precision` is the mean over the examples that had their shown documents, and
    `k_precision_n` how many those are (both absent when none had them): an example without
    them does not remove the score of the others. Examples without a scored gold document
    (score_documents='shown' only) are left out of the means and counted in `n_unscored`.
    """
    scored = [s for s in scores if s.n_scored]
    out: dict[str, float] = {
        "answer_recall": _mean([s.answer_recall for s in scored]),
        "entity_recall": _mean([s.entity_recall for s in scored]),
        "entity_answer_recall": _mean([s.entity_answer_recall for s in scored]),
        "answer_length": _mean([s.answer_length for s in scores]),
    }
    counts = Counter(s.category for s in scored)
    for c in CATEGORIES:
        out[c] = counts[c] / len(scored) if scored else 0.0
    shown = [s.k_precision for s in scores if s.k_precision is not None]
    if shown:
        out["k_precision"] = _mean(shown)
        out["k_precision_n"] = len(shown)
    if len(scored) < len(scores):
        out["n_unscored"] = len(scores) - len(scored)
    return out
