"""One ``local[2]`` SparkSession for the whole test run: the session fixture ``spark``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

import kanon.spark

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """Start Spark once (about 20 s) and stop it at the end of the run."""
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("kanon-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    # A first release before the tests: its first run raises the recursion limit, which
    # hypothesis would report if it happened inside a property test.
    warm = session.createDataFrame(pa.table({"a": [1, 1, 2, 2], "b": ["x", "x", "y", "y"]}))
    kanon.spark.anonymize(
        warm,
        2,
        ["a"],
        hierarchies={"a": pa.table({"v": [1, 2], "l": ["*", "*"]})},
        insensitive=["b"],
    ).collect()
    yield session
    session.stop()
