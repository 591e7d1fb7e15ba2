# kvplan — the two front-door commands are `make serve` and `make test`.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed-stamp
HOST    ?= 127.0.0.1
PORT    ?= 8000

.PHONY: install serve test contract lint format bench bench-compare bench-servers openapi clean browser-deps prometheus-deps compiler-deps compiled lock reliability oracle

# Installs are locked (requirements*.lock, with hashes; `make lock` regenerates them from pyproject.toml).
$(STAMP): pyproject.toml requirements-dev.lock requirements-build.lock
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --require-hashes -r requirements-dev.lock
	$(BIN)/python -m pip install -q --require-hashes -r requirements-build.lock  # mypyc's setuptools
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $(STAMP)

lock: $(STAMP)
	$(BIN)/python -m pip install -q pip-tools
	$(BIN)/pip-compile -q --generate-hashes --strip-extras -o requirements.lock pyproject.toml
	$(BIN)/pip-compile -q --generate-hashes --strip-extras --extra test --extra dev -o requirements-dev.lock pyproject.toml
	$(BIN)/pip-compile -q --generate-hashes --strip-extras --allow-unsafe -o requirements-build.lock requirements-build.in

install: $(STAMP)

# The simulator's hot modules compiled by mypyc (service/kvplan/compiled.py): rebuilt when a source
# they were compiled from changed, used only while fresh. Without a C compiler `make serve` runs
# the Python source; `make test` needs the compiled one.
compiled: $(STAMP) compiler-deps
	$(BIN)/kvplan compiled build

serve: $(STAMP)
	@$(MAKE) --no-print-directory compiled || echo "kvplan: no compiled simulator; serving the Python one (slower)"
	$(BIN)/kvplan serve --host $(HOST) --port $(PORT)

lint: $(STAMP)
	$(BIN)/ruff check service tests benchmarks
	$(BIN)/ruff format --check service tests benchmarks
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format service tests benchmarks
	$(BIN)/ruff check --fix service tests benchmarks

# The browser tests drive Debian's Chromium (Playwright never downloads a browser).
browser-deps:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = "0" ]; then \
	    echo "installing chromium (Debian) for the browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is missing and this is not root: the browser tests will be skipped"; fi; \
	fi

# Debian packages $(1), as root: the package lists are fetched only if the first try lacks them.
apt_install = export DEBIAN_FRONTEND=noninteractive; \
	apt-get install -y -qq --no-install-recommends $(1) >/dev/null 2>&1 || \
	{ apt-get update -qq && apt-get install -y -qq --no-install-recommends $(1) >/dev/null; }

# mypyc needs a C compiler and Python's headers (`kvplan compiled build` says which is missing).
HEADER = $$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h
compiler-deps: $(STAMP)
	@need=""; command -v cc >/dev/null 2>&1 || need="gcc libc6-dev"; \
	[ -f "$(HEADER)" ] || need="$$need python3-dev"; \
	if [ -n "$$need" ]; then \
	  if [ "$$(id -u)" = "0" ]; then \
	    echo "installing $$need (Debian) for the compiled simulator"; $(call apt_install,$$need); \
	  else echo "$$need missing and this is not root: no compiled simulator"; fi; \
	fi

# The Prometheus tests (tests/autoscale) run Debian's prometheus and promtool.
prometheus-deps:
	@if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = "0" ]; then \
	    echo "installing prometheus (Debian) for the Prometheus tests"; $(call apt_install,prometheus); \
	  else echo "prometheus or promtool is missing and this is not root: the Prometheus tests will be skipped"; fi; \
	fi

test: lint compiled browser-deps prometheus-deps
	KVPLAN_REQUIRE_COMPILED=1 $(BIN)/pytest -q
	KVPLAN_COMPILED=0 $(BIN)/pytest -q -m source  # the white-box tests, on the Python source

contract: $(STAMP)
	KVPLAN_SCHEMATHESIS_EXAMPLES=$${KVPLAN_SCHEMATHESIS_EXAMPLES:-300} $(BIN)/pytest -q tests/contract

openapi: $(STAMP)
	$(BIN)/kvplan openapi > openapi/openapi.json

# The revision compare_http.py measures this tree against (e8b5a9e: before issue 10).
AGAINST ?= e8b5a9e
bench: compiled
	$(BIN)/python benchmarks/core_bench.py
	$(BIN)/python benchmarks/fleet_bench.py
	$(BIN)/python benchmarks/sim_bench.py
	$(BIN)/python benchmarks/trace_bench.py
	$(BIN)/python benchmarks/capacity_bench.py
	$(BIN)/python benchmarks/speed_bench.py
	$(BIN)/python benchmarks/http_bench.py --server uvicorn
	$(BIN)/python benchmarks/deployments_bench.py
	$(BIN)/python benchmarks/compare_http.py --against $(AGAINST)

# Bounded, loopback only (about 4 minutes); results in benchmarks/results/reliability.json.
reliability: $(STAMP)
	$(BIN)/python benchmarks/reliability.py

# This tree's server against another revision's, side by side (about 3 minutes; also in bench).
bench-compare: $(STAMP)
	$(BIN)/python benchmarks/compare_http.py --against $(AGAINST)

bench-servers: $(STAMP)
	$(BIN)/python -m pip install -q granian
	$(BIN)/python benchmarks/http_bench.py --server both

# vLLM's own planner on the real configs → tests/oracle/cases-vllm-*.json (opt-in: needs the oracle
# installed with ../shared/tools/vllm-oracle/install_lean.sh DIR, ~2 GB).
ORACLE_PYTHON ?= ../oracle/venv-lean/bin/python
ORACLE_DIR ?= ../shared/tools/vllm-oracle
oracle: $(STAMP)
	ORACLE_PYTHON=$(ORACLE_PYTHON) ORACLE_DIR=$(ORACLE_DIR) $(BIN)/python tests/oracle/generate.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis service/kvplan/_compiled
