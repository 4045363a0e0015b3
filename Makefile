# vectorport: `make test` and `make demo` work on a fresh machine (they build .venv first).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test lint typecheck pytest demo bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and pinned: 2.13.0 is the CPU build on this machine's disk; an unpinned
	# torch pulled in by sentence-transformers would download a multi-GB CUDA build.
	$(PY) -m pip install --quiet "torch==2.13.0"
	# botocore needs python-dateutil < 3
	$(PY) -m pip install --quiet -e ".[all,dev]" "python-dateutil<3" "torch==2.13.0"
	touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy src

pytest: $(STAMP)
	$(PY) -m pytest

test: lint typecheck pytest

demo: $(STAMP)
	$(PY) -m vectorport.demo

bench: $(STAMP)
	for b in benchmarks/*_bench.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .demo
