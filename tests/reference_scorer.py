"""A straightforward, per-call implementation of docs/metric.md, kept as an independent reference.

Written line by line from the spec in the style of research code: every score re-normalises
every string it needs with the regex normalisation, nothing is cached. The tests check that
the fast scorer agrees with it on every field; the evaluate benchmark times it as the naive
method. Do not import the fast scorer here: the point is independence.
"""

import re
import string
from collections import Counter
from pathlib import Path

_STOP_FILE = Path(__file__).resolve().parents[1] / "metric/ambigdocs_metric/stopwords.py"
# Read the pinned list from its file without importing the package under test.
_ns: dict = {}
exec(compile(_STOP_FILE.read_text(), str(_STOP_FILE), "exec"), _ns)
STOP = set(_ns["NLTK_ENGLISH_STOPWORDS"])


def normalize_answer(s):
    def remove_articles(text):
        regex = re.compile(r"\b(a|an|the)\b", re.UNICODE)
        return re.sub(regex, " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def get_tokens(s):
    if not s:
        return []
    return [t for t in normalize_answer(s).split() if t not in STOP]


def recall(gold, pred):
    g = get_tokens(gold)
    p = get_tokens(pred)
    if len(g) == 0 or len(p) == 0:
        return int(g == p)
    common = Counter(g) & Counter(p)
    return 1.0 * sum(common.values()) / len(g)


def sn_of(ambiguous_entity):
    sn = ambiguous_entity.strip().lower()
    if sn.endswith("(disambiguation)"):
        sn = sn[: -len("(disambiguation)")].strip()
    return sn


def entity_recall(title, pred, sn):
    bare = title.replace("(", "").replace(")", "")
    sn_toks = get_tokens(sn)
    e = [t for t in get_tokens(bare) if t not in sn_toks]
    if len(e) == 0:
        return 1 if bare.lower() in pred.lower() else 0
    p = get_tokens(pred)
    if len(p) == 0:
        return 0
    common = Counter(e) & Counter(p)
    return 1.0 * sum(common.values()) / len(e)


def entity_len(title, sn):
    bare = title.replace("(", "").replace(")", "")
    sn_toks = get_tokens(sn)
    return len([t for t in get_tokens(bare) if t not in sn_toks])


def score(pred, row, shown=None):
    """Returns (answer_recall, entity_recall, ear, length, category, k_precision)."""
    pred = pred.replace("\n", " ")
    pred = " ".join(pred.split())
    sn = sn_of(row["ambiguous_entity"])
    docs = row["documents"][:5]
    ar, er, ear = [], [], []
    c_p = c_np = 0
    for d in docs:
        r = recall(d["answer"], pred)
        e = entity_recall(d["title"], pred, sn)
        ar.append(r)
        er.append(e)
        ear.append(r * e)
        la = len(get_tokens(d["answer"]))
        le = entity_len(d["title"], sn)
        ta = 1 / la if la else 1.0
        te = 1 / le if le else 1.0
        if recall(d["answer"], pred) >= ta and entity_recall(d["title"], pred, sn) >= te:
            c_p += 1
        elif entity_recall(d["title"], pred, sn) < te:
            if la <= 2 and recall(d["answer"], pred) >= 0.5:
                c_np += 1
            elif recall(d["answer"], pred) > ta:
                c_np += 1
    m = len(docs)
    if c_p == 0 and c_np == 0:
        cat = "no_answer"
    elif c_p >= m:
        cat = "complete"
    elif c_p == 0 and c_np == 1:
        cat = "ambiguous"
    elif c_np == 0 and c_p > 0:
        cat = "partial"
    else:
        cat = "merged"
    kp = None
    if shown is not None:
        k = "Answer for the given question using only the provided context.\nQuestion: "
        k += row["question"] + "\n"
        for d in shown:
            k += "Context: " + d["title"] + " | " + d["text"] + "\n"
        k += "Answer:"
        kt, pt = get_tokens(k), get_tokens(pred)
        if len(kt) == 0 or len(pt) == 0:
            kp = int(kt == pt)
        else:
            kp = 1.0 * sum((Counter(kt) & Counter(pt)).values()) / len(pt)
    return (
        sum(ar) / m,
        sum(er) / m,
        sum(ear) / m,
        len(pred.split()),
        cat,
        kp,
    )


def f1(pred, gold):
    p, g = get_tokens(pred), get_tokens(gold)
    if len(g) == 0 or len(p) == 0:
        return int(g == p)
    common = Counter(g) & Counter(p)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(p)
    rec = 1.0 * num_same / len(g)
    return (2 * precision * rec) / (precision + rec)
