"""Every option of kanon's calls, declared once.

Each option is one line of a ``TypedDict`` below: its name, its Python type, and an
:class:`Opt` with its SQL type, default, the methods it applies to and a one-line doc.
From these come the SQL macros' named parameters (:func:`macro_sql`), the checks of the
JSON the macros hand their planners (:func:`parse`), the Python API's keywords
(``**options: Unpack[AnonymizeKeywords]``, so mypy and editors see them), the command
line's flags (:func:`add_flags`) and docs/sql.md's parameter table (:func:`markdown_table`).
"""

from __future__ import annotations

import copy
import functools
import json
import math
import types
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict, Union

from kanon.exceptions import InvalidInputError

if typing.TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping

__all__ = [
    "L_VARIANTS",
    "MACROS",
    "T_DISTANCES",
    "AnonymizeKeywords",
    "Macro",
    "Opt",
    "Param",
    "SearchKeywords",
    "VerifyKeywords",
    "add_flags",
    "column_names",
    "defaults",
    "flag_values",
    "keywords",
    "macro_sql",
    "markdown_table",
    "parse",
]

#: What each kind of value accepts, as said in errors.
_ACCEPTS = {
    "name": "a name (a string)",
    "text": "a string",
    "int": "a whole number",
    "number": "a number",
    "bool": "TRUE or FALSE",
    "names": "a list of column names, e.g. ['age', 'zip']",
    "levels": "a map of column name to level, e.g. MAP {'age': 1}",
    "priorities": "a map of column name to priority, e.g. MAP {'age': 1, 'zip': 3}",
    "name_or_names": "a column name or a list of them",
    "items": "a list of items, e.g. [3, 4] or ['milk']",
    "policy": "a stored policy's name or its rules, e.g. {'k': 5, 'l': 2}",
}


@dataclass(frozen=True)
class Opt:
    """What an option is besides its name and Python type.

    Attributes:
        sql: the SQL type of the macro parameter (its NULL default is cast to it).
        default: the value when the option is not given or NULL.
        doc: one line for the parameter table and the command line's help.
        kind: the kind of value, when the Python type does not say it (``"name"``: a
            non-empty string naming a table or column).
        cli: whether the command line has a flag for it.
        scoped: it applies only to the methods that name it among their options
            (``kanon.plan.release.method.Method.options``); else to every method.
        choices: the values it takes, when it takes a few words.
        at_least: the least value it takes; below: the value it stays under; at_most:
            the largest value it takes.
    """

    sql: str
    default: Any = None
    doc: str = ""
    kind: str | None = None
    cli: bool = True
    scoped: bool = False
    choices: tuple[str, ...] = ()
    at_least: float | None = None
    below: float | None = None
    at_most: float | None = None


#: The variants of l-diversity and the ground distances of t-closeness.
L_VARIANTS = ("distinct", "entropy", "recursive")
T_DISTANCES = ("equal", "ordered", "hierarchical")


class SearchKeywords(TypedDict, total=False):
    """The keywords of ``kanon.search`` (SQL ``kanon_search``), also those of ``kanon``."""

    method: Annotated[
        str,
        Opt(
            "VARCHAR",
            "forest",
            doc="a method of docs/methods.md, by name (default 'forest'; kanon_search: a "
            "full-domain one, default 'optimal')",
        ),
    ]
    metric: Annotated[
        str | None,
        Opt(
            "VARCHAR",
            doc="what the optimum minimizes: 'loss' (default), 'height', 'nue', "
            "'nue_nonmonotonic', 'dm', 'dm_star' or 'aecs'",
            scoped=True,
            choices=("loss", "height", "nue", "nue_nonmonotonic", "dm", "dm_star", "aecs"),
        ),
    ]
    max_suppression: Annotated[
        float,
        Opt(
            "DOUBLE",
            0.0,
            "the fraction of rows whose QIs may become '*' (datafly: may stay below k; "
            "0 is Sweeney's rule of k rows)",
            scoped=True,
            at_least=0.0,
            below=1.0,
        ),
    ]
    drop_suppressed: Annotated[
        bool,
        Opt(
            "BOOLEAN",
            False,
            "leave the suppressed rows out of the release",
            scoped=True,
        ),
    ]
    min_level: Annotated[
        dict[str, int] | None,
        Opt("MAP(VARCHAR, INTEGER)", {}, "the lowest level allowed, per QI", scoped=True),
    ]
    max_level: Annotated[
        dict[str, int] | None,
        Opt("MAP(VARCHAR, INTEGER)", {}, "the highest level allowed, per QI", scoped=True),
    ]
    sensitive: Annotated[
        str | list[str] | None,
        Opt(
            "VARCHAR",
            doc="sensitive column(s), released unchanged (default: the configured ones); "
            "l and t protect one",
        ),
    ]
    l: Annotated[  # noqa: E741 (the model's name)
        float | None,
        Opt("DOUBLE", scoped=True, doc="l-diversity: well-represented sensitive values"),
    ]
    l_diversity: Annotated[
        str | None,
        Opt(
            "VARCHAR",
            scoped=True,
            doc="'distinct' (default), 'entropy' or 'recursive' (with c)",
            choices=L_VARIANTS,
        ),
    ]
    c: Annotated[
        float | None,
        Opt("DOUBLE", scoped=True, doc="the c of recursive (c,l)-diversity"),
    ]
    t: Annotated[
        float | None,
        Opt("DOUBLE", scoped=True, doc="t-closeness: the largest distance allowed"),
    ]
    t_distance: Annotated[
        str | None,
        Opt(
            "VARCHAR",
            scoped=True,
            doc="'equal', 'ordered' or 'hierarchical' (default: ordered for numbers and "
            "dates, else equal)",
            choices=T_DISTANCES,
        ),
    ]
    population: Annotated[
        str | None,
        Opt(
            "VARCHAR",
            scoped=True,
            doc="δ-presence: the table the release is drawn from",
            kind="name",
            cli=False,
        ),
    ]
    delta_min: Annotated[
        float | None,
        Opt("DOUBLE", scoped=True, doc="δ-presence: the least share of population"),
    ]
    delta_max: Annotated[
        float | None,
        Opt("DOUBLE", scoped=True, doc="δ-presence: the largest share of population"),
    ]
    alpha: Annotated[
        float | None,
        Opt(
            "DOUBLE",
            scoped=True,
            doc="(α,k)-anonymity: the largest share of a class's rows one sensitive value may hold",
            at_least=0.0,
            at_most=1.0,
        ),
    ]


class AnonymizeKeywords(SearchKeywords, total=False):
    """The keywords of ``kanon.anonymize`` and ``kanon.explain`` (SQL ``kanon``)."""

    seed: Annotated[
        int,
        Opt(
            "UBIGINT",
            0,
            "0 visits the tuples in value order; another value draws another, equally "
            "valid release",
            scoped=True,
            at_least=0,
            below=2**64,
        ),
    ]
    labels: Annotated[
        str | None,
        Opt(
            "VARCHAR",
            doc="'hierarchy' (hierarchy nodes) or 'range' (the group's observed values)",
            scoped=True,
            choices=("hierarchy", "range"),
        ),
    ]
    block_size: Annotated[
        int | None,
        Opt(
            "BIGINT",
            scoped=True,
            at_least=1,
            doc=(
                "rows per block (default 50,000; with labels 'range' 5,000, or 2,000 with "
                "effort 'fast'); blocks the exact search cannot prune are cut smaller"
            ),
        ),
    ]
    effort: Annotated[
        str | None,
        Opt(
            "VARCHAR",
            doc="'full' or 'fast' improvement passes (default: full up to 262,144 rows)",
            scoped=True,
            choices=("full", "fast"),
        ),
    ]
    priorities: Annotated[
        dict[str, int] | None,
        Opt(
            "MAP(VARCHAR, INTEGER)",
            {},
            scoped=True,
            doc="per QI a whole number >= 1, lower = more important, ties allowed (default: "
            "the configured ones); forest and mondrian weigh QIs by them",
            kind="priorities",
        ),
    ]
    identifiers: Annotated[
        list[str] | None,
        Opt("VARCHAR[]", [], doc="direct identifiers, released as '*'"),
    ]
    insensitive: Annotated[
        list[str] | None,
        Opt("VARCHAR[]", [], doc="columns released unchanged"),
    ]
    keep_undeclared: Annotated[
        bool,
        Opt(
            "BOOLEAN",
            False,
            doc=(
                "release columns without a role unchanged even when they carry the "
                "quasi-identifiers"
            ),
        ),
    ]


class CheckKeywords(TypedDict, total=False):
    """The keywords of SQL ``kanon_check``."""

    sensitive: Annotated[
        str | None,
        Opt("VARCHAR", doc="the sensitive column of l and t", kind="name"),
    ]
    population: Annotated[
        str | None,
        Opt("VARCHAR", doc="the population table of journalist risk", kind="name", cli=False),
    ]
    t_distance: Annotated[
        str | None,
        Opt(
            "VARCHAR",
            doc="'equal', 'ordered' (default: by type) or 'hierarchical'",
            choices=T_DISTANCES,
        ),
    ]
    recursive_l: Annotated[int | None, Opt("BIGINT", doc="the l of recursive (c,l)-diversity")]
    recursive_c: Annotated[float | None, Opt("DOUBLE", doc="the c of recursive (c,l)-diversity")]
    risk_threshold: Annotated[
        float, Opt("DOUBLE", 0.2, doc="a row is at risk above this re-identification chance")
    ]
    identifiers: Annotated[list[str] | None, Opt("VARCHAR[]", doc="declared identifiers")]
    insensitive: Annotated[list[str] | None, Opt("VARCHAR[]", doc="declared insensitive")]


class MetricsKeywords(TypedDict, total=False):
    """The keywords of SQL ``kanon_metrics``."""

    k: Annotated[int | None, Opt("BIGINT", doc="the k of the release (default: its least)")]


class VerifyKeywords(TypedDict, total=False):
    """The keywords of SQL ``kanon_verify``."""

    policy: Annotated[
        str | dict[str, Any] | None,
        Opt(
            "VARCHAR",
            doc="the policy: a name in kanon_policies, or its rules as a struct",
            kind="policy",
            cli=False,
        ),
    ]
    sensitive: Annotated[
        str | list[str] | None,
        Opt("VARCHAR", doc="the sensitive column(s) of l and t (default: the configured ones)"),
    ]


class HkpKeywords(TypedDict, total=False):
    """The keywords of SQL ``kanon_hkp`` and ``kanon_hkp_report``."""

    private: Annotated[
        list[str | float] | None, Opt("VARCHAR[]", doc="the private items", kind="items")
    ]
    roles: Annotated[str | None, Opt("VARCHAR", doc="a table of item roles", kind="name")]
    public_fraction: Annotated[float | None, Opt("DOUBLE", doc="share of items public")]
    seed: Annotated[int, Opt("UBIGINT", 0, doc="the seed of the random roles")]
    method: Annotated[str, Opt("VARCHAR", "mmil", doc="'mmil' or 'greedy'")]
    min_support: Annotated[float, Opt("DOUBLE", 0.0, doc="items below it are dropped")]
    items: Annotated[str | None, Opt("VARCHAR", doc="a list column of items", kind="name")]
    tid: Annotated[str | None, Opt("VARCHAR", doc="transaction id column", kind="name")]
    item: Annotated[str | None, Opt("VARCHAR", doc="item column", kind="name")]
    max_itemsets: Annotated[
        int, Opt("BIGINT", 10_000_000, doc="the most itemsets the search may count")
    ]


class NoKeywords(TypedDict, total=False):
    """No keywords besides the leading parameters."""


@dataclass(frozen=True)
class Param:
    """A parameter declared by itself: a macro's leading parameters and ``qi``."""

    name: str
    kind: str
    sql: str | None = None  # None: positional, required
    default: Any = None


_QI = Param("qi", "names", "VARCHAR[]")


@dataclass(frozen=True)
class Macro:
    """A table macro of kanon's SQL: its parameters and the planner UDF it calls."""

    name: str
    planner: str
    leading: tuple[Param, ...]
    keywords: type
    defaults: Mapping[str, Any] = field(default_factory=dict)

    def options(self) -> dict[str, tuple[str, Opt]]:
        """Every keyword: name -> (kind, declaration), with this macro's defaults."""
        return _declared(self.keywords, tuple(self.defaults.items()))

    def kinds(self) -> dict[str, str]:
        """Every parameter and the kind of value it takes."""
        return {p.name: p.kind for p in self.leading} | {
            name: kind for name, (kind, _) in self.options().items()
        }


@functools.cache
def _declared(keywords: type, defaults: tuple[tuple[str, Any], ...]) -> dict[str, tuple[str, Opt]]:
    """The options of a keywords TypedDict (read once: planners parse on every bind)."""
    out: dict[str, tuple[str, Opt]] = {}
    overrides = dict(defaults)
    for name, hint in typing.get_type_hints(keywords, include_extras=True).items():
        python_type, opt = typing.get_args(hint)
        if name in overrides:
            opt = Opt(**{**opt.__dict__, "default": overrides[name]})
        out[name] = (opt.kind or _kind(python_type), opt)
    return out


def _kind(python_type: Any) -> str:
    """The kind of values a Python type stands for."""
    args = [a for a in typing.get_args(python_type) if a is not type(None)]
    if typing.get_origin(python_type) in (Union, types.UnionType):
        if len(args) == 1:
            return _kind(args[0])
        return "name_or_names"
    origin = typing.get_origin(python_type)
    if origin is list:
        return "names" if args == [str] else "items"
    if origin is dict:
        return "levels"
    return {bool: "bool", int: "int", float: "number", str: "text"}[python_type]


_TBL = Param("tbl", "name")
_K = Param("k", "int")
#: Every table macro, in the order install creates them.
MACROS: dict[str, Macro] = {
    m.name: m
    for m in (
        Macro("kanon_check", "kanon_plan_check", (_TBL, _QI), CheckKeywords),
        Macro("kanon_classes", "kanon_plan_classes", (_TBL, _QI), NoKeywords),
        Macro("kanon", "kanon_plan_anonymize", (_TBL, _K, _QI), AnonymizeKeywords),
        Macro(
            "kanon_metrics",
            "kanon_plan_metrics",
            (Param("original", "name"), Param("released", "name"), _QI),
            MetricsKeywords,
        ),
        Macro(
            "kanon_verify",
            "kanon_plan_verify",
            (Param("source", "name"), Param("release", "name"), _QI),
            VerifyKeywords,
        ),
        Macro(
            "kanon_search",
            "kanon_plan_search",
            (_TBL, _K, _QI),
            SearchKeywords,
            {"method": "optimal"},
        ),
        *(
            Macro(
                name,
                planner,
                (_TBL, Param("h", "number"), _K, Param("p", "int")),
                HkpKeywords,
            )
            for name, planner in (
                ("kanon_hkp", "kanon_plan_hkp"),
                ("kanon_hkp_report", "kanon_plan_hkp_report"),
            )
        ),
    )
}


#: The field of a macro's JSON that holds the caller's scope (see ``kanon.plan.catalog.Scope``).
SCOPE_FIELD = "__kanon_scope"


def macro_sql(macro: Macro) -> str:
    """``CREATE OR REPLACE TEMP MACRO`` of ``macro``: its parameters packed as one JSON.

    Every named parameter defaults to NULL, which stands for its declared default: the
    planner receives ``to_json`` of all of them and checks and completes them by name.
    """
    named = {p.name: p.sql for p in macro.leading if p.sql is not None}
    named |= {name: opt.sql for name, (_, opt) in macro.options().items()}
    positional = [p.name for p in macro.leading if p.sql is None]
    params = [*positional, *(f"{n} := CAST(NULL AS {sql})" for n, sql in named.items())]
    fields = ", ".join(f"'{n}': {n}" for n in [*positional, *named])
    # How the caller resolves names: DuckDB folds these in the caller's context.
    fields += f", '{SCOPE_FIELD}': [current_database(), current_schema(), " + (
        "current_setting('search_path')]"
    )
    return (
        f"CREATE OR REPLACE TEMP MACRO {macro.name}({', '.join(params)}) AS TABLE\n"
        f"SELECT * FROM query({macro.planner}(CAST(to_json({{{fields}}}) AS VARCHAR)))"
    )


def _fits(kind: str, value: Any) -> bool:
    if kind in ("name", "text"):
        return isinstance(value, str) and (kind == "text" or value != "")
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "names":
        return isinstance(value, list | tuple) and all(isinstance(v, str) and v for v in value)
    if kind == "name_or_names":
        return _fits("name", value) or _fits("names", value)
    if kind == "items":
        return isinstance(value, list | tuple) and all(
            isinstance(v, str | int | float) and not isinstance(v, bool) for v in value
        )
    if kind == "policy":  # the rules are checked by kanon.plan.policy, naming the rule
        return (isinstance(value, str) and value != "") or isinstance(value, dict)
    if kind == "priorities":
        # The values are checked by the planner's options, naming the column.
        return isinstance(value, dict) and all(isinstance(c, str) for c in value)
    if kind == "levels":
        return isinstance(value, dict) and all(
            isinstance(c, str) and isinstance(v, int) and not isinstance(v, bool)
            for c, v in value.items()
        )
    msg = f"unknown kind of option value: {kind!r}"
    raise AssertionError(msg)


def _shown(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    try:
        return json.dumps(value, ensure_ascii=False)
    except TypeError:
        return repr(value)


def _checked(
    call: str, macro: Macro, values: Mapping[str, Any], *, leading: bool = True
) -> dict[str, Any]:
    """``macro``'s parameters (keywords only unless ``leading``), checked by kind.

    A NULL or absent keyword gets its declared default (a copy: a default list is never
    shared between calls); a leading parameter stays None.
    """
    declared = macro.options()
    kinds = macro.kinds() if leading else {n: kind for n, (kind, _) in declared.items()}
    out: dict[str, Any] = {}
    for name, kind in kinds.items():
        value = values.get(name)
        if value is None:
            if name in declared:
                value = copy.copy(declared[name][1].default)
        elif not _fits(kind, value):
            msg = f"{call}: {name} must be {_ACCEPTS[kind]}, got {_shown(value)}"
            raise InvalidInputError(msg)
        elif name in declared:
            _within(call, name, kind, declared[name][1], value)
        out[name] = value
    return out


def _within(call: str, name: str, kind: str, opt: Opt, value: Any) -> None:
    """Reject a value outside the option's declared choices or bounds, naming them."""
    if opt.choices and value not in opt.choices:
        msg = (
            f"{call}: {name} must be one of {', '.join(map(repr, opt.choices))}, "
            f"got {_shown(value)}"
        )
        raise InvalidInputError(msg)
    low, high, most = opt.at_least, opt.below, opt.at_most
    if (
        (low is not None and value < low)
        or (high is not None and value >= high)
        or (most is not None and value > most)
    ):
        msg = f"{call}: {name} must be {_ACCEPTS[kind]} {_range_text(opt)}, got {_shown(value)}"
        raise InvalidInputError(msg)


def _range_text(opt: Opt) -> str:
    """An option's bounds as said in errors: ``in [0, 1)``, ``in [0, 1]``, ``>= 1``."""
    high = opt.below if opt.below is not None else opt.at_most
    shown = "2^64" if high == 2**64 else f"{high:g}" if high is not None else None
    close = ")" if opt.below is not None else "]"
    if opt.at_least is None:
        return f"below {shown}" if opt.below is not None else f"<= {shown}"
    if shown is None:
        return f">= {opt.at_least:g}"
    return f"in [{opt.at_least:g}, {shown}{close}"


def parse(call: str, text: str | None) -> dict[str, Any]:
    """The arguments of macro ``call`` from its planner's JSON, checked and completed.

    A NULL stands for the parameter's declared default (leading parameters stay None:
    the planner says when one is required).

    Raises:
        InvalidInputError: a value of the wrong type, naming the parameter.
    """
    values = json.loads(text) if text is not None else {}
    if not isinstance(values, dict):  # the macros always build an object
        msg = f"{call}(...): internal error, arguments are not an object: {text!r}"
        raise InvalidInputError(msg)
    return _checked(f"{call}(...)", MACROS[call], values)


def keywords(function: str, macro: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The keywords of a Python function over ``macro``'s options, checked and completed.

    Raises:
        InvalidInputError: an unknown keyword or a value of the wrong type, named.
    """
    m = MACROS[macro]
    declared = m.options()
    unknown = sorted(set(given) - set(declared))
    if unknown:
        msg = (
            f"{function}() got unknown keyword(s) {', '.join(unknown)}; it takes "
            f"{', '.join(declared)}"
        )
        raise InvalidInputError(msg)
    return _checked(f"{function}()", m, given, leading=False)


def defaults(macro: str) -> dict[str, Any]:
    """The declared default of every keyword of ``macro``."""
    return {name: opt.default for name, (_, opt) in MACROS[macro].options().items()}


def column_names(what: str, value: object) -> tuple[str, ...]:
    """Column names given to a Python function: a name or a list of names (None: none).

    Raises:
        InvalidInputError: anything else, naming the parameter.
    """
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple) and all(isinstance(n, str) for n in value):
        return tuple(value)
    msg = f"{what} must be a column name or a list of column names, got {value!r}"
    raise InvalidInputError(msg)


def add_flags(parser: argparse.ArgumentParser, macro: str) -> None:
    """Add a command-line flag for every option of ``macro`` that has one.

    Lists are comma-separated (``--identifiers name,ssn``), level maps
    ``COLUMN=LEVEL,...``, priority maps ``COLUMN=PRIORITY,...``; a flag left out means
    the option's default.
    """
    for name, (kind, opt) in MACROS[macro].options().items():
        if not opt.cli:
            continue
        flag = "--" + name.replace("_", "-")
        text = opt.doc.replace("%", "%%")
        if kind == "bool":
            parser.add_argument(flag, action="store_true", default=None, help=text)
            continue
        convert = {"int": int, "number": float}.get(kind, str)
        metavar = {
            "names": "A,B",
            "name_or_names": "A,B",
            "levels": "COLUMN=LEVEL,...",
            "priorities": "COLUMN=PRIORITY,...",
        }
        parser.add_argument(flag, type=convert, metavar=metavar.get(kind), help=text)


def flag_values(args: argparse.Namespace, macro: str) -> dict[str, Any]:
    """The options given on the command line (flags of :func:`add_flags`) as values.

    Raises:
        InvalidInputError: a level or priority map that is not ``COLUMN=N,...``.
    """
    out: dict[str, Any] = {}
    for name, (kind, opt) in MACROS[macro].options().items():
        value = getattr(args, name, None) if opt.cli else None
        if value is None:
            continue
        if kind in ("names", "name_or_names", "levels", "priorities"):
            parts = [p.strip() for p in value.split(",") if p.strip()]
            if kind == "levels":
                value = _levels(name, parts, "LEVEL")
            elif kind == "priorities":
                value = _levels(name, parts, "PRIORITY")
            else:
                value = parts
        out[name] = value
    return out


def _levels(name: str, parts: list[str], what: str) -> dict[str, int]:
    """``COLUMN=N,...`` as a map (``what`` names N in the error: LEVEL, PRIORITY)."""
    levels: dict[str, int] = {}
    for part in parts:
        column, sep, level = part.rpartition("=")
        if not sep or not column.strip() or not level.strip().isdigit():
            msg = f"--{name.replace('_', '-')} takes COLUMN={what},..., got {part!r}"
            raise InvalidInputError(msg)
        levels[column.strip()] = int(level)
    return levels


def _sql_literal(value: Any) -> str:
    """A default as SQL shows it."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dict):
        return "MAP {}" if not value else repr(value)
    return json.dumps(value)


def markdown_table(macro: str, methods: Mapping[str, tuple[str, ...]]) -> str:
    """docs/sql.md's table of ``macro``'s options: name, SQL type, default, methods, doc.

    ``methods``: the methods that take each scoped option (``kanon.plan.release.registry``).
    """
    rows = [
        "| option | SQL type | default | methods | what it does |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, (_, opt) in MACROS[macro].options().items():
        default = _sql_literal(opt.default)
        taken = ", ".join(methods[name]) if opt.scoped else "all"
        rows.append(f"| `{name}` | `{opt.sql}` | `{default}` | {taken} | {opt.doc} |")
    return "\n".join(rows)
