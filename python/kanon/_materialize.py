"""``kanon.materialize`` and ``kanon.refresh``: stored releases as plain SQL views.

``materialize(con, 'patients', k=5, name='patients_k5')`` creates, in the database:

* ``patients_k5__kanon_rows``: every source row (all its columns), its copy number
  among identical rows and its group;
* ``patients_k5__kanon_groups``: every group and its level per quasi-identifier;
* ``patients_k5__kanon_h{j}``: a snapshot of each quasi-identifier's hierarchy as a
  lookup table (value as text → labels by level);
* ``patients_k5__kanon_meta``: the source, k and the quasi-identifiers;
* the view ``patients_k5``: the source joined to its group and labels. It is plain SQL
  (joins, ``CASE``, list indexing), so it works from any connection to the database
  without kanon installed.

Rows are matched by content: a row added to the source is not in the view until
:func:`refresh` places it; a row deleted from the source leaves the view, and a group
left with fewer than k rows is withheld (``QUALIFY``) until :func:`refresh` re-places
its rows. The view is therefore k-anonymous at all times.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Unpack

import numpy as np
import pyarrow as pa

from kanon import _core
from kanon._anonymize import AnonymizeOptions, plan_anonymize
from kanon._catalog import Table, check_view_name, resolve_table
from kanon._install import install_kernels
from kanon._options import AnonymizeKeywords, keywords
from kanon._owned import claim, drop_stale, helper, read_meta, temp_name
from kanon._portable_view import materialize_global
from kanon._sql import ident, literal
from kanon.exceptions import ConfigError, HierarchyError, InvalidInputError
from kanon.hierarchy.base import ROOT, value_text
from kanon.hierarchy.numbers import default_outside, default_select
from kanon.planner.hierarchies import hierarchy_select

if TYPE_CHECKING:
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
    return {part: helper(name, part) for part in ("rows", "groups", "meta")}


def _match(left: str, right: str, columns: list[str]) -> str:
    """Row identity: every column equal (NULLs too) and the same copy number."""
    same = [f"{left}.{c} IS NOT DISTINCT FROM {right}.{c}" for c in columns]
    same.append(f'{left}."__kanon_copy" = {right}."__kanon_copy"')
    return " AND ".join(same)


def _numbered(source_sql: str, columns: list[str]) -> str:
    """The source with a copy number per row among identical rows."""
    return (
        f'SELECT s.*, row_number() OVER (PARTITION BY {", ".join(columns)}) AS "__kanon_copy" '
        f"FROM {source_sql} s"
    )


def _local_view_sql(name: str, source: Table, meta: dict[str, Any]) -> str:
    """The SQL of the view of a local release: the source joined to its stored groups."""
    names = _names(name)
    columns = [ident(c.name) for c in source.columns]
    qi = list(meta["qi"])
    heights = list(meta["heights"])
    identifiers = set(meta["identifiers"])
    joins = [
        f"JOIN {ident(names['rows'])} a ON {_match('s', 'a', columns)}",
        f'JOIN {ident(names["groups"])} g ON g."__kanon_grp" = a."__kanon_grp"',
    ]
    for j, (col, typ) in enumerate(zip(qi, meta["types"], strict=True)):
        joins.append(
            f"LEFT JOIN {ident(helper(name, f'h{j}'))} h{j} "
            f"ON {value_text(f's.{ident(col)}', typ)} = h{j}.k"
        )
    out = []
    for c in source.columns:
        if c.name in qi:
            j = qi.index(c.name)
            lvl = f'g."__kanon_lvl"[{j + 1}]'
            out.append(
                f"CASE WHEN {lvl} = {heights[j]} THEN {literal(ROOT)} "
                f"ELSE h{j}.labels[{lvl} + 1] END AS {ident(c.name)}"
            )
        elif c.name in identifiers:
            out.append(f"{literal(ROOT)} AS {ident(c.name)}")
        else:
            out.append(f"s.{ident(c.name)}")
    return (
        f"SELECT {', '.join(out)} FROM ({_numbered(source.sql, columns)}) s "
        + " ".join(joins)
        + f' QUALIFY count(*) OVER (PARTITION BY a."__kanon_grp") >= {int(meta["k"])}'
    )


def materialize(
    con: duckdb.DuckDBPyConnection,
    table: str,
    k: int,
    name: str,
    qi: list[str] | None = None,
    **options: Unpack[AnonymizeKeywords],
) -> str:
    """Store a k-anonymous release of ``table`` and expose it as the plain SQL view ``name``.

    With ``method="forest"`` (local recoding) the view joins the source to the stored
    group of every row (see the module docs; :func:`refresh` places new rows). With
    ``method="optimal"`` (global recoding) the release is a transformation and the view
    re-applies it to the source with portable SQL that :func:`kanon.to_sql` carries to
    other databases (see ``kanon._portable_view``).

    Args:
        con: the connection (the tables and the view are created in its database).
        table: the source table.
        k: the smallest class size.
        name: the view to create (replaced if it is a view).
        qi: quasi-identifier columns (default: those configured for the table).
        **options: as :func:`kanon.explain`, with ``method`` ``"forest"`` (default) or
            ``"optimal"``; the forest's ``labels``, ``block_size`` and ``effort`` are
            not stored (the view reproduces the default forest).

    Returns:
        ``name``.

    Raises:
        ConfigError, HierarchyError, InvalidInputError: as :func:`kanon.anonymize`, or a
            table (not a view) of that name exists.
    """
    unstored = sorted({"labels", "block_size", "effort"} & options.keys())
    if unstored:
        msg = f"materialize does not take {', '.join(unstored)}: the view stores the default forest"
        raise InvalidInputError(msg)
    plan_options = AnonymizeOptions.of(k, qi, keywords("kanon.materialize", "kanon", options))
    method = plan_options.method
    if method == "optimal":
        materialize_global(con, table, name, plan_options)
        return name
    if method != "forest":
        msg = f"materialize supports method 'forest' or 'optimal', got {method!r}"
        raise InvalidInputError(msg)
    install_kernels(con)
    plan = plan_anonymize(con, table, plan_options)
    source = plan.table
    check_view_name(con, name, source)
    names = _names(name)
    columns = [ident(c.name) for c in source.columns]
    objects = [name, *names.values(), *(helper(name, f"h{j}") for j in range(len(plan.qis)))]
    owned = claim(con, name, objects)
    assign = temp_name("assign")
    meta = {
        "source": source.name,
        "method": "forest",
        "objects": objects,
        "k": k,
        "qi": [q.column.name for q in plan.qis],
        "types": [q.column.type for q in plan.qis],
        "heights": [q.height for q in plan.qis],
        "weights": [q.weight for q in plan.qis],
        "defaults": [q.default for q in plan.qis],
        "identifiers": list(plan.identifiers),
        "columns": [[c.name, c.type] for c in source.columns],
    }
    con.execute("BEGIN TRANSACTION")
    try:
        drop_stale(con, owned, objects)
        con.execute(f"CREATE TEMP TABLE {assign} AS {plan.assignment_sql}")
        con.execute(
            f"CREATE OR REPLACE TABLE {ident(names['rows'])} AS SELECT {', '.join(columns)}, "
            f'row_number() OVER (PARTITION BY {", ".join(columns)}) AS "__kanon_copy", '
            f'"__kanon_grp" FROM {assign}'
        )
        con.execute(
            f"CREATE OR REPLACE TABLE {ident(names['groups'])} AS "
            f'SELECT DISTINCT "__kanon_grp", "__kanon_lvl" FROM {assign}'
        )
        con.execute(f"DROP TABLE {assign}")
        for j, q in enumerate(plan.qis):
            labels = ", ".join(["k"] + [f"l{i}" for i in range(1, q.height + 1)])
            con.execute(
                f"CREATE OR REPLACE TABLE {ident(helper(name, f'h{j}'))} AS "
                f"SELECT k, [{labels}] AS labels FROM ({hierarchy_select(q)})"
            )
        con.execute(
            f"CREATE OR REPLACE TABLE {ident(names['meta'])} AS SELECT ? AS meta",
            [json.dumps(meta)],
        )
        view = _local_view_sql(name, source, meta)
        con.execute(f"CREATE OR REPLACE VIEW {ident(name)} AS {view}")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return name


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
    if meta.get("method", "forest") != "forest" or "columns" not in meta:
        msg = (
            f"release {name!r} was made with method {meta.get('method')!r} (global "
            "recoding: its view applies the transformation to every source row as it is "
            "read); refresh places new rows of local recodings (method 'forest') only"
        )
        raise InvalidInputError(msg)
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


def refresh(con: duckdb.DuckDBPyConnection, name: str) -> Refreshed:
    """Place the rows added to the source of release ``name`` since it was last refreshed.

    Existing rows keep their groups. A new row joins an existing group (whose labels
    may coarsen to hold it) or forms a new group of at least k rows with other new rows,
    whichever the forest finds nearest (the reference Go library's continuous mode).
    Rows deleted from the source are dropped from the assignment; the rows of a group
    left with fewer than k rows are placed again.

    Args:
        con: the connection to the release's database.
        name: the view made by :func:`materialize`.

    Returns:
        A :class:`Refreshed` report.

    Raises:
        ConfigError: ``name`` is not a release, or the source's columns changed.
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
    names = _names(name)
    rows_t, groups_t = ident(names["rows"]), ident(names["groups"])
    columns = [ident(c.name) for c in source.columns]
    k = int(meta["k"])
    qi = [ident(c) for c in meta["qi"]]
    heights = [int(h) for h in meta["heights"]]
    con.execute("BEGIN TRANSACTION")
    try:
        report = _refresh(con, name, meta, source, rows_t, groups_t, columns, qi, heights, k)
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
    rows_t: str,
    groups_t: str,
    columns: list[str],
    qi: list[str],
    heights: list[int],
    k: int,
) -> Refreshed:
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
        con.execute(
            f'DELETE FROM {groups_t} WHERE "__kanon_grp" NOT IN '
            f'(SELECT "__kanon_grp" FROM {rows_t})'
        )
        con.execute(f"DROP TABLE {new_t}")
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
