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

.PHONY: demo test install jvm ui bench clean

$(STAMP): pyproject.toml constraints.txt constraints-moto.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e '.[airflow,test]'
	# The S3 API server of the object-store tests, in its own virtualenv (its botocore pins an older dateutil).
	$(PYTHON) -m venv $(VENV)/moto-server
	$(VENV)/moto-server/bin/pip install -q -c constraints-moto.txt 'moto[server]'
	touch $(STAMP)

# The JVM side (jobs/jvm/pom.xml, needs a JDK and Maven): compiles the project's Java and runs its JUnit tests,
# resolves the jars every SparkSession loads (Delta Lake, Spark's Kafka source, s3a) and the test-only ones (the
# Kafka broker). Instant when already built for these sources; a Java or pom change builds anew.
jvm: $(STAMP)
	$(BIN)/python -m cdc_jobs.jvm

install: $(STAMP) jvm

demo: $(STAMP) jvm
	bash .ci/demo.sh

test: $(STAMP) jvm
	# PostgreSQL and MariaDB for the db tests (installed and started here when missing; CI=true stops on failure)
	bash .ci/services.sh || [ "$${CI:-}" != true ]
	$(BIN)/python -m pytest -n 2 --dist loadgroup -q -p no:cacheprovider --durations=20 tests

ui: $(STAMP)
	bash .ci/airflow-ui.sh

bench: $(STAMP) jvm
	$(BIN)/python -m bench.run

clean:
	rm -rf var out test-artifacts
