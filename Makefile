# One task runner for humans and CI. `make test` installs what the tests need and runs
# the whole suite: lint, Rust tests, Python tests.
PYTHON ?= python3

.PHONY: dev lint postgres java chromium test test-fast test-rust test-python bench

# pycanon (the tests' independent oracle) pins numpy, pandas, scipy and more exactly,
# which would downgrade a user's: it is installed without them (its checks import only
# numpy and pandas, which the test extra brings).
dev:
	$(PYTHON) -m pip install -q -e '.[test]'
	$(PYTHON) -m pip install -q --no-deps 'pycanon>=1.3.5,<1.4'

lint: dev
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m mypy
	$(PYTHON) -m mypy.stubtest kanon._core

test-rust:
	cargo test -p kanon-core

# tests/pg.py starts a throwaway PostgreSQL server (initdb + pg_ctl) for the round-trip
# tests of kanon.to_sql: install Debian's postgresql package when neither PATH nor
# $(PG_BINDIRS) has an initdb (with sudo unless root).
PG_BINDIRS ?= /usr/lib/postgresql/*/bin
APT_GET ?= apt-get
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

postgres:
	@if command -v initdb >/dev/null 2>&1 || ls $(PG_BINDIRS)/initdb >/dev/null 2>&1; then :; else \
		echo "initdb not found: installing Debian's postgresql package"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive $(APT_GET) update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -q --no-install-recommends postgresql; \
	fi

# The Spark tests (tests/test_spark.py) need a JVM: install Debian's Java 17 runtime when
# there is no `java`.
java:
	@if command -v java >/dev/null 2>&1; then :; else \
		echo "java not found: installing Debian's openjdk-17-jre-headless package"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive $(APT_GET) update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -q --no-install-recommends openjdk-17-jre-headless; \
	fi

# The report test (tests/test_report.py) renders a page in headless Chromium: install
# Debian's chromium when there is none.
chromium:
	@if command -v chromium >/dev/null 2>&1; then :; else \
		echo "chromium not found: installing Debian's chromium package"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive $(APT_GET) update -q && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -q --no-install-recommends chromium; \
	fi

# pytest exits 5 when it collects nothing: that is not a failure of the code under test.
test-python: postgres java chromium
	$(PYTHON) -m pytest || [ $$? -eq 5 ]

test: dev lint test-rust test-python

# The quick lane: every Python test not marked slow (a test of 7 s or more; the full
# suite, `make test`, runs them all), no lint, no Rust tests.
test-fast: postgres java chromium
	$(PYTHON) -m pytest -m 'not slow' || [ $$? -eq 5 ]

bench:
	$(PYTHON) benches/bench_check.py
