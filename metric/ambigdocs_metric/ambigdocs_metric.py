"""AmbigDocs metric as an `evaluate` module: a thin shell over `scoring.py` and `disambig_f1.py`."""

from collections.abc import Mapping

import datasets
import evaluate

from .disambig_f1 import DEFAULT_QA_MODEL, disambig_f1

# evaluate copies only the files this script imports itself (and no comment may follow an import
# line: evaluate would read it as a download address), so every helper is imported here.
from .hub_errors import hub_unreachable
from .json_files import check_text
from .qa_loading import QAModelError, load_qa_extractor
from .scoring import CATEGORIES, CITATION, Reference, aggregate, score_examples, validate_inputs
from .stopwords import STOPWORDS

_DESCRIPTION = """\
Scores long-form answers to AmbigDocs questions (a question mentions an ambiguous name; the gold
documents are about different entities sharing it, each with its own answer). Token recall of
each gold answer (answer recall), of each disambiguated entity name (entity recall) and their
product (entity-answer recall); the answer category (complete, partial, ambiguous, merged, no
answer) by the paper's heuristic; K-Precision against the shown documents; and Disambig-F1 with
an extractive QA model. Defaults reproduce the authors' evaluation code.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): the model's long-form answers.
    references (`list` of `dict`): AmbigDocs rows as `datasets` gives them: `question`,
        `ambiguous_entity`, and `documents` with `title`, `answer` (and `text`, `pid`), either a
        list of document objects or the older dict-of-lists layout.
        A dict of columns (`ds[:8]` of a `datasets.Dataset`) is read as its rows.
    contexts (`list` of `list` of `dict`, optional): per example, the documents shown to the
        model (`title`, `text`, optionally `pid`); turns on K-Precision. Give them either to
        `compute`, or batch by batch to `add_batch(..., contexts=...)` (`add(...,
        context=...)`), then, with every batch or with none.
    qa_model (`str`, or a `(model, tokenizer)` pair, optional): an extractive QA model trained on
        SQuAD 2.0 (the paper: "deepset/roberta-base-squad2"); turns on Disambig-F1. One that
        cannot be loaded (missing path, unknown id, Hub unreachable and not cached) raises
        `QAModelError` (an `OSError`) with the reason in one line.
        The model is loaded once and kept by the metric object: later `compute` calls with the
        same name and batch size reuse it (a training loop that evaluates every N steps pays
        for the load once). Without a network the Hub is tried once, for a few seconds.
    score_documents (`str`): which gold documents are scored: "first5" (default, the authors:
        the first five in data-set order), "shown" (the gold documents among `contexts`), "all".
    qa_batch_size (`int`): windows per QA forward pass (default 64).
    use_aggregator (`bool`): True (default) for the means; False for per-example lists, as in
        evaluate's `rouge` (see Returns).
Returns:
    A flat dict of means over examples: `answer_recall`, `entity_recall`, `entity_answer_recall`,
    `answer_length` (words), the category fractions `complete`, `partial`, `ambiguous`, `merged`,
    `no_answer`, and `k_precision` / `disambig_f1` when computed. K-Precision is the mean over
    the examples whose shown documents were given (a None in `contexts`: none), with
    `k_precision_n` their number (a count, not a mean). A confidently wrong answer (no gold answer found) is
    `no_answer`, the authors' rule.
    With `use_aggregator=False`, the same keys each hold one value per example (a category key
    1.0 or 0.0), plus `category` (the name per example); None marks an example left out of a
    mean (no scored gold document, no shown documents, or no Disambig-F1 span to compare). The
    mean of the values that are not None is the aggregate.
Examples:
    >>> import evaluate
    >>> import ambigdocs
    >>> metric = evaluate.load(ambigdocs.METRIC_PATH)
    >>> reference = {
    ...     "qid": 0,
    ...     "question": "What is the state where Judge Day was born?",
    ...     "ambiguous_entity": "Judge Day",
    ...     "documents": [
    ...         {"title": "Charles Bernard Day", "text": "...", "pid": "1", "answer": "Alabama"},
    ...         {"title": "Edward William Day", "text": "...", "pid": "2", "answer": "Rhode Island"},
    ...         {"title": "William Louis Day", "text": "...", "pid": "3", "answer": "Ohio"},
    ...     ],
    ... }
    >>> answers = [
    ...     "Judge Day was born in Ohio.",
    ...     "William Louis Day was born in Ohio, and Charles Bernard Day was born in Alabama.",
    ... ]
    >>> results = metric.compute(predictions=answers, references=[reference, reference])
    >>> print(round(results["answer_recall"], 3), results["ambiguous"], results["partial"])
    0.5 0.5 0.5
"""

# The documents shown to the model for one example (K-Precision, score_documents="shown").
_SHOWN = datasets.List(
    {
        "title": datasets.Value("string"),
        "text": datasets.Value("string"),
        "pid": datasets.Value("string"),
    }
)

# What the module stores per example: the fields scoring needs, in one canonical layout (rows are
# canonicalised in `add_batch`, so both document layouts and extra fields are accepted). The
# shown documents given to `add_batch` travel inside the reference (`has_contexts` False when
# none were given): a third input column would make evaluate demand it in every `compute` call,
# and in the Space's widget.
_FEATURES = datasets.Features(
    {
        "predictions": datasets.Value("string"),
        "references": {
            "qid": datasets.Value("string"),
            "question": datasets.Value("string"),
            "ambiguous_entity": datasets.Value("string"),
            "documents": datasets.List(
                {
                    "title": datasets.Value("string"),
                    "pid": datasets.Value("string"),
                    "answer": datasets.Value("string"),
                }
            ),
            "contexts": _SHOWN,
            "has_contexts": datasets.Value("bool"),
        },
    }
)


def _canonical(reference: Reference, shown=None) -> dict:
    return {
        # evaluate refuses a null text field ("don't match the expected format"): a reference
        # without a qid (as typed into the Space's widget) is stored with an empty one.
        "qid": "" if reference.qid is None else str(reference.qid),
        "question": reference.question,
        "ambiguous_entity": reference.ambiguous_entity,
        "documents": [
            {"title": d.title, "pid": d.pid, "answer": d.answer} for d in reference.documents
        ],
        # evaluate cannot store a null list: "none given" is a flag beside an empty list.
        "contexts": [
            {
                "title": d["title"],
                "text": d["text"],
                "pid": None if d.get("pid") is None else str(d["pid"]),
            }
            for d in shown or []
        ],
        "has_contexts": shown is not None,
    }


def _stored(predictions, references, contexts) -> list[dict]:
    """The references in the stored layout (`_canonical`), after our checks: bad input fails
    with the example and field named rather than with an Arrow encoding error.

    The scorer reads text with a lone UTF-16 surrogate (a `"\\ud800"` JSON escape); Arrow
    cannot store it, so it is refused here (`check_text`).

    Raises:
        ValueError: naming the example (and its qid) and the field.
    """
    parsed = validate_inputs(predictions, references, contexts)
    shown = contexts if contexts is not None else [None] * len(parsed)
    stored = [_canonical(r, c) for r, c in zip(parsed, shown, strict=True)]
    for i, (prediction, reference) in enumerate(zip(predictions, stored, strict=True)):
        qid = reference["qid"]
        # A qid that is itself the bad text is left out: the message must be printable.
        printable = not any("\ud800" <= c <= "\udfff" for c in qid)
        check_text(
            {"prediction": prediction, **reference},
            f"example {i}" + (f" (qid {qid})" if qid and printable else ""),
        )
    return stored


_ROW_FIELDS = ("question", "ambiguous_entity", "documents")


def as_rows(references, name: str = "references"):
    """`references` as a list of rows: a dict of columns (`ds[:8]`) becomes its rows.

    Raises:
        ValueError: one row given instead of a list of rows, or columns of different lengths.
    """
    if not isinstance(references, Mapping):
        return references
    columns = dict(references)
    if all(isinstance(v, (list, tuple)) for v in columns.values()) and columns:
        lengths = {k: len(v) for k, v in columns.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"{name} is a dict of columns of different lengths: {lengths}")
        return [dict(zip(columns, v, strict=True)) for v in zip(*columns.values(), strict=True)]
    if any(field in columns for field in _ROW_FIELDS):
        raise ValueError(
            f"{name} is one row (a dict with {sorted(columns)[:4]}...); pass a list of rows, "
            f"e.g. {name}=[row] or {name}=dataset (or a dict of columns such as dataset[:8])"
        )
    raise ValueError(f"{name} must be a list of rows or a dict of columns, got a dict")


def _check_pair(predictions, references, p_name: str, r_name: str) -> None:
    """Refuses one of the two without the other, and a string where a list belongs (a string
    would be read as one prediction per character)."""
    if (predictions is None) != (references is None):
        given, missing = (p_name, r_name) if references is None else (r_name, p_name)
        raise ValueError(f"{given} were given without {missing}: give both")
    if isinstance(predictions, (str, bytes)):
        raise ValueError(
            f"{p_name} must be a list of strings, got one {type(predictions).__name__}"
        )


def _check_contexts(contexts, n: int):
    if contexts is None:
        return None
    if isinstance(contexts, (str, bytes, Mapping)) or not hasattr(contexts, "__len__"):
        raise ValueError("contexts must be a list (one list of shown documents per example)")
    if len(contexts) != n:
        raise ValueError(f"contexts has {len(contexts)} items but predictions has {n}")
    return contexts


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class AmbigDocsMetric(evaluate.Metric):
    """AmbigDocs: answer/entity/entity-answer recall, answer categories, K-Precision, Disambig-F1."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=_FEATURES,
            reference_urls=["https://huggingface.co/datasets/yoonsanglee/AmbigDocs"],
        )

    def add_batch(self, *, predictions=None, references=None, contexts=None, **kwargs):
        """Adds a batch of predictions, references (a list of rows, or a dict of columns such as
        `ds[:8]`), and optionally the shown documents (`contexts`, see the module's Args)."""
        references = as_rows(references)
        _check_pair(predictions, references, "predictions", "references")
        if predictions is not None and references is not None:
            references = _stored(
                predictions, references, _check_contexts(contexts, len(predictions))
            )
        elif contexts is not None:
            raise ValueError("contexts need their predictions and references in the same call")
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction=None, reference=None, context=None, **kwargs):
        """Adds one prediction and reference, and optionally the documents shown for it."""
        if prediction is None and reference is not None:
            raise ValueError("reference was given without its prediction: give both")
        if reference is None and prediction is not None:
            raise ValueError("prediction was given without its reference: give both")
        if prediction is not None:
            shown = None if context is None else [context]
            reference = _stored([prediction], [reference], shown)[0]
        elif context is not None:
            raise ValueError("context needs its prediction and reference in the same call")
        return super().add(prediction=prediction, reference=reference, **kwargs)

    def _compute(
        self,
        predictions,
        references,
        contexts=None,
        qa_model=None,
        score_documents="first5",
        qa_batch_size=64,
        use_aggregator=True,
    ):
        contexts = _stored_or_given_contexts(references, contexts)
        scores = score_examples(predictions, references, contexts, score_documents)
        result = aggregate(scores) if use_aggregator else per_example(scores)
        result.pop("n_unscored", None)
        if qa_model is not None:
            qa = self._qa_extractor(qa_model, qa_batch_size)
            df1 = disambig_f1(predictions, references, qa, contexts, score_documents)
            values = [s for s in df1 if s is not None]
            result["disambig_f1"] = sum(values) / max(len(values), 1) if use_aggregator else df1
        return result

    def _qa_extractor(self, qa_model, batch_size):
        """The QA model, loaded on first use and kept for later calls with the same model
        (name, or the same `(model, tokenizer)` objects) and batch size."""
        if isinstance(qa_model, str):
            key = (qa_model, batch_size)
        elif isinstance(qa_model, (tuple, list)):
            key = (tuple(map(id, qa_model)), batch_size)
        else:
            key = (id(qa_model), batch_size)
        kept = getattr(self, "_kept_qa", None)
        if kept is None or kept[0] != key:
            # The previous model is released before the next is loaded; `qa_model` itself is
            # held so that the ids of a pair stay its own.
            self._kept_qa = None
            self._kept_qa = (key, load_qa_extractor(qa_model, batch_size), qa_model)
        return self._kept_qa[1]


def per_example(scores) -> dict[str, list]:
    """The per-example values behind `aggregate(scores)` (see the module's Returns)."""
    scored = [bool(s.n_scored) for s in scores]
    out = {
        key: [getattr(s, key) if ok else None for s, ok in zip(scores, scored, strict=True)]
        for key in ("answer_recall", "entity_recall", "entity_answer_recall")
    }
    out["answer_length"] = [float(s.answer_length) for s in scores]
    for c in CATEGORIES:
        out[c] = [float(s.category == c) if s.category else None for s in scores]
    out["category"] = [s.category for s in scores]
    if any(s.k_precision is not None for s in scores):  # None where no documents were given
        out["k_precision"] = [s.k_precision for s in scores]
    return out


def _stored_or_given_contexts(references, given):
    """The shown documents: those given to `compute`, or those stored by `add_batch` (None for
    an example stored without them, as a None in `compute(contexts=...)`).

    Raises:
        ValueError: both were given.
    """
    stored = [r["contexts"] if r.get("has_contexts") else None for r in references]
    with_shown = [i for i, c in enumerate(stored) if c is not None]
    if given is not None:
        if with_shown:
            raise ValueError(
                "contexts were given both to add_batch/add and to compute: give them once"
            )
        return given
    return stored if with_shown else None


__all__ = [
    "AmbigDocsMetric",
    "CATEGORIES",
    "DEFAULT_QA_MODEL",
    "QAModelError",
    "STOPWORDS",
    "as_rows",
    "hub_unreachable",
    "per_example",
]
