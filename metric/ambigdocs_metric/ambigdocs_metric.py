"""AmbigDocs metric as an `evaluate` module: a thin shell over `scoring.py` and `disambig_f1.py`."""

import datasets
import evaluate

from .disambig_f1 import DEFAULT_QA_MODEL, QAExtractor, disambig_f1
from .scoring import CATEGORIES, Reference, aggregate, score_examples, validate_inputs

# evaluate copies only the files this script imports itself (and no comment may follow an import
# line: evaluate would read it as a download address), so stopwords.py is imported here too.
from .stopwords import STOPWORDS

_CITATION = """\
@inproceedings{lee2024ambigdocs,
  title={AmbigDocs: Reasoning across Documents on Different Entities under the Same Name},
  author={Lee, Yoonsang and Ye, Xi and Choi, Eunsol},
  booktitle={Conference on Language Modeling (COLM)},
  year={2024}
}
"""

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
    contexts (`list` of `list` of `dict`, optional): per example, the documents shown to the
        model (`title`, `text`, optionally `pid`); turns on K-Precision. With `add_batch`, pass
        all of them to `compute` at the end, aligned with the examples added.
    qa_model (`str`, or a `(model, tokenizer)` pair, optional): an extractive QA model trained on
        SQuAD 2.0 (the paper: "deepset/roberta-base-squad2"); turns on Disambig-F1.
    score_documents (`str`): which gold documents are scored: "first5" (default, the authors:
        the first five in data-set order), "shown" (the gold documents among `contexts`), "all".
    qa_batch_size (`int`): windows per QA forward pass (default 64).
Returns:
    A flat dict of means over examples: `answer_recall`, `entity_recall`, `entity_answer_recall`,
    `answer_length` (words), the category fractions `complete`, `partial`, `ambiguous`, `merged`,
    `no_answer`, and `k_precision` / `disambig_f1` when computed.
Examples:
    >>> import evaluate
    >>> metric = evaluate.load("metric/ambigdocs_metric")
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

# What the module stores per example: the fields scoring needs, in one canonical layout (rows are
# canonicalised in `add_batch`, so both document layouts and extra fields are accepted).
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
        },
    }
)


def _canonical(reference: Reference) -> dict:
    return {
        "qid": None if reference.qid is None else str(reference.qid),
        "question": reference.question,
        "ambiguous_entity": reference.ambiguous_entity,
        "documents": [
            {"title": d.title, "pid": d.pid, "answer": d.answer} for d in reference.documents
        ],
    }


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class AmbigDocsMetric(evaluate.Metric):
    """AmbigDocs: answer/entity/entity-answer recall, answer categories, K-Precision, Disambig-F1."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=_FEATURES,
            reference_urls=["https://huggingface.co/datasets/yoonsanglee/AmbigDocs"],
        )

    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Adds a batch of predictions and references (checked first: see the Args below)."""
        # Our checks first, so that bad input fails with the example and field named rather than
        # with an Arrow encoding error; then one canonical layout for storage.
        if predictions is not None and references is not None:
            references = [_canonical(r) for r in validate_inputs(predictions, references)]
        return super().add_batch(predictions=predictions, references=references, **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Adds one prediction and reference (checked first: see the Args below)."""
        if prediction is not None and reference is not None:
            reference = _canonical(validate_inputs([prediction], [reference])[0])
        return super().add(prediction=prediction, reference=reference, **kwargs)

    def _compute(
        self,
        predictions,
        references,
        contexts=None,
        qa_model=None,
        score_documents="first5",
        qa_batch_size=64,
    ):
        scores = score_examples(predictions, references, contexts, score_documents)
        result = aggregate(scores)
        result.pop("n_unscored", None)
        if qa_model is not None:
            qa = (
                qa_model
                if isinstance(qa_model, QAExtractor)
                else QAExtractor(qa_model, qa_batch_size)
            )
            df1 = [
                s
                for s in disambig_f1(predictions, references, qa, contexts, score_documents)
                if s is not None
            ]
            result["disambig_f1"] = sum(df1) / len(df1) if df1 else 0.0
        return result


__all__ = ["AmbigDocsMetric", "CATEGORIES", "DEFAULT_QA_MODEL", "STOPWORDS"]
