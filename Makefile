# `make demo` and `make test` are all a newcomer needs: both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# Notebook kernels start `python` from PATH: make it the project's.
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: demo test test-docs test-unit test-integration test-notebooks test-browser bench check-java clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,browser,docs]'
	touch $(STAMP)

# The peer systems of bench/peers.py (quixstreams, Pathway) pin older confluent-kafka and pyarrow
# than the project: they get an environment of their own, made on first use.
BENCH_VENV := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed-stamp
$(BENCH_STAMP): pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install -q --upgrade pip
	$(BENCH_VENV)/bin/pip install -q -e '.[bench]'
	touch $(BENCH_STAMP)

check-java:
	@v=$$(java -version 2>&1 | awk -F'"' '/version/ {print $$2}' | sed 's/^1\.//' | cut -d. -f1); \
	if [ -z "$$v" ] || [ "$$v" -lt 17 ] 2>/dev/null; then \
	  echo "kafkasql_magic needs Java 17 or newer for Spark (found: $${v:-no java on PATH})."; \
	  echo "Install it, e.g. 'sudo apt-get install openjdk-17-jre-headless', then run make again."; \
	  exit 1; \
	fi

demo: check-java $(STAMP)
	$(BIN)/python -m kafkasql_magic.demo

test: check-java $(STAMP) test-docs test-unit test-integration test-notebooks test-browser

# The documentation site (mkdocs.yml, docs/) built strictly: a broken link, anchor or page fails.
# Its examples (and the README's) run in tests/integration/test_readme.py.
test-docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --quiet --site-dir site

test-unit: $(STAMP)
	$(BIN)/python -m pytest tests/unit -q

# tests/integration/test_tls.py puts Debian's stunnel4 in front of an embedded broker and registry;
# skipped, saying why, without it. Two workers, each with its own broker and Spark session, a test
# file each at a time, the tests marked `cluster` together in one group (tests/integration/conftest.py):
# the tests mostly wait for micro-batches, so two cut the wall time on 2 cores (21.7 min; one
# process took 32.5 min in the last CI run). INTEGRATION_WORKERS=0: one process.
INTEGRATION_WORKERS ?= 2
test-integration: check-java $(STAMP)
	@command -v stunnel4 >/dev/null || command -v stunnel >/dev/null || \
	  echo "SKIPPING the TLS tests: no stunnel4 on PATH (sudo apt-get install stunnel4)"
	$(BIN)/python -m pytest tests/integration -q -n $(INTEGRATION_WORKERS) --dist loadgroup

# One notebook at a time by default. NOTEBOOK_WORKERS=2 runs two at once, each kernel with its own
# embedded stack (free ports): 5.8 min against 8 on 2 cores, but twice the load on Spark's fixed
# 10 s for a streaming source's Python worker to connect back.
NOTEBOOK_WORKERS ?= 0
test-notebooks: check-java $(STAMP)
	$(BIN)/python -m pytest --nbval-lax --nbval-sanitize-with notebooks/sanitize.cfg notebooks -q -p no:cacheprovider \
	  -n $(NOTEBOOK_WORKERS) --dist loadfile

# JupyterLab in Debian's Chromium (/usr/bin/chromium, or $$KAFKASQL_CHROMIUM); skipped, saying why, without it.
test-browser: check-java $(STAMP)
	@if [ -x "$${KAFKASQL_CHROMIUM:-/usr/bin/chromium}" ]; then \
	  $(BIN)/python -m pytest tests/browser -q -p no:cacheprovider; \
	else \
	  echo "SKIPPED the browser test: no Chromium at $${KAFKASQL_CHROMIUM:-/usr/bin/chromium} (sudo apt-get install chromium)"; \
	fi

bench: check-java $(STAMP)
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/sink.py
	$(BIN)/python bench/sink_stages.py
	$(BIN)/python bench/planning.py
	$(BIN)/python bench/widget.py
	$(BIN)/python bench/topic_identity.py
	$(BIN)/python bench/state_probe.py
	$(BIN)/python bench/row_conversion.py
	$(BIN)/python bench/state_growth.py
	$(BIN)/python bench/first_output.py
	$(BIN)/python bench/driver_memory.py
	$(MAKE) $(BENCH_STAMP)
	$(BIN)/python bench/peers.py --peer-python $(BENCH_VENV)/bin/python

clean:
	rm -rf $(VENV) $(BENCH_VENV) .pytest_cache spark-warehouse site
