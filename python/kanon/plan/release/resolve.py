"""``kanon(...)`` resolved against the catalog and handed to its method's planner.

:func:`plan_anonymize` reads the catalog (the table, its configuration and roles, the
hierarchies, the privacy models), checks the hierarchies, and hands the resolved call
(:class:`kanon.plan.release.method.Request`) to the method's planner found in
:data:`kanon.plan.release.registry.METHODS`. Every plan starts with the hierarchy of each
quasi-identifier (:func:`kanon.plan.hierarchies.hierarchy_cte`); the methods build on
the shared vocabulary of :mod:`kanon.plan.release`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kanon._options import MACROS
from kanon.exceptions import InvalidInputError
from kanon.plan.catalog import configured_full, resolve_table
from kanon.plan.hierarchies import (
    QuasiIdentifier,
    check_hierarchies,
    hierarchy_cte,
    resolve_qis,
)
from kanon.plan.release.method import Request
from kanon.plan.release.models import ResolvedModels, population_table, resolve_models
from kanon.plan.release.options import AnonymizeOptions
from kanon.plan.release.registry import METHODS, taking
from kanon.plan.roles import resolve_roles
from kanon.plan.undeclared import check_source, guarded
from kanon.sql.quote import ident

if TYPE_CHECKING:
    import duckdb

    from kanon.plan.catalog import Table

__all__ = ["AnonymizeOptions", "AnonymizePlan", "check_method", "plan_anonymize"]


@dataclass(frozen=True)
class AnonymizePlan:
    """The SQL of an anonymization and what it resolved."""

    sql: str
    # Every source column, "__kanon_grp", "__kanon_lvl" and "__kanon_label{j}" per row.
    assignment_sql: str
    table: Table
    qis: tuple[QuasiIdentifier, ...]
    identifiers: tuple[str, ...]
    rows: int
    models: ResolvedModels | None = None  # the privacy models besides k, resolved
    #: The columns released unchanged without a role, which ``sql`` checks do not carry
    #: the QIs (empty: none, or ``keep_undeclared``, or no check asked for).
    undeclared: tuple[str, ...] = ()


def plan_anonymize(
    con: duckdb.DuckDBPyConnection,
    tbl: str,
    options: AnonymizeOptions,
    *,
    check_values: bool = True,
    check_undeclared: bool = True,
    weight: str | None = None,
    spans: tuple[float, ...] | None = None,
) -> AnonymizePlan:
    """Return the SQL of ``kanon(tbl, k, ...)``: the anonymized rows of ``tbl``.

    Reads the catalog (table, configuration, hierarchy tables), checks the configured
    hierarchies, and counts the rows (``k`` above it is an error). With
    ``check_values`` the table's values are checked against their hierarchies now, and
    all missing ones named; without (the SQL macros, which DuckDB binds twice), the
    returned SQL names the first it meets when it runs, and stops. With
    ``check_undeclared`` (not for searches, which release no rows) the returned SQL stops
    with a kanon error when an undeclared column, beside the released QIs, makes a class
    below k (``kanon.plan.undeclared``), unless ``options.keep_undeclared``; a column holding
    a value of fewer than k rows stops the plan itself.
    With ``weight`` (a column of ``tbl``), each row counts as that many rows (a
    histogram: only the optimal search takes it, see ``kanon.store.global_view``).
    ``spans``: see ``Request.spans``.
    """
    check_method(options)
    table = resolve_table(con, tbl)
    config = configured_full(con, table)
    sensitive = options.sensitive
    model_sensitive = options.models.sensitive
    if isinstance(model_sensitive, str) and model_sensitive not in sensitive:
        sensitive = (*sensitive, model_sensitive)
    roles = resolve_roles(
        table,
        [(c, role) for c, role, *_ in config],
        qi=options.qi,
        identifiers=options.identifiers,
        sensitive=sensitive,
        insensitive=options.insensitive,
    )
    population = population_table(con, table, options.models)
    # Each QI's priority: the call's priorities (checked by AnonymizeOptions.of), else the
    # configured one.
    qis = resolve_qis(con, table, roles.qi, config, population, options.priorities)
    models = resolve_models(
        con, table, qis, options.models, [(c, r, h, w) for c, r, h, w, _ in config], population
    )
    identifiers = roles.identifiers
    counted = "count(*)" if weight is None else f"coalesce(sum({ident(weight)}), 0)"
    rows = int(con.execute(f"SELECT {counted} FROM {table.sql}").fetchall()[0][0])
    if options.k > rows:
        msg = f"k = {options.k} exceeds the number of rows of table {table.name!r} ({rows})"
        raise InvalidInputError(msg)
    checked = roles.undeclared if check_undeclared and not options.keep_undeclared else ()
    if not options.drop_suppressed:  # every row released: a rare value fails already
        check_source(con, table.sql, table.name, checked, options.k)
    request = Request(table, qis, identifiers, options, rows, [], models, spans)
    hierarchies = [hierarchy_cte(j, q) for j, q in enumerate(request.coded)]
    check_hierarchies(con, table, request.coded, hierarchies, values=check_values)
    sql, assignment = METHODS[options.method].release(replace(request, hierarchies=hierarchies))
    names = [q.column.name for q in qis]
    sql = guarded(sql, table.name, names, checked, options.k)
    return AnonymizePlan(sql, assignment, table, tuple(qis), identifiers, rows, models, checked)


def check_method(options: AnonymizeOptions) -> None:
    """The method exists, and takes every scoped option given (not at its default)."""
    values = options.given
    name = options.method
    method = METHODS.get(name)
    if method is None:
        msg = f"method must be one of {', '.join(map(repr, METHODS))}, got {name!r}"
        raise InvalidInputError(msg)
    declared = MACROS["kanon"].options()
    given = [
        option
        for option, (_, opt) in declared.items()
        if opt.scoped and option not in method.options and values[option] != opt.default
    ]
    if given:
        where = "; ".join(
            f"{option} applies to {', '.join(map(repr, taking(option)))}" for option in given
        )
        one = len(given) == 1
        msg = (
            f"{', '.join(given)} {'does' if one else 'do'} not apply to method {name!r}, "
            f"which ignores {'it' if one else 'them'} ({where}); leave "
            f"{'it' if one else 'them'} out or choose a method that takes {'it' if one else 'them'}"
        )
        raise InvalidInputError(msg)
