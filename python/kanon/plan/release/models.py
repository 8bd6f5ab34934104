"""The privacy models' arguments of the kernels that enforce them (optimal, Mondrian).

The models are declared in :mod:`kanon.plan.models` (``PrivacyModels`` holds what a call
asks for); :func:`resolve_models` finds the columns and tables they read, and
:func:`model_args` plans the SQL of the kernels' extra arguments: the sensitive value of
every row as entries (tuple ``t``, code, rows), the sensitive hierarchy for the
hierarchical ground distance, and the population's rows as label paths (per QI, the
table's label code at every level) for δ-presence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kanon.exceptions import ConfigError
from kanon.hierarchy.base import value_text
from kanon.plan.catalog import resolve_columns, resolve_table
from kanon.plan.coding import code_columns
from kanon.plan.hierarchies import hierarchy_of
from kanon.plan.models import (
    PrivacyModels,
    models_reading,
    sensitive_column,
    sensitive_hierarchy,
)
from kanon.sql.cte import Cte, internal
from kanon.sql.quote import ident, literal

if TYPE_CHECKING:
    import duckdb

    from kanon.plan.catalog import Column, Table
    from kanon.plan.coding import Coded
    from kanon.plan.hierarchies import QuasiIdentifier

__all__ = [
    "MODEL_PARAMETERS",
    "NO_LABEL",
    "ResolvedModels",
    "model_args",
    "population_table",
    "resolve_models",
]

#: A population label absent from the table's coded hierarchy (``lattice::NO_LABEL``).
NO_LABEL = 2**32 - 1


@dataclass(frozen=True)
class ModelArgs:
    """SQL of the kernel UDF's model arguments and the CTEs they read."""

    ctes: list[Cte]
    args: dict[str, str]  # an SQL expression per parameter of MODEL_PARAMETERS
    options: dict[str, Any]


#: The model parameters of ``kanon_optimal`` and ``kanon_mondrian``: sensitive entries
#: (tuples, codes, rows), the sensitive hierarchy, population paths and rows.
MODEL_PARAMETERS = (
    ("sensitive_tuples", "UINTEGER[]"),
    ("sensitive_codes", "UINTEGER[]"),
    ("sensitive_counts", "UBIGINT[]"),
    ("sensitive_hierarchy", "UINTEGER[][]"),
    ("population_paths", "UINTEGER[]"),
    ("population_counts", "UBIGINT[]"),
)
_NO_ARGS = {name: f"[]::{sql}" for name, sql in MODEL_PARAMETERS}


def population_table(
    con: duckdb.DuckDBPyConnection, table: Table, models: PrivacyModels
) -> Table | None:
    """The population table of δ-presence (None without)."""
    if models.population is None:
        return None
    pop = resolve_table(con, models.population)
    if pop.name.lower() == table.name.lower():
        msg = "population must be another table than the one anonymized"
        raise ConfigError(msg)
    return pop


@dataclass(frozen=True)
class ResolvedModels:
    """The privacy models of a call with the columns and tables they use."""

    models: PrivacyModels
    sensitive: Column | None  # for l-diversity and t-closeness
    hierarchy: QuasiIdentifier | None  # the sensitive column's, for the hierarchical t
    population: Table | None
    population_qis: list[Column]  # the population's QI columns, in QI order


def resolve_models(
    con: duckdb.DuckDBPyConnection,
    table: Table,
    qis: list[QuasiIdentifier],
    models: PrivacyModels,
    config: list[tuple[str, str, str | None, float]],
    population: Table | None,
) -> ResolvedModels | None:
    """Resolve the sensitive column, its hierarchy and the population's columns."""
    if not models.any():
        return None
    sens = None
    sq = None
    if models.needs_sensitive:
        columns = [q.column for q in qis]
        name = models.sensitive if isinstance(models.sensitive, str) else None
        sens = sensitive_column(table, name, columns, [c[:2] for c in config])
        if sens is None:
            msg = (
                f"{models_reading('sensitive')} need a sensitive column of table "
                f"{table.name!r}: pass sensitive := '...' or configure one (role 'sensitive')"
            )
            raise ConfigError(msg)
        if models.kernel(sens).get("t_distance") == "hierarchical":
            name = sensitive_hierarchy(table, sens, [(c, h) for c, _, h, _ in config])
            sq = hierarchy_of(con, table, sens, name, 1.0)
    pop_cols = []
    if population is not None:
        pop_cols = resolve_columns(population, [q.column.name for q in qis], "population")
    return ResolvedModels(models, sens, sq, population, pop_cols)


def _sensitive_ctes(
    table: Table, sens: Column, sq: QuasiIdentifier | None, coded: Coded, m: int
) -> tuple[list[Cte], str]:
    """CTEs of the sensitive entries and the SQL of the hierarchy argument."""
    codes = code_columns(m)
    s = ident(sens.name)
    rows, tuples = coded.rows.ref, coded.tuples.ref
    if sq is None:
        dictionary = Cte(
            internal("sensitive_codes"),
            "SELECT sv, (dense_rank() OVER (ORDER BY sv ASC NULLS LAST) - 1)"
            f"::UINTEGER AS code FROM (SELECT DISTINCT {s} AS sv FROM {table.sql})",
            ("sv", "code"),
        )
        entries = Cte(
            internal("sensitive_entries"),
            f"SELECT t.t, d.code, count(*)::UBIGINT AS n FROM {rows} r "
            f"JOIN {tuples} t USING ({codes}) JOIN {dictionary.ref} d "
            f"ON r.{s} IS NOT DISTINCT FROM d.sv GROUP BY t.t, d.code",
            ("t", "code", "n"),
        )
        return [dictionary, entries], "[]::UINTEGER[][]"
    v = coded.values[m].ref
    key = value_text(f"r.{s}", sens.type)
    lost = literal(f"a value of sensitive column {sens.name!r} is missing from its hierarchy: ")
    entries = Cte(
        internal("sensitive_entries"),
        "SELECT t.t, CASE WHEN v.a0 IS NULL THEN error("
        f"{lost} || {key}) ELSE v.a0 END AS code, count(*)::UBIGINT AS n "
        f"FROM {rows} r JOIN {tuples} t USING ({codes}) "
        f"LEFT JOIN {v} v ON {key} IS NOT DISTINCT FROM v.k GROUP BY ALL",
        ("t", "code", "n"),
    )
    levels = ", ".join(f"list(a{i} ORDER BY a0)" for i in range(sq.height + 1))
    return [entries], f"(SELECT [{levels}] FROM {v})"


def _population_ctes(
    qis: list[QuasiIdentifier], pop: Table, pop_cols: list[Column], coded: Coded
) -> list[Cte]:
    """Per QI ``j`` its value → label path, and the population's paths with their counts."""
    ctes = []
    paths = []
    for j, (q, col) in enumerate(zip(qis, pop_cols, strict=True)):
        top = q.height
        v = coded.values[j].ref
        joins = [f"LEFT JOIN {v} m0 ON m0.k = h.k"]
        items = [f"coalesce(m0.a0, {NO_LABEL})"]
        for i in range(1, top + 1):
            joins.append(
                f"LEFT JOIN (SELECT DISTINCT l{i}, a{i} FROM {v} WHERE l{i} IS NOT NULL) m{i} "
                f"ON m{i}.l{i} = h.l{i}"
            )
            items.append(f"coalesce(m{i}.a{i}, {NO_LABEL})")
        none_path = ", ".join([str(NO_LABEL)] * top + ["0"])
        null_path = ", ".join(f"a{i}" for i in range(top + 1))
        ctes.append(
            Cte(
                internal(f"population_paths{j}"),
                f"SELECT h.k, [{', '.join(items)}]::UINTEGER[] AS p "
                f"FROM {coded.hierarchies[j].ref} h {' '.join(joins)} UNION ALL "
                f"SELECT NULL, coalesce((SELECT [{null_path}] FROM {v} WHERE k IS NULL), "
                f"[{none_path}])::UINTEGER[]",
                ("k", "p"),
            )
        )
        key = value_text(f"p.{ident(col.name)}", col.type)
        lost = literal(
            f"a value of column {col.name!r} of the population is missing from the hierarchy "
            f"of {q.column.name!r}: "
        )
        paths.append(f"CASE WHEN pm{j}.p IS NULL THEN error({lost} || {key}) ELSE pm{j}.p END")
    pop_joins = " ".join(
        f"LEFT JOIN {ctes[j].ref} pm{j} ON "
        f"{value_text('p.' + ident(c.name), c.type)} IS NOT DISTINCT FROM pm{j}.k"
        for j, c in enumerate(pop_cols)
    )
    ctes.append(
        Cte(
            internal("population"),
            f"SELECT flatten([{', '.join(paths)}]) AS path, count(*)::UBIGINT AS n "
            f"FROM {pop.sql} p {pop_joins} GROUP BY ALL",
            ("path", "n"),
        )
    )
    return ctes


def model_args(
    table: Table, qis: list[QuasiIdentifier], resolved: ResolvedModels | None, coded: Coded
) -> ModelArgs:
    """Plan the model arguments of the kernels over the ``coded`` parts of the plan."""
    if resolved is None:
        return ModelArgs([], dict(_NO_ARGS), {})
    m = len(qis)
    ctes: list[Cte] = []
    args = dict(_NO_ARGS)
    if resolved.sensitive is not None:
        sensitive_ctes, hierarchy = _sensitive_ctes(
            table, resolved.sensitive, resolved.hierarchy, coded, m
        )
        ctes += sensitive_ctes
        args["sensitive_hierarchy"] = hierarchy
        for name, x in zip(
            ("sensitive_tuples", "sensitive_codes", "sensitive_counts"),
            ("t::UINTEGER", "code", "n"),
            strict=True,
        ):
            args[name] = (
                f"(SELECT coalesce(list({x} ORDER BY t, code), []) FROM {sensitive_ctes[-1].ref})"
            )
    if resolved.population is not None:
        ctes += _population_ctes(qis, resolved.population, resolved.population_qis, coded)
        population = ctes[-1].ref
        args["population_paths"] = (
            f"(SELECT coalesce(flatten(list(path ORDER BY path)), []) FROM {population})"
        )
        args["population_counts"] = (
            f"(SELECT coalesce(list(n ORDER BY path), []) FROM {population})"
        )
    return ModelArgs(ctes, args, resolved.models.kernel(resolved.sensitive))
