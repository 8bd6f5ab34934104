"""Global releases stored as portable SQL views: ``kanon.materialize(..., method='optimal')``.

A full-domain release is a *transformation*: one level per quasi-identifier and the rule
that rows of classes smaller than k are suppressed. :func:`materialize_global` runs the
lattice search once and stores

* ``{name}__kanon_h{j}``: for every quasi-identifier below its top level, the value
  (typed as in the source) and its label at the chosen level;
* ``{name}__kanon_meta``: the transformation and the search's report (JSON);
* the view ``{name}``: the source joined to those lookup tables on typed equality, the
  class sizes counted with ``COUNT(*) OVER (PARTITION BY ...)``, classes below k shown as
  ``'*'`` (or left out), and the ``'*'`` class itself withheld while it holds fewer than
  k rows. It uses only joins, ``CASE``, window counts and comparisons, so
  :func:`kanon.to_sql` carries it to PostgreSQL, Snowflake, BigQuery or Spark.

The view re-applies the transformation to the source as it is when queried: a value
missing from a lookup table (added later) is released as ``'*'``, and the view is
k-anonymous at all times. Materialize again to re-optimize the levels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kanon.engine.install import install_kernels
from kanon.exceptions import InvalidInputError
from kanon.hierarchy.base import ROOT, value_text
from kanon.plan.catalog import check_view_name, resolve_table
from kanon.plan.coding import coded_ctes
from kanon.plan.hierarchies import hierarchy_cte
from kanon.plan.labels import release_columns
from kanon.plan.release.optimal import optimal_ctes
from kanon.plan.release.resolve import AnonymizeOptions, AnonymizePlan, plan_anonymize
from kanon.plan.undeclared import check_release
from kanon.sql.cte import internal, with_query
from kanon.sql.quote import ident, literal
from kanon.store.owned import claim, drop_stale, helper, is_temporary, write_meta

if TYPE_CHECKING:
    import duckdb

    from kanon.plan.catalog import Table
    from kanon.plan.coding import Coded
    from kanon.plan.hierarchies import QuasiIdentifier
    from kanon.store.gate import PolicyGate

__all__ = ["GlobalRelease", "materialize_global", "search_global"]


def _lookup_sql(table: Table, coded: Coded, j: int, q: QuasiIdentifier, level: int) -> str:
    """The distinct non-NULL values of QI ``j`` (typed) with their label at ``level``."""
    c = ident(q.column.name)
    label = "v.k" if level == 0 else f"v.l{level}"
    return (
        f"SELECT DISTINCT s.{c} AS value, CAST({label} AS VARCHAR) AS label "
        f"FROM {table.sql} s JOIN {coded.values[j].ref} v "
        f"ON {value_text(f's.{c}', q.column.type)} = v.k WHERE s.{c} IS NOT NULL"
    )


def _global_view_sql(
    name: str,
    table: Table,
    qis: tuple[QuasiIdentifier, ...] | list[QuasiIdentifier],
    identifiers: tuple[str, ...],
    levels: list[int],
    k: int,
    keep_suppressed: bool,
    undeclared: tuple[str, ...] = (),
) -> str:
    """The SQL of the view of a global release: generalize, count classes, suppress, withhold.

    Rows of classes below k are shown as ``'*'`` in every QI, and then every shown
    combination is counted again: one below k (the ``'*'`` class of too few suppressed
    rows) is withheld. Both counts are windows partitioned by labels, which a
    distributed engine computes in parallel (no window over the whole table). The
    ``undeclared`` columns (released unchanged without a role) count as part of the
    class, so that rows the source gains or changes later cannot make them carry the
    QIs.
    """
    star = literal(ROOT)
    size = ident(internal("class_size"))  # rows of the row's class
    shown_size = ident(internal("shown_size"))  # rows of the row's class as shown

    def label(j: int) -> str:
        return ident(internal(f"label{j}"))

    def shown(j: int) -> str:
        return ident(internal(f"shown{j}"))

    generalized, joins = [], []
    for j, q in enumerate(qis):
        c = f"s.{ident(q.column.name)}"
        if levels[j] == q.height:
            generalized.append(f"{star} AS {label(j)}")
            continue
        h = f"h{j}"
        joins.append(f"LEFT JOIN {ident(helper(name, f'h{j}'))} {h} ON {c} = {h}.value")
        # A value that is not in the lookup table (added since) goes to the root.
        generalized.append(
            f"CASE WHEN {c} IS NOT NULL AND {h}.value IS NULL THEN {star} "
            f"ELSE {h}.label END AS {label(j)}"
        )
    m = len(qis)
    extra = "".join(f", {ident(c)}" for c in undeclared)
    keys = ", ".join(label(j) for j in range(m)) + extra
    inner = f"SELECT s.*, {', '.join(generalized)} FROM {table.sql} s" + (
        " " + " ".join(joins) if joins else ""
    )
    counted = f"SELECT g.*, COUNT(*) OVER (PARTITION BY {keys}) AS {size} FROM ({inner}) g"
    if not keep_suppressed:
        out = release_columns(table, qis, identifiers, "t", lambda j: f"t.{label(j)}")
        return f"SELECT {', '.join(out)} FROM ({counted}) t WHERE t.{size} >= {k}"
    marks = ", ".join(
        f"CASE WHEN c.{size} < {k} THEN {star} ELSE c.{label(j)} END AS {shown(j)}"
        for j in range(m)
    )
    marked = f"SELECT c.*, {marks} FROM ({counted}) c"
    recounted = (
        f"SELECT x.*, COUNT(*) OVER (PARTITION BY {', '.join(shown(j) for j in range(m))}"
        f"{extra}) "
        f"AS {shown_size} FROM ({marked}) x"
    )
    out = release_columns(table, qis, identifiers, "t", lambda j: f"t.{shown(j)}")
    return f"SELECT {', '.join(out)} FROM ({recounted}) t WHERE t.{shown_size} >= {k}"


@dataclass(frozen=True)
class GlobalRelease:
    """The optimal transformation of a table, and how to apply it as portable SQL."""

    plan: AnonymizePlan
    options: AnonymizeOptions
    levels: list[int]
    stats: dict[str, Any]
    coded: Coded

    def lookup_sql(self, j: int) -> str | None:
        """QI ``j``'s lookup table (value, label), or None when it is released as ``'*'``."""
        q = self.plan.qis[j]
        if self.levels[j] == q.height:
            return None
        return with_query(
            self.coded.ctes, _lookup_sql(self.plan.table, self.coded, j, q, self.levels[j])
        )

    def view_sql(
        self,
        name: str,
        source: Table,
        identifiers: tuple[str, ...],
        undeclared: tuple[str, ...] = (),
    ) -> str:
        """The release of ``source`` through the lookup tables ``{name}__kanon_h{j}``."""
        return _global_view_sql(
            name,
            source,
            self.plan.qis,
            identifiers,
            self.levels,
            self.options.k,
            keep_suppressed=not self.options.drop_suppressed,
            undeclared=undeclared,
        )


def search_global(
    con: duckdb.DuckDBPyConnection,
    table: str,
    options: AnonymizeOptions,
    what: str,
    weight: str | None = None,
) -> GlobalRelease:
    """Run the optimal search on ``table`` (each row counting ``weight`` rows when given).

    ``what`` names the caller in the refusal of privacy models besides k, which the
    portable view does not express.
    """
    if options.models.any():
        msg = (
            f"{what} applies the transformation with a view that enforces k by counting "
            "classes when it is read; l-diversity, t-closeness and δ-presence are not "
            "expressed in it: release with kanon(...) or kanon.anonymize(...) instead"
        )
        raise InvalidInputError(msg)
    install_kernels(con)
    plan = plan_anonymize(con, table, options, weight=weight)
    qis = list(plan.qis)
    hierarchies = [hierarchy_cte(j, q) for j, q in enumerate(qis)]
    search = optimal_ctes(plan.table, qis, options, plan.rows, hierarchies, weight=weight)
    ((levels, report),) = con.execute(
        with_query(search.ctes, f"SELECT r.levels, r.stats FROM {search.kernel.ref}")
    ).fetchall()
    stats = dict(report)
    if stats["suppressed"] and not options.drop_suppressed and stats["suppressed"] < options.k:
        msg = "internal error: the optimum suppresses fewer than k rows into the '*' class"
        raise InvalidInputError(msg)
    coded = coded_ctes(plan.table, qis, hierarchies)
    return GlobalRelease(plan, options, [int(x) for x in levels], stats, coded)


def materialize_global(
    con: duckdb.DuckDBPyConnection,
    table: str,
    name: str,
    options: AnonymizeOptions,
    gate: PolicyGate | None = None,
) -> dict[str, Any]:
    """Run the optimal search on ``table`` and store it as the portable view ``name``.

    Returns:
        The stored transformation: levels per quasi-identifier, the search's report.
    """
    # The name is checked first: a name kanon may not take fails before the search runs.
    check_view_name(con, name, resolve_table(con, table))
    found = search_global(con, table, options, "kanon.materialize(..., method='optimal')")
    plan = found.plan
    source = plan.table
    qis = list(plan.qis)
    objects = [name, helper(name, "meta"), *(helper(name, f"h{j}") for j in range(len(qis)))]
    # The release of a TEMP source is made of TEMP objects (``kanon.store.owned``).
    temporary = is_temporary(con, source)
    owned = claim(con, name, objects, temporary=temporary)
    meta = {
        "source": source.name,
        "method": "optimal",
        "objects": objects,
        "k": options.k,
        "metric": options.metric or "loss",
        "max_suppression": options.max_suppression,
        "drop_suppressed": options.drop_suppressed,
        "qi": [q.column.name for q in qis],
        "levels": dict(zip([q.column.name for q in qis], found.levels, strict=True)),
        "identifiers": list(plan.identifiers),
        "undeclared": list(plan.undeclared),
        "report": found.stats,
        "temporary": temporary,
    }
    kind = "TEMP TABLE" if temporary else "TABLE"
    con.execute("BEGIN TRANSACTION")
    try:
        drop_stale(con, owned, [] if temporary else objects)
        for j in range(len(qis)):
            lookup = ident(helper(name, f"h{j}"))
            sql = found.lookup_sql(j)
            if sql is None:
                con.execute(f"DROP TABLE IF EXISTS {lookup}")
                continue
            con.execute(f"CREATE OR REPLACE {kind} {lookup} AS {sql}")
        write_meta(con, name, meta, kind)
        # The release as made must pass; the view then counts its undeclared columns in
        # the classes, so that later rows cannot make them carry the QIs.
        names = [q.column.name for q in qis]
        made = f"({found.view_sql(name, source, plan.identifiers)})"
        check_release(con, made, source.name, names, plan.undeclared, options.k)
        view = found.view_sql(name, source, plan.identifiers, plan.undeclared)
        view_kind = "TEMP VIEW" if temporary else "VIEW"
        con.execute(f"CREATE OR REPLACE {view_kind} {ident(name)} AS {view}")
        if gate is not None:
            meta |= gate.check(con, source.name, name)
            write_meta(con, name, meta, kind)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return meta
