# Two entry points for a fresh machine:  `make demo`  and  `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# Tests and the demo never touch the network: models and data come from the repo or from
# packages installed by `setup`.
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1

.PHONY: setup demo test lint bench clean

setup: $(VENV)/.installed

# The CPU build of torch 2.13.0 goes in first: any later request for torch is then satisfied
# and never pulls the multi-GB CUDA build. The editable install puts the clone itself on
# sys.path (`compat` mode), so `import ambigdocs` finds the real module even from the folder
# above a clone named `ambigdocs`, where the clone folder would otherwise shadow it as an empty
# namespace package (the default editable mode's finder is asked only after sys.path).
$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e . --config-settings editable_mode=compat
	touch $@

# The main job on the bundled sample: score the paper's worked examples, offline.
demo: setup
	$(OFFLINE) $(BIN)/ambigdocs evaluate generation/resources/sample/answers.json \
		--output-dir demo-output --plot --report --labels-field paper_label --show-examples \
		--allow-duplicate-qids

test: setup
	$(OFFLINE) $(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

# Speed benchmarks on CPU; each prints its ratio against the naive method on the same data.
bench: setup
	$(OFFLINE) $(BIN)/python benchmarks/bench_evaluate.py
	$(OFFLINE) $(BIN)/python benchmarks/bench_rewards.py
	$(OFFLINE) $(BIN)/python benchmarks/bench_seed.py
	$(OFFLINE) $(BIN)/python benchmarks/bench_seed.py --streaming --distractors 2000000
	$(OFFLINE) $(BIN)/python benchmarks/bench_retrieval.py
	$(OFFLINE) $(BIN)/python benchmarks/bench_generation.py
	$(OFFLINE) $(BIN)/python benchmarks/bench_df1.py

clean:
	rm -rf $(VENV) demo-output .pytest_cache
