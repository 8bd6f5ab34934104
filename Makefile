# One task runner for humans and CI. `make test` installs what the tests need and runs
# the whole suite: lint, Rust tests, Python tests.
PYTHON ?= python3

.PHONY: dev lint test test-rust test-python bench

dev:
	$(PYTHON) -m pip install -q -e '.[test]'

lint: dev
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m mypy
	$(PYTHON) -m mypy.stubtest kanon._core

test-rust:
	cargo test -p kanon-core

# pytest exits 5 when it collects nothing: that is not a failure of the code under test.
test-python:
	$(PYTHON) -m pytest || [ $$? -eq 5 ]

test: dev lint test-rust test-python

bench:
	$(PYTHON) benches/bench_check.py
