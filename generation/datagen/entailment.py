"""The entailment check of the data pipeline (docs/pipeline.md §3.3, paper B.2 and 3.3).

A question converter turns (q_DE, answer) into a statement, which the TRUE NLI model checks
against the passage. `filter` and `expand` depend only on the `EntailmentChecker` interface, so
tests (or another NLI method) can plug in their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Protocol

from generation.backends.seq2seq import Seq2SeqGenerator
from generation.boundary import one_line
from generation.prompts import strip_disambiguation

DEFAULT_CONVERTER = "domenicrosati/question_converter-3b"
DEFAULT_NLI = "google/t5_xxl_true_nli_mixture"
# The authors skip (count as not entailed) NLI inputs longer than this many tokens.
MAX_NLI_TOKENS = 328
# The converter writes one sentence; 64 new tokens leave room for long answers.
CONVERTER_MAX_NEW_TOKENS = 128  # the authors' max_target_length


def disambiguate_question(
    question: str, surface_name: str, entity_title: str, *, case_sensitive_suffix: bool = False
) -> str:
    """`q_DE`: the question with the surface name replaced by the entity title.

    As the authors' scripts do it: the surface name loses a trailing `(disambiguation)` (paper
    C.1; only the lower-case suffix with `case_sensitive_suffix`, as their scripts), its first
    case-insensitive occurrence is found in the lower-cased question, and the original question
    is cut there; the question is unchanged when the name does not occur.
    """
    sn = strip_disambiguation(surface_name, case_sensitive=case_sensitive_suffix)
    idx = question.lower().find(sn.lower())
    if idx == -1:
        return question
    return question[:idx] + entity_title + question[idx + len(sn) :]


def converter_input(question_de: str, answer: str) -> str:
    """The question converter's input: `"{q_DE} </s> {answer}"`."""
    return f"{question_de} </s> {answer}"


def nli_input(title: str, text: str, statement: str) -> str:
    """The TRUE NLI model's input: `"premise: {title} | {text} hypothesis: {statement}"`."""
    return f"premise: {title} | {text} hypothesis: {statement}"


@dataclass(frozen=True)
class EntailmentItem:
    """One answer to check against its passage.

    Attributes:
        question: the disambiguated question `q_DE`.
        answer: the answer to check.
        title: the passage's title (the entity).
        text: the passage (the premise).
    """

    question: str
    answer: str
    title: str
    text: str


def entailment_item(
    question: str, surface_name: str, title: str, text: str, answer: str, suffix_rule: str = "exact"
) -> EntailmentItem:
    """The check of `answer`, found in the passage (`title`, `text`), for the question `q_sn`:
    `q_DE` has the title for the surface name (`suffix_rule` `exact`: only a lower-case
    `(disambiguation)` leaves the name, as in the authors' scripts; `any-case`)."""
    exact = suffix_rule == "exact"
    q_de = disambiguate_question(question, surface_name, title, case_sensitive_suffix=exact)
    return EntailmentItem(question=q_de, answer=answer, title=title, text=text)


@dataclass
class EntailmentResult:
    """What the check found for one item.

    Attributes:
        entailed: the NLI model output `1` (False when the input was too long).
        statement: the converter's declarative hypothesis.
        too_long: the NLI input exceeded the token limit, so the model was not run.
    """

    entailed: bool
    statement: str
    too_long: bool = False


class EntailmentChecker(Protocol):
    """Anything that decides, for a batch of items, whether each answer is entailed."""

    def check(self, items: Sequence[EntailmentItem]) -> list[EntailmentResult]: ...


@dataclass
class ModelEntailmentChecker:
    """The authors' check: question converter, then TRUE NLI (docs/pipeline.md §3.3).

    Attributes:
        converter: the converter's generator (or any object with `generate(texts, n)`).
        nli: the NLI model's generator (needs `encode` and `generate_ids` as well).
        max_nli_tokens: NLI inputs with more tokens than this count as not entailed.
        converter_max_new_tokens: the converter's generation budget.
    """

    converter: Seq2SeqGenerator
    nli: Seq2SeqGenerator
    _: KW_ONLY
    max_nli_tokens: int | None = MAX_NLI_TOKENS
    converter_max_new_tokens: int = CONVERTER_MAX_NEW_TOKENS

    def check(self, items: Sequence[EntailmentItem]) -> list[EntailmentResult]:
        """Converts each (q_DE, answer) to a statement and asks the NLI model about it.

        Returns:
            One result per item, in input order.
        """
        if not items:
            return []
        statements = self.converter.generate(
            [converter_input(it.question, it.answer) for it in items],
            self.converter_max_new_tokens,
        )
        encoded = self.nli.encode(
            [nli_input(it.title, it.text, s) for it, s in zip(items, statements, strict=True)]
        )
        limit = self.max_nli_tokens
        run = [i for i, ids in enumerate(encoded) if limit is None or len(ids) <= limit]
        # The TRUE model answers "1" (entailed) or "0"; two tokens cover "1" and its EOS.
        verdicts = dict(zip(run, self.nli.generate_ids([encoded[i] for i in run], 2), strict=True))
        return [
            EntailmentResult(
                entailed=verdicts.get(i) == "1", statement=statements[i], too_long=i not in verdicts
            )
            for i in range(len(items))
        ]


class LazyEntailmentChecker:
    """Loads the converter and NLI model on the first `check`, so that a run (or a resumed run)
    with nothing to check never loads 14B parameters.

    Args:
        **options: the arguments of `load_entailment_checker`.
    """

    def __init__(self, **options):
        self.options = options
        self._checker: ModelEntailmentChecker | None = None

    def check(self, items: Sequence[EntailmentItem]) -> list[EntailmentResult]:
        if not items:
            return []
        if self._checker is None:
            try:
                self._checker = load_entailment_checker(**self.options)
            except (OSError, ImportError, ValueError) as err:
                # A model that is not there is bad input (one line, exit status 2), not a crash.
                names = [repr(self.options.get(k)) for k in ("converter_model", "nli_model")]
                why = f"cannot load them ({one_line(err)})"
                raise ValueError(f"entailment models {', '.join(names)}: {why}") from err
        return self._checker.check(items)


def load_entailment_checker(
    converter_model: str = DEFAULT_CONVERTER,
    nli_model: str = DEFAULT_NLI,
    *,
    batch_size: int = 16,
    dtype: str | None = "auto",
    device: str | None = None,
    max_nli_tokens: int | None = MAX_NLI_TOKENS,
    converter_max_new_tokens: int = CONVERTER_MAX_NEW_TOKENS,
    show_progress: bool = False,
) -> ModelEntailmentChecker:
    """Loads the converter and the NLI model (both stay loaded; ~28 GB for 3B + 11B in bf16).

    Args:
        converter_model: id or folder of the question converter.
        nli_model: id or folder of the NLI model.
        batch_size: inputs per `generate` call, for both models.
        dtype: see `Seq2SeqGenerator`.
        device: see `Seq2SeqGenerator`.
        max_nli_tokens: the too-long limit (None: no limit).
        converter_max_new_tokens: the converter's generation budget.
        show_progress: tqdm bars over batches.
    """
    options = dict(batch_size=batch_size, dtype=dtype, device=device, show_progress=show_progress)
    return ModelEntailmentChecker(
        Seq2SeqGenerator(converter_model, **options),
        Seq2SeqGenerator(nli_model, **options),
        max_nli_tokens=max_nli_tokens,
        converter_max_new_tokens=converter_max_new_tokens,
    )
