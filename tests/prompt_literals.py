"""Every prompt layout the toolkit can send, written out as literals (an independent oracle).

Written from the paper's Figures 9-12 (the exemplar passages are the figures' text, with the
letters the PDF extraction lost restored: Jiří Pospíšil, Gandalovič, Novotný, Stick–style,
America’s) and from the layouts stated in docs/pipeline.md §3.1, §4, §6.2, docs/answering.md and
docs/building-stages.md, never from `generation.prompts`. Each layout is one triple-quoted
string, so a changed separator, a missing newline or an extra blank line in the renderer makes
the comparison fail. The authors' exact strings have their own references
(`authors_reference.py`, `authors_qa_reference.py`).

Figure 12 prints an em dash between a context's title and text where Figure 11's template has
`|`; the toolkit (and the authors' script) write `|` in both, and so do these literals.
"""

from __future__ import annotations

# --- the paper's exemplar passages (Figures 9, 10, 12) ------------------------------------------

YOUNG_CONSERVATIVES_CZ = (
    "The Young Conservatives () is a political youth organisation in the Czech Republic. It "
    "is the youth wing of the Civic Democratic Party (ODS), a centre-right political party, "
    "and shares that party’s conservative and economically liberal ideology. Young people "
    "within the age from 15 to 35 apply for a membership in the MK. Several significant "
    "politicians from the ODS party started as members of Young Conservatives, including Jan "
    "Zahradil, Jiří Pospíšil, Petr Sokol, Martin Baxa, Petr Gandalovič, Ivan Langer, Martin "
    "Novotný, and Pavel Drobil. Former Chairman of Young Conservatives Petr Mach went on to "
    "found a"
)

YOUNG_CONSERVATIVES_UK = (
    "The Young Conservatives (YC) is the youth wing of the Conservative Party in the United "
    "Kingdom for members aged 25 and under. The organisation shares the same values and "
    "policies as its parent political party with branches being an integrated part of local "
    "associations, with the exception of college and university branches which are run "
    "independently. YC is both social and political, aiming to bring together young "
    "conservatives and encouraging young people to get involved in campaigning. The Junior "
    "Imperial and Constitutional League was formed in 1906 with objectives to encourage "
    "practical political work and organisation among"
)

PROLETARIAN_UNITY_PARTY = (
    "Proletarian Unity Party (France) The Party of Proletarian Unity (, PUP) was a French "
    "socialist political party. It was formed on December 21, 1930 by leftists expelled from "
    "the French Communist Party (PCF), together with some who had previously belonged to the "
    "left-wing of the Section française de l’Internationale ouvrière (SFIO). Its members were "
    "known in France as púpistes, and one of its notable leaders was Alexandre Bachelet. "
    "Owing to proportional representation, it at one time had ten seats in the Chamber of "
    "Deputies of the Third Republic. The PUP affiliated to the London Bureau of "
    "left-socialist parties. On January"
)

GRISWOLD_GUILFORD = (
    "a limited number of days each week. The Griswold House is located east of Guilford "
    "Center, on the south side of Boston Street (Connecticut Route 146) at its junction with "
    "Lovers Lane. It is a 2-1/2 story wood frame structure, with a gabled roof, large central "
    "chimney, and clapboarded exterior. A leanto section to the rear gives the house a "
    "classic New England saltbox appearance. The main facade is three bays wide, with sash "
    "windows arranged symmetrically around the entrance. The entrance is flanked by pilasters "
    "and topped by a fully pedimented gable. The house was probably built around 1764"
)

GRISWOLD_NEWPORT = (
    "John N. A. Griswold House The John N. A. Griswold House is a National Historic Landmark "
    "at 76 Bellevue Avenue in Newport, Rhode Island. It is home to the Newport Art Museum and "
    "houses an art gallery. The home was built in 1864 by Richard Morris Hunt for John "
    "Griswold, an Old China Trade merchant and member of the Griswold Family. The house is "
    "one of the earliest American Stick–style buildings and one of Hunt’s first works in "
    "Newport. The house is an official project of Save America’s Treasures. The Griswold "
    "House is a 2-1/2 story wood frame structure, set"
)

GRISWOLD_ANSWER = (
    "There are two Griswold Houses mentioned in the passages. John N. A. Griswold House is "
    "located at 76 Bellevue Avenue in Newport, Rhode Island and Griswold House (Guilford, "
    "Connecticut) is located east of Guilford Center, on the south side of Boston Street "
    "(Connecticut Route 146) at its junction with Lovers Lane."
)

# --- the query every layout below renders ------------------------------------------------------

SURFACE_NAME = "Judge Day (disambiguation)"  # the prompts drop `(disambiguation)`
QUESTION = "Where was Judge Day born?"
DOCS = [
    {"title": "Charles Day", "text": "Charles Day was born in Alabama."},
    {"title": "William Day", "text": "William Day was born in Ohio."},
]
PASSAGE = {"title": "Edward Day", "text": "Edward Day was born in Rhode Island."}

# --- answering: Figure 11 (zero-shot) and Figure 12 (few-shot), docs/pipeline.md §6.2 -----------

ANSWER_INSTRUCTION = "Answer for the given question using only the provided context."

ANSWER_ZERO_SHOT_BODY = """\
Question: Where was Judge Day born?
Context: Charles Day | Charles Day was born in Alabama.
Context: William Day | William Day was born in Ohio.
Answer:"""

ANSWER_PLAIN_ZERO_SHOT = """\
Answer for the given question using only the provided context.
Question: Where was Judge Day born?
Context: Charles Day | Charles Day was born in Alabama.
Context: William Day | William Day was born in Ohio.
Answer:"""

ANSWER_FEW_SHOT_BODY = f"""\
Question: What is the location of the Griswold House?
Context: Griswold House (Guilford, Connecticut) | {GRISWOLD_GUILFORD}
Context: John N. A. Griswold House | {GRISWOLD_NEWPORT}
Answer: {GRISWOLD_ANSWER}
Question: Where was Judge Day born?
Context: Charles Day | Charles Day was born in Alabama.
Context: William Day | William Day was born in Ohio.
Answer:"""

ANSWER_PLAIN_FEW_SHOT = f"""\
Answer for the given question using only the provided context.
{ANSWER_FEW_SHOT_BODY}"""

ANSWER_CHAT_ZERO_SHOT = [
    {"role": "system", "content": ANSWER_INSTRUCTION},
    {"role": "user", "content": ANSWER_ZERO_SHOT_BODY},
]
ANSWER_CHAT_FEW_SHOT = [
    {"role": "system", "content": ANSWER_INSTRUCTION},
    {"role": "user", "content": ANSWER_FEW_SHOT_BODY},
]

# Two user exemplars (`--exemplars`): one after the other, no blank line between them.
USER_ANSWER_EXEMPLARS = [
    {"question": "Who is X?", "docs": [{"title": "X (a)", "text": "X is a."}], "answer": "a"},
    {"question": "Who is Y?", "docs": [{"title": "Y (b)", "text": "Y is b."}], "answer": "b"},
]
ANSWER_PLAIN_USER_EXEMPLARS = """\
Answer for the given question using only the provided context.
Question: Who is X?
Context: X (a) | X is a.
Answer: a
Question: Who is Y?
Context: Y (b) | Y is b.
Answer: b
Question: Where was Judge Day born?
Context: Charles Day | Charles Day was born in Alabama.
Context: William Day | William Day was born in Ohio.
Answer:"""

# --- question generation: Figure 9 (docs/pipeline.md §3.1) -----------------------------------

QUESTION_INSTRUCTION = (
    "You are given two passages about an ambiguous entity with different interpretations. "
    "Create a question about the entity, which each passage must answer differently. Find the "
    "shortest span of each passage as an answer to each passage."
)

# The toolkit writes `Answer to Passage k` where Figure 9's exemplar says `Article`
# (docs/pipeline.md §3.1: the authors' scripts write and parse `Passage`).
QUESTION_BODY = f"""\
Entity: Young Conservatives
Passage 1: Young Conservatives (Czech Republic) | {YOUNG_CONSERVATIVES_CZ}
Passage 2: Young Conservatives (UK) | {YOUNG_CONSERVATIVES_UK}
Question: What is the age range for membership in the Young Conservatives?
Answer to Passage 1: 15 to 35
Answer to Passage 2: 25 and under

Entity: Judge Day
Passage 1: Charles Day | Charles Day was born in Alabama.
Passage 2: William Day | William Day was born in Ohio.
Question: """

QUESTION_PLAIN = f"""\
You are given two passages about an ambiguous entity with different interpretations. \
Create a question about the entity, which each passage must answer differently. Find the \
shortest span of each passage as an answer to each passage.
{QUESTION_BODY}"""

QUESTION_CHAT = [
    {"role": "system", "content": QUESTION_INSTRUCTION},
    {"role": "user", "content": QUESTION_BODY},
]

# Two user exemplars: each answered, each followed by a blank line.
USER_QUESTION_EXEMPLARS = [
    {
        "surface_name": "X (disambiguation)",
        "documents": [{"title": "X (a)", "text": "X is a."}, {"title": "X (b)", "text": "X is b."}],
        "question": "What is X?",
        "answers": ["a", "b"],
    },
    {
        "surface_name": "Y",
        "documents": [{"title": "Y (c)", "text": "Y is c."}, {"title": "Y (d)", "text": "Y is d."}],
        "question": "What is Y?",
        "answers": ["c", "d"],
    },
]
QUESTION_PLAIN_USER_EXEMPLARS = f"""\
{QUESTION_INSTRUCTION}
Entity: X
Passage 1: X (a) | X is a.
Passage 2: X (b) | X is b.
Question: What is X?
Answer to Passage 1: a
Answer to Passage 2: b

Entity: Y
Passage 1: Y (c) | Y is c.
Passage 2: Y (d) | Y is d.
Question: What is Y?
Answer to Passage 1: c
Answer to Passage 2: d

Entity: Judge Day
Passage 1: Charles Day | Charles Day was born in Alabama.
Passage 2: William Day | William Day was born in Ohio.
Question: """

# The distilled model's instruction format (docs/pipeline.md §3.1, the authors' Llama script):
# no exemplars, a blank line after the instruction and after the passages.
QUESTION_INSTRUCTION_FORMAT = f"""\
### Instruction:
{QUESTION_INSTRUCTION}

Entity: Judge Day
Passage 1: Charles Day | Charles Day was born in Alabama.
Passage 2: William Day | William Day was born in Ohio.

### Response:
Question: """

# The distillation target (docs/pipeline.md §3.1): the question, then one answer a line.
QUESTION_TARGET = """\
Where was Judge Day born?
Answer to Passage 1: Alabama
Answer to Passage 2: Ohio"""
QUESTION_TARGET_ANSWERS = ["Alabama", "Ohio"]

# --- answer set expansion: Figure 10 (docs/pipeline.md §4) -------------------------------------

EXPANSION_INSTRUCTION = (
    "Given a passage related to the question, answer to the question. Find the shortest span of "
    "the passage as an answer."
)

EXPANSION_BODY = f"""\
Passage: Proletarian Unity Party (France) | {PROLETARIAN_UNITY_PARTY}
Question: When was the Proletarian Unity Party formed?
Answer: December 21, 1930

Passage: Edward Day | Edward Day was born in Rhode Island.
Question: Where was Judge Day born?
Answer: """

EXPANSION_PLAIN = f"""\
Given a passage related to the question, answer to the question. Find the shortest span of \
the passage as an answer.
{EXPANSION_BODY}"""

EXPANSION_CHAT = [
    {"role": "system", "content": EXPANSION_INSTRUCTION},
    {"role": "user", "content": EXPANSION_BODY},
]

USER_EXPANSION_EXEMPLARS = [
    {"title": "X (a)", "text": "X is a.", "question": "What is X?", "answer": "a"},
    {"title": "Y (b)", "text": "Y is b.", "question": "What is Y?", "answer": "b"},
]
EXPANSION_PLAIN_USER_EXEMPLARS = f"""\
{EXPANSION_INSTRUCTION}
Passage: X (a) | X is a.
Question: What is X?
Answer: a

Passage: Y (b) | Y is b.
Question: What is Y?
Answer: b

Passage: Edward Day | Edward Day was born in Rhode Island.
Question: Where was Judge Day born?
Answer: """


# --- for rows other than the fixed query: the same layouts, spelled out per line ---------------


def answer_plain(question: str, docs, *, few_shot: bool = False) -> str:
    """Figure 11 (or 12 with `few_shot`) as one string, for any question and shown documents."""
    lines = [ANSWER_INSTRUCTION]
    if few_shot:
        lines += [
            "Question: What is the location of the Griswold House?",
            "Context: Griswold House (Guilford, Connecticut) | " + GRISWOLD_GUILFORD,
            "Context: John N. A. Griswold House | " + GRISWOLD_NEWPORT,
            "Answer: " + GRISWOLD_ANSWER,
        ]
    lines.append("Question: " + question)
    lines += ["Context: " + d["title"] + " | " + d["text"] for d in docs]
    lines.append("Answer:")
    return "\n".join(lines)


def answer_chat(question: str, docs, *, few_shot: bool = False) -> list[dict]:
    """The same as chat messages: the instruction as the system turn, the rest as the user turn."""
    body = answer_plain(question, docs, few_shot=few_shot)[len(ANSWER_INSTRUCTION) + 1 :]
    return [{"role": "system", "content": ANSWER_INSTRUCTION}, {"role": "user", "content": body}]


def question_chat(surface_name: str, docs) -> list[dict]:
    """Figure 9 as chat messages with the paper's one exemplar, for any seed pair."""
    name = surface_name
    if name.lower().endswith("(disambiguation)"):
        name = name[: -len("(disambiguation)")].strip()
    query = "Entity: " + name + "\n"
    for k, d in enumerate(docs, 1):
        query += "Passage " + str(k) + ": " + d["title"] + " | " + d["text"] + "\n"
    head = QUESTION_BODY[: QUESTION_BODY.index("Entity: Judge Day")]
    return [
        {"role": "system", "content": QUESTION_INSTRUCTION},
        {"role": "user", "content": head + query + "Question: "},
    ]
