"""An independent reference for the authors' answering prompts (their `src/eval/qa.py`).

Written from the published strings and layout, not from `generation.prompts`: the two-exemplar
block is the authors' literal (same escapes as their source, so `\\u2013` is an en dash, `Hunt's`
has an ASCII apostrophe and `\\"` is a plain double quote), and the functions below assemble a
prompt the way their script concatenates it. Tests compare the toolkit's output with these byte
for byte.
"""

from __future__ import annotations

INSTRUCTION = "Answer for the given question using only the provided context."

FEW_PROMPT = """Question: What is the location of the Griswold House?
Context: Griswold House (Guilford, Connecticut) | a limited number of days each week. The Griswold House is located east of Guilford Center, on the south side of Boston Street (Connecticut Route 146) at its junction with Lovers Lane. It is a 2-1/2 story wood frame structure, with a gabled roof, large central chimney, and clapboarded exterior. A leanto section to the rear gives the house a classic New England saltbox appearance. The main facade is three bays wide, with sash windows arranged symmetrically around the entrance. The entrance is flanked by pilasters and topped by a fully pedimented gable. The house was probably built around 1764
Context: John N. A. Griswold House | John N. A. Griswold House The John N. A. Griswold House is a National Historic Landmark at 76 Bellevue Avenue in Newport, Rhode Island. It is home to the Newport Art Museum and houses an art gallery. The home was built in 1864 by Richard Morris Hunt for John Griswold, an Old China Trade merchant and member of the Griswold Family. The house is one of the earliest American Stick\u2013style buildings and one of Hunt's first works in Newport. The house is an official project of Save America\u2019s Treasures. The Griswold House is a 2-1/2 story wood frame structure, set
Answer: There are two Griswold Houses mentioned in the passages. John N. A. Griswold House is located at 76 Bellevue Avenue in Newport, Rhode Island and Griswold House (Guilford, Connecticut) is located east of Guilford Center, on the south side of Boston Street (Connecticut Route 146) at its junction with Lovers Lane.

Question: Who is the playable character in Edna & Harvey?
Context: Edna & Harvey: The Breakout | the same vein as LucasArts' pre-1994 games created using the SCUMM engine. The game screen shows a two-dimensional cartoon world where Edna, the playable character, is incarcerated within a mental hospital. The bottom edge of the screen contains a list of verbs which must be clicked on before the player clicks on an item within the game world in order to manipulate it. When the player tries to combine or effect one item with another each combination produces a different response, unlike in most games of this type where an incorrect combination would result in a response of \"I don't
Context: Edna & Harvey: Harvey's New Eyes | Edna & Harvey: Harvey's New Eyes Edna & Harvey: Harvey's New Eyes, also known as Harvey's New Eyes, is a point-and-click adventure game created by Daedalic Entertainment. The game was released on October 16, 2012. \"Harvey's New Eyes\" is a sequel to \"\". The game is set in a 2D cartoon world. The player controls Lilli. Unlike most other adventure games, there are no clickable dialogues. After the player clicks on a character, a bar appears with some symbols indicating a subject. The game neither has a list with actions such as Walk, Look, Talk, Pick up, Use. If applicable,
Answer: In "Edna & Harvey: The Breakout" the playable character is Edna, and in "Edna & Harvey: Harvey's New Eyes," the playable character is Lilli.
"""  # noqa: E501


def contexts(docs) -> str:
    """One `Context: title | text` line per shown document, in the order shown."""
    out = ""
    for doc in docs:
        out += "Context: " + doc["title"] + " | " + doc["text"] + "\n"
    return out


def open_model_prompt(question: str, docs, few_shot: bool) -> str:
    """The raw text an open model reads (BOS added by the tokenizer, not part of the text)."""
    ctx = contexts(docs)
    if few_shot:
        return (
            "[INST] " + INSTRUCTION + " [/INST]\n" + FEW_PROMPT + "\nQuestion: " + question + "\n"
            + ctx + "Answer:"
        )  # fmt: skip
    return "[INST] " + INSTRUCTION + "\nQuestion: " + question + "\n" + ctx + "Answer: [/INST]"


def gpt_messages(question: str, docs, few_shot: bool) -> list[dict]:
    """The chat messages sent to the OpenAI API."""
    user = "Question: " + question + "\n" + contexts(docs) + "Answer:"
    if few_shot:
        user = FEW_PROMPT + "\n" + user
    return [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": user}]
