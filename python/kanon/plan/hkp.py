"""(h,k,p)-coherence of transaction data: ``kanon_hkp(...)`` and ``kanon.hkp(...)``.

A transaction table holds one *set* of items per transaction (a basket, a patient's
diagnoses, a session's clicks), either as a LIST column (one row per transaction) or
long (one row per transaction id and item). An attacker who knows up to ``p`` public
items of a person must find at least ``k`` matching transactions, and no private item
may occur in more than a fraction ``h`` of them (Xu et al., KDD 2008). Public items are
suppressed from the whole table until that holds; private items are never suppressed.

Planning resolves the table, the shape and the roles and returns one SQL statement:
items are coded in value order (``__kanon_dict``), the transactions go to the kernel
UDF ``kanon_hkp_run`` (``kanon-core::hkp``) as one packed list of code lists, and its
answer (the items to suppress, the moles, counters) is decoded and either reported or
joined back: suppressed items leave their lists (LIST shape) or their rows (long shape,
where a transaction whose items are all suppressed keeps one row with a NULL item, so
no transaction is lost).

Rules for NULLs: a NULL list is a transaction without items and is released as NULL; a
NULL element of a list is an error; in the long shape a NULL item marks a transaction
without items (its row is kept as it is, which is how releases mark emptied
transactions), and a NULL transaction id is an error.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kanon._options import defaults
from kanon.exceptions import ConfigError, InvalidInputError
from kanon.plan.catalog import Column, Table, resolve_table
from kanon.sql.quote import ident, literal, string_list
from kanon.sql.types import ITEM_TYPES, base_type

if TYPE_CHECKING:
    import duckdb

__all__ = [
    "METHODS",
    "HkpOptions",
    "HkpPlan",
    "plan_hkp",
]

#: The removal methods of the greedy phase.
METHODS = ("mmil", "1il", "mm", "rmall")
#: Default of ``max_itemsets``: the most candidate sets of 2..p public items the mole
#: search may decide before it stops with an error naming p (the kernel's default).
MAX_ITEMSETS: int = defaults("kanon_hkp")["max_itemsets"]

_NEEDS_ROLES = (
    "the private items are needed: pass private := [...] (a list of items; [] makes every "
    "item public), roles := 'table' (columns item and role, 'public' or 'private') or "
    "public_fraction := 0.4 (a seeded random share of public items)"
)


@dataclass(frozen=True)
class HkpOptions:
    """Arguments of ``kanon_hkp`` besides the table."""

    h: float
    k: int
    p: int
    private: tuple[str | None, ...] | None = None
    roles: str | None = None
    public_fraction: float | None = None
    seed: int = 0
    method: str = "mmil"
    min_support: float = 0.0
    max_itemsets: int = MAX_ITEMSETS
    items: str | None = None
    tid: str | None = None
    item: str | None = None

    def validate(self) -> None:
        """Reject out-of-range arguments with a message naming the parameter."""
        h = self.h
        if h is None or not isinstance(h, (int, float)) or math.isnan(h) or not 0 < h <= 1:
            msg = (
                f"h must lie in (0, 1] (the largest allowed probability of inferring a "
                f"private item), got {h!r}"
            )
            raise InvalidInputError(msg)
        for name, value in (("k", self.k), ("p", self.p)):
            if value is None or isinstance(value, bool) or not isinstance(value, int):
                msg = f"{name} must be a whole number, got {value!r}"
                raise InvalidInputError(msg)
        if self.k < 1:
            msg = f"k must be at least 1 (the smallest allowed cohort), got {self.k}"
            raise InvalidInputError(msg)
        if self.p < 1:
            msg = f"p must be at least 1 (the most public items an attacker knows), got {self.p}"
            raise InvalidInputError(msg)
        if self.method not in METHODS:
            msg = f"method must be one of {', '.join(map(repr, METHODS))}, got {self.method!r}"
            raise InvalidInputError(msg)
        s = self.min_support
        if s is None or math.isnan(s) or not 0 <= s <= 1:
            msg = f"min_support must lie in [0, 1] (a share of the transactions), got {s!r}"
            raise InvalidInputError(msg)
        m = self.max_itemsets
        if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m < 2**64:
            msg = (
                f"max_itemsets must be a whole number of at least 1 (the most candidate sets "
                f"of 2..p public items the mole search may decide), got {m!r}"
            )
            raise InvalidInputError(msg)
        if not isinstance(self.seed, int) or not 0 <= self.seed < 2**64:
            msg = f"seed must be a whole number in [0, 2**64), got {self.seed!r}"
            raise InvalidInputError(msg)
        given = [
            name
            for name, value in (
                ("private", self.private),
                ("roles", self.roles),
                ("public_fraction", self.public_fraction),
            )
            if value is not None
        ]
        if not given:
            raise ConfigError(_NEEDS_ROLES)
        if len(given) > 1:
            msg = f"give only one of private, roles and public_fraction, got {', '.join(given)}"
            raise ConfigError(msg)
        f = self.public_fraction
        if f is not None and (math.isnan(f) or not 0 <= f <= 1):
            msg = f"public_fraction must lie in [0, 1], got {f!r}"
            raise InvalidInputError(msg)
        if self.private is not None and any(v is None for v in self.private):
            msg = "private lists a NULL item; items are never NULL"
            raise InvalidInputError(msg)


@dataclass(frozen=True)
class _Shape:
    """Where the transactions are: a LIST column, or a (transaction id, item) table."""

    items: Column  # the LIST column, or the item column of the long shape
    item_type: str  # type of one item
    tid: Column | None = None  # the transaction id (long shape)

    @property
    def long(self) -> bool:
        return self.tid is not None


@dataclass(frozen=True)
class HkpPlan:
    """The SQL of one ``kanon_hkp`` call: the release, the report, the shape resolved."""

    table: Table
    shape: _Shape
    report_sql: str
    release_sql: str
    source_ctes: tuple[str, ...]

    def release_without(self, gone: list[Any]) -> str:
        """SQL of the release with the items ``gone`` removed (no kernel call)."""
        values = ", ".join(literal(v) for v in gone)
        ctes = [
            *self.source_ctes,
            f'"__kanon_gone" AS (SELECT unnest(CAST([{values}] AS {self.shape.item_type}[])) '
            "AS item)",
        ]
        return _release(self.table, self.shape, ctes)


def _element_type(column: Column) -> str | None:
    """The element type of a LIST column (None for other types)."""
    t = column.type
    return t[:-2] if t.endswith("[]") else None


def _check_item_type(table: Table, column: Column, item_type: str) -> None:
    if base_type(item_type) not in ITEM_TYPES:
        msg = (
            f"items of column {column.name!r} of table {table.name!r} are {item_type}; "
            "items must be integers or text (VARCHAR)"
        )
        raise ConfigError(msg)


def _shape(table: Table, options: HkpOptions) -> _Shape:
    """The LIST column, or the long shape's transaction id and item columns."""
    if options.tid is not None or options.item is not None:
        if options.tid is None or options.item is None:
            msg = "a long transaction table needs both tid := '...' and item := '...'"
            raise ConfigError(msg)
        if options.items is not None:
            msg = "give either items := (a LIST column) or tid := and item := (long), not both"
            raise ConfigError(msg)
        tid, item = table.column(options.tid), table.column(options.item)
        if tid.name == item.name:
            msg = f"tid and item are the same column {tid.name!r}"
            raise ConfigError(msg)
        if _element_type(tid) is not None:
            msg = f"the transaction id {tid.name!r} is {tid.type}; it must be a plain value"
            raise ConfigError(msg)
        _check_item_type(table, item, item.type)
        return _Shape(item, item.type, tid)
    if options.items is not None:
        column = table.column(options.items)
        element = _element_type(column)
        if element is None:
            msg = (
                f"column {column.name!r} of table {table.name!r} is {column.type}, not a LIST "
                "of items; for a long table pass tid := and item :="
            )
            raise ConfigError(msg)
    else:
        lists = [c for c in table.columns if _element_type(c) is not None]
        if len(lists) != 1:
            found = ", ".join(repr(c.name) for c in lists) or "none"
            msg = (
                f"table {table.name!r} needs exactly one LIST column of items (found {found}): "
                "choose it with items := '...', or pass tid := and item := for a long table"
            )
            raise ConfigError(msg)
        column = lists[0]
        element = _element_type(column)
    if element is None:  # unreachable: both branches checked it
        msg = f"column {column.name!r} is not a LIST"
        raise ConfigError(msg)
    _check_item_type(table, column, element)
    return _Shape(column, element, None)


def _source_ctes(table: Table, shape: _Shape) -> list[str]:
    """The CTEs reading the table: ``__kanon_src`` and ``__kanon_flat``.

    ``__kanon_src`` numbers the rows in scan order (``__kanon_row``), ``__kanon_flat`` has
    one row per item: ``__kanon_row``, ``item``, and ``pos`` in the list or ``tid`` in the
    long shape.
    """
    src = (
        f'"__kanon_src" AS MATERIALIZED (SELECT *, row_number() OVER () AS "__kanon_row" '
        f"FROM {table.sql})"
    )
    c = ident(shape.items.name)
    if shape.tid is None:
        flat = (
            f'"__kanon_flat" AS MATERIALIZED (SELECT "__kanon_row", unnest({c}) AS item, '
            f'generate_subscripts({c}, 1) AS pos FROM "__kanon_src")'
        )
    else:
        flat = (
            f'"__kanon_flat" AS (SELECT "__kanon_row", {ident(shape.tid.name)} AS tid, '
            f'{c} AS item FROM "__kanon_src")'
        )
    return [src, flat]


def _kernel_ctes(
    table: Table, shape: _Shape, options: HkpOptions, roles: Table | None
) -> list[str]:
    """The coding, the kernel call ``__kanon_run`` and its decoding ``__kanon_values``."""
    if shape.tid is None:
        bad = (
            '"__kanon_bad" AS (SELECT count(*) FILTER (WHERE item IS NULL) AS nulls, '
            + literal(
                f"InvalidInputError: column {shape.items.name!r} of table {table.name!r} "
                "holds NULL items (a list may be NULL, its elements may not); NULL elements: "
            )
            + ' AS msg FROM "__kanon_flat")'
        )
        transactions = '(SELECT count(*) FROM "__kanon_src")'
        group = 'f."__kanon_row"'
    else:
        bad = (
            '"__kanon_bad" AS (SELECT count(*) FILTER (WHERE tid IS NULL) AS nulls, '
            + literal(
                f"InvalidInputError: column {shape.tid.name!r} of table {table.name!r} holds "
                "NULL transaction ids; rows with a NULL id: "
            )
            + ' AS msg FROM "__kanon_flat")'
        )
        transactions = '(SELECT count(DISTINCT tid) FROM "__kanon_flat")'
        group = "f.tid"
    ctes = [
        bad,
        '"__kanon_dict" AS (SELECT item, (row_number() OVER (ORDER BY item) - 1)::UINTEGER '
        'AS code FROM (SELECT DISTINCT item FROM "__kanon_flat" WHERE item IS NOT NULL))',
        '"__kanon_tx" AS (SELECT list(d.code) AS codes FROM "__kanon_flat" f '
        f'JOIN "__kanon_dict" d ON f.item = d.item GROUP BY {group})',
    ]
    if options.private is not None:
        named = string_list([v for v in options.private if v is not None])
        private = (
            'SELECT coalesce(list(code ORDER BY code), CAST([] AS UINTEGER[])) FROM "__kanon_dict" '
            f"WHERE CAST(item AS VARCHAR) IN (SELECT unnest({named}))"
        )
    elif roles is not None:
        private = (
            'SELECT coalesce(list(code ORDER BY code), CAST([] AS UINTEGER[])) FROM "__kanon_dict" '
            f"WHERE CAST(item AS VARCHAR) IN (SELECT CAST({ident(roles.column('item').name)} AS "
            f"VARCHAR) FROM {roles.sql} WHERE lower({ident(roles.column('role').name)}) = "
            "'private')"
        )
    else:
        private = "SELECT CAST(NULL AS UINTEGER[])"
    kernel_options = {
        "h": float(options.h),
        "k": options.k,
        "p": options.p,
        "method": options.method,
        "min_support": float(options.min_support),
        "public_fraction": options.public_fraction,
        "seed": options.seed,
        "max_itemsets": options.max_itemsets,
    }
    ctes.append(
        '"__kanon_run" AS (SELECT CASE WHEN b.nulls > 0 THEN error(b.msg || b.nulls) ELSE '
        'kanon_hkp_run((SELECT list(codes) FROM "__kanon_tx"), '
        f"CAST({transactions} AS UBIGINT), "
        'CAST((SELECT count(*) FROM "__kanon_dict") AS UBIGINT), '
        f"({private}), {literal(json.dumps(kernel_options))}) END AS r "
        'FROM "__kanon_bad" b)'
    )
    ctes.append('"__kanon_values" AS (SELECT list(item ORDER BY code) AS v FROM "__kanon_dict")')
    return ctes


def _release(table: Table, shape: _Shape, ctes: list[str]) -> str:
    """The release over the CTEs, which end with ``__kanon_gone`` (items to remove)."""
    c = ident(shape.items.name)
    head = "WITH " + ",\n".join(ctes)
    if shape.tid is None:
        kept = (
            '"__kanon_kept" AS (SELECT f."__kanon_row", list(f.item ORDER BY f.pos) AS kept '
            'FROM "__kanon_flat" f ANTI JOIN "__kanon_gone" g ON f.item = g.item '
            'GROUP BY f."__kanon_row")'
        )
        cols = [
            (
                f"CASE WHEN s.{c} IS NULL THEN NULL ELSE coalesce(k.kept, "
                f"list_filter(s.{c}, lambda x: false)) END AS {c}"
            )
            if col.name == shape.items.name
            else f"s.{ident(col.name)}"
            for col in table.columns
        ]
        return (
            f'{head},\n{kept}\nSELECT {", ".join(cols)} FROM "__kanon_src" s '
            'LEFT JOIN "__kanon_kept" k ON s."__kanon_row" = k."__kanon_row" '
            'ORDER BY s."__kanon_row"'
        )
    t = ident(shape.tid.name)
    lost = (
        '"__kanon_lost" AS (SELECT f.tid, min(f."__kanon_row") AS "__kanon_row" '
        'FROM "__kanon_flat" f LEFT JOIN "__kanon_gone" g ON f.item = g.item '
        "GROUP BY f.tid HAVING count(g.item) = count(*))"
    )
    names = ", ".join(ident(col.name) for col in table.columns)
    return (
        f"{head},\n{lost}\nSELECT {names} FROM ("
        f'SELECT s.* FROM "__kanon_src" s ANTI JOIN "__kanon_gone" g ON s.{c} = g.item '
        f'UNION ALL BY NAME SELECT l."__kanon_row", l.tid AS {t} FROM "__kanon_lost" l) '
        'ORDER BY "__kanon_row"'
    )


def _report(ctes: list[str]) -> str:
    """One row reporting the kernel's answer, items decoded."""
    decode = "lambda c: v.v[c + 1]"
    return (
        "WITH "
        + ",\n".join(ctes)
        + f"\nSELECT list_transform(x.r.suppressed, {decode}) AS suppressed, "
        f"list_transform(x.r.size1_moles, {decode}) AS size1_moles, "
        f"list_transform(x.r.moles, lambda m: list_transform(m, {decode})) AS moles, "
        "x.r.information_loss AS information_loss, "
        "CAST(x.r.suppressed_occurrences AS BIGINT) AS suppressed_occurrences, "
        "CAST(x.r.occurrences AS BIGINT) AS occurrences, "
        f"list_transform(x.r.dropped, {decode}) AS dropped, "
        "CAST(x.r.dropped_occurrences AS BIGINT) AS dropped_occurrences, "
        f"list_transform(x.r.private, {decode}) AS private, "
        "CAST(x.r.transactions AS BIGINT) AS transactions, "
        "CAST(x.r.items AS BIGINT) AS items, "
        "CAST(x.r.public_items AS BIGINT) AS public_items, "
        "CAST(x.r.candidates AS BIGINT) AS candidates, "
        "x.r.method AS method, x.r.seconds AS seconds "
        'FROM "__kanon_run" x, "__kanon_values" v'
    )


def _roles_table(con: duckdb.DuckDBPyConnection, name: str) -> Table:
    """The roles table, checked: columns item and role, roles 'public' / 'private'."""
    roles = resolve_table(con, name)
    item, role = ident(roles.column("item").name), ident(roles.column("role").name)
    (nulls, wrong, mixed) = con.execute(
        f"SELECT count(*) FILTER (WHERE {item} IS NULL OR {role} IS NULL), "
        f"min({role}) FILTER (WHERE lower({role}) NOT IN ('public', 'private')), "
        f"(SELECT min(i) FROM (SELECT CAST({item} AS VARCHAR) AS i FROM {roles.sql} "
        f"GROUP BY i HAVING count(DISTINCT lower({role})) > 1)) FROM {roles.sql}"
    ).fetchall()[0]
    if nulls:
        msg = f"roles table {name!r} has {nulls} rows with a NULL item or role"
        raise ConfigError(msg)
    if wrong is not None:
        msg = f"roles table {name!r} gives role {wrong!r}; a role is 'public' or 'private'"
        raise ConfigError(msg)
    if mixed is not None:
        msg = f"roles table {name!r} gives item {mixed!r} both roles"
        raise ConfigError(msg)
    return roles


def _check_private_occur(
    con: duckdb.DuckDBPyConnection,
    table: Table,
    shape: _Shape,
    options: HkpOptions,
    roles: Table | None,
) -> None:
    """Raise if an item named private occurs in no transaction.

    A typo would otherwise leave the real item public.
    """
    c = ident(shape.items.name)
    present = (
        f"SELECT CAST({c} AS VARCHAR) FROM {table.sql} WHERE {c} IS NOT NULL"
        if shape.long
        else f"SELECT CAST(x AS VARCHAR) FROM (SELECT unnest({c}) AS x FROM {table.sql}) "
        "WHERE x IS NOT NULL"
    )
    params: list[Any] = []
    if options.private is not None:
        if not options.private:
            return
        named = "SELECT unnest(CAST(? AS VARCHAR[])) AS p"
        params = [[v for v in options.private if v is not None]]
        source = "listed in private"
    elif roles is not None:
        item, role = ident(roles.column("item").name), ident(roles.column("role").name)
        named = (
            f"SELECT CAST({item} AS VARCHAR) AS p FROM {roles.sql} WHERE lower({role}) = 'private'"
        )
        source = f"private in roles table {roles.name!r}"
    else:
        return
    missing = con.execute(
        f"SELECT list(DISTINCT p ORDER BY p) FROM ({named}) WHERE p NOT IN ({present})",
        params,
    ).fetchall()[0][0]
    if missing:
        shown = ", ".join(repr(m) for m in missing[:5]) + (", ..." if len(missing) > 5 else "")
        msg = (
            f"{len(missing)} item(s) {source} never occur in table {table.name!r}: {shown} "
            "(items compare as text)"
        )
        raise InvalidInputError(msg)


def plan_hkp(con: duckdb.DuckDBPyConnection, table_name: str, options: HkpOptions) -> HkpPlan:
    """Plan ``kanon_hkp`` / ``kanon_hkp_report`` on ``table_name``.

    Reads the catalog, the roles table and, to check that every private item occurs, the
    items; writes nothing.
    """
    options.validate()
    table = resolve_table(con, table_name)
    shape = _shape(table, options)
    roles = None if options.roles is None else _roles_table(con, options.roles)
    _check_private_occur(con, table, shape, options, roles)
    source = _source_ctes(table, shape)
    kernel = [*source, *_kernel_ctes(table, shape, options, roles)]
    gone = (
        '"__kanon_gone" AS (SELECT item FROM "__kanon_dict" WHERE code IN '
        '(SELECT unnest(x.r.suppressed || x.r.dropped) FROM "__kanon_run" x))'
    )
    return HkpPlan(
        table=table,
        shape=shape,
        report_sql=_report(kernel),
        release_sql=_release(table, shape, [*kernel, gone]),
        source_ctes=tuple(source),
    )
