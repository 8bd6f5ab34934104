"""``kanon.anonymize``, ``kanon.explain`` and ``kanon.metrics``: releases from Python."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from kanon._anonymize import AnonymizeOptions, plan_anonymize
from kanon._inputs import Data, as_table, like_input
from kanon._metrics import Metrics, plan_metrics
from kanon._models import ModelKeywords, PrivacyModels
from kanon._progress import run_with_progress
from kanon.planner.search import Transformation, search_sql

if TYPE_CHECKING:
    from collections.abc import Callable

    import duckdb

T = TypeVar("T")

__all__ = ["anonymize", "explain", "metrics", "search"]


def explain(
    con: duckdb.DuckDBPyConnection,
    table: str,
    k: int,
    qi: list[str] | None = None,
    *,
    seed: int = 0,
    method: str = "forest",
    metric: str | None = None,
    max_suppression: float = 0.0,
    drop_suppressed: bool = False,
    min_level: dict[str, int] | None = None,
    max_level: dict[str, int] | None = None,
    labels: str | None = None,
    block_size: int | None = None,
    effort: str | None = None,
    identifiers: list[str] | None = None,
    insensitive: list[str] | None = None,
    keep_undeclared: bool = False,
    **models: Unpack[ModelKeywords],
) -> str:
    """Return the SQL that ``SELECT * FROM kanon(table, k := k, ...)`` runs.

    The query needs the kernel UDF ``kanon_forest`` (``kanon.install(con)``) and reads
    the source table, the configured hierarchy tables and nothing else.

    Args:
        con: the connection holding ``table``.
        table: the table or view to anonymize.
        k: the smallest class size (1 ≤ k ≤ rows).
        qi: quasi-identifier columns (default: those configured for the table).
        seed: 0 for value order; another value draws another, equally valid release.
        method: ``"forest"`` (Aggarwal et al. 2005 with repair and improvement passes),
            ``"forest_paper"`` (as published), ``"mondrian"`` (LeFevre et al. 2006:
            strict multidimensional median cuts), ``"optimal"`` (full-domain
            generalization, the exact optimum over the lattice of levels), or Sweeney's
            historic greedy baselines ``"datafly"`` and ``"mu_argus"`` (full-domain,
            with row and, for μ-Argus, cell suppression; finished to be k-anonymous).
        metric: for ``"optimal"``: ``"loss"`` (default), ``"height"``, ``"nue"``,
            ``"nue_nonmonotonic"``, ``"dm"``, ``"dm_star"`` or ``"aecs"``.
        max_suppression: for ``"optimal"``: the fraction of rows whose
            quasi-identifiers may become ``'*'``; for ``"datafly"``: the fraction of
            rows its loop may leave below k (0: Sweeney's rule, k rows).
        drop_suppressed: for ``"optimal"``, ``"datafly"`` and ``"mu_argus"``: leave
            suppressed rows out of the release.
        min_level: for ``"optimal"``: the lowest level allowed, per QI.
        max_level: for ``"optimal"``: the highest level allowed, per QI.
        labels: for the local recodings (``"forest"``, ``"forest_paper"``,
            ``"mondrian"``): ``"hierarchy"`` (the group's lowest common hierarchy node;
            the forest's default) or ``"range"`` (the group's observed values: ``[lo..hi]``
            for numbers and dates, ``{a, b}`` otherwise; the forest then minimizes the
            NCP of those ranges). Mondrian's default: ranges for numbers and dates,
            hierarchy nodes otherwise.
        block_size: for the forest: tables above this many rows are cut by Mondrian
            cuts into blocks of at most this many rows (each ≥ k) and the forest runs
            in each block (default: 50,000 rows, 5,000 with ``labels="range"``).
        effort: for ``"forest"``: ``"full"`` (its improvement passes in rounds until
            nothing changes) or ``"fast"`` (one eject, split and search pass: about a
            quarter of the time on 1M generated rows for some 12 % more loss); default
            ``"full"`` up to 1,048,576 rows, ``"fast"`` above.
        identifiers: direct identifiers, released as ``'*'`` (besides the configured
            ones; a configured identifier is never released, whatever ``qi`` says).
        insensitive: columns released unchanged.
        keep_undeclared: release columns that have no role (not a QI, identifier,
            sensitive or insensitive, by argument or configuration) unchanged even when
            their values single out rows: more than 1 % of the rows, and at least 2,
            hold a value no other row holds. Without it such columns stop the release.
        **models: ``sensitive``: a column or a list of columns released unchanged
            (default: the configured ones). Privacy models besides k for
            ``"optimal"``: ``l`` (with ``sensitive`` one column; default the configured
            one) with ``l_diversity`` (``"distinct"``, ``"entropy"``, ``"recursive"`` with
            ``c``), ``t`` with ``t_distance`` (``"equal"``, ``"ordered"``,
            ``"hierarchical"``), ``population`` (table) with ``delta_min`` /
            ``delta_max``.

    Returns:
        The SQL text.

    Raises:
        ConfigError: unknown table or column, no quasi-identifiers, missing hierarchy,
            a column given two roles, a configured identifier given another role, an
            undeclared column whose values single out rows (see ``keep_undeclared``).
        HierarchyError: a configured hierarchy is malformed or misses a value.
        InvalidInputError: k, seed or method out of range.
    """
    options = AnonymizeOptions.of(
        k,
        qi,
        seed=seed,
        method=method,
        metric=metric,
        max_suppression=max_suppression,
        drop_suppressed=drop_suppressed,
        min_level=min_level,
        max_level=max_level,
        models=PrivacyModels(**models),
        labels=labels,
        block_size=block_size,
        effort=effort,
        identifiers=identifiers,
        insensitive=insensitive,
        keep_undeclared=keep_undeclared,
    )
    return plan_anonymize(con, table, options).sql


def anonymize(
    data: Data,
    k: int,
    qi: list[str] | None = None,
    *,
    con: duckdb.DuckDBPyConnection | None = None,
    seed: int = 0,
    method: str = "forest",
    metric: str | None = None,
    max_suppression: float = 0.0,
    drop_suppressed: bool = False,
    min_level: dict[str, int] | None = None,
    max_level: dict[str, int] | None = None,
    labels: str | None = None,
    block_size: int | None = None,
    effort: str | None = None,
    identifiers: list[str] | None = None,
    insensitive: list[str] | None = None,
    keep_undeclared: bool = False,
    progress: bool | None = None,
    **models: Unpack[ModelKeywords],
) -> Any:
    """Return a k-anonymous release of ``data`` (SQL ``kanon(...)``).

    Every combination of released quasi-identifier labels occurs at least ``k`` times;
    each label is the hierarchy ancestor of the original value at the group's level
    (``'*'`` at the top); identifier columns become ``'*'``; other columns and the
    row count are unchanged. The source is only read. An undeclared column whose
    values single out rows stops the release (see ``keep_undeclared``).

    Args:
        data: a table name (with ``con``), a DuckDB relation, a pandas or polars
            DataFrame or a pyarrow Table.
        k: the smallest class size (1 ≤ k ≤ rows).
        qi: quasi-identifier columns (default: those configured for the table).
        con: connection holding ``data`` when it is a table name.
        seed: 0 for value order; another value draws another, equally valid release.
        method: as :func:`explain`.
        metric: as :func:`explain`.
        max_suppression: as :func:`explain`.
        drop_suppressed: as :func:`explain`.
        min_level: as :func:`explain`.
        max_level: as :func:`explain`.
        labels: as :func:`explain`.
        block_size: as :func:`explain`.
        effort: as :func:`explain`.
        identifiers: as :func:`explain`.
        insensitive: as :func:`explain`.
        keep_undeclared: as :func:`explain`.
        progress: draw a progress bar on standard error when the run takes longer than
            1.5 s (default: when standard error is a terminal). Not for table names and
            relations, which come back unevaluated. Ctrl-C interrupts the statement.
        **models: as :func:`explain` (``"optimal"``; l and t also ``"mondrian"``).

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
    options = AnonymizeOptions.of(
        k,
        qi,
        seed=seed,
        method=method,
        metric=metric,
        max_suppression=max_suppression,
        drop_suppressed=drop_suppressed,
        min_level=min_level,
        max_level=max_level,
        models=PrivacyModels(**models),
        labels=labels,
        block_size=block_size,
        effort=effort,
        identifiers=identifiers,
        insensitive=insensitive,
        keep_undeclared=keep_undeclared,
    )
    if isinstance(data, str):
        with as_table(data, con) as (con_, name):
            return con_.sql(plan_anonymize(con_, name, options).sql)
    with as_table(data, con) as (con_, name):
        plan = plan_anonymize(con_, name, options)
        result = run_with_progress(
            con_,
            lambda: con_.sql(plan.sql).to_arrow_table(),
            rows=plan.rows,
            label=f"anonymizing {plan.rows:,} rows",
            show=sys.stderr.isatty() if progress is None else progress,
        )
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
    method: str = "optimal",
    metric: str | None = None,
    max_suppression: float = 0.0,
    drop_suppressed: bool = False,
    min_level: dict[str, int] | None = None,
    max_level: dict[str, int] | None = None,
    **models: Unpack[ModelKeywords],
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
        method: ``"optimal"`` (default), ``"datafly"`` or ``"mu_argus"``.
        metric: as :func:`explain`.
        max_suppression: as :func:`explain`.
        drop_suppressed: as :func:`explain`.
        min_level: as :func:`explain`.
        max_level: as :func:`explain`.
        **models: as :func:`explain` (``"optimal"`` only).

    Returns:
        A :class:`Transformation`.

    Raises:
        ConfigError, HierarchyError, InvalidInputError: as :func:`explain`.
        duckdb.InvalidInputException: no level vector satisfies k within the limit.
    """
    options = AnonymizeOptions.of(
        k,
        qi,
        method=method,
        metric=metric,
        max_suppression=max_suppression,
        drop_suppressed=drop_suppressed,
        min_level=min_level,
        max_level=max_level,
        models=PrivacyModels(**models),
    )
    with as_table(data, con) as (con_, name):
        plan = plan_anonymize(con_, name, options, check_undeclared=False)
        rows = con_.execute(search_sql(plan, options)).fetchall()
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
