"""The check planner: ``kanon_check`` and ``kanon_classes`` as one SQL query each.

Pure functions of the catalog and their arguments: they read the catalog, never write,
and are cheap, because DuckDB calls them while binding ``kanon_check(...)``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kanon.exceptions import ConfigError, InvalidInputError
from kanon.hierarchy.base import value_text
from kanon.plan.catalog import Column, Table, configured, resolve_columns, resolve_table
from kanon.plan.coding import coded_hierarchy
from kanon.plan.hierarchies import check_hierarchies, hierarchy_cte, hierarchy_of
from kanon.plan.models import (
    check_distance,
    ground_distance,
    sensitive_column,
    sensitive_hierarchy,
)
from kanon.plan.roles import identifying_sql
from kanon.sql.cte import Cte, internal, with_query
from kanon.sql.quote import ident, literal

if TYPE_CHECKING:
    import duckdb

__all__ = ["CheckOptions", "CheckPlan", "plan_check", "plan_classes"]


@dataclass(frozen=True)
class CheckOptions:
    """Arguments of a privacy check besides the table."""

    qi: tuple[str, ...] = ()
    sensitive: str | None = None
    population: str | None = None
    t_distance: str | None = None
    recursive_l: int | None = None
    recursive_c: float | None = None
    risk_threshold: float = 0.2
    identifiers: tuple[str, ...] = ()  # declared roles: the columns are not undeclared
    insensitive: tuple[str, ...] = ()

    def validate(self) -> None:
        """Reject out-of-range arguments with a message naming the parameter."""
        for what, value in (("sensitive", self.sensitive), ("population", self.population)):
            if value is not None and not isinstance(value, str):
                msg = f"{what} must be a name (a string), got {value!r}"
                raise InvalidInputError(msg)
        for what, number in (
            ("recursive_l", self.recursive_l),
            ("recursive_c", self.recursive_c),
            ("risk_threshold", self.risk_threshold),
        ):
            if number is not None and (
                isinstance(number, bool) or not isinstance(number, int | float)
            ):
                msg = f"{what} must be a number, got {number!r}"
                raise InvalidInputError(msg)
        check_distance(self.t_distance)
        if self.recursive_l is not None and self.recursive_l < 1:
            msg = f"recursive_l must be at least 1, got {self.recursive_l}"
            raise InvalidInputError(msg)
        c = self.recursive_c
        if c is not None and (math.isnan(c) or c <= 0):
            msg = f"recursive_c must be positive, got {c}"
            raise InvalidInputError(msg)
        r = self.risk_threshold
        if r is None or math.isnan(r) or not 0 <= r <= 1:
            msg = f"risk_threshold must lie in [0, 1], got {r}"
            raise InvalidInputError(msg)


@dataclass(frozen=True)
class CheckPlan:
    """The SQL of a check and the columns it resolved."""

    sql: str
    qi: tuple[str, ...]
    sensitive: str | None


Config = list[tuple[str, str, str | None]]


def quasi_identifiers(table: Table, qi: tuple[str, ...], config: Config) -> list[Column]:
    """The QIs given, else those configured for ``table``; never empty."""
    names = list(qi) or [c for c, role, _ in config if role == "qi"]
    if not names:
        msg = (
            f"no quasi-identifiers for table {table.name!r}: pass qi := [...] or configure "
            "them with kanon.configure(...) / INSERT INTO kanon_columns"
        )
        raise ConfigError(msg)
    return resolve_columns(table, names, "qi")


def _keys(qis: list[Column]) -> tuple[str, str]:
    select = ", ".join(f"{ident(c.name)} AS q{i}" for i, c in enumerate(qis))
    keys = ", ".join(f"q{i}" for i in range(len(qis)))
    return select, keys


def _sensitive_hierarchy(
    con: duckdb.DuckDBPyConnection, table: Table, sens: Column, config: Config, histogram: Cte
) -> tuple[list[Cte], Cte, str]:
    """The hierarchical ground distance: CTEs coding the sensitive column's hierarchy.

    Returns the CTEs (the configured hierarchy checked against the table, and its leaves
    present in the table, plus a NULL leaf right under the root when the column holds
    NULLs, coded ``a0`` in depth-first order and ``a{l}`` per level), the sensitive
    dictionary (``sv`` of ``histogram`` → leaf code ``c``) and the SQL of the levels as a
    JSON object ``{"hierarchy": [[level 0], …]}``.
    """
    name = sensitive_hierarchy(table, sens, [(c, h) for c, _, h in config])
    q = hierarchy_of(con, table, sens, name, 1.0)
    hierarchy = hierarchy_cte(0, q)
    check_hierarchies(con, table, [q], [hierarchy])
    top = q.height
    leaves = Cte(internal("sensitive_leaves"), coded_hierarchy(hierarchy, q, table.sql))
    key = value_text("d.sv", sens.type)
    # The table changed since planning: a value without a leaf stops the query.
    lost = literal(f"a value of sensitive column {sens.name!r} is missing from its hierarchy: ")
    codes = Cte(
        internal("sensitive_codes"),
        f"SELECT d.sv, CASE WHEN v.a0 IS NULL THEN error({lost} || {key}) "
        f"ELSE v.a0 END AS c FROM (SELECT DISTINCT sv FROM {histogram.ref}) d "
        f"LEFT JOIN {leaves.ref} v ON {key} IS NOT DISTINCT FROM v.k",
        ("sv", "c"),
    )
    lists = ", ".join(f"list(a{i} ORDER BY a0)" for i in range(top + 1))
    return (
        [hierarchy, leaves],
        codes,
        f"(SELECT json_object('hierarchy', [{lists}]) FROM {leaves.ref})",
    )


def plan_check(
    con: duckdb.DuckDBPyConnection, tbl: str, options: CheckOptions, weight: str | None = None
) -> CheckPlan:
    """Return the SQL of ``kanon_check(tbl, ...)``: one row of privacy statistics.

    DuckDB forms the equivalence classes (``GROUP BY`` over the quasi-identifiers, and
    over the sensitive value when one is given); the kernel UDF ``kanon_class_stats``
    receives one packed list with a size (and sensitive histogram) per class. With
    ``weight`` (a column of ``tbl``, declared insensitive), each row of ``tbl`` counts as
    that many rows: ``tbl`` is a histogram computed elsewhere (``kanon.spark.check``).
    """
    options.validate()
    table = resolve_table(con, tbl)
    hierarchical = options.t_distance == "hierarchical"
    config = configured(con, table)
    qis = quasi_identifiers(table, options.qi, config)
    sens = sensitive_column(table, options.sensitive, qis, [(c, r) for c, r, _ in config])
    # The columns without a role (argument or configuration) whose values single out
    # rows are reported: a release would refuse them.
    declared = {c.lower() for c, _, _ in config} | {q.name.lower() for q in qis}
    declared |= {
        c.name.lower() for c in resolve_columns(table, list(options.identifiers), "identifiers")
    }
    declared |= {
        c.name.lower() for c in resolve_columns(table, list(options.insensitive), "insensitive")
    }
    if sens is not None:
        declared.add(sens.name.lower())
    undeclared = [c.name for c in table.columns if c.name.lower() not in declared]
    identifying = identifying_sql(table, undeclared)
    select, keys = _keys(qis)
    rows = "count(*)" if weight is None else f"sum({ident(weight)})"
    weighted = "" if weight is None else f", {ident(weight)} AS {internal('weight')}"
    counted = "count(*)" if weight is None else f"sum({internal('weight')})"
    ctes: list[Cte] = []
    levels_json: str | None = None
    if sens is None:
        entries = Cte(
            internal("class_entries"),
            f"SELECT {keys}, {counted}::UBIGINT AS n, "
            "NULL::STRUCT(c UINTEGER, n UBIGINT)[] AS entries "
            f"FROM (SELECT {select}{weighted} FROM {table.sql}) GROUP BY {keys}",
        )
        ordered = False
    else:
        histogram = Cte(
            internal("sensitive_histogram"),
            f"SELECT {select}, {ident(sens.name)} AS sv, {rows}::UBIGINT AS n "
            f"FROM {table.sql} GROUP BY ALL",
        )
        ctes.append(histogram)
        if hierarchical:
            h_ctes, codes, levels_json = _sensitive_hierarchy(con, table, sens, config, histogram)
            ctes[:0] = h_ctes
        else:
            codes = Cte(
                internal("sensitive_codes"),
                "SELECT sv, (row_number() OVER (ORDER BY sv ASC NULLS LAST) - 1)"
                f"::UINTEGER AS c FROM (SELECT DISTINCT sv FROM {histogram.ref})",
                ("sv", "c"),
            )
        ctes.append(codes)
        hist, code = histogram.ref, codes.ref
        hist_keys = ", ".join(f"{hist}.q{i}" for i in range(len(qis)))
        entries = Cte(
            internal("class_entries"),
            f"SELECT {hist_keys}, sum({hist}.n)::UBIGINT AS n, "
            f"list({{'c': {code}.c, 'n': {hist}.n}}) AS entries "
            f"FROM {hist} JOIN {code} ON {hist}.sv IS NOT DISTINCT FROM {code}.sv "
            f"GROUP BY {hist_keys}",
        )
        ordered = ground_distance(options.t_distance, sens) == "ordered"
    ctes.append(entries)
    cls = entries.ref
    if options.population is None:
        classes = Cte(internal("classes"), f"SELECT n, NULL::UBIGINT AS pop, entries FROM {cls}")
    else:
        population = resolve_table(con, options.population)
        pop_cols = resolve_columns(population, [q.name for q in qis], "population")
        pop_select, _ = _keys(pop_cols)
        pop_classes = Cte(
            internal("population_classes"),
            f"SELECT {keys}, count(*)::UBIGINT AS n "
            f"FROM (SELECT {pop_select} FROM {population.sql}) GROUP BY ALL",
        )
        ctes.append(pop_classes)
        pop = pop_classes.ref
        on = " AND ".join(f"{cls}.q{i} IS NOT DISTINCT FROM {pop}.q{i}" for i in range(len(qis)))
        classes = Cte(
            internal("classes"),
            f"SELECT {cls}.n, coalesce({pop}.n, 0)::UBIGINT AS pop, {cls}.entries "
            f"FROM {cls} LEFT JOIN {pop} ON {on}",
        )
    ctes.append(classes)
    kernel_options = {
        "sensitive": sens is not None,
        "population": options.population is not None,
        "ordered": ordered,
        "recursive_l": options.recursive_l,
        "recursive_c": options.recursive_c,
        "risk_threshold": options.risk_threshold,
    }
    options_sql = literal(json.dumps(kernel_options))
    packed = "list({'n': n, 'pop': pop, 'entries': entries})"
    if levels_json is None:
        sql = with_query(
            ctes,
            f"SELECT unnest(kanon_class_stats({packed}, {options_sql})), "
            f"{identifying} AS identifying_columns FROM {classes.ref}",
        )
    else:  # the options carry the hierarchy's levels, read when the query runs
        packed_cte = Cte(internal("packed"), f"SELECT {packed} AS p FROM {classes.ref}")
        opts = Cte(
            internal("options"), f"SELECT json_merge_patch({options_sql}, {levels_json}) AS o"
        )
        ctes += [packed_cte, opts]
        sql = with_query(
            ctes,
            f"SELECT unnest(kanon_class_stats({packed_cte.ref}.p, {opts.ref}.o::VARCHAR)), "
            f"{identifying} AS identifying_columns FROM {packed_cte.ref}, {opts.ref}",
        )
    return CheckPlan(sql, tuple(q.name for q in qis), None if sens is None else sens.name)


def plan_classes(con: duckdb.DuckDBPyConnection, tbl: str, qi: tuple[str, ...]) -> str:
    """Return the SQL of ``kanon_classes(tbl, qi)``: the class-size histogram."""
    table = resolve_table(con, tbl)
    qis = quasi_identifiers(table, qi, configured(con, table) if not qi else [])
    group = ", ".join(ident(c.name) for c in qis)
    sizes = Cte(
        internal("class_sizes"),
        f"SELECT count(*)::UBIGINT AS size FROM {table.sql} GROUP BY {group}",
        ("size",),
    )
    histogram = Cte(
        internal("size_histogram"),
        "SELECT size AS class_size, count(*)::UBIGINT AS classes, sum(size)::UBIGINT AS rows "
        f"FROM {sizes.ref} GROUP BY size",
        ("class_size", "classes", "rows"),
    )
    return with_query(
        [sizes, histogram],
        "SELECT class_size, classes, rows, rows / sum(rows) OVER () AS share, "
        "sum(rows) OVER (ORDER BY class_size) / sum(rows) OVER () AS cumulative_share "
        f"FROM {histogram.ref} ORDER BY class_size",
    )
