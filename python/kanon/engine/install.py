"""``install(con)``: register kanon's UDFs, TEMP macros and config tables on a connection."""

from __future__ import annotations

import functools
import json
import threading
import uuid
from typing import TYPE_CHECKING, Any

import duckdb
from duckdb import func

from kanon import _core
from kanon._options import MACROS, SCOPE_FIELD, column_names, macro_sql, parse
from kanon.engine.kernels import KERNELS, udf
from kanon.exceptions import ConfigError, InvalidInputError
from kanon.plan.catalog import Scope, UnknownTableError, caller_scope
from kanon.plan.check import CheckOptions, plan_check, plan_classes
from kanon.plan.coding import unchanged
from kanon.plan.hkp import HkpOptions, HkpPlan
from kanon.plan.hkp import plan_hkp as plan_hkp_on
from kanon.plan.metrics import plan_metrics
from kanon.plan.release.resolve import AnonymizeOptions, plan_anonymize
from kanon.plan.release.search import search_sql
from kanon.plan.verify import plan_verify

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["install", "install_kernels", "require_writable", "sql_bundle"]

#: The columns of the config table ``kanon_columns``.
_CONFIG_COLUMNS = frozenset(
    {"table_name", "column_name", "role", "hierarchy", "weight", "priority"}
)
#: The columns of the policy table ``kanon_policies``.
_POLICY_COLUMNS = frozenset({"policy", "rule", "threshold", "column_name", "reason"})
#: The shipped SQL files that create persistent tables (skipped read-only).
_PERSISTENT_SQL = frozenset({"010_kanon_config.sql", "020_kanon_policies.sql"})


def sql_bundle() -> list[tuple[str, str]]:
    """The SQL files shipped in the extension, in load order, as ``(name, text)``."""
    return list(_core.sql_bundle())


def _item_text(value: str | float) -> str:
    """An item of ``private := [...]`` as text, the way the items are compared."""
    return value if isinstance(value, str) else json.dumps(value)


def _planner(plan: Callable[[str], str]) -> Callable[[str], str]:
    """A planner UDF: a call starts a statement, and an unknown table's error says why.

    Starting a statement forgets an earlier interrupt; the planner's cursor sees committed
    tables only.
    """

    @functools.wraps(plan)
    def planner(text: str) -> str:
        _statement_starts()
        try:
            with caller_scope(_scope_of(text)):
                return plan(text)
        except UnknownTableError as err:
            msg = (
                f"{err}. kanon's SQL functions read tables through a connection of their "
                "own, which sees committed, persistent tables and views only: not TEMP "
                "tables, tables created in a transaction not yet committed, or DataFrames "
                "registered on the connection. Use the Python API (kanon.anonymize(data, "
                "k, ...), kanon.check(...)), which reads them on your connection, or create "
                "a regular table and COMMIT"
            )
            raise ConfigError(msg) from None

    return planner


def _scope_of(text: str | None) -> Scope | None:
    """The caller's scope that a macro passed to its planner (None: none passed)."""
    try:
        values = json.loads(text) if text is not None else None
    except ValueError:
        return None
    found = values.get(SCOPE_FIELD) if isinstance(values, dict) else None
    if not (isinstance(found, list) and len(found) == 3):
        return None
    db, schema, path = (str(v or "") for v in found)
    return Scope(db, schema, path)


def _required_k(call: str, a: dict[str, Any]) -> int:
    """The ``k`` of a macro that needs it."""
    if a["k"] is None:
        msg = f"{call}(...) needs k, the smallest class size: {call}('table', k := 5)"
        raise InvalidInputError(msg)
    k: int = a["k"]
    return k


def _replace_function(
    con: duckdb.DuckDBPyConnection,
    name: str,
    function: Callable[..., Any],
    parameters: list[str],
    return_type: str,
    *,
    arrow: bool = False,
) -> None:
    """Register a side-effect-free UDF that receives NULLs itself, unless it exists.

    Python UDFs live in the database's system catalog, shared by every connection and
    cursor of it, but only the connection that registered one may remove it. The one
    registered first is kept: its body is the same, and replacing a function while
    another thread runs it is unsafe.
    """
    try:
        con.create_function(
            name,
            function,
            list(parameters),
            return_type,
            type=func.ARROW if arrow else func.NATIVE,
            null_handling=func.SPECIAL,
            side_effects=False,
        )
        _REGISTERED.append(function)
    except (duckdb.CatalogException, duckdb.NotImplementedException) as err:
        # Registered by this connection ("already created") or another ("already exists").
        if "already" not in str(err):
            raise


def _read_only(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con``'s current database is attached read-only."""
    rows = con.execute(
        "SELECT readonly FROM duckdb_databases() WHERE database_name = current_database()"
    ).fetchall()
    return bool(rows and rows[0][0])


def require_writable(con: duckdb.DuckDBPyConnection, what: str, instead: str) -> None:
    """Refuse to store ``what`` in a database opened read-only, saying ``instead``."""
    if _read_only(con):
        msg = f"the database is opened read-only, so {what} cannot be stored: {instead}"
        raise ConfigError(msg)


def _cursor_or_none(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection | None:
    try:
        return con.cursor()
    except duckdb.Error:  # the connection is closed
        return None


class _Database:
    """The connections that installed kanon on one database, and a planner cursor per thread.

    The UDFs live in the database's shared catalog, registered by the first connection;
    when that one closes, the planners take their cursors from another that installed
    kanon and is still open (the one running the statement always is).
    """

    def __init__(self) -> None:
        self.token = uuid.uuid4().hex
        self.connections: list[duckdb.DuckDBPyConnection] = []
        self.lock = threading.Lock()
        self.local = threading.local()

    def add(self, con: duckdb.DuckDBPyConnection) -> None:
        with self.lock:
            if not any(c is con for c in self.connections):
                self.connections.append(con)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's planner cursor (a cursor runs one statement at a time)."""
        cursor: duckdb.DuckDBPyConnection | None = getattr(self.local, "cursor", None)
        if cursor is not None:
            try:
                cursor.execute("SELECT 1")
            except duckdb.Error:  # its connection was closed
                cursor = None
        if cursor is None:
            cursor = self._open_cursor()
            self.local.cursor = cursor
        return cursor

    def _open_cursor(self) -> duckdb.DuckDBPyConnection:
        with self.lock:
            while self.connections:
                cursor = _cursor_or_none(self.connections[-1])
                if cursor is not None:
                    return cursor
                self.connections.pop()  # closed
        msg = "every connection that installed kanon on this database is closed: kanon.install(con)"
        raise InvalidInputError(msg)


#: Every function kanon registered, kept alive: DuckDB's catalog keeps them after the
#: connection that registered them closes, and that connection would free them.
_REGISTERED: list[Callable[..., Any]] = []
_DATABASES: dict[str, _Database] = {}


def _database(con: duckdb.DuckDBPyConnection) -> _Database:
    """The database ``con`` belongs to, found through a UDF its first install registered."""
    db = _Database()
    _replace_function(con, "kanon_instance", lambda: db.token, [], "VARCHAR")
    token = str(con.execute("SELECT kanon_instance()").fetchall()[0][0])
    db = _DATABASES.setdefault(token, db)
    db.add(con)
    return db


def _cancel_kernels_on_interrupt() -> None:
    """Make ``con.interrupt()`` (and ``duckdb.interrupt``) stop running kanon kernels too.

    DuckDB checks its interrupt flag between chunks, never inside a UDF, so a kernel
    would run to its end; the kernels poll a flag of their own instead, raised here. It
    is process-wide (a UDF cannot tell which connection called it): kernels running at
    that moment for other connections stop as well. Statements clear it as they start.
    """
    cls = duckdb.DuckDBPyConnection
    original = cls.interrupt
    if getattr(original, "__kanon__", False):
        return

    def interrupt(self: duckdb.DuckDBPyConnection) -> None:
        original(self)
        _core.progress_cancel()

    interrupt.__doc__ = original.__doc__
    interrupt.__kanon__ = True  # type: ignore[attr-defined]
    cls.interrupt = interrupt  # type: ignore[method-assign]
    module_level = duckdb.interrupt

    def interrupt_default(*args: Any, **kwargs: Any) -> None:
        module_level(*args, **kwargs)
        _core.progress_cancel()

    interrupt_default.__doc__ = module_level.__doc__
    duckdb.interrupt = interrupt_default


_cancel_kernels_on_interrupt()


def _statement_starts() -> None:
    """A kanon statement is being planned: forget an interrupt of an earlier statement."""
    _core.progress_uncancel()


def install_kernels(con: duckdb.DuckDBPyConnection) -> None:
    """Register the kernel UDFs (no macros, no tables): what generated SQL needs to run."""
    _statement_starts()
    for kernel in KERNELS:
        _replace_function(
            con,
            kernel.name,
            udf(kernel),
            [sql for _, sql in kernel.parameters],
            kernel.returns,
            arrow=True,
        )


def install(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Install kanon on ``con``; idempotent on any connection or cursor, in any thread.

    Registers the UDFs (``kanon_class_stats`` and the planners behind the macros) unless
    another connection or cursor of the same database did already (they are shared),
    runs the shipped SQL (TEMP macros ``kanon_check``, ``kanon_classes``, ... of this
    connection: a cursor is a connection of its own and needs its own ``install``) and
    creates the config table ``kanon_columns`` if it is absent. On a read-only database
    nothing is written: the config table is not created (an absent one reads as empty)
    and checks, releases and metrics still work.

    Args:
        con: the DuckDB connection to install into.

    Returns:
        The same connection.

    Examples:
        >>> import duckdb, kanon
        >>> con = kanon.install(duckdb.connect())
        >>> con.execute("SELECT count(*) FROM kanon_columns").fetchone()
        (0,)
    """
    install_kernels(con)
    # The planners read the catalog through their own cursor (one per thread): the
    # calling connection is busy binding the query that invoked them.
    cursors = _database(con).cursor

    def plan_check_udf(text: str) -> str:
        a = parse("kanon_check", text)
        options = CheckOptions(
            qi=tuple(a["qi"] or ()),
            sensitive=a["sensitive"],
            population=a["population"],
            t_distance=a["t_distance"],
            recursive_l=a["recursive_l"],
            recursive_c=a["recursive_c"],
            risk_threshold=a["risk_threshold"],
            identifiers=tuple(a["identifiers"] or ()),
            insensitive=tuple(a["insensitive"] or ()),
        )
        return plan_check(cursors(), a["tbl"], options).sql

    def plan_anonymize_udf(text: str) -> str:
        a = parse("kanon", text)
        options = AnonymizeOptions.of(_required_k("kanon", a), a["qi"], a)
        # The values are checked as the SQL runs, not here. DuckDB plans a statement
        # once through execute(); the relation API (con.sql) binds it twice, at con.sql()
        # and again to run it: no cache, as the table may change in between.
        plan = plan_anonymize(cursors(), a["tbl"], options, check_values=False)
        return unchanged(plan.sql, plan.table, plan.rows)

    def plan_search_udf(text: str) -> str:
        a = parse("kanon_search", text)
        options = AnonymizeOptions.of(_required_k("kanon_search", a), a["qi"], a)
        cursor = cursors()
        plan = plan_anonymize(cursor, a["tbl"], options, check_values=False, check_undeclared=False)
        return search_sql(plan, options)

    def plan_verify_udf(text: str) -> str:
        a = parse("kanon_verify", text)
        return plan_verify(
            cursors(),
            a["source"],
            a["release"],
            a["policy"],
            tuple(a["qi"] or ()),
            column_names("sensitive", a["sensitive"]),
        ).sql

    def plan_metrics_udf(text: str) -> str:
        a = parse("kanon_metrics", text)
        return plan_metrics(cursors(), a["original"], a["released"], tuple(a["qi"] or ()), a["k"])

    def plan_classes_udf(text: str) -> str:
        a = parse("kanon_classes", text)
        return plan_classes(cursors(), a["tbl"], tuple(a["qi"] or ()))

    def plan_hkp(call: str, text: str) -> HkpPlan:
        a = parse(call, text)
        if a["h"] is None or a["k"] is None or a["p"] is None:
            msg = f"{call}(...) needs h, k and p: {call}('t', h := 0.4, k := 10, p := 3, ...)"
            raise InvalidInputError(msg)
        private = a["private"]
        options = HkpOptions(
            h=a["h"],
            k=a["k"],
            p=a["p"],
            private=None if private is None else tuple(_item_text(v) for v in private),
            roles=a["roles"],
            public_fraction=a["public_fraction"],
            seed=a["seed"],
            method=a["method"],
            min_support=a["min_support"],
            max_itemsets=a["max_itemsets"],
            items=a["items"],
            tid=a["tid"],
            item=a["item"],
        )
        return plan_hkp_on(cursors(), a["tbl"], options)

    planners: dict[str, Callable[[str], str]] = {
        "kanon_plan_check": plan_check_udf,
        "kanon_plan_classes": plan_classes_udf,
        "kanon_plan_anonymize": plan_anonymize_udf,
        "kanon_plan_search": plan_search_udf,
        "kanon_plan_metrics": plan_metrics_udf,
        "kanon_plan_verify": plan_verify_udf,
        "kanon_plan_hkp": lambda text: plan_hkp("kanon_hkp", text).release_sql,
        "kanon_plan_hkp_report": lambda text: plan_hkp("kanon_hkp_report", text).report_sql,
    }
    for name, planner in planners.items():
        _replace_function(con, name, _planner(planner), ["VARCHAR"], "VARCHAR")
    read_only = _read_only(con)
    for name, text in sql_bundle():
        if read_only and name in _PERSISTENT_SQL:
            continue  # persistent tables: nothing may be written
        con.execute(text)
    for macro in MACROS.values():
        con.execute(macro_sql(macro))
    _check_own_table(con, "kanon_columns", _CONFIG_COLUMNS, "configuration table")
    _check_own_table(con, "kanon_policies", _POLICY_COLUMNS, "policy table")
    return con


def _check_own_table(
    con: duckdb.DuckDBPyConnection, table: str, columns: frozenset[str], what: str
) -> None:
    """Refuse a ``table`` of the user's that is not kanon's table of that name.

    ``CREATE TABLE IF NOT EXISTS`` keeps an existing table of that name; kanon would
    otherwise read and write the user's rows as its own.
    """
    rows = con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
        "AND table_catalog = current_database() AND table_schema = current_schema()",
        [table],
    ).fetchall()
    found = {str(r[0]) for r in rows}
    if found and not found >= columns:
        msg = (
            f"a table {table} exists with columns {sorted(found)}, which is not kanon's "
            f"{what} (columns {sorted(columns)}); kanon does not replace it: rename it, "
            "then run kanon.install again"
        )
        raise ConfigError(msg)
