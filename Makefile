# The two set-up commands (README): `make demo` runs the main job end to end, `make test` runs the tests.
# Each creates .venv and installs what it needs by itself; constraints.txt is a known-good freeze.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(abspath $(VENV))/bin
STAMP := $(VENV)/.installed
export PATH := $(BIN):$(PATH)
export PYSPARK_PYTHON := $(BIN)/python
export PYSPARK_DRIVER_PYTHON := $(BIN)/python

.PHONY: demo test install ui bench clean

$(STAMP): pyproject.toml constraints.txt constraints-moto.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[airflow,test]'
	# The JVM decode fast paths (cdc_jobs.jvm; a replay would build them on first use otherwise).
	$(BIN)/python -m cdc_jobs.jvm || echo "no JDK here: replays decode in Python (slower, same output)"
	# The S3 API server of the object-store tests, in its own virtualenv (its botocore pins an older dateutil).
	$(PYTHON) -m venv $(VENV)/moto-server
	$(VENV)/moto-server/bin/pip install -q -c constraints-moto.txt 'moto[server]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	bash .ci/demo.sh

test: $(STAMP)
	# PostgreSQL and MariaDB for the db tests (installed and started here when missing; CI=true stops on failure)
	bash .ci/services.sh || [ "$${CI:-}" != true ]
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q -p no:cacheprovider --durations=20 tests

ui: $(STAMP)
	bash .ci/airflow-ui.sh

bench: $(STAMP)
	$(BIN)/python -m bench.run

clean:
	rm -rf var out test-artifacts
