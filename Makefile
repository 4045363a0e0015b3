# vectorport: `make test` and `make demo` work on a fresh machine (they build .venv first).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# e.g. DEMO_ARGS="--embedder hash:64" for a model-free demo in seconds (the README test uses it)
DEMO_ARGS ?=
# the suite runs on this many processes (pytest-xdist; a file's tests stay in one process, so its
# module fixtures start once); 0 runs it in this process alone. The 25 slowest tests are listed at
# the end, so a test that grows the suite toward its 25-minute budget shows in the log.
PYTEST_WORKERS ?= 2

.PHONY: test lint typecheck pytest demo bench bench-quick clean chromium

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and pinned: 2.13.0 is the CPU build on this machine's disk; an unpinned
	# torch pulled in by sentence-transformers would download a multi-GB CUDA build.
	$(PY) -m pip install --quiet "torch==2.13.0"
	# botocore needs python-dateutil < 3. One venv for everything: the interop extra (the
	# frameworks' own clients, and the pgvector-python < 0.4 they pin) resolves beside the rest,
	# so the whole suite runs where vectorport meets them.
	$(PY) -m pip install --quiet -e ".[all,dev,interop,ray,langchain,llamaindex]" "python-dateutil<3" "torch==2.13.0"
	touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy src

pytest: $(STAMP)
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile --durations=25

# The HTML report's render test needs headless Chromium (Debian's package), as CI has it
# (.ci/run). Installed here when that needs no password (root); otherwise `make test` says so.
chromium:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing headless Chromium for the HTML report test (as CI does)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
	  echo "NOTE: headless Chromium is not installed, so 1 test (the HTML report render) will be SKIPPED;"; \
	  echo "      CI runs it. To run it here: sudo apt-get install -y chromium (or: sudo make chromium)"; \
	fi

test: chromium lint typecheck pytest

demo: $(STAMP)
	$(PY) -m vectorport.examples.demo $(DEMO_ARGS)
	@echo "vectorport is in $(VENV)/bin: run 'source $(VENV)/bin/activate' to type just 'vectorport'"

bench: $(STAMP)
	for b in benchmarks/*_bench.py; do $(PY) $$b || exit 1; done

# every benchmark once at its smoke-test sizes: do they still run on this tree?
bench-quick: $(STAMP)
	for b in benchmarks/*_bench.py; do echo "== $$b" >&2; $(PY) $$b --quick || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .demo
