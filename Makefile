# kvplan — the two front-door commands are `make serve` and `make test`.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed-stamp
HOST    ?= 127.0.0.1
PORT    ?= 8000

.PHONY: install serve test contract lint format bench bench-servers openapi clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,dev]'
	touch $(STAMP)

install: $(STAMP)

serve: $(STAMP)
	$(BIN)/kvplan serve --host $(HOST) --port $(PORT)

lint: $(STAMP)
	$(BIN)/ruff check service tests benchmarks
	$(BIN)/ruff format --check service tests benchmarks
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format service tests benchmarks
	$(BIN)/ruff check --fix service tests benchmarks

test: lint
	$(BIN)/pytest -q

contract: $(STAMP)
	KVPLAN_SCHEMATHESIS_EXAMPLES=$${KVPLAN_SCHEMATHESIS_EXAMPLES:-300} $(BIN)/pytest -q tests/contract

openapi: $(STAMP)
	$(BIN)/kvplan openapi > openapi/openapi.json

bench: $(STAMP)
	$(BIN)/python benchmarks/core_bench.py
	$(BIN)/python benchmarks/fleet_bench.py
	$(BIN)/python benchmarks/sim_bench.py
	$(BIN)/python benchmarks/http_bench.py --server uvicorn

bench-servers: $(STAMP)
	$(BIN)/python -m pip install -q granian
	$(BIN)/python benchmarks/http_bench.py --server both

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
