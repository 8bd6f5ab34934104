"""Shared fixtures: a fresh in-memory DuckDB with kanon installed, and the data folder."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pytest

import kanon

if TYPE_CHECKING:
    from collections.abc import Iterator

REPO = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """Benchmark data: $KANON_DATA, else ../shared/data beside the checkout."""
    return Path(os.environ.get("KANON_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    connection = kanon.install(duckdb.connect())
    yield connection
    connection.close()
