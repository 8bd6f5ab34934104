"""``kanon.to_sql``: a DuckDB view's definition as SQL for another database.

Global (full-domain) releases are plain SQL views over the source table and the
hierarchy lookup tables: joins, ``CASE``, ``CAST``, ``count(*) OVER (PARTITION BY ...)``
and comparisons. :func:`to_sql` reads such a view from DuckDB's catalog and writes its
``CREATE VIEW`` statement in another dialect with sqlglot, refusing the DuckDB-only
constructs that sqlglot would pass through as text the target cannot run (or would
rewrite into something that means another thing).

Releases stored by ``kanon.materialize`` (local and global) are such views; with
``directory`` the tables they read besides the source are written there as Parquet, so
that the release can be loaded where the view is created.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, UnsupportedError

from kanon.exceptions import ConfigError, InvalidInputError
from kanon.sql.quote import ident, literal
from kanon.store.owned import read_meta

if TYPE_CHECKING:
    import os

    import duckdb

__all__ = ["DIALECTS", "query_sql", "to_sql"]

DIALECTS = ("postgres", "snowflake", "bigquery", "spark", "duckdb")

# Targets whose sqlglot generator rewrites QUALIFY into a subquery filtered on a window
# column named "_w": the rewrite adds "_w" to the output of ``SELECT *``, renames
# unaliased expressions to "_c..." and collides with real columns named "_w".
_NO_QUALIFY = frozenset({"postgres", "spark"})

# DuckDB writes ``count(*)`` into a view's SQL as ``count_star()`` (aggregate) or
# ``count()`` (window); sqlglot passes both through, and no other database accepts them.
_COUNT_STAR = "count_star"

# Characters a file name cannot hold on some system, percent-encoded in exported names.
_UNSAFE = frozenset('/\\:*?"<>|%')


def to_sql(
    con: duckdb.DuckDBPyConnection,
    name: str,
    dialect: str = "postgres",
    directory: str | os.PathLike[str] | None = None,
) -> str:
    """Return the ``CREATE VIEW`` statement of the DuckDB view ``name`` in ``dialect``.

    The definition is read from ``duckdb_views()`` (the view named exactly ``name``, as
    DuckDB stores it; when several schemas hold one, the one in the current schema),
    parsed with sqlglot as DuckDB SQL and written for ``dialect`` with every identifier
    quoted. Names keep the spelling of the view's SQL, so in the target the tables and
    columns must carry those exact, case-sensitive names (e.g. ``CREATE TABLE "t"``).
    A TEMP view (such as the release of a TEMP table) is written as a plain view.

    DuckDB writes ``count(*)`` into stored views as ``count_star()`` or ``count()``;
    both become ``COUNT(*)``. For a target other than ``"duckdb"`` these DuckDB-only
    constructs are refused, because sqlglot would emit them as they are (or, for
    QUALIFY, change the view's columns):

    * ``GROUP BY ALL``, ``ORDER BY ALL`` (stored by DuckDB as ``ORDER BY COLUMNS(*)``)
      and ``COLUMNS(...)``;
    * ``* EXCLUDE / REPLACE / RENAME`` and ``#n`` positional columns;
    * functions sqlglot does not know, which it copies verbatim: DuckDB-only functions
      such as ``query_table(...)``, ``query(...)``, ``read_csv(...)`` and kanon's own
      UDFs, and ``SIMILAR TO`` (stored by DuckDB as ``regexp_full_match``, which
      sqlglot knows but writes under that name for every target);
    * list, struct and map values: ``[...]`` / ``list_value`` literals, indexing and
      slicing with ``[...]``, ``{...}`` / ``struct_pack``, ``MAP {...}``, lambdas and
      casts to LIST/STRUCT/MAP/UNION types;
    * ``POSITIONAL JOIN``, ``ASOF JOIN``, ``PIVOT`` / ``UNPIVOT`` and ``LIMIT n%``;
    * ``QUALIFY`` when the target is ``"postgres"`` or ``"spark"``: sqlglot rewrites
      it into a subquery with a window column ``_w``, which ``SELECT *`` then returns
      and which renames unaliased expressions.

    Anything else sqlglot itself reports as unsupported by the target is refused too.

    With ``directory``, ``name`` must be a release made by ``kanon.materialize``: every
    table of the release that the view reads (a local release's rows with their group
    and its groups' labels; a global release's lookup tables) is written there as
    ``<table name>.parquet`` (the name percent-encoded where a file name cannot hold
    it), and the statement as ``<view name>.sql``. Load each file as the table of that
    name next to the source, then run the statement. The rows file of a local release
    holds every source row, identifiers included: it is as sensitive as the source.

    Args:
        con: The DuckDB connection whose catalog holds the view.
        name: The view's name, exactly as DuckDB stores it (case-sensitive,
            unqualified).
        dialect: The target: ``"postgres"``, ``"snowflake"``, ``"bigquery"``,
            ``"spark"`` or ``"duckdb"``.
        directory: Where to write the release's tables and statement (created if
            missing; files already there are not replaced).

    Returns:
        One ``CREATE VIEW ... AS ...`` statement, without a trailing semicolon.

    Raises:
        TypeError: ``name`` or ``dialect`` is not a string.
        InvalidInputError: ``dialect`` is not one of the allowed values, or the view
            uses a construct listed above (the message names each one), or its
            stored SQL is not a single ``CREATE VIEW`` statement sqlglot can read.
        ConfigError: No view named ``name`` exists, or several exist outside the
            current schema; with ``directory``, ``name`` is not a release of
            ``kanon.materialize`` or one of the files exists.

    Examples:
        >>> import duckdb, kanon
        >>> con = duckdb.connect()
        >>> _ = con.execute("CREATE TABLE t (age INTEGER)")
        >>> _ = con.execute("CREATE VIEW v AS SELECT count(*) OVER (PARTITION BY age) AS n FROM t")
        >>> print(kanon.to_sql(con, "v", "postgres"))
        CREATE VIEW "v" AS SELECT COUNT(*) OVER (PARTITION BY "age") AS "n" FROM "t"
    """
    if not isinstance(name, str):
        msg = f"name must be a string, got {type(name).__name__}"
        raise InvalidInputError(msg)
    if not isinstance(dialect, str):
        msg = f"dialect must be a string, got {type(dialect).__name__}"
        raise InvalidInputError(msg)
    if dialect not in DIALECTS:
        allowed = ", ".join(repr(d) for d in DIALECTS)
        msg = f"dialect must be one of {allowed}, got {dialect!r}"
        raise InvalidInputError(msg)
    tree = _parse(name, _stored_definition(con, name)).transform(_count_star)
    # A TEMP view (the release of a TEMP source) is written as a plain view: in the
    # target, its tables are regular ones.
    for temporary in list(tree.find_all(exp.TemporaryProperty)):
        temporary.pop()
    sql = _written(name, tree, dialect)
    if directory is not None:
        _export(con, name, tree, Path(directory), sql)
    return sql


def query_sql(query: str, dialect: str) -> str:
    """A DuckDB ``SELECT`` written for ``dialect``, with :func:`to_sql`'s checks."""
    create = _parse("release", f"CREATE VIEW release AS {query}").transform(_count_star)
    return _written("release", create.expression, dialect)


def _written(name: str, tree: exp.Expr, dialect: str) -> str:
    """``tree`` (parsed DuckDB SQL of view ``name``) in ``dialect``, refusing DuckDB-only SQL."""
    if dialect != "duckdb":
        found = _duckdb_only(tree, dialect)
        if found:
            msg = (
                f"view {name!r} uses DuckDB-only SQL that cannot be written for {dialect}: "
                + "; ".join(found)
            )
            raise InvalidInputError(msg)
    try:
        return tree.sql(dialect=dialect, identify=True, unsupported_level=ErrorLevel.RAISE)
    except UnsupportedError as err:
        msg = f"view {name!r} cannot be written for {dialect}: {err}"
        raise InvalidInputError(msg) from err


def _file(folder: Path, name: str, suffix: str) -> Path:
    """``folder/<name><suffix>``, percent-encoding what a file name cannot hold."""
    text = "".join(
        quote(ch, safe="") if ch in _UNSAFE or not ch.isprintable() else ch for ch in name
    )
    if text.startswith("."):
        text = "%2E" + text[1:]
    return folder / f"{text}{suffix}"


def _export(
    con: duckdb.DuckDBPyConnection, name: str, tree: exp.Expr, folder: Path, sql: str
) -> None:
    """Write the release's tables the view reads as Parquet, and its statement, to ``folder``."""
    meta = read_meta(con, name)
    if meta is None:
        msg = (
            f"view {name!r} is not a release made by kanon.materialize: only a release's "
            "tables can be exported with directory=; call to_sql without it"
        )
        raise ConfigError(msg)
    owned = set(meta.get("objects", []))
    query = tree.expression if isinstance(tree, exp.Create) else tree  # not the view's name
    tables = sorted({t.name for t in query.find_all(exp.Table)} & owned)
    files = [(t, _file(folder, t, ".parquet")) for t in tables]
    files.append((name, _file(folder, name, ".sql")))
    taken = [str(path) for _, path in files if path.exists()]
    if taken:
        msg = f"{', '.join(taken)} exist(s); kanon does not replace files: remove them first"
        raise ConfigError(msg)
    folder.mkdir(parents=True, exist_ok=True)
    for table, path in files[:-1]:
        con.execute(f"COPY (SELECT * FROM {ident(table)}) TO {literal(str(path))} (FORMAT parquet)")
    files[-1][1].write_text(sql + ";\n", encoding="utf-8")


def _stored_definition(con: duckdb.DuckDBPyConnection, name: str) -> str:
    """Return the stored ``CREATE VIEW`` text of the view ``name``."""
    rows = con.execute(
        "SELECT database_name, schema_name, sql, "
        "database_name = current_database() AND schema_name = current_schema() AS here "
        "FROM duckdb_views() WHERE view_name = ? AND NOT internal "
        "ORDER BY here DESC, database_name, schema_name",
        [name],
    ).fetchall()
    if not rows:
        msg = f"no view named {name!r} in the DuckDB catalog (duckdb_views())"
        raise ConfigError(msg)
    if len(rows) > 1 and not rows[0][3]:
        places = ", ".join(f"{db}.{schema}" for db, schema, _, _ in rows)
        msg = f"view {name!r} exists in several schemas ({places}) and not in the current one"
        raise ConfigError(msg)
    sql = rows[0][2]
    if not isinstance(sql, str):
        msg = f"view {name!r} has no SQL definition in duckdb_views()"
        raise InvalidInputError(msg)
    return sql


def _parse(name: str, sql: str) -> exp.Create:
    """Parse ``sql`` as DuckDB SQL and check that it is exactly one CREATE VIEW."""
    try:
        statements = [s for s in sqlglot.parse(sql, read="duckdb") if s is not None]
    except ParseError as err:
        msg = f"sqlglot cannot read the SQL of view {name!r}: {err}"
        raise InvalidInputError(msg) from err
    if len(statements) != 1:
        msg = f"the SQL of view {name!r} holds {len(statements)} statements, expected one"
        raise InvalidInputError(msg)
    create = statements[0]
    if not (
        isinstance(create, exp.Create)
        and str(create.args.get("kind", "")).upper() == "VIEW"
        and isinstance(create.expression, exp.Query)
    ):
        msg = f"the SQL of view {name!r} is not a CREATE VIEW ... AS <query> statement"
        raise InvalidInputError(msg)
    return create


def _count_star(node: exp.Expr) -> exp.Expr:
    """Rewrite DuckDB's ``count_star()`` and argument-less ``count()`` to ``COUNT(*)``."""
    if isinstance(node, exp.Count) and node.this is None and not node.expressions:
        return exp.Count(this=exp.Star())
    if (
        isinstance(node, exp.Anonymous)
        and str(node.this).lower() == _COUNT_STAR
        and not node.expressions
    ):
        return exp.Count(this=exp.Star())
    return node


def _duckdb_only(tree: exp.Expr, dialect: str) -> list[str]:
    """Name each DuckDB-only construct in ``tree`` that ``dialect`` cannot take."""
    found: list[str] = []
    for node in tree.walk():
        what = _construct(node, dialect)
        if what is not None and what not in found:
            found.append(what)
    return found


def _construct(node: exp.Expr, dialect: str) -> str | None:
    """Describe ``node`` if it is a construct refused for ``dialect``, else None."""
    if isinstance(node, exp.Group) and node.args.get("all"):
        return "GROUP BY ALL"
    if isinstance(node, exp.Ordered) and isinstance(node.this, exp.Var):
        return f"ORDER BY {node.this.name.upper()}"  # sqlglot's reading of ORDER BY ALL
    if isinstance(node, exp.Columns):
        if isinstance(node.parent, exp.Ordered) and isinstance(node.this, exp.Star):
            return "ORDER BY ALL (stored as ORDER BY COLUMNS(*))"
        return "COLUMNS(...)"
    if isinstance(node, exp.Star) and any(
        node.args.get(key) for key in ("except_", "replace", "rename", "ilike")
    ):
        return "* EXCLUDE/REPLACE/RENAME"
    if isinstance(node, exp.PositionalColumn):
        return "positional column #n"
    if isinstance(node, (exp.Anonymous, exp.AnonymousAggFunc)):
        return f"function {node.name}() (unknown outside DuckDB)"
    if isinstance(node, exp.RegexpFullMatch):
        return "SIMILAR TO (stored by DuckDB as regexp_full_match, emitted verbatim)"
    if isinstance(node, exp.Array):
        return "list literal"
    if isinstance(node, exp.Bracket):
        return "list/struct indexing [...]"
    if isinstance(node, exp.Struct):
        return "struct literal"
    if isinstance(node, (exp.ToMap, exp.Map, exp.VarMap)):
        return "map literal"
    if isinstance(node, exp.Lambda):
        return "lambda"
    if isinstance(node, exp.DataType) and node.is_type(*exp.DataType.NESTED_TYPES):
        return f"{node.sql(dialect='duckdb')} type"
    if isinstance(node, exp.Join) and str(node.args.get("method", "")).upper() in {
        "POSITIONAL",
        "ASOF",
    }:
        return f"{str(node.args['method']).upper()} JOIN"
    if isinstance(node, exp.Pivot):
        return "UNPIVOT" if node.args.get("unpivot") else "PIVOT"
    if isinstance(node, exp.LimitOptions) and node.args.get("percent"):
        return "LIMIT n%"
    if isinstance(node, exp.Qualify) and dialect in _NO_QUALIFY:
        return f"QUALIFY (sqlglot rewrites it for {dialect} into a subquery that adds column _w)"
    return None
