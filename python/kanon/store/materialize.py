"""``kanon.materialize`` and ``kanon.refresh``: stored releases as plain SQL views.

``materialize(con, 'patients', k=5, name='patients_k5')`` (a local recoding) creates:

* ``patients_k5__kanon_rows``: every source row (all its columns), its copy number
  among identical rows and its group;
* ``patients_k5__kanon_labels``: every group's released label per quasi-identifier;
* for the forest, which :func:`refresh` extends: ``patients_k5__kanon_groups`` (every
  group's level per quasi-identifier) and ``patients_k5__kanon_h{j}`` (a snapshot of
  each quasi-identifier's hierarchy: value as text → labels by level);
* ``patients_k5__kanon_meta``: the source, k, the quasi-identifiers, the objects;
* the view ``patients_k5``: the source joined to its rows' groups' labels. It is
  portable SQL (joins and a window count), so it works from any connection to the
  database without kanon installed, and :func:`kanon.to_sql` writes it for others.

The release of a TEMP source (or of a view reading one) is temporary: the view and its
tables are TEMP objects of the connection, gone when it closes (``kanon.store.owned``).

Rows are matched by content: a row added to the source is not in the view until
:func:`refresh` places it; a row deleted from the source leaves the view, and a group
left with fewer than k rows is withheld until :func:`refresh` re-places its rows. The
view is therefore k-anonymous at all times.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Unpack

import numpy as np
import pyarrow as pa

from kanon import _core
from kanon._options import AnonymizeKeywords, keywords
from kanon.engine.install import install_kernels
from kanon.exceptions import ConfigError, HierarchyError, InvalidInputError
from kanon.hierarchy.base import ROOT, value_text
from kanon.hierarchy.numbers import default_outside, default_select
from kanon.plan.catalog import Table, check_view_name, configured_full, resolve_table
from kanon.plan.hierarchies import hierarchy_select
from kanon.plan.release.local import label_column
from kanon.plan.release.registry import LOCAL_METHODS
from kanon.plan.release.resolve import AnonymizeOptions, plan_anonymize
from kanon.plan.roles import resolve_roles
from kanon.plan.undeclared import check_release
from kanon.sql.cte import internal
from kanon.sql.quote import ident, literal
from kanon.store.gate import PolicyGate
from kanon.store.global_view import materialize_global
from kanon.store.owned import (
    claim,
    drop_stale,
    helper,
    is_temporary,
    read_meta,
    temp_name,
    write_meta,
)

if TYPE_CHECKING:
    from pathlib import Path

    import duckdb

__all__ = ["Refreshed", "materialize", "refresh"]

_NEW = 0xFFFFFFFF
_SHOWN = 5


@dataclass(frozen=True)
class Refreshed:
    """What :func:`refresh` did."""

    added: int  # new source rows placed
    removed: int  # rows gone from the source, dropped from the assignment
    requeued: int  # rows of groups that fell below k, placed again
    joined: int  # placed rows that joined an existing group
    new_groups: int  # groups made of placed rows only

    def to_dict(self) -> dict[str, Any]:
        """Return the report as a plain dict."""
        return asdict(self)


def _names(name: str) -> dict[str, str]:
    return {part: helper(name, part) for part in ("rows", "groups", "labels", "meta")}


def _match(left: str, right: str, columns: list[str], nullable: set[str] | None = None) -> str:
    """Row identity: every column equal (NULLs too) and the same copy number.

    Columns outside ``nullable`` (when given) hold no NULL on the ``right`` side and are
    compared with ``=``, which every database can hash-join on.
    """
    same = [
        f"{left}.{c} IS NOT DISTINCT FROM {right}.{c}"
        if nullable is None or c in nullable
        else f"{left}.{c} = {right}.{c}"
        for c in columns
    ]
    same.append(f'{left}."__kanon_copy" = {right}."__kanon_copy"')
    return " AND ".join(same)


def _copy_number(columns: list[str]) -> str:
    """A row's copy number among identical rows (Spark wants an ordered window)."""
    return (
        f"row_number() OVER (PARTITION BY {', '.join(columns)} ORDER BY {columns[0]}) "
        'AS "__kanon_copy"'
    )


def _numbered(source_sql: str, columns: list[str]) -> str:
    """The source with a copy number per row among identical rows."""
    return f"SELECT s.*, {_copy_number(columns)} FROM {source_sql} s"


def _local_view_sql(
    con: duckdb.DuckDBPyConnection, name: str, source: Table, meta: dict[str, Any]
) -> str:
    """The SQL of the view of a local release: the source joined to its rows' groups' labels.

    Portable SQL (joins and a window count in a subquery), so that :func:`kanon.to_sql`
    carries it to other databases; a group below k is left out.
    """
    names = _names(name)
    rows_t = ident(names["rows"])
    columns = [ident(c.name) for c in source.columns]
    found = con.execute(
        "SELECT " + ", ".join(f"bool_or({c} IS NULL)" for c in columns) + f" FROM {rows_t}"
    ).fetchall()[0]
    nullable = {c for c, has in zip(columns, found, strict=True) if has}
    qi = list(meta["qi"])
    identifiers = set(meta["identifiers"])
    size = ident(internal("group_size"))
    inner = [f"s.{ident(c.name)}" for c in source.columns if c.name not in (*qi, *identifiers)]
    inner += [f"l.{label_column(j)}" for j in range(len(qi))]
    inner.append(f'count(*) OVER (PARTITION BY a."__kanon_grp") AS {size}')
    out = []
    for c in source.columns:
        if c.name in qi:
            out.append(f"t.{label_column(qi.index(c.name))} AS {ident(c.name)}")
        elif c.name in identifiers:
            out.append(f"{literal(ROOT)} AS {ident(c.name)}")
        else:
            out.append(f"t.{ident(c.name)}")
    return (
        f"SELECT {', '.join(out)} FROM (SELECT {', '.join(inner)} "
        f"FROM ({_numbered(source.sql, columns)}) s "
        f"JOIN {rows_t} a ON {_match('s', 'a', columns, nullable)} "
        f'JOIN {ident(names["labels"])} l ON l."__kanon_grp" = a."__kanon_grp") t '
        f"WHERE t.{size} >= {int(meta['k'])}"
    )


def _snapshot_labels_sql(name: str, meta: dict[str, Any]) -> str:
    """Every group's label per QI, from its levels and the hierarchy snapshots (forest)."""
    names = _names(name)
    heights = [int(h) for h in meta["heights"]]
    joins, labels = [], []
    for j, (col, typ) in enumerate(zip(meta["qi"], meta["types"], strict=True)):
        joins.append(
            f"LEFT JOIN {ident(helper(name, f'h{j}'))} h{j} "
            f"ON {value_text(f'a.{ident(col)}', typ)} = h{j}.k"
        )
        lvl = f'g."__kanon_lvl"[{j + 1}]'
        labels.append(
            f"min(CASE WHEN {lvl} = {heights[j]} THEN {literal(ROOT)} "
            f"ELSE h{j}.labels[{lvl} + 1] END) AS {label_column(j)}"
        )
    return (
        f'SELECT a."__kanon_grp", {", ".join(labels)} FROM {ident(names["rows"])} a '
        f'JOIN {ident(names["groups"])} g ON g."__kanon_grp" = a."__kanon_grp" '
        + " ".join(joins)
        + ' GROUP BY a."__kanon_grp"'
    )


def materialize(
    con: duckdb.DuckDBPyConnection,
    table: str,
    k: int,
    name: str,
    qi: list[str] | None = None,
    *,
    report: str | Path | None = None,
    policy: str | dict[str, Any] | None = None,
    force: str | None = None,
    **options: Unpack[AnonymizeKeywords],
) -> str:
    """Store a k-anonymous release of ``table`` and expose it as the plain SQL view ``name``.

    With a local recoding (``method`` ``"forest"``, the default, ``"forest_paper"``,
    ``"mondrian"``, ``"priority"`` or ``"iterated"``) the view joins the source to the
    stored group of every row and its labels (see the module docs; :func:`refresh`
    places new rows of forest releases). With ``method="optimal"`` (global recoding)
    the release is a transformation and the view re-applies it to the source (see
    ``kanon.store.global_view``). Both views are portable SQL: :func:`kanon.to_sql` writes
    them for other databases, with their tables as Parquet.

    When ``table`` is a TEMP table or view (or a view reading one), which no other
    connection can read, the release is temporary too: ``name`` is a TEMP view and its
    tables are TEMP tables, readable on ``con`` only and dropped when it closes (a
    stored view would break for every other connection and when the database is opened
    again). :func:`refresh` keeps it temporary. To store it, copy the source into a
    regular table (``CREATE TABLE t AS SELECT * FROM temp_t``) and materialize that.

    Args:
        con: the connection (the tables and the view are created in its database).
        table: the source table.
        k: the smallest class size.
        name: the view to create (replaced if it is a view).
        qi: quasi-identifier columns (default: those configured for the table).
        report: an HTML file to write :func:`kanon.report` of the release to.
        policy: a policy the release must meet (a stored policy's name or its rules, as
            :func:`kanon.verify`): it is verified before anything is committed, and on
            FAIL nothing is created. The verdict is kept in the meta table, and
            :func:`refresh` verifies again.
        force: the reason to publish a release that fails ``policy`` anyway (recorded
            with the verdict).
        **options: as :func:`kanon.explain`; with ``method="forest"`` the forest's
            ``labels``, ``block_size`` and ``effort`` are not taken (:func:`refresh`
            places rows as the default forest does).

    Returns:
        ``name`` (a TEMP view when ``table`` is temporary, see above).

    Raises:
        ConfigError, HierarchyError, InvalidInputError: as :func:`kanon.anonymize`, or a
            table (not a view) of that name exists, or a temporary release of that name
            exists and ``table`` is not temporary.
        PolicyError: the release fails ``policy`` (and ``force`` is not given): the
            message lists the failed rules with their counts; nothing was created.
    """
    gate = PolicyGate.of(con, policy, qi, options.get("sensitive"), force)
    _store(con, table, k, name, qi, dict(options), gate)
    if report is not None:
        from kanon.api.report import report as write_report

        sensitive = options.get("sensitive")
        write_report(
            table,
            name,
            qi,
            out=report,
            con=con,
            sensitive=sensitive if isinstance(sensitive, str) else None,
            k=k,
            parameters={"release": name, "method": options.get("method", "forest"), **options},
            policy=gate.policy if gate is not None else None,
        )
    return name


def _store(
    con: duckdb.DuckDBPyConnection,
    table: str,
    k: int,
    name: str,
    qi: list[str] | None,
    options: dict[str, Any],
    gate: PolicyGate | None,
) -> None:
    """Store the release of :func:`materialize` (without its report)."""
    plan_options = AnonymizeOptions.of(k, qi, keywords("kanon.materialize", "kanon", options))
    method = plan_options.method
    if method == "optimal":
        materialize_global(con, table, name, plan_options, gate)
        return
    if method not in LOCAL_METHODS:
        allowed = ", ".join(repr(m) for m in (*LOCAL_METHODS, "optimal"))
        msg = f"materialize supports method {allowed}, got {method!r}"
        raise InvalidInputError(msg)
    unstored = sorted({"labels", "block_size", "effort"} & options.keys())
    if method == "forest" and unstored:
        msg = (
            f"materialize does not take {', '.join(unstored)} with method 'forest': "
            "refresh places new rows as the default forest does"
        )
        raise InvalidInputError(msg)
    install_kernels(con)
    plan = plan_anonymize(con, table, plan_options)
    source = plan.table
    check_view_name(con, name, source)
    temporary = is_temporary(con, source)
    names = _names(name)
    columns = [ident(c.name) for c in source.columns]
    # The groups' levels and the hierarchy snapshots serve refresh (forest) only.
    forest = method == "forest"
    snapshots = [helper(name, f"h{j}") for j in range(len(plan.qis))] if forest else []
    objects = [name, *(t for p, t in names.items() if forest or p != "groups"), *snapshots]
    owned = claim(con, name, objects, temporary=temporary)
    assign = temp_name("assign")
    meta = {
        "source": source.name,
        "method": method,
        "objects": objects,
        "k": k,
        "qi": [q.column.name for q in plan.qis],
        "types": [q.column.type for q in plan.qis],
        "heights": [q.height for q in plan.qis],
        "weights": [q.weight for q in plan.qis],
        "defaults": [q.default for q in plan.qis],
        "identifiers": list(plan.identifiers),
        "undeclared": list(plan.undeclared),
        "columns": [[c.name, c.type] for c in source.columns],
        "temporary": temporary,
    }
    labels = ", ".join(label_column(j) for j in range(len(plan.qis)))
    kind = "TEMP TABLE" if temporary else "TABLE"
    con.execute("BEGIN TRANSACTION")
    try:
        # A temporary release replaces every object of the earlier one (which may be
        # stored: a TEMP table of a name does not replace the stored one).
        drop_stale(con, owned, [] if temporary else objects)
        con.execute(f"CREATE TEMP TABLE {assign} AS {plan.assignment_sql}")
        con.execute(
            f"CREATE OR REPLACE {kind} {ident(names['rows'])} AS SELECT {', '.join(columns)}, "
            f"{_copy_number(columns)}, "
            f'CAST("__kanon_grp" AS BIGINT) AS "__kanon_grp" FROM {assign}'
        )
        if forest:
            con.execute(
                f"CREATE OR REPLACE {kind} {ident(names['groups'])} AS SELECT DISTINCT "
                f'CAST("__kanon_grp" AS BIGINT) AS "__kanon_grp", "__kanon_lvl" FROM {assign}'
            )
        # A group's rows share their labels: one row per group.
        con.execute(
            f"CREATE OR REPLACE {kind} {ident(names['labels'])} AS "
            f'SELECT DISTINCT CAST("__kanon_grp" AS BIGINT) AS "__kanon_grp", {labels} '
            f"FROM {assign}"
        )
        ((rows, groups),) = con.execute(
            f'SELECT count(*), count(DISTINCT "__kanon_grp") FROM {ident(names["labels"])}'
        ).fetchall()
        if rows != groups:
            msg = f"internal error: {rows - groups} group(s) of {method!r} have two labels"
            raise InvalidInputError(msg)
        con.execute(f"DROP TABLE {assign}")
        for j, q in enumerate(plan.qis[: len(snapshots)]):
            levels = ", ".join(["k"] + [f"l{i}" for i in range(1, q.height + 1)])
            con.execute(
                f"CREATE OR REPLACE {kind} {ident(snapshots[j])} AS "
                f"SELECT k, [{levels}] AS labels FROM ({hierarchy_select(q)})"
            )
        write_meta(con, name, meta, kind)
        _create_view(con, name, source, meta)
        qi_names = [q.column.name for q in plan.qis]
        check_release(con, ident(name), source.name, qi_names, plan.undeclared, k)
        if gate is not None:
            write_meta(con, name, meta | gate.check(con, source.name, name), kind)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _create_view(
    con: duckdb.DuckDBPyConnection, name: str, source: Table, meta: dict[str, Any]
) -> None:
    kind = "TEMP VIEW" if meta.get("temporary") else "VIEW"
    con.execute(
        f"CREATE OR REPLACE {kind} {ident(name)} AS {_local_view_sql(con, name, source, meta)}"
    )


def _read_meta(con: duckdb.DuckDBPyConnection, name: str) -> dict[str, Any]:
    if not isinstance(name, str) or not name:
        msg = f"name must be the non-empty name of a release, got {name!r}"
        raise InvalidInputError(msg)
    meta = read_meta(con, name)
    if meta is None:
        msg = (
            f"{name!r} is not a release made by kanon.materialize (no table "
            f"{helper(name, 'meta')!r} holding its description)"
        )
        raise ConfigError(msg)
    method = meta.get("method")
    if method == "optimal":
        msg = (
            f"release {name!r} was made with method 'optimal' (global recoding: its view "
            "applies the transformation to every source row as it is read); refresh places "
            "new rows of forest releases only"
        )
        raise InvalidInputError(msg)
    if method != "forest":
        msg = (
            f"release {name!r} was made with method {method!r}; refresh places new rows "
            "of forest releases only: materialize it again to release the new rows"
        )
        raise InvalidInputError(msg)
    if helper(name, "labels") not in meta.get("objects", []):
        msg = (
            f"release {name!r} was stored by an older kanon without its labels table; "
            "materialize it again"
        )
        raise ConfigError(msg)
    return meta


def _u32(values: Any) -> memoryview:
    """A flat uint32 buffer of a numpy array, for the kernels."""
    return np.ascontiguousarray(values, dtype=np.uint32).reshape(-1).data


def _codes_sql(name: str, j: int, height: int) -> str:
    """Leaf codes (depth-first) and label codes of snapshot hierarchy ``j``, NULL leaf added."""
    h = ident(helper(name, f"h{j}"))
    path = ", ".join([f"labels[{i + 1}]" for i in range(height, 0, -1)] + ["k"])
    levels = ", ".join(
        f"(dense_rank() OVER (ORDER BY labels[{i + 1}]) - 1)::UINTEGER AS a{i}"
        for i in range(1, height + 1)
    )
    nulls = ", ".join(["NULL"] * height)
    return (
        f"SELECT k, (dense_rank() OVER (ORDER BY {path}) - 1)::UINTEGER AS a0, {levels} "
        f"FROM (SELECT k, labels FROM {h} UNION ALL "
        f"SELECT NULL, [{nulls}, (SELECT max(labels[{height + 1}]) FROM {h})])"
    )


def _cover(
    con: duckdb.DuckDBPyConnection,
    name: str,
    meta: dict[str, Any],
    j: int,
    column: str,
    height: int,
    new_t: str,
    codes: str,
) -> None:
    """Make snapshot hierarchy ``j`` cover the new rows' values, or raise.

    A type default grows with the values (suppression, calendar, or intervals within
    the original ``[min, max]``); a configured hierarchy must already hold them.
    """
    typ = meta["types"][j]
    text = value_text("v", typ)
    missing_sql = (
        f"SELECT v FROM (SELECT DISTINCT n.{column} AS v FROM {new_t} n "
        f"WHERE n.{column} IS NOT NULL) WHERE {text} NOT IN "
        f"(SELECT k FROM {codes} WHERE k IS NOT NULL)"
    )
    spec = meta["defaults"][j]
    outside_sql = default_outside("v", spec, typ)
    if outside_sql is not None:
        (outside,) = con.execute(
            f"SELECT count(*) FROM ({missing_sql}) WHERE {outside_sql}"
        ).fetchall()[0]
        if outside:
            spec = None  # report the values below
    if spec is not None:
        select = default_select(missing_sql, spec, typ)
        labels = ", ".join(f"CAST(level_{i} AS VARCHAR)" for i in range(1, height + 1))
        con.execute(
            f"INSERT INTO {ident(helper(name, f'h{j}'))} "
            f"SELECT {value_text('level_0', typ)}, [{value_text('level_0', typ)}, {labels}] "
            f"FROM ({select})"
        )
        con.execute(f"CREATE OR REPLACE TEMP TABLE {codes} AS {_codes_sql(name, j, height)}")
        return
    missing = con.execute(
        f"SELECT {text} AS t FROM ({missing_sql}) ORDER BY t LIMIT {_SHOWN}"
    ).fetchall()
    if missing:
        shown = ", ".join(repr(v) for (v,) in missing)
        msg = (
            f"new value(s) {shown} of column {meta['qi'][j]!r} are not in the hierarchy "
            f"snapshot of {name!r}; materialize the release again with a hierarchy "
            "that covers them"
        )
        raise HierarchyError(msg)


def _undeclared(con: duckdb.DuckDBPyConnection, source: Table, meta: dict[str, Any]) -> list[str]:
    """The columns a release checks do not carry the QIs: as stored, else as configured now.

    Releases stored before the list was kept: the source's columns without a role in
    the configuration, the release's QIs and identifiers aside.
    """
    if "undeclared" in meta:
        return list(meta["undeclared"])
    config = [(c, r) for c, r, *_ in configured_full(con, source)]
    return list(resolve_roles(source, config, qi=meta["qi"]).undeclared)


def refresh(con: duckdb.DuckDBPyConnection, name: str, *, force: str | None = None) -> Refreshed:
    """Place the rows added to the source of release ``name`` since it was last refreshed.

    Existing rows keep their groups. A new row joins an existing group (whose labels
    may coarsen to hold it) or forms a new group of at least k rows with other new rows,
    whichever the forest finds nearest (the reference Go library's continuous mode).
    Rows deleted from the source are dropped from the assignment; the rows of a group
    left with fewer than k rows are placed again.

    A release made with a policy is verified again before the refresh is committed: one
    that would fail it changes nothing (a :class:`~kanon.exceptions.PolicyError` says
    which rules fail), unless ``force`` gives the reason to publish it anyway.

    Args:
        con: the connection to the release's database.
        name: the view made by :func:`materialize`.
        force: the reason to commit a refresh that fails the release's policy.

    Returns:
        A :class:`Refreshed` report.

    Raises:
        PolicyError: the refreshed release would fail its policy (nothing changed).
        ConfigError: ``name`` is not a release, the source's columns changed, or the
            source of a stored release is now temporary (a TEMP table or view).
        HierarchyError: a new value is missing from a snapshot hierarchy.
        InvalidInputError: fewer than k rows in all.
    """
    meta = _read_meta(con, name)
    source = resolve_table(con, meta["source"])
    if [[c.name, c.type] for c in source.columns] != meta["columns"]:
        msg = (
            f"the columns of {meta['source']!r} changed since {name!r} was materialized; "
            "materialize it again"
        )
        raise ConfigError(msg)
    if not meta.get("temporary") and is_temporary(con, source):
        msg = (
            f"the source {meta['source']!r} of release {name!r} is now a temporary table or "
            "view (or reads one), which the stored release's view cannot read from other "
            "connections: copy it into a regular table (CREATE TABLE ... AS SELECT ...) "
            "and materialize again"
        )
        raise ConfigError(msg)
    names = _names(name)
    rows_t, groups_t, labels_t = (ident(names[p]) for p in ("rows", "groups", "labels"))
    columns = [ident(c.name) for c in source.columns]
    k = int(meta["k"])
    qi = [ident(c) for c in meta["qi"]]
    heights = [int(h) for h in meta["heights"]]
    con.execute("BEGIN TRANSACTION")
    try:
        report = _refresh(
            con, name, meta, source, (rows_t, groups_t, labels_t), columns, qi, heights, k
        )
        check_release(con, ident(name), source.name, meta["qi"], _undeclared(con, source, meta), k)
        gate = PolicyGate.stored(meta, force)
        if gate is not None:
            kind = "TEMP TABLE" if meta.get("temporary") else "TABLE"
            write_meta(con, name, meta | gate.check(con, source.name, name), kind)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return report


def _refresh(
    con: duckdb.DuckDBPyConnection,
    name: str,
    meta: dict[str, Any],
    source: Table,
    tables: tuple[str, str, str],
    columns: list[str],
    qi: list[str],
    heights: list[int],
    k: int,
) -> Refreshed:
    rows_t, groups_t, labels_t = tables
    src, new_t = temp_name("src"), temp_name("new")
    codes = [temp_name(f"c{j}") for j in range(len(qi))]
    con.execute(f"CREATE TEMP TABLE {src} AS {_numbered(source.sql, columns)}")
    removed = con.execute(
        f"DELETE FROM {rows_t} a WHERE NOT EXISTS "
        f"(SELECT 1 FROM {src} s WHERE {_match('s', 'a', columns)})"
    ).fetchall()[0][0]
    requeued = con.execute(
        f'DELETE FROM {rows_t} WHERE "__kanon_grp" IN (SELECT "__kanon_grp" FROM {rows_t} '
        f'GROUP BY "__kanon_grp" HAVING count(*) < {k})'
    ).fetchall()[0][0]
    con.execute(
        f"CREATE TEMP TABLE {new_t} AS SELECT s.*, "
        f'row_number() OVER () - 1 AS "__kanon_idx" FROM {src} s '
        f"WHERE NOT EXISTS (SELECT 1 FROM {rows_t} a WHERE {_match('s', 'a', columns)})"
    )
    con.execute(f"DROP TABLE {src}")
    added = con.execute(f"SELECT count(*) FROM {new_t}").fetchall()[0][0]
    if added == 0:
        for table in (groups_t, labels_t):
            con.execute(
                f'DELETE FROM {table} WHERE "__kanon_grp" NOT IN '
                f'(SELECT "__kanon_grp" FROM {rows_t})'
            )
        con.execute(f"DROP TABLE {new_t}")
        _create_view(con, name, source, meta)
        return Refreshed(0, int(removed), 0, 0, 0)
    m = len(qi)
    for j in range(m):
        con.execute(f"CREATE TEMP TABLE {codes[j]} AS {_codes_sql(name, j, heights[j])}")
        _cover(con, name, meta, j, qi[j], heights[j], new_t, codes[j])

    def coded(rel: str, extra: str, group_by: bool) -> pa.Table:
        sel = [f"c{j}.a0 AS c{j}" for j in range(m)]
        joins = [
            f"JOIN {codes[j]} c{j} ON "
            f"{value_text(f'x.{qi[j]}', meta['types'][j])} IS NOT DISTINCT FROM c{j}.k"
            for j in range(m)
        ]
        tail = " GROUP BY ALL ORDER BY ALL" if group_by else f" ORDER BY {extra}"
        cols = ", ".join([*sel, extra, "count(*) AS n"] if group_by else [*sel, extra])
        return con.sql(f"SELECT {cols} FROM {rel} x {' '.join(joins)}{tail}").to_arrow_table()

    old = coded(rows_t, 'x."__kanon_grp" AS grp', group_by=True)
    new = coded(new_t, 'x."__kanon_idx"', group_by=False)
    hierarchies = []
    for j in range(m):
        levels = ", ".join(f"list(a{i} ORDER BY a0)" for i in range(heights[j] + 1))
        (row,) = con.execute(f"SELECT [{levels}] FROM {codes[j]}").fetchall()
        hierarchies.append([np.asarray(level, dtype=np.uint32) for level in row[0]])

    old_codes = np.column_stack([old.column(f"c{j}").to_numpy() for j in range(m)]).astype(
        np.uint32
    )
    counts = old.column("n").to_numpy().astype(np.int64)
    old_groups = old.column("grp").to_numpy().astype(np.int64)
    new_codes = np.column_stack([new.column(f"c{j}").to_numpy() for j in range(m)]).astype(
        np.uint32
    )
    all_codes = np.concatenate([np.repeat(old_codes, counts, axis=0), new_codes])
    tuples, tuple_of_row = np.unique(all_codes, axis=0, return_inverse=True)
    group_ids = np.unique(old_groups)
    dense_old = np.searchsorted(group_ids, np.repeat(old_groups, counts))
    group_of_row = np.concatenate(
        [dense_old.astype(np.uint32), np.full(len(new_codes), _NEW, dtype=np.uint32)]
    )
    placed, groups, _levels, stats = _core.forest_extend(
        _u32(tuples),
        m,
        [[_u32(level) for level in h] for h in hierarchies],
        [float(w) for w in meta["weights"]],
        "ncp",
        _u32(tuple_of_row),
        _u32(group_of_row),
        len(group_ids),
        k,
    )
    dense = placed.to_numpy()
    levels = _levels.to_numpy().reshape(groups, m)
    # Existing groups keep their ids; new groups follow the largest id ever used.
    next_id = int(
        con.execute(f'SELECT coalesce(max("__kanon_grp"), -1) + 1 FROM {groups_t}').fetchall()[0][0]
    )
    ids = np.concatenate([group_ids, next_id + np.arange(groups - len(group_ids))])
    placed_new = pa.table(
        {
            "idx": new.column("__kanon_idx"),
            "grp": pa.array(ids[dense[len(dense) - len(new_codes) :]].astype(np.int64)),
        }
    )
    placed_v = temp_name("placed")
    con.register(placed_v, placed_new)
    try:
        con.execute(
            f"INSERT INTO {rows_t} SELECT {', '.join(f'n.{c}' for c in columns)}, "
            f'n."__kanon_copy", p.grp FROM {new_t} n JOIN {placed_v} p '
            'ON n."__kanon_idx" = p.idx'
        )
    finally:
        con.unregister(placed_v)
    group_levels = pa.table(
        {
            "grp": pa.array(ids.astype(np.int64)),
            "lvl": pa.array([list(map(int, r)) for r in levels], pa.list_(pa.uint32())),
        }
    )
    levels_v = temp_name("levels")
    con.register(levels_v, group_levels)
    try:
        con.execute(f"DELETE FROM {groups_t}")
        con.execute(f"INSERT INTO {groups_t} SELECT grp, lvl FROM {levels_v}")
    finally:
        con.unregister(levels_v)
    con.execute(
        f'DELETE FROM {groups_t} WHERE "__kanon_grp" NOT IN (SELECT "__kanon_grp" FROM {rows_t})'
    )
    con.execute(f"DELETE FROM {labels_t}")
    con.execute(f"INSERT INTO {labels_t} {_snapshot_labels_sql(name, meta)}")
    _create_view(con, name, source, meta)
    con.execute(f"DROP TABLE {new_t}")
    for table in codes:
        con.execute(f"DROP TABLE {table}")
    return Refreshed(
        added=int(added) - int(requeued),
        removed=int(removed),
        requeued=int(requeued),
        joined=int(stats["joined"]),
        new_groups=int(stats["new_groups"]),
    )
