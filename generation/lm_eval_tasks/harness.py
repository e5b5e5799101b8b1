"""AmbigDocs as an lm-evaluation-harness task: the Gold Only setting with the authors' prompts.

The tasks `ambigdocs` (zero-shot) and `ambigdocs_fewshot` give a model what `ambigdocs answer
--setting gold-only --seed 0 --prompt-format authors [--few-shot]` gives it, and score its answers
with the toolkit's scorer (`scoring.aggregate`, as `ambigdocs evaluate` does); Disambig-F1 when a
QA model is named. README.md, section "lm-evaluation-harness", has the commands and the details.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

from lm_eval.api.task import ConfigurableTask

from generation.documents import DEFAULT_NUM_DOCS, select_documents
from generation.prompts import render_answer_input
from metric.ambigdocs_metric.scoring import CATEGORIES, ExampleScores, aggregate, score_examples

logger = logging.getLogger(__name__)

SETTING = "gold-only"
# The one place that names the prompt format: `render_answer_input` renders every format.
PROMPT_FORMAT = "authors"
QA_MODEL_ENV = "AMBIGDOCS_QA_MODEL"
LEXICAL_METRICS = (
    "answer_recall",
    "entity_recall",
    "entity_answer_recall",
    "k_precision",
    *CATEGORIES,
)
DISAMBIG_F1 = "disambig_f1"
DOC_INDEX = "doc_index"


# --- options ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskOptions:
    """What the task metadata may set (the rest of the metadata is lm-eval's).

    `document_seed` and `num_docs` are `ambigdocs answer`'s `--seed` and `--num-docs`. The seed
    has its own name because lm-eval also merges `--model_args` into every task's metadata, and
    model arguments such as vLLM's `seed` must not change which documents are shown.
    """

    document_seed: int = 0
    num_docs: int = DEFAULT_NUM_DOCS
    qa_model: str | None = None

    @classmethod
    def from_metadata(cls, metadata: Mapping | None) -> TaskOptions:
        """The options from task metadata, the QA model falling back to `AMBIGDOCS_QA_MODEL`.

        Raises:
            ValueError: `document_seed` or `num_docs` not an integer, `num_docs` below 1, or
                `qa_model` not a string.
        """
        metadata = metadata or {}
        seed = metadata.get("document_seed", 0)
        num_docs = metadata.get("num_docs", DEFAULT_NUM_DOCS)
        for name, value in (("document_seed", seed), ("num_docs", num_docs)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(
                    f"ambigdocs task metadata: {name} must be an integer, got {value!r}"
                )
        if num_docs < 1:
            raise ValueError(f"ambigdocs task metadata: num_docs must be >= 1, got {num_docs}")
        qa_model = metadata.get("qa_model") or os.environ.get(QA_MODEL_ENV) or None
        if qa_model is not None and not isinstance(qa_model, str):
            raise ValueError(
                f"ambigdocs task metadata: qa_model must be a string, got {qa_model!r}"
            )
        return cls(document_seed=seed, num_docs=num_docs, qa_model=qa_model)


# --- documents and prompts -------------------------------------------------------------------


def add_shown_documents(dataset, seed: int = 0, num_docs: int = DEFAULT_NUM_DOCS):
    """The data set with `docs`, each row's shown documents in prompt order (Gold Only), drawn
    by `select_documents` as `ambigdocs answer --seed SEED` draws them, and `doc_index`, its
    position (see `in_data_order`)."""

    def shown(row: dict, index: int) -> dict:
        docs = select_documents(row, SETTING, seed, num_docs=num_docs)
        return {"docs": docs, DOC_INDEX: index}

    return dataset.map(shown, with_indices=True, desc="AmbigDocs shown documents")


def in_data_order(records: list[Mapping]) -> list[Mapping]:
    """The records sorted by `doc_index`: lm-eval's processes each score every n-th doc, and in
    data order the means are summed as `ambigdocs evaluate` sums them, to the bit."""
    if all(r.get(DOC_INDEX) is not None for r in records):
        return sorted(records, key=lambda r: r[DOC_INDEX])
    return records


def render_prompt(doc: Mapping, *, few_shot: bool, chat: bool):
    """The authors' model input for one doc: raw `[INST]` text, or (`chat`) their messages."""
    return render_answer_input(
        doc["question"],
        doc["docs"],
        prompt_format=PROMPT_FORMAT,
        few_shot=few_shot,
        backend_kind="openai" if chat else "hf",
    )


def doc_to_target(doc: Mapping) -> str:
    """A readable reference for lm-eval's sample logs: `title: answer` per gold document."""
    docs = doc["documents"]
    if isinstance(docs, Mapping):  # `datasets` sequence features: a dict of lists
        docs = [dict(zip(docs, values, strict=True)) for values in zip(*docs.values(), strict=True)]
    return "; ".join(f"{d['title']}: {d['answer']}" for d in docs)


# --- scores ----------------------------------------------------------------------------------


def process_results(doc: Mapping, results: list[str]) -> dict[str, dict]:
    """The toolkit's lexical scores of one answer: every metric gets the whole record
    (`ExampleScores` as a dict), so that its aggregation can call `scoring.aggregate`."""
    (scores,) = score_examples([results[0]], [doc], [doc["docs"]])
    record = {**scores._asdict(), DOC_INDEX: doc.get(DOC_INDEX)}
    return {name: record for name in LEXICAL_METRICS}


def _aggregator(name: str):
    def aggregate_metric(records: list[Mapping]) -> float:
        fields = ExampleScores._fields
        scores = [ExampleScores(*(r[f] for f in fields)) for r in in_data_order(records)]
        return aggregate(scores)[name]

    aggregate_metric.__name__ = aggregate_metric.__qualname__ = name
    aggregate_metric.__doc__ = f"`{name}` of `scoring.aggregate` over the examples' scores."
    return aggregate_metric


# The functions the task YAML names.
answer_recall = _aggregator("answer_recall")
entity_recall = _aggregator("entity_recall")
entity_answer_recall = _aggregator("entity_answer_recall")
k_precision = _aggregator("k_precision")
complete = _aggregator("complete")
partial = _aggregator("partial")
ambiguous = _aggregator("ambiguous")
merged = _aggregator("merged")
no_answer = _aggregator("no_answer")


def disambig_f1_record(doc: Mapping, answer: str, qa_model: str) -> dict:
    """What Disambig-F1 needs of one example (no passage texts: the answer is the QA context)."""
    documents, keys = doc["documents"], ("title", "answer", "pid")
    if isinstance(documents, Mapping):
        documents = {k: documents[k] for k in keys if k in documents}
    else:
        documents = [{k: d.get(k) for k in keys} for d in documents]
    return {
        "qa_model": qa_model,
        DOC_INDEX: doc.get(DOC_INDEX),
        "qid": doc.get("qid"),
        "question": doc["question"],
        "ambiguous_entity": doc["ambiguous_entity"],
        "documents": documents,
        "gen_answer": answer,
    }


@functools.lru_cache(maxsize=2)
def load_qa_model(name: str):
    """The QA model of Disambig-F1, loaded once per process.

    Raises:
        ValueError: it cannot be loaded (the message names it and says why).
    """
    from metric.ambigdocs_metric.disambig_f1 import QAExtractor

    try:
        return QAExtractor(name)
    except Exception as err:  # noqa: BLE001 - offline, missing files, wrong id: all alike
        reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
        raise ValueError(
            f"ambigdocs: cannot load the Disambig-F1 QA model {name!r} ({reason}); fix qa_model "
            f"(task metadata) or {QA_MODEL_ENV}, or unset both to skip Disambig-F1"
        ) from None


def disambig_f1(records: list[Mapping]) -> float:
    """Mean Disambig-F1 over the examples, as `ambigdocs evaluate` computes it: one batched
    `disambig_f1.disambig_f1` call over all answers, then the mean of the per-example values."""
    from metric.ambigdocs_metric.disambig_f1 import disambig_f1 as per_example

    names = {r["qa_model"] for r in records}
    if len(names) != 1:
        raise ValueError(f"ambigdocs: Disambig-F1 records name several QA models: {sorted(names)}")
    qa = load_qa_model(names.pop())
    records = in_data_order(records)
    values = per_example([r["gen_answer"] for r in records], records, qa)
    values = [v for v in values if v is not None]
    return sum(values) / max(len(values), 1)


# --- the task --------------------------------------------------------------------------------


class AmbigDocsTask(ConfigurableTask):
    """`ambigdocs`: zero-shot, Gold Only, the authors' prompt; see the module docstring."""

    FEW_SHOT = False

    def __init__(self, data_dir=None, cache_dir=None, download_mode=None, config=None):
        config = {k: v for k, v in (config or {}).items() if k != "class"}
        # Set before the parent's __init__, which already reads the docs.
        self.options = TaskOptions.from_metadata(config.get("metadata"))
        self._docs = None
        super().__init__(data_dir, cache_dir, download_mode, config=config)
        if self.options.qa_model:
            load_qa_model(self.options.qa_model)  # fail now, not after all the generation
        else:
            logger.warning(
                "%s: Disambig-F1 skipped (no QA model: set the task metadata qa_model, e.g. "
                '--metadata \'{"qa_model": "deepset/roberta-base-squad2"}\', or %s)',
                self.config.task,
                QA_MODEL_ENV,
            )

    def test_docs(self):
        """The test split with each row's shown documents (`docs`), computed once."""
        if self._docs is None:
            docs = super().test_docs()
            self._docs = add_shown_documents(
                docs, self.options.document_seed, self.options.num_docs
            )
        return self._docs

    def doc_to_text(self, doc, doc_to_text=None):
        return render_prompt(doc, few_shot=self.FEW_SHOT, chat=False)

    def fewshot_context(
        self,
        doc,
        num_fewshot,
        system_instruction=None,
        apply_chat_template=False,
        fewshot_as_multiturn=False,
        chat_template=None,
        gen_prefix=None,
    ):
        """The authors' input: raw text, or their messages through `chat_template`.

        Raises:
            ValueError: `--num_fewshot` above 0 (the exemplars are the authors' fixed ones:
                use the task `ambigdocs_fewshot`).
        """
        if num_fewshot:
            raise ValueError(
                f"{self.config.task}: --num_fewshot is not supported (the authors' exemplars are "
                "fixed); use the task ambigdocs_fewshot for the few-shot prompt"
            )
        chat = apply_chat_template and chat_template is not None
        prompt = render_prompt(doc, few_shot=self.FEW_SHOT, chat=chat)
        prefix = (
            f"{system_instruction}{self.config.fewshot_delimiter}" if system_instruction else ""
        )
        if not chat:
            return prefix + prompt
        prompt[0]["content"] = prefix + prompt[0]["content"]  # the system turn
        return chat_template(prompt, add_generation_prompt=True)

    def process_results(self, doc, results):
        """The lexical score records, and Disambig-F1's record when a QA model is set."""
        out = super().process_results(doc, results)
        if self.options.qa_model:
            out[DISAMBIG_F1] = disambig_f1_record(doc, results[0], self.options.qa_model)
        return out


class AmbigDocsFewShotTask(AmbigDocsTask):
    """`ambigdocs_fewshot`: the same with the authors' two exemplars (their few-shot prompt)."""

    FEW_SHOT = True
