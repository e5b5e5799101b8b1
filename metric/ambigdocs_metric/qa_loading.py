"""Loading the QA model of Disambig-F1, with one clear error when it cannot be loaded.

One rule for Python and the command line: a QA model that was asked for and cannot be loaded
is an error (`QAModelError`), never a silent skip. Only `ambigdocs evaluate`'s *default* model,
which nobody named, is skipped (with one line) when the Hub cannot be reached and it is not in
the local cache; the command decides that from `QAModelError.unreachable`.
"""

from __future__ import annotations

import importlib
import json
import os
from typing import Any

from .disambig_f1 import QAExtractor
from .hub_errors import fail_fast_without_network, hub_unreachable, root_cause

# The module's name inside the toolkit. `evaluate.load` runs a copy of this file under a hashed
# module path, and a class defined there again would be a class no user can name in `except`:
# the copy takes the toolkit's class when the toolkit is installed (`ambigdocs.QAModelError`).
STABLE_MODULE = "metric.ambigdocs_metric.qa_loading"


class QAModelError(OSError):
    """The QA model could not be loaded (`except ambigdocs.QAModelError`).

    Attributes:
        unreachable: it failed because the Hub could not be reached (or offline mode forbade
            asking it) and the model is not in the local cache.
    """

    def __init__(self, message: str, unreachable: bool = False):
        super().__init__(message)
        self.unreachable = unreachable


if __name__ != STABLE_MODULE:
    try:
        QAModelError = importlib.import_module(STABLE_MODULE).QAModelError  # noqa: F811
    except ImportError:  # the metric alone (a Hub Space): this copy's class is the only one
        pass


def load_qa_extractor(qa_model: Any, batch_size: int = 64, **options: Any) -> QAExtractor:
    """A ready QAExtractor for `qa_model` (a local path or Hub id, a `(model, tokenizer)` pair,
    or a QAExtractor, returned as is with `batch_size` set); `options` are QAExtractor's others.

    Raises:
        QAModelError: a path or id that cannot be loaded; the message says why in one line
            (the chain of library errors behind it is dropped).
    """
    if isinstance(qa_model, QAExtractor):
        qa_model.batch_size = batch_size
        return qa_model
    if not isinstance(qa_model, str):
        return QAExtractor(qa_model, batch_size, **options)
    local = os.path.expanduser(qa_model)
    if os.path.isfile(local):  # a file named like a Hub id is still not a model folder
        raise QAModelError(
            f"cannot load the QA model {qa_model!r} for Disambig-F1: a file, not a model folder"
        )
    if _looks_like_a_path(qa_model) and not os.path.isdir(local):
        raise QAModelError(f"cannot load the QA model {qa_model!r} for Disambig-F1: no such folder")
    if os.path.isdir(local):
        _check_model_folder(qa_model, local)
    else:  # a Hub id: without a network, fail in seconds rather than after retries
        fail_fast_without_network()
    try:
        _check_question_answering(qa_model)
        return QAExtractor(qa_model, batch_size, **options)
    except QAModelError:
        raise
    except Exception as err:  # missing path, unknown id, no network, not a model: one line
        unreachable = hub_unreachable(err)
        why = "the Hub cannot be reached and it is not in the local cache; " if unreachable else ""
        raise QAModelError(
            f"cannot load the QA model {qa_model!r} for Disambig-F1 ({why}{root_cause(err)})",
            unreachable=unreachable,
        ) from None


def _check_model_folder(qa_model: str, folder: str) -> None:
    """Names a local folder's missing or unreadable config.json (transformers would ask for a
    `model_type` key, or report a JSON error naming no file)."""
    config = os.path.join(folder, "config.json")
    why = None
    if not os.path.isfile(config):
        why = "no config.json there: not a saved model folder"
    else:
        try:
            with open(config, encoding="utf-8") as f:
                if not isinstance(json.load(f), dict):
                    why = f"{config} is not a JSON object"
        except ValueError as err:  # also JSONDecodeError, UnicodeDecodeError
            why = f"{config} cannot be read ({err})"
    if why:
        raise QAModelError(f"cannot load the QA model {qa_model!r} for Disambig-F1: {why}")


def _check_question_answering(qa_model: str) -> None:
    """Refuses a model saved as anything but an extractive QA model.

    transformers loads a causal LM (or an encoder without a QA head) as a QA model all the same,
    with a freshly initialised, random head: its spans are noise and Disambig-F1 comes out near
    0 with no warning that matters. The saved config names the class the weights were trained as.
    """
    from transformers import AutoConfig

    architectures = AutoConfig.from_pretrained(qa_model).architectures or []
    if architectures and not any(a.endswith("ForQuestionAnswering") for a in architectures):
        raise QAModelError(
            f"{qa_model!r} is not an extractive question-answering model (it was saved as "
            f"{', '.join(architectures)}); Disambig-F1 needs one trained on SQuAD 2.0, such as "
            "deepset/roberta-base-squad2"
        )


def _looks_like_a_path(name: str) -> bool:
    """A name that can only be a local path (a Hub id is NAME or NAMESPACE/NAME)."""
    return (
        name.startswith((".", "/", "~")) or name.count("/") > 1 or os.sep in name.replace("/", "")
    )
