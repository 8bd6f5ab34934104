"""Bring the inputs the Python API accepts into DuckDB: table names, relations, frames."""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import duckdb

from kanon.engine.install import install_kernels
from kanon.exceptions import InvalidInputError
from kanon.plan.catalog import INTERNAL_TABLES

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pyarrow as pa

__all__ = ["Data", "as_table", "like_input"]

Data = Any  # str | duckdb.DuckDBPyRelation | pandas / polars DataFrame | pyarrow Table


@contextmanager
def as_table(
    data: Data, con: duckdb.DuckDBPyConnection | None, what: str = "data"
) -> Iterator[tuple[duckdb.DuckDBPyConnection, str]]:
    """Yield ``(connection, table name)`` under which ``data`` can be queried.

    A string is a table or view name on ``con`` (required then). A DuckDB relation is
    materialized to Arrow once. DataFrames (pandas, polars) and Arrow tables are
    registered as temporary views, unregistered on exit. Kernel UDFs are installed.
    """
    if isinstance(data, str):
        if con is None:
            msg = f"{what} is a table name ({data!r}): pass the connection as con="
            raise InvalidInputError(msg)
        install_kernels(con)
        yield con, data
        return
    if isinstance(data, duckdb.DuckDBPyRelation):
        data = data.to_arrow_table()
    if not (hasattr(data, "__arrow_c_stream__") or type(data).__module__.startswith("pandas")):
        msg = (
            f"{what} must be a table name, a DuckDB relation, a pandas or polars DataFrame "
            f"or a pyarrow Table, got {type(data).__name__}"
        )
        raise InvalidInputError(msg)
    own = con is None
    con = duckdb.connect() if con is None else con
    # A fresh name in kanon's reserved namespace: it replaces no view of the user's.
    name = f"__kanon_input_{uuid.uuid4().hex[:16]}"
    INTERNAL_TABLES.add(name)
    try:
        install_kernels(con)
        con.register(name, data)
        yield con, name
    finally:
        INTERNAL_TABLES.discard(name)
        con.unregister(name)
        if own:
            con.close()


def like_input(data: Data, result: pa.Table, con: duckdb.DuckDBPyConnection | None) -> Any:
    """Return ``result`` as the same kind of object as ``data``."""
    module = type(data).__module__
    if isinstance(data, duckdb.DuckDBPyRelation):
        return (con or duckdb.default_connection()).from_arrow(result)
    if module.startswith("pandas"):
        return result.to_pandas()
    if module.startswith("polars"):
        import polars as pl

        return pl.from_arrow(result)
    return result
