"""Every prompt of the project, as named templates (paper Figures 9-12 and the distillation format).

Stages ask for a prompt by name through the `render_*` functions below; nothing else in the
project writes prompt text. A prompt is rendered either as one plain string, or, for chat
models, as messages: the instruction as the system turn and the rest as the user turn (what the
authors did for GPT).

Answering has three formats (`render_answer_input`): `plain` and `chat` follow the paper's
Figures 11-12; `authors` is the exact model input of the authors' answering script, which made
the paper's tables (`render_authors_answer_input`, docs/answering.md).

Text notes:
- The paper prints one exemplar per prompt "due to limited space" (the authors used two for
  question generation and four for answer expansion). Those exemplars are shipped here; users
  pass their own exemplar file to `render_question_prompt` / `render_expansion_prompt` for more.
- The paper's exemplars lost some non-ASCII letters in extraction ("Jiř15900ed"); they are
  restored here (Jiří Pospíšil, Gandalovič, Novotný, Stick–style, America’s).
- Figure 9's exemplar says "Answer to Article 1" while the distillation target of docs/pipeline.md
  and the authors' scripts say "Answer to Passage 1"; this project writes and parses "Passage",
  as the authors' filter does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from generation.authors_prompts import (
    AUTHORS_EXPANSION_PROMPT,
    AUTHORS_QUESTION_EXEMPLARS,
    LITERALS,
)

Message = dict[str, str]
Prompt = str | list[Message]
PromptFormat = Literal["plain", "chat"]

# --- Figures 11 and 12: answering ----------------------------------------------------------

ANSWER_INSTRUCTION = "Answer for the given question using only the provided context."

# Figure 12's exemplar: two Griswold Houses, answered completely.
ANSWER_FEW_SHOT_EXEMPLARS: list[dict] = LITERALS["answer_exemplars"]


def _answer_block(question: str, docs: Sequence[Mapping[str, str]]) -> str:
    """`Question: q` then one `Context: title | text` line per shown document, as in Figure 11."""
    lines = [f"Question: {question}"]
    lines += [f"Context: {d['title']} | {d['text']}" for d in docs]
    return "\n".join(lines) + "\n"


# --- the authors' answering script (`--prompt-format authors`, docs/answering.md) ------------

ANSWER_PROMPT_FORMATS = ("chat", "plain", "authors")
AnswerPromptFormat = Literal["chat", "plain", "authors"]
BackendKind = Literal["hf", "vllm", "openai"]

# The script's two exemplars, character for character (Figure 12's, with an ASCII `Hunt's`).
_GRISWOLD = ANSWER_FEW_SHOT_EXEMPLARS[0]["docs"][1]
AUTHORS_ANSWER_EXEMPLARS: list[dict] = [
    {
        **ANSWER_FEW_SHOT_EXEMPLARS[0],
        "docs": [
            ANSWER_FEW_SHOT_EXEMPLARS[0]["docs"][0],
            {**_GRISWOLD, "text": _GRISWOLD["text"].replace("Hunt\u2019s", "Hunt's")},
        ],
    },
    LITERALS["authors_answer_exemplar_2"],  # Edna & Harvey
]


def render_answer_input(
    question: str,
    docs: Sequence[Mapping[str, str]],
    *,
    prompt_format: AnswerPromptFormat,
    few_shot: bool = False,
    backend_kind: BackendKind = "hf",
    exemplars: Sequence[Mapping] | None = None,
) -> Prompt:
    """The answering prompt a back-end receives, in any of `ANSWER_PROMPT_FORMATS`.

    `plain` and `chat` are the paper's Figures 11 (zero-shot) and 12 (few-shot); the back-end
    applies a chat template or sends the string as one user message. The plain zero-shot string
    is exactly the reference text K of K-Precision (docs/metric.md):
    `"Answer for the given question using only the provided context.\\nQuestion: q\\n"` +
    `"Context: title | text\\n"` per document + `"Answer:"`.

    `authors` is the model input of the authors' answering script, byte for byte: raw
    `[INST]` text for open models, messages for the OpenAI API (docs/answering.md, "Which
    prompt format reproduces which table").

    Args:
        question: the ambiguous question.
        docs: the shown documents in prompt order, each with `title` and `text`.
        prompt_format: `plain` (one string), `chat` (system = instruction, user = the rest) or
            `authors`.
        few_shot: prepend the exemplars (Figure 12's, or for `authors` the script's two,
            `AUTHORS_ANSWER_EXEMPLARS`).
        backend_kind: `hf`, `vllm` (raw text) or `openai` (messages); only `authors` reads it.
        exemplars: replaces the default exemplars (`question`, `docs`, `answer` each).

    Returns:
        A string, or a list of chat messages.

    Raises:
        ValueError: an unknown format or back-end kind.
    """
    if prompt_format not in ANSWER_PROMPT_FORMATS:
        raise ValueError(
            f"prompt_format must be one of {ANSWER_PROMPT_FORMATS}, got {prompt_format!r}"
        )
    authors = prompt_format == "authors"
    if exemplars is None:
        exemplars = AUTHORS_ANSWER_EXEMPLARS if authors else ANSWER_FEW_SHOT_EXEMPLARS
    end = "\n\n" if authors else "\n"  # the script separates its exemplars by a blank line
    shots = "".join(
        f"{_answer_block(ex['question'], ex['docs'])}Answer: {ex['answer']}{end}"
        for ex in (exemplars if few_shot else ())
    )
    query = _answer_block(question, docs) + "Answer:"
    if not authors or backend_kind == "openai":
        return _finish(ANSWER_INSTRUCTION, shots + query, "chat" if authors else prompt_format)
    if backend_kind not in ("hf", "vllm"):
        raise ValueError(f"backend_kind must be hf, vllm or openai, got {backend_kind!r}")
    if few_shot:
        return f"[INST] {ANSWER_INSTRUCTION} [/INST]\n{shots}{query}"
    return f"[INST] {ANSWER_INSTRUCTION}\n{query} [/INST]"


def render_answer_prompt(
    question: str,
    docs: Sequence[Mapping[str, str]],
    *,
    few_shot: bool = False,
    prompt_format: PromptFormat = "plain",
    exemplars: Sequence[Mapping] | None = None,
) -> Prompt:
    """The paper's answering prompt (Figures 11-12): `render_answer_input`, `plain` or `chat`."""
    if prompt_format not in ("plain", "chat"):
        raise ValueError(f"prompt_format must be 'plain' or 'chat', got {prompt_format!r}")
    return render_answer_input(
        question, docs, prompt_format=prompt_format, few_shot=few_shot, exemplars=exemplars
    )


def render_authors_answer_input(
    question: str,
    docs: Sequence[Mapping[str, str]],
    *,
    few_shot: bool = False,
    backend_kind: BackendKind = "hf",
    exemplars: Sequence[Mapping] | None = None,
) -> Prompt:
    """The authors' answering script's model input: `render_answer_input`, `authors`."""
    return render_answer_input(
        question,
        docs,
        prompt_format="authors",
        few_shot=few_shot,
        backend_kind=backend_kind,
        exemplars=exemplars,
    )


# --- Figure 9 and the distillation format: question generation --------------------------------

QUESTION_INSTRUCTION = (
    "You are given two passages about an ambiguous entity with different interpretations. "
    "Create a question about the entity, which each passage must answer differently. Find the "
    "shortest span of each passage as an answer to each passage."
)

# Figure 9's exemplar (Young Conservatives).
QUESTION_EXEMPLARS: list[dict] = LITERALS["question_exemplars"]


def strip_disambiguation(surface_name: str, *, case_sensitive: bool = False) -> str:
    """The surface name without a trailing `(disambiguation)` (paper C.1).

    Args:
        surface_name: the disambiguation page title.
        case_sensitive: strip only the lower-case suffix, as the authors' filter and expansion
            scripts do (their prompt builders strip any case, the default here).
    """
    name = surface_name.strip()
    suffix = "(disambiguation)"
    if (name if case_sensitive else name.lower()).endswith(suffix):
        name = name[: -len(suffix)].strip()
    return name


def _question_query(surface_name: str, documents: Sequence[Mapping[str, str]]) -> str:
    lines = [f"Entity: {strip_disambiguation(surface_name)}"]
    lines += [f"Passage {k}: {d['title']} | {d['text']}" for k, d in enumerate(documents, 1)]
    return "\n".join(lines) + "\n"


def question_target(question: str, answers: Sequence[str]) -> str:
    """What the model should write after `Question: `: the question, then one answer a line."""
    lines = [question] + [f"Answer to Passage {k}: {a}" for k, a in enumerate(answers, 1)]
    return "\n".join(lines)


def render_question_prompt(
    surface_name: str,
    documents: Sequence[Mapping[str, str]],
    *,
    prompt_format: Literal["plain", "chat", "instruction", "authors"] = "chat",
    exemplars: Sequence[Mapping] | None = None,
) -> Prompt:
    """The question-generation prompt (Figure 9), or the distilled model's instruction format.

    Args:
        surface_name: the disambiguation page title (a trailing `(disambiguation)` is dropped).
        documents: the seed pair, each with `title` and `text`.
        prompt_format: `chat` for API models (system = instruction, user = exemplars + query),
            `plain` for the same text as one string, or `instruction` for the distilled model
            (`### Instruction:` ... `### Response:\\nQuestion: `, no exemplars: the fine-tuned
            model has learnt the format), or `authors` for the exact messages of the authors'
            GPT-4 script (`generation.authors_prompts`).
        exemplars: replaces the paper's exemplar (`surface_name`, `documents`, `question`,
            `answers` each); not accepted by `authors` (its exemplars are fixed).

    Returns:
        A string, or a list of chat messages. The model continues after `Question: `.
    """
    if prompt_format == "authors":
        if exemplars is not None:
            raise ValueError("the authors prompt format has fixed exemplars; drop --exemplars")
        # The authors' GPT-4 messages (`generate_gpt.py`): their two exemplars, then the query's
        # parts run together without newlines, as in their script.
        user = AUTHORS_QUESTION_EXEMPLARS + "Entity: " + strip_disambiguation(surface_name)
        for k, doc in enumerate(documents, 1):
            user += f"Passage {k}: " + doc["title"] + " | " + doc["text"]
        return _finish(QUESTION_INSTRUCTION, user + "\nQuestion:", "chat")
    query = _question_query(surface_name, documents)
    if prompt_format == "instruction":
        return f"### Instruction:\n{QUESTION_INSTRUCTION}\n\n{query}\n### Response:\nQuestion: "
    body = ""
    for ex in QUESTION_EXEMPLARS if exemplars is None else exemplars:
        body += _question_query(ex["surface_name"], ex["documents"])
        body += f"Question: {question_target(ex['question'], ex['answers'])}\n\n"
    body += query + "Question: "
    return _finish(QUESTION_INSTRUCTION, body, prompt_format)


def render_question_training_text(
    surface_name: str, documents: Sequence[Mapping[str, str]], question: str, answers: Sequence[str]
) -> tuple[str, str]:
    """(prompt, completion) for distillation: the instruction format and its target."""
    prompt = render_question_prompt(surface_name, documents, prompt_format="instruction")
    return prompt, question_target(question, answers)


# --- Figure 10: answer set expansion ------------------------------------------------------------

EXPANSION_INSTRUCTION = (
    "Given a passage related to the question, answer to the question. Find the shortest span of "
    "the passage as an answer."
)

# Figure 10's exemplar (Proletarian Unity Party).
EXPANSION_EXEMPLARS: list[dict] = LITERALS["expansion_exemplars"]


def _expansion_block(title: str, text: str, question: str) -> str:
    return f"Passage: {title} | {text}\nQuestion: {question}\nAnswer: "


def render_expansion_prompt(
    title: str,
    text: str,
    question: str,
    *,
    prompt_format: Literal["plain", "chat", "authors"] = "plain",
    exemplars: Sequence[Mapping] | None = None,
) -> Prompt:
    """The answer-expansion QA prompt (Figure 10): exemplars, then `Passage/Question/Answer: `.

    `authors` is the raw text of the authors' `expand.py` (`generation.authors_prompts`: raw
    text for a base model, no chat template); `plain` and `chat` lay out Figure 10 with
    `EXPANSION_EXEMPLARS` or the user's `exemplars` (`title`, `text`, `question`, `answer`).
    """
    if prompt_format == "authors":
        if exemplars is not None:
            raise ValueError("the authors prompt format has fixed exemplars; drop --exemplars")
        return AUTHORS_EXPANSION_PROMPT + _expansion_block(title, text, question)
    body = ""
    for ex in EXPANSION_EXEMPLARS if exemplars is None else exemplars:
        body += _expansion_block(ex["title"], ex["text"], ex["question"]) + f"{ex['answer']}\n\n"
    body += _expansion_block(title, text, question)
    return _finish(EXPANSION_INSTRUCTION, body, prompt_format)


# --- shared ----------------------------------------------------------------------------------


def _finish(instruction: str, body: str, prompt_format: str) -> Prompt:
    if prompt_format == "plain":
        return f"{instruction}\n{body}"
    if prompt_format == "chat":
        return [{"role": "system", "content": instruction}, {"role": "user", "content": body}]
    raise ValueError(f"prompt_format must be 'plain' or 'chat', got {prompt_format!r}")
