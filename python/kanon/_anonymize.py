"""The planner of ``kanon(...)``: local recoding with the forest algorithm, as one query.

The generated SQL, step by step (all CTEs of one statement):

1. ``__kanon_h{j}``: the hierarchy of quasi-identifier ``j`` (a configured lookup table,
   or the type's default from :func:`kanon.hierarchy.default_spec`), its level-0
   value as text ``k`` and labels ``l1 … lL``.
2. ``__kanon_v{j}``: the hierarchy restricted to the values present in the data (plus a
   NULL leaf right under the root when the column holds NULLs), with dense codes:
   ``a0`` the leaf in depth-first order, ``a{l}`` the label at level ``l``.
3. ``__kanon_r``: every source row with its leaf codes and its label path.
4. ``__kanon_t``: the distinct code tuples in value order with their counts.
5. ``__kanon_run``: one call of the kernel UDF ``kanon_forest`` on the packed tuples and
   hierarchies; it returns the group of every row and the level of every group.
6. The rows, joined to their group: the kernel numbers the rows of a tuple copy by
   copy, and returns where each tuple's rows start; a tuple's only row is its copy 0,
   the rows of a tuple occurring more often are ordered by their non-QI columns (equal
   inputs give equal releases, whatever the row order). Each
   quasi-identifier becomes the label of its group's level (``'*'`` at the top),
   identifiers become ``'*'``, other columns are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from kanon._catalog import (
    INT_TYPES,
    Column,
    Table,
    UnknownTableError,
    configured_full,
    resolve_columns,
    resolve_table,
)
from kanon._models import PrivacyModels, ResolvedModels, population_table, resolve_models
from kanon._options import column_names, defaults
from kanon._roles import identifying_columns, refuse_identifying, resolve_roles
from kanon._sql import ident, literal
from kanon.exceptions import ConfigError, HierarchyError, InvalidInputError
from kanon.hierarchy import (
    ROOT,
    default_outside,
    default_range_text,
    default_select,
    default_spec,
    leaves_from,
    value_text,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    import duckdb

__all__ = [
    "AnonymizeOptions",
    "AnonymizePlan",
    "QuasiIdentifier",
    "hierarchy_cte",
    "hierarchy_of",
    "hierarchy_select",
    "plan_anonymize",
    "resolve_qis",
]

#: method → (pair cost, improvement passes). "forest": NCP pair costs, repair and
#: improvement passes (the default). "forest_paper": Aggarwal et al.'s algorithm as
#: published (level / height pair costs, FOREST, DECOMPOSE, repair pass only).
METHODS: dict[str, tuple[str, bool]] = {"forest": ("ncp", True), "forest_paper": ("height", False)}
_SHOWN = 5


#: Sweeney's historic greedy full-domain algorithms (baselines; ``kanon._historic``).
HISTORIC_METHODS = ("datafly", "mu_argus")
#: Every method of ``kanon(...)``: the forest's two variants, Mondrian, the optimal search
#: and the historic algorithms.
ALL_METHODS = (*METHODS, "mondrian", "optimal", *HISTORIC_METHODS)
#: Label modes of the local recodings (forest, Mondrian): ``'hierarchy'`` (the default
#: of the forest: the group's lowest common hierarchy node) or ``'range'`` (the group's
#: observed values); Mondrian's default publishes ranges for numbers and dates and
#: hierarchy nodes for the rest.
LABELS = ("hierarchy", "range")
#: How hard the forest's improvement passes work (``kanon-core::improve::Effort``):
#: ``'full'`` runs every pass in rounds until nothing changes, ``'fast'`` one eject, split
#: and search pass over fewer near tuples. The default depends on the table's size
#: (``kanon._local.FULL_EFFORT_ROWS``).
EFFORTS = ("full", "fast")
#: The metrics of ``method := 'optimal'`` (see ``kanon-core::lattice::Metric``).
OPTIMAL_METRICS = ("loss", "height", "nue", "nue_nonmonotonic", "dm", "dm_star", "aecs")


@dataclass(frozen=True)
class AnonymizeOptions:
    """Arguments of an anonymization besides the table: the planner's view of the options.

    Each field is the declared option of its name (``kanon._options``, where the
    options, their types, defaults and the methods they apply to are declared);
    ``models`` gathers the privacy models, and ``given`` holds every option as declared.
    A test checks that every field here is a declared option.
    """

    k: int
    qi: tuple[str, ...]
    seed: int
    method: str
    metric: str | None
    max_suppression: float
    drop_suppressed: bool
    min_level: tuple[tuple[str, int], ...]
    max_level: tuple[tuple[str, int], ...]
    models: PrivacyModels
    labels: str | None
    block_size: int | None
    effort: str | None
    identifiers: tuple[str, ...]
    sensitive: tuple[str, ...]
    insensitive: tuple[str, ...]
    keep_undeclared: bool
    #: Every declared option of the call (``kanon._options``), defaults filled in.
    given: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, k: int, qi: list[str] | None, values: Mapping[str, Any]) -> AnonymizeOptions:
        """Return the options of one call: ``values`` as completed by ``kanon._options``.

        The fields below are the planner's view of the options of the same name (lists
        as tuples, level maps as pairs). The models' ``sensitive`` may list several
        columns: all are declared sensitive, and l-diversity or t-closeness (which
        protect one) need exactly one.
        """
        values = {**defaults("kanon"), **values}
        models = PrivacyModels(**{n: values[n] for n in PrivacyModels.__dataclass_fields__})
        sensitive = column_names("sensitive", models.sensitive)
        if models.sensitive is not None:
            if models.needs_sensitive and len(sensitive) != 1:
                msg = (
                    "l-diversity and t-closeness protect one sensitive column: give "
                    f"sensitive one column, got {models.sensitive!r}"
                )
                raise InvalidInputError(msg)
            models = replace(models, sensitive=sensitive[0] if models.needs_sensitive else None)
        own = {"k", "qi", "models", "sensitive", "given"}
        planned = {f.name: _planned(values[f.name]) for f in fields(cls) if f.name not in own}
        return cls(
            k=k,
            qi=column_names("qi", qi),
            models=models,
            sensitive=sensitive,
            given=dict(values),
            **planned,
        )

    def validate(self) -> None:
        """Reject out-of-range arguments with a message naming the parameter."""
        if not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 1:
            msg = f"k must be a positive integer, got {self.k!r}"
            raise InvalidInputError(msg)
        seed = self.seed
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64:
            msg = f"seed must be an integer in [0, 2^64), got {seed!r}"
            raise InvalidInputError(msg)
        if self.method not in ALL_METHODS:
            msg = f"method must be one of {', '.join(map(repr, ALL_METHODS))}, got {self.method!r}"
            raise InvalidInputError(msg)
        s = self.max_suppression
        if isinstance(s, bool) or not isinstance(s, int | float) or not 0.0 <= s < 1.0:
            msg = f"max_suppression must be a fraction of the rows in [0, 1), got {s!r}"
            raise InvalidInputError(msg)
        self.models.validate()
        self._validate_local()
        if self.method == "optimal":
            if self.metric is not None and self.metric not in OPTIMAL_METRICS:
                msg = (
                    f"metric must be one of {', '.join(map(repr, OPTIMAL_METRICS))}, "
                    f"got {self.metric!r}"
                )
                raise InvalidInputError(msg)
            return
        if self.method in HISTORIC_METHODS:
            self._validate_historic()
            return
        models_unset = not self.models.any()
        if self.method == "mondrian":
            # Mondrian cuts only where both sides satisfy l-diversity / t-closeness.
            models_unset = self.models.population is None
        given = [
            name
            for name, unset in (
                ("metric", self.metric is None),
                ("max_suppression", s == 0.0),
                ("drop_suppressed", not self.drop_suppressed),
                ("min_level", not self.min_level),
                ("max_level", not self.max_level),
                ("privacy models (l, t, population)", models_unset),
            )
            if not unset
        ]
        if given:
            msg = (
                f"{', '.join(given)} do not apply to method {self.method!r}, which never "
                "suppresses rows and minimizes its own cost (they apply to method 'optimal'; "
                "max_suppression and drop_suppressed also to 'datafly' and 'mu_argus')"
            )
            raise InvalidInputError(msg)

    def _validate_local(self) -> None:
        """``labels``, ``block_size`` and ``effort`` belong to the local recodings."""
        if self.effort is not None:
            if self.effort not in EFFORTS:
                msg = f"effort must be 'full' or 'fast', got {self.effort!r}"
                raise InvalidInputError(msg)
            if self.method != "forest":
                msg = (
                    f"effort applies to method 'forest' (its improvement passes), not to "
                    f"{self.method!r}"
                )
                raise InvalidInputError(msg)
        local = self.method in (*METHODS, "mondrian")
        if self.labels is not None:
            if self.labels not in LABELS:
                msg = f"labels must be 'hierarchy' or 'range', got {self.labels!r}"
                raise InvalidInputError(msg)
            if not local:
                msg = (
                    f"labels apply to the local recodings 'forest', 'forest_paper' and "
                    f"'mondrian', not to method {self.method!r} (its labels are hierarchy "
                    "nodes at one level per column)"
                )
                raise InvalidInputError(msg)
        b = self.block_size
        if b is not None:
            if isinstance(b, bool) or not isinstance(b, int) or b < 1:
                msg = f"block_size must be a positive number of rows, got {b!r}"
                raise InvalidInputError(msg)
            if self.method not in METHODS:
                msg = (
                    f"block_size applies to methods 'forest' and 'forest_paper', not to "
                    f"{self.method!r}"
                )
                raise InvalidInputError(msg)

    def _validate_historic(self) -> None:
        """Datafly and μ-Argus choose their own levels, by their own rules, for k only."""
        given = [
            name
            for name, unset in (
                ("metric", self.metric is None),
                ("max_suppression", self.method != "mu_argus" or self.max_suppression == 0.0),
                ("min_level", not self.min_level),
                ("max_level", not self.max_level),
                ("privacy models (l, t, population)", not self.models.any()),
            )
            if not unset
        ]
        if given:
            msg = (
                f"method {self.method!r} takes no {', '.join(given)}: it chooses its levels "
                "by Sweeney's greedy rules for k-anonymity alone"
            )
            if "max_suppression" in given:
                msg += " and suppresses what its rules leave below k (no limit)"
            raise InvalidInputError(msg)


def _planned(value: Any) -> Any:
    """An option's value as the planner holds it: lists as tuples, maps as pairs."""
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, dict):
        return tuple(value.items())
    return value


@dataclass(frozen=True)
class QuasiIdentifier:
    """A quasi-identifier and the hierarchy it is generalized with."""

    column: Column
    hierarchy: str | None  # configured lookup table, None for the type's default
    select: str  # SQL selecting the hierarchy (columns by position)
    labels: tuple[str, ...]  # the hierarchy's column names, level 0 first
    level0_type: str  # type of the hierarchy's level-0 column
    weight: float
    default: dict[str, Any] | None = None  # the type default's spec (no hierarchy table)

    @property
    def height(self) -> int:
        """Levels above the leaves."""
        return len(self.labels) - 1


@dataclass(frozen=True)
class AnonymizePlan:
    """The SQL of an anonymization and what it resolved."""

    sql: str
    assignment_sql: str  # every source column, "__kanon_grp" and "__kanon_lvl" per row
    table: Table
    qis: tuple[QuasiIdentifier, ...]
    identifiers: tuple[str, ...]
    rows: int
    models: ResolvedModels | None = None  # the privacy models besides k, resolved


def hierarchy_of(
    con: duckdb.DuckDBPyConnection,
    table: Table,
    col: Column,
    name: str | None,
    weight: float,
    domain: str | None = None,
) -> QuasiIdentifier:
    """``col``'s hierarchy: the configured table ``name``, else the type's default.

    A default hierarchy covers the values of ``domain`` (SQL of rows holding the column,
    e.g. the table and a population together), by default the table's.
    """
    if name is None:
        source = table.sql if domain is None else domain
        spec = default_spec(con, source, col.name, col.type)
        select = default_select(leaves_from(source, col.name, col.type), spec, col.type)
        described = con.execute(f"DESCRIBE {select}").fetchall()
        labels = tuple(str(r[0]) for r in described)
        level0 = str(described[0][1])
        return QuasiIdentifier(col, None, select, labels, level0, weight, spec)
    try:
        h = resolve_table(con, name)
    except UnknownTableError:
        msg = f"hierarchy table {name!r} of column {col.name!r} does not exist"
        raise UnknownTableError(msg) from None
    if len(h.columns) < 2:
        msg = (
            f"hierarchy {name!r} of column {col.name!r} has {len(h.columns)} column; "
            "it needs at least 2 (the values and a root)"
        )
        raise HierarchyError(msg)
    labels = tuple(c.name for c in h.columns)
    select = f"SELECT * FROM {h.sql}"
    return QuasiIdentifier(col, name, select, labels, h.columns[0].type, weight)


def hierarchy_select(q: QuasiIdentifier) -> str:
    """The hierarchy with its level-0 value as text ``k`` and labels ``l1 … lL``."""
    cols = [ident(c) for c in q.labels]
    exprs = [f"{value_text(cols[0], q.level0_type)} AS k"]
    exprs += [f"CAST({c} AS VARCHAR) AS l{i}" for i, c in enumerate(cols[1:], start=1)]
    return f"SELECT {', '.join(exprs)} FROM ({q.select})"


def hierarchy_cte(j: int, q: QuasiIdentifier) -> str:
    """CTE ``__kanon_h{j}``: :func:`hierarchy_select` of quasi-identifier ``j``."""
    return f'"__kanon_h{j}" AS ({hierarchy_select(q)})'


def _check_hierarchies(
    con: duckdb.DuckDBPyConnection,
    table: Table,
    qis: list[QuasiIdentifier],
    ctes: list[str],
    *,
    values: bool = True,
) -> None:
    """One query finding the first problem of any configured hierarchy, named in full.

    With ``values`` the table's values are checked against their hierarchies too (a pass
    over the table); without, only the hierarchy tables, for SQL whose coded rows stop
    at run time on a value without a leaf (:func:`coded_ctes`).
    """
    probes: list[str] = []
    for j, q in enumerate(qis):
        if q.hierarchy is None:
            continue
        h = f'"__kanon_h{j}"'
        c = ident(q.column.name)
        top = q.height
        if values:
            probes.append(
                # Distinct values first: only they are cast to text.
                f"(SELECT 1 AS kind, {j} AS j, v, NULL AS w FROM "
                f"(SELECT {value_text('x', q.column.type)} AS v FROM "
                f"(SELECT DISTINCT {c} AS x FROM {table.sql} WHERE {c} IS NOT NULL) "
                f"EXCEPT SELECT k FROM {h}) ORDER BY v LIMIT {_SHOWN})"
            )
        probes.append(
            f"(SELECT 2 AS kind, {j} AS j, k AS v, NULL AS w FROM {h} GROUP BY k "
            "HAVING count(*) > 1 "
            f"ORDER BY k LIMIT {_SHOWN})"
        )
        nulls = " OR ".join(["k IS NULL"] + [f"l{i} IS NULL" for i in range(1, top + 1)])
        probes.append(f"(SELECT 3, {j}, k, NULL FROM {h} WHERE {nulls} LIMIT 1)")
        for i in range(top):
            lo = "k" if i == 0 else f"l{i}"
            probes.append(
                f"(SELECT 4, {j}, {lo}, {i} FROM {h} GROUP BY {lo} "
                f"HAVING count(DISTINCT l{i + 1}) > 1 ORDER BY {lo} LIMIT 1)"
            )
        probes.append(
            f"(SELECT 5, {j}, NULL, count(DISTINCT l{top}) FROM {h} "
            f"HAVING count(DISTINCT l{top}) <> 1)"
        )
    if not probes:
        return
    rows = con.execute(
        "WITH " + ",\n".join(ctes) + "\nSELECT * FROM (" + " UNION ALL ".join(probes) + ") "
        "ORDER BY kind, j, v"
    ).fetchall()
    if not rows:
        return
    kind, j, _, extra = rows[0]
    q = qis[j]
    where = f"hierarchy {q.hierarchy!r} of column {q.column.name!r}"
    named = [v for kd, jj, v, _ in rows if kd == kind and jj == j]
    shown = ", ".join(repr(v) for v in named)
    if kind == 1:
        msg = (
            f"{where} does not cover value(s) {shown} of table {table.name!r}; add them to "
            "the hierarchy"
        )
    elif kind == 2:
        msg = f"{where} lists level-0 value(s) more than once: {shown}"
    elif kind == 3:
        msg = f"{where} has a NULL label (row of value {named[0]!r})"
    elif kind == 4:
        msg = (
            f"{where} is not nested: label {named[0]!r} at level {extra} has more than one "
            f"parent at level {int(extra) + 1}"
        )
    else:
        msg = f"{where} has {extra} roots at its top level; it needs exactly one"
    raise HierarchyError(msg)


def resolve_qis(
    con: duckdb.DuckDBPyConnection,
    table: Table,
    qi: tuple[str, ...],
    config: list[tuple[str, str, str | None, float]],
    population: Table | None = None,
) -> list[QuasiIdentifier]:
    """The QIs given (else those configured), each with its hierarchy and weight.

    With a ``population``, default hierarchies cover its values too.
    """
    names = list(qi) or [c for c, role, _, _ in config if role == "qi"]
    if not names:
        msg = (
            f"no quasi-identifiers for table {table.name!r}: pass qi := [...] or configure "
            "them with kanon.configure(...) / INSERT INTO kanon_columns"
        )
        raise ConfigError(msg)
    settings = {c.lower(): (h, w) for c, _, h, w in config}
    out = []
    for col in resolve_columns(table, names, "qi"):
        domain = None
        if population is not None:
            (pop_col,) = resolve_columns(population, [col.name], "population")
            domain = (
                f"(SELECT {ident(col.name)} FROM {table.sql} UNION ALL "
                f"SELECT {ident(pop_col.name)} FROM {population.sql})"
            )
        hierarchy, weight = settings.get(col.name.lower(), (None, 1.0))
        out.append(hierarchy_of(con, table, col, hierarchy, weight, domain))
    return out


def plan_anonymize(
    con: duckdb.DuckDBPyConnection,
    tbl: str,
    options: AnonymizeOptions,
    *,
    check_values: bool = True,
    check_undeclared: bool = True,
) -> AnonymizePlan:
    """Return the SQL of ``kanon(tbl, k, ...)``: the anonymized rows of ``tbl``.

    Reads the catalog (table, configuration, hierarchy tables), checks the configured
    hierarchies, and counts the rows (``k`` above it is an error). With
    ``check_values`` the table's values are checked against their hierarchies now, and
    all missing ones named; without (the SQL macros, which DuckDB binds twice), the
    returned SQL names the first it meets when it runs, and stops. With
    ``check_undeclared`` (not for searches, which release no rows) an undeclared column
    whose values single out rows stops the plan, unless ``options.keep_undeclared``.
    """
    options.validate()
    table = resolve_table(con, tbl)
    config = configured_full(con, table)
    sensitive = options.sensitive
    model_sensitive = options.models.sensitive
    if isinstance(model_sensitive, str) and model_sensitive not in sensitive:
        sensitive = (*sensitive, model_sensitive)
    roles = resolve_roles(
        table,
        [(c, role) for c, role, _, _ in config],
        qi=options.qi,
        identifiers=options.identifiers,
        sensitive=sensitive,
        insensitive=options.insensitive,
    )
    population = population_table(con, table, options.models)
    qis = resolve_qis(con, table, roles.qi, config, population)
    models = resolve_models(con, table, qis, options.models, config, population)
    identifiers = roles.identifiers
    rows = int(con.execute(f"SELECT count(*) FROM {table.sql}").fetchall()[0][0])
    if options.k > rows:
        msg = f"k = {options.k} exceeds the number of rows of table {table.name!r} ({rows})"
        raise InvalidInputError(msg)
    if check_undeclared and not options.keep_undeclared:
        # Without check_values (the SQL macros, bound more than once): memoized.
        found = identifying_columns(con, table, roles.undeclared, memo=not check_values)
        refuse_identifying(table, found)
    coded = qis if models is None or models.hierarchy is None else [*qis, models.hierarchy]
    ctes = [hierarchy_cte(j, q) for j, q in enumerate(coded)]
    _check_hierarchies(con, table, coded, ctes, values=check_values)
    if options.method == "optimal":
        # Imported here: the optimal planner builds on this module's CTEs.
        from kanon._optimal import optimal_sql

        sql, assignment = optimal_sql(table, qis, identifiers, options, rows, ctes, models)
    elif options.method in HISTORIC_METHODS:
        # Imported here: the historic planner builds on this module's CTEs.
        from kanon._historic import historic_sql

        sql, assignment = historic_sql(table, qis, identifiers, options, rows, ctes)
    elif options.method == "mondrian":
        # Imported here: the local planner builds on this module's CTEs.
        from kanon._local import mondrian_sql

        sql, assignment = mondrian_sql(table, qis, identifiers, options, rows, ctes, models)
    else:
        from kanon._local import forest_sql

        sql, assignment = forest_sql(table, qis, identifiers, options, rows, ctes)
    return AnonymizePlan(sql, assignment, table, tuple(qis), identifiers, rows, models)


#: Types whose values are equal exactly when their texts are: the rows of these
#: columns find their leaves by value, without casting every row to text.
_TYPED_KEYS = INT_TYPES | {"UHUGEINT", "VARCHAR", "BOOLEAN", "DATE", "TIME", "TIMESTAMP"}


def keyed_by_value(q: QuasiIdentifier) -> bool:
    """Whether the rows of QI ``q`` find their leaves by value (see :func:`leaf_key`)."""
    typ = q.column.type
    return typ in _TYPED_KEYS or typ.startswith(("DECIMAL", "TIMESTAMP_"))


def leaf_key(expr: str, q: QuasiIdentifier) -> str:
    """SQL of the key a value of QI ``q`` finds its leaf by (``vk`` of :func:`coded_hierarchy`).

    The value itself where equal values have equal texts (integers, decimals, text,
    booleans, dates and timestamps without time zone), else its hierarchy text
    (floating point, with -0.0 read as 0.0; time zones, intervals and other types).
    """
    return expr if keyed_by_value(q) else value_text(expr, q.column.type)


def coded_hierarchy(hierarchy: str, q: QuasiIdentifier, src: str) -> str:
    """SQL of a hierarchy restricted to the values of ``src`` present, coded.

    ``hierarchy`` names the CTE of :func:`hierarchy_select`; the result has ``vk`` (the
    value's :func:`leaf_key`), ``k``, the labels ``l1 … lL``, ``a0`` the leaf in
    depth-first order and ``a{l}`` the label at level ``l`` (dense), plus a NULL leaf
    right under the root when the column holds NULLs (``vk`` and ``k`` NULL).
    """
    top = q.height
    c = ident(q.column.name)
    h = ident(hierarchy)
    path = ", ".join([f"l{i}" for i in range(top, 0, -1)] + ["k"])
    levels = ", ".join(
        f"(dense_rank() OVER (ORDER BY l{i}) - 1)::UINTEGER AS a{i}" for i in range(1, top + 1)
    )
    nulls = ", ".join(["NULL"] * (top + 1))  # vk, k and the labels below the root
    labels = ", ".join(f"l{i}" for i in range(1, top + 1))
    key = leaf_key(c, q)
    on = value_text("d.vk", q.column.type) if keyed_by_value(q) else "d.vk"
    # The distinct keys first: only they are cast to text.
    return (
        f"SELECT vk, k, {labels}, "
        f"(dense_rank() OVER (ORDER BY {path}) - 1)::UINTEGER AS a0, {levels} FROM ("
        f"SELECT d.vk, h.* FROM (SELECT DISTINCT {key} AS vk FROM {src} WHERE {c} IS NOT NULL) "
        f"d JOIN {h} h ON {on} = h.k "
        f"UNION ALL SELECT {nulls}, (SELECT max(l{top}) FROM {h}) "
        f"WHERE EXISTS (SELECT 1 FROM {src} WHERE {c} IS NULL))"
    )


def coded_ctes(
    table: Table,
    qis: list[QuasiIdentifier],
    ctes: list[str],
    extra: QuasiIdentifier | None = None,
) -> list[str]:
    """Return ``ctes`` (the ``__kanon_h{j}``) with the coded CTEs appended.

    ``__kanon_v{j}``: the hierarchies over the present values, coded (``extra``, the
    sensitive column's hierarchy, as ``__kanon_v{m}``); ``__kanon_r``: every row with
    its leaf codes ``__kanon_c{j}``; ``__kanon_t``: the distinct code tuples ``t`` in
    value order with their counts ``n``.
    """
    m = len(qis)
    ctes = list(ctes)
    src = table.sql
    for j, q in enumerate(qis if extra is None else [*qis, extra]):
        ctes.append(f'"__kanon_v{j}" AS ({coded_hierarchy(f"__kanon_h{j}", q, src)})')
    codes = [f'"__kanon_c{j}"' for j in range(m)]
    code_list = code_columns(m)
    selects = ["s.*"]
    joins = []
    for j, q in enumerate(qis):
        key = value_text(f"s.{ident(q.column.name)}", q.column.type)
        # The table changed since planning (or the SQL is rerun later): a value without
        # a leaf, or outside the range a default interval hierarchy was planned for,
        # stops the query rather than losing its row or getting a wrong label.
        guard = f"WHEN v{j}.a0 IS NULL THEN error({_missing(table, q, key)}) "
        outside = default_outside(f"s.{ident(q.column.name)}", q.default, q.column.type)
        if outside is not None and q.default is not None:
            text = literal(
                f"a value of column {q.column.name!r} is outside the range "
                f"{default_range_text(q.default)} its interval hierarchy was planned for; "
                "plan the query again: "
            )
            guard += f"WHEN {outside} THEN error({text} || {key}) "
        selects.append(f"CASE {guard}ELSE v{j}.a0 END AS {codes[j]}")
        joins.append(
            f'LEFT JOIN "__kanon_v{j}" v{j} '
            f"ON {leaf_key(f's.{ident(q.column.name)}', q)} IS NOT DISTINCT FROM v{j}.vk"
        )
    ctes.append(f'"__kanon_r" AS (SELECT {", ".join(selects)} FROM {src} s {" ".join(joins)})')
    ctes.append(
        f'"__kanon_t" AS (SELECT {code_list}, count(*)::UBIGINT AS n, '
        f"(row_number() OVER (ORDER BY {code_list}) - 1)::UBIGINT AS t "
        f'FROM "__kanon_r" GROUP BY {code_list})'
    )
    return ctes


def _missing(table: Table, q: QuasiIdentifier, key: str) -> str:
    """SQL of the message naming value ``key`` of ``q`` that has no leaf."""
    if q.hierarchy is None:
        head = (
            f"column {q.column.name!r} of table {table.name!r} has a value its default "
            "hierarchy was not planned for (the table changed since planning; plan the "
            "query again): "
        )
        return f"{literal(head)} || {key}"
    head = f"hierarchy {q.hierarchy!r} of column {q.column.name!r} does not cover value '"
    tail = f"' of table {table.name!r}; add it to the hierarchy"
    return f"{literal(head)} || {key} || {literal(tail)}"


def hierarchy_lists(qis: list[QuasiIdentifier]) -> str:
    """SQL of a ``UINTEGER[][][]``: per QI, per level, the label code of every leaf."""
    return ", ".join(
        "(SELECT ["
        + ", ".join(f"list(a{i} ORDER BY a0)" for i in range(q.height + 1))
        + f'] FROM "__kanon_v{j}")'
        for j, q in enumerate(qis)
    )


def code_columns(m: int) -> str:
    """The leaf-code columns ``__kanon_c{j}`` of ``m`` QIs, as an SQL list."""
    return ", ".join(f'"__kanon_c{j}"' for j in range(m))


def tuple_lists(m: int) -> tuple[str, str]:
    """SQL of the packed tuples and of their counts.

    The tuples are one ``UINTEGER[]`` (``m`` codes each, in order ``t``), the counts a
    ``UBIGINT[]``.
    """
    return (
        f'(SELECT flatten(list([{code_columns(m)}] ORDER BY t)) FROM "__kanon_t")',
        '(SELECT list(n ORDER BY t) FROM "__kanon_t")',
    )


def label_at(j: int, q: QuasiIdentifier, level: str) -> str:
    """Return SQL of QI ``j``'s label at ``level`` (an SQL expression).

    The label is read from the coded hierarchy ``v{j}`` joined on the row's leaf, by a
    ``CASE`` on the level (indexing a list of every level's label built that list for
    every row).
    """
    labels = [f"v{j}.k"] + [f"v{j}.l{i}" for i in range(1, q.height + 1)]
    return f"CASE {level} " + " ".join(f"WHEN {i} THEN {x}" for i, x in enumerate(labels)) + " END"


def release_columns(
    table: Table,
    qis: list[QuasiIdentifier] | tuple[QuasiIdentifier, ...],
    identifiers: tuple[str, ...],
    row: str,
    generalized: Callable[[int], str],
) -> list[str]:
    """Return the SELECT list of a release, the source's columns in order.

    QI ``j`` is ``generalized(j)``, identifiers are ``'*'``, the other columns come
    from the alias ``row``.
    """
    position = {q.column.name: j for j, q in enumerate(qis)}
    out = []
    for col in table.columns:
        name = ident(col.name)
        if col.name in position:
            out.append(f"{generalized(position[col.name])} AS {name}")
        elif col.name in identifiers:
            out.append(f"{literal(ROOT)} AS {name}")
        else:
            out.append(f"{row}.{name}")
    return out
