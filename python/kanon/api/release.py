"""``kanon.anonymize``, ``kanon.explain`` and ``kanon.metrics``: releases from Python."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

import duckdb

from kanon._options import AnonymizeKeywords, SearchKeywords, keywords
from kanon.engine.inputs import Data, as_table, like_input
from kanon.engine.progress import run_with_progress
from kanon.plan.metrics import Metrics, plan_metrics
from kanon.plan.release.resolve import AnonymizeOptions, plan_anonymize
from kanon.plan.release.search import Transformation, search_sql
from kanon.plan.undeclared import reraised

if TYPE_CHECKING:
    from collections.abc import Callable

T = TypeVar("T")

__all__ = ["anonymize", "explain", "metrics", "search"]


def explain(
    con: duckdb.DuckDBPyConnection,
    table: str,
    k: int,
    qi: list[str] | None = None,
    **options: Unpack[AnonymizeKeywords],
) -> str:
    """Return the SQL that ``SELECT * FROM kanon(table, k := k, ...)`` runs.

    The query needs the kernel UDF ``kanon_forest`` (``kanon.install(con)``) and reads
    the source table, the configured hierarchy tables and nothing else.

    Args:
        con: the connection holding ``table``.
        table: the table or view to anonymize.
        k: the smallest class size (1 ≤ k ≤ rows).
        qi: quasi-identifier columns (default: those configured for the table).
        **options: the options of SQL ``kanon(...)``, declared in ``kanon._options``
            (docs/sql.md's parameter table): ``method`` (``"forest"``, ``"forest_paper"``,
            ``"mondrian"``, ``"optimal"``, ``"datafly"``, ``"mu_argus"``), ``seed``,
            ``labels``, ``block_size``, ``effort``, the roles ``identifiers``,
            ``sensitive`` and ``insensitive``, ``keep_undeclared``, and for the global
            recodings ``metric``, ``max_suppression``, ``drop_suppressed``,
            ``min_level``, ``max_level`` and the privacy models ``l``,
            ``l_diversity``, ``c``, ``t``, ``t_distance``, ``population``,
            ``delta_min``, ``delta_max``.

    Returns:
        The SQL text.

    Raises:
        ConfigError: unknown table or column, no quasi-identifiers, missing hierarchy,
            a column given two roles, a configured identifier given another role, an
            undeclared column that carries the QIs (see ``keep_undeclared``).
        HierarchyError: a configured hierarchy is malformed or misses a value.
        InvalidInputError: k, seed or method out of range.
    """
    plan_options = AnonymizeOptions.of(k, qi, keywords("kanon.explain", "kanon", options))
    return plan_anonymize(con, table, plan_options).sql


def anonymize(
    data: Data,
    k: int,
    qi: list[str] | None = None,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
    progress: bool | None = None,
    **options: Unpack[AnonymizeKeywords],
) -> Any:
    """Return a k-anonymous release of ``data`` (SQL ``kanon(...)``).

    Every combination of released quasi-identifier labels occurs at least ``k`` times;
    each label is the hierarchy ancestor of the original value at the group's level
    (``'*'`` at the top); identifier columns become ``'*'``; other columns and the
    row count are unchanged. The source is only read. An undeclared column that
    carries the QIs (beside them it makes a class below k) stops the release (see
    ``keep_undeclared``).

    Args:
        data: a table name (with ``con``), a DuckDB relation, a pandas or polars
            DataFrame or a pyarrow Table.
        k: the smallest class size (1 ≤ k ≤ rows).
        qi: quasi-identifier columns (default: those configured for the table).
        con: connection holding ``data`` when it is a table name.
        progress: draw a progress bar on standard error when the run takes longer than
            1.5 s (default: when standard error is a terminal). Not for table names and
            relations, which come back unevaluated. Ctrl-C interrupts the statement.
        **options: as :func:`explain`.

    Returns:
        The same kind of object as ``data``: a DuckDB relation for a table name or a
        relation, a pandas / polars DataFrame, or a pyarrow Table.

    Raises:
        ConfigError, HierarchyError, InvalidInputError: as :func:`explain`.

    Examples:
        >>> import pyarrow as pa, kanon
        >>> t = pa.table({"age": [30, 31, 32, 40, 41, 42], "dx": list("abcdef")})
        >>> out = kanon.anonymize(t, k=3, qi=["age"], sensitive=["dx"])
        >>> sorted(out.column("age").to_pylist())
        ['[30..32]', '[30..32]', '[30..32]', '[39..42]', '[39..42]', '[39..42]']
    """
    plan_options = AnonymizeOptions.of(k, qi, keywords("kanon.anonymize", "kanon", options))
    if isinstance(data, str):
        with as_table(data, con) as (con_, name):
            return con_.sql(plan_anonymize(con_, name, plan_options).sql)
    with as_table(data, con) as (con_, name):
        plan = plan_anonymize(con_, name, plan_options)
        try:
            result = run_with_progress(
                con_,
                lambda: con_.sql(plan.sql).to_arrow_table(),
                rows=plan.rows,
                label=f"anonymizing {plan.rows:,} rows",
                show=sys.stderr.isatty() if progress is None else progress,
            )
        except duckdb.InvalidInputException as err:
            raise reraised(err) from None
    return like_input(data, result, con)


def metrics(
    original: Data,
    released: Data,
    qi: list[str] | None = None,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
    k: int | None = None,
) -> Metrics:
    """Measure the utility of ``released``, a release of ``original`` (SQL ``kanon_metrics``).

    Args:
        original: the source data: a table name (with ``con``), a DuckDB relation, a
            pandas or polars DataFrame or a pyarrow Table. Its configured (or given)
            QIs and hierarchies define the metrics.
        released: the release, same kinds of input, with the QI columns holding labels.
        qi: quasi-identifier columns (default: those configured for ``original``).
        con: connection holding the tables given by name.
        k: the k the release was made for (C_AVG); default: its smallest class.

    Returns:
        A :class:`Metrics`.

    Raises:
        ConfigError: unknown table or column, no quasi-identifiers.
        duckdb.Error: a released label is not in the hierarchy.
    """
    with ExitStack() as stack:
        con_, src = stack.enter_context(as_table(original, con, "original"))
        _, rel = stack.enter_context(as_table(released, con_, "released"))
        rows = con_.execute(plan_metrics(con_, src, rel, tuple(qi or ()), k)).fetchall()
    (row,) = rows
    return Metrics.from_row(row)


def search(
    data: Data,
    k: int,
    qi: list[str] | None = None,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
    **options: Unpack[SearchKeywords],
) -> Transformation:
    """Find the optimal full-domain generalization of ``data`` (SQL ``kanon_search``).

    The same search as ``kanon(..., method := 'optimal')``, reporting the transformation
    instead of releasing rows: the level of every quasi-identifier, the rows it
    suppresses, the metric's value, and what the search did. With ``method="datafly"``
    or ``"mu_argus"``, the transformation of that historic algorithm instead, and what
    it left unprotected (rows and classes below k that only the finishing suppression
    protects); ``metric``, ``cost``, ``nodes`` and ``checked`` are then None.

    Args:
        data: as :func:`anonymize`.
        k: the smallest class size.
        qi: quasi-identifier columns (default: those configured for the table).
        con: connection holding ``data`` when it is a table name.
        **options: as :func:`explain`, those of SQL ``kanon_search``: ``method``
            (``"optimal"``, the default, ``"datafly"`` or ``"mu_argus"``), ``metric``,
            ``max_suppression``, ``drop_suppressed``, ``min_level``, ``max_level`` and
            the privacy models (``"optimal"`` only).

    Returns:
        A :class:`Transformation`.

    Raises:
        ConfigError, HierarchyError, InvalidInputError: as :func:`explain`.
        duckdb.InvalidInputException: no level vector satisfies k within the limit.
    """
    plan_options = AnonymizeOptions.of(k, qi, keywords("kanon.search", "kanon_search", options))
    with as_table(data, con) as (con_, name):
        plan = plan_anonymize(con_, name, plan_options, check_undeclared=False)
        rows = con_.execute(search_sql(plan, plan_options)).fetchall()
    ((levels, suppressed, cost, classes, nodes, checked, seconds, metric_, *report),) = rows
    method_, unprotected_rows, unprotected_classes, suppressed_cells, topped_up = report
    return Transformation(
        levels={str(c): int(v) for c, v in dict(levels).items()},
        suppressed=int(suppressed),
        metric=_maybe(str, metric_),
        cost=_maybe(float, cost),
        classes=int(classes),
        nodes=_maybe(int, nodes),
        checked=_maybe(int, checked),
        seconds=float(seconds),
        method=str(method_),
        unprotected_rows=_maybe(int, unprotected_rows),
        unprotected_classes=_maybe(int, unprotected_classes),
        suppressed_cells=_maybe(int, suppressed_cells),
        topped_up_rows=_maybe(int, topped_up),
    )


def _maybe(kind: Callable[[Any], T], value: Any) -> T | None:
    """``kind(value)``, or None for NULL."""
    return None if value is None else kind(value)
