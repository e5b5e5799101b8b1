"""The exact prompt strings of the authors' data-creation scripts (issues 11 and 15).

`AUTHORS_EXPANSION_PROMPT` is `base_prompt` of their `expand.py` (an `[INST]` block and four
exemplars), `AUTHORS_QUESTION_EXEMPLARS` `comp_prompt` of `generate_gpt.py` (two exemplars),
character for character; docs/pipeline.md §3 and §4 describe them. `generation.prompts` renders.
"""

import json
from importlib import resources

# Every long prompt text of the project (the authors' strings, the paper's exemplars), kept as
# data in generation/resources/prompts/literals.json; the renderers are in generation.prompts.
LITERALS: dict = json.loads(
    resources.files("generation")
    .joinpath("resources", "prompts", "literals.json")
    .read_text("utf-8")
)
AUTHORS_EXPANSION_PROMPT: str = LITERALS["authors_expansion_prompt"]
AUTHORS_QUESTION_EXEMPLARS: str = LITERALS["authors_question_exemplars"]
