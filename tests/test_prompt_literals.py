"""Every prompt layout the toolkit renders, against the literals of `prompt_literals.py`.

The expected strings are written from the paper's figures and the docs, not from the renderer
(see `prompt_literals.py`), so a changed separator or an extra blank line fails here.
"""

import prompt_literals as lit
import pytest

from generation.backends.hf import merge_system_into_first_user
from generation.prompts import (
    question_target,
    render_answer_input,
    render_answer_prompt,
    render_expansion_prompt,
    render_question_prompt,
    render_question_training_text,
)
from metric.ambigdocs_metric import scoring

Q, DOCS = lit.QUESTION, lit.DOCS


@pytest.mark.parametrize(
    ("few_shot", "prompt_format", "expected"),
    [
        (False, "plain", lit.ANSWER_PLAIN_ZERO_SHOT),
        (True, "plain", lit.ANSWER_PLAIN_FEW_SHOT),
        (False, "chat", lit.ANSWER_CHAT_ZERO_SHOT),
        (True, "chat", lit.ANSWER_CHAT_FEW_SHOT),
    ],
)
def test_answer_layouts(few_shot, prompt_format, expected):
    got = render_answer_prompt(Q, DOCS, few_shot=few_shot, prompt_format=prompt_format)
    assert got == expected
    # the format the answering runner asks for gives the same, whatever the back-end kind
    for kind in ("hf", "vllm", "openai"):
        assert (
            render_answer_input(
                Q, DOCS, prompt_format=prompt_format, few_shot=few_shot, backend_kind=kind
            )
            == expected
        )


def test_answer_user_exemplars_follow_one_another():
    got = render_answer_prompt(Q, DOCS, few_shot=True, exemplars=lit.USER_ANSWER_EXEMPLARS)
    assert got == lit.ANSWER_PLAIN_USER_EXEMPLARS


def test_k_precision_reference_is_figure_11_plain():
    assert scoring.k_precision_reference(Q, DOCS) == lit.ANSWER_PLAIN_ZERO_SHOT


def test_a_template_without_system_turn_reads_the_plain_string():
    # docs/answering.md: `instruction + "\n" + user content`, one user turn
    for chat, plain in [
        (lit.ANSWER_CHAT_ZERO_SHOT, lit.ANSWER_PLAIN_ZERO_SHOT),
        (lit.ANSWER_CHAT_FEW_SHOT, lit.ANSWER_PLAIN_FEW_SHOT),
        (lit.QUESTION_CHAT, lit.QUESTION_PLAIN),
    ]:
        assert merge_system_into_first_user(chat) == [{"role": "user", "content": plain}]


@pytest.mark.parametrize(
    ("prompt_format", "expected"),
    [
        ("plain", lit.QUESTION_PLAIN),
        ("chat", lit.QUESTION_CHAT),
        ("instruction", lit.QUESTION_INSTRUCTION_FORMAT),
    ],
)
def test_question_layouts(prompt_format, expected):
    assert render_question_prompt(lit.SURFACE_NAME, DOCS, prompt_format=prompt_format) == expected


def test_question_user_exemplars_each_end_in_a_blank_line():
    got = render_question_prompt(
        lit.SURFACE_NAME, DOCS, prompt_format="plain", exemplars=lit.USER_QUESTION_EXEMPLARS
    )
    assert got == lit.QUESTION_PLAIN_USER_EXEMPLARS


def test_distillation_pair_is_instruction_prompt_and_target():
    answers = lit.QUESTION_TARGET_ANSWERS
    assert question_target(Q, answers) == lit.QUESTION_TARGET
    assert render_question_training_text(lit.SURFACE_NAME, DOCS, Q, answers) == (
        lit.QUESTION_INSTRUCTION_FORMAT,
        lit.QUESTION_TARGET,
    )


@pytest.mark.parametrize(
    ("prompt_format", "expected"),
    [("plain", lit.EXPANSION_PLAIN), ("chat", lit.EXPANSION_CHAT)],
)
def test_expansion_layouts(prompt_format, expected):
    p = lit.PASSAGE
    assert render_expansion_prompt(p["title"], p["text"], Q, prompt_format=prompt_format) == (
        expected
    )


def test_expansion_user_exemplars_each_end_in_a_blank_line():
    p = lit.PASSAGE
    got = render_expansion_prompt(p["title"], p["text"], Q, exemplars=lit.USER_EXPANSION_EXEMPLARS)
    assert got == lit.EXPANSION_PLAIN_USER_EXEMPLARS


def test_the_per_row_builders_agree_with_the_literals():
    # the helpers other tests use for sample rows spell the same layouts
    assert lit.answer_plain(Q, DOCS) == lit.ANSWER_PLAIN_ZERO_SHOT
    assert lit.answer_plain(Q, DOCS, few_shot=True) == lit.ANSWER_PLAIN_FEW_SHOT
    assert lit.answer_chat(Q, DOCS, few_shot=True) == lit.ANSWER_CHAT_FEW_SHOT
    assert lit.question_chat(lit.SURFACE_NAME, DOCS) == lit.QUESTION_CHAT
