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

import functools
from collections.abc import Mapping, Sequence
from typing import Literal

from generation.authors_prompts import AUTHORS_EXPANSION_PROMPT, AUTHORS_QUESTION_EXEMPLARS

Message = dict[str, str]
Prompt = str | list[Message]
PromptFormat = Literal["plain", "chat"]

# --- Figures 11 and 12: answering ----------------------------------------------------------

ANSWER_INSTRUCTION = "Answer for the given question using only the provided context."

# Figure 12's exemplar: two Griswold Houses, answered completely.
ANSWER_FEW_SHOT_EXEMPLARS: list[dict] = [
    {
        "question": "What is the location of the Griswold House?",
        "docs": [
            {
                "title": "Griswold House (Guilford, Connecticut)",
                "text": "a limited number of days each week. The Griswold House is located east of "
                "Guilford Center, on the south side of Boston Street (Connecticut Route 146) at "
                "its junction with Lovers Lane. It is a 2-1/2 story wood frame structure, with a "
                "gabled roof, large central chimney, and clapboarded exterior. A leanto section "
                "to the rear gives the house a classic New England saltbox appearance. The main "
                "facade is three bays wide, with sash windows arranged symmetrically around the "
                "entrance. The entrance is flanked by pilasters and topped by a fully pedimented "
                "gable. The house was probably built around 1764",
            },
            {
                "title": "John N. A. Griswold House",
                "text": "John N. A. Griswold House The John N. A. Griswold House is a National "
                "Historic Landmark at 76 Bellevue Avenue in Newport, Rhode Island. It is home to "
                "the Newport Art Museum and houses an art gallery. The home was built in 1864 by "
                "Richard Morris Hunt for John Griswold, an Old China Trade merchant and member of "
                "the Griswold Family. The house is one of the earliest American Stick\u2013style "
                "buildings and one of Hunt\u2019s first works in Newport. The house is an official "
                "project of Save America\u2019s Treasures. The Griswold House is a 2-1/2 story wood "
                "frame structure, set",
            },
        ],
        "answer": "There are two Griswold Houses mentioned in the passages. John N. A. Griswold "
        "House is located at 76 Bellevue Avenue in Newport, Rhode Island and Griswold House "
        "(Guilford, Connecticut) is located east of Guilford Center, on the south side of Boston "
        "Street (Connecticut Route 146) at its junction with Lovers Lane.",
    }
]


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
        "question": "What is the location of the Griswold House?",
        "docs": [
            ANSWER_FEW_SHOT_EXEMPLARS[0]["docs"][0],
            {**_GRISWOLD, "text": _GRISWOLD["text"].replace("Hunt\u2019s", "Hunt's")},
        ],
        "answer": ANSWER_FEW_SHOT_EXEMPLARS[0]["answer"],
    },
    {
        "question": "Who is the playable character in Edna & Harvey?",
        "docs": [
            {
                "title": "Edna & Harvey: The Breakout",
                "text": "the same vein as LucasArts' pre-1994 games created using the SCUMM engine. "
                "The game screen shows a two-dimensional cartoon world where Edna, the playable "
                "character, is incarcerated within a mental hospital. The bottom edge of the screen "
                "contains a list of verbs which must be clicked on before the player clicks on an "
                "item within the game world in order to manipulate it. When the player tries to "
                "combine or effect one item with another each combination produces a different "
                "response, unlike in most games of this type where an incorrect combination would "
                "result in a response of \"I don't",
            },
            {
                "title": "Edna & Harvey: Harvey's New Eyes",
                "text": "Edna & Harvey: Harvey's New Eyes Edna & Harvey: Harvey's New Eyes, also "
                "known as Harvey's New Eyes, is a point-and-click adventure game created by "
                "Daedalic Entertainment. The game was released on October 16, 2012. \"Harvey's New "
                'Eyes" is a sequel to "". The game is set in a 2D cartoon world. The player '
                "controls Lilli. Unlike most other adventure games, there are no clickable "
                "dialogues. After the player clicks on a character, a bar appears with some symbols "
                "indicating a subject. The game neither has a list with actions such as Walk, Look, "
                "Talk, Pick up, Use. If applicable,",
            },
        ],
        "answer": 'In "Edna & Harvey: The Breakout" the playable character is Edna, and in "Edna & '
        "Harvey: Harvey's New Eyes,\" the playable character is Lilli.",
    },
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


# The paper's Figures 11-12 (`plain` by default), and the authors' script.
render_answer_prompt = functools.partial(render_answer_input, prompt_format="plain")
render_authors_answer_input = functools.partial(render_answer_input, prompt_format="authors")


# --- Figure 9 and the distillation format: question generation --------------------------------

QUESTION_INSTRUCTION = (
    "You are given two passages about an ambiguous entity with different interpretations. "
    "Create a question about the entity, which each passage must answer differently. Find the "
    "shortest span of each passage as an answer to each passage."
)

QUESTION_EXEMPLARS: list[dict] = [
    {
        "surface_name": "Young Conservatives",
        "documents": [
            {
                "title": "Young Conservatives (Czech Republic)",
                "text": "The Young Conservatives () is a political youth organisation in the Czech "
                "Republic. It is the youth wing of the Civic Democratic Party (ODS), a centre-right "
                "political party, and shares that party\u2019s conservative and economically "
                "liberal ideology. Young people within the age from 15 to 35 apply for a "
                "membership in the MK. Several significant politicians from the ODS party started "
                "as members of Young Conservatives, including Jan Zahradil, Ji\u0159\u00ed "
                "Posp\u00ed\u0161il, Petr Sokol, Martin Baxa, Petr Gandalovi\u010d, Ivan Langer, "
                "Martin Novotn\u00fd, and Pavel Drobil. Former Chairman of Young Conservatives "
                "Petr Mach went on to found a",
            },
            {
                "title": "Young Conservatives (UK)",
                "text": "The Young Conservatives (YC) is the youth wing of the Conservative Party in "
                "the United Kingdom for members aged 25 and under. The organisation shares the "
                "same values and policies as its parent political party with branches being an "
                "integrated part of local associations, with the exception of college and "
                "university branches which are run independently. YC is both social and "
                "political, aiming to bring together young conservatives and encouraging young "
                "people to get involved in campaigning. The Junior Imperial and Constitutional "
                "League was formed in 1906 with objectives to encourage practical political work "
                "and organisation among",
            },
        ],
        "question": "What is the age range for membership in the Young Conservatives?",
        "answers": ["15 to 35", "25 and under"],
    }
]


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

EXPANSION_EXEMPLARS: list[dict] = [
    {
        "title": "Proletarian Unity Party (France)",
        "text": "Proletarian Unity Party (France) The Party of Proletarian Unity (, PUP) was a "
        "French socialist political party. It was formed on December 21, 1930 by leftists "
        "expelled from the French Communist Party (PCF), together with some who had previously "
        "belonged to the left-wing of the Section fran\u00e7aise de l\u2019Internationale "
        "ouvri\u00e8re (SFIO). Its members were known in France as p\u00fapistes, and one of its "
        "notable leaders was Alexandre Bachelet. Owing to proportional representation, it at one "
        "time had ten seats in the Chamber of Deputies of the Third Republic. The PUP affiliated "
        "to the London Bureau of left-socialist parties. On January",
        "question": "When was the Proletarian Unity Party formed?",
        "answer": "December 21, 1930",
    }
]


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
