"""The objects a materialized release owns: kanon replaces or drops only those.

A release ``name`` is the view ``name`` plus helper tables ``{name}__kanon_{part}``. Its
meta table lists every object it created; an object of one of those names that the meta
does not list belongs to the user, and materializing over it is refused. Temporary
tables and views of a single statement get fresh names that nothing else holds.

The release of a source that only its connection sees (a TEMP table or view, or a view
reading one) is *temporary*: its view and tables are TEMP objects too, which end with the
connection. A permanent view over a TEMP table would break for every other connection
and when the database is opened again, and permanent tables would keep a copy of the
rows after the source is gone.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

import duckdb

from kanon.exceptions import ConfigError
from kanon.sql.quote import ident

if TYPE_CHECKING:
    from kanon.plan.catalog import Table

__all__ = ["claim", "drop_stale", "helper", "is_temporary", "read_meta", "temp_name", "write_meta"]


def helper(name: str, part: str) -> str:
    """The helper table ``part`` (``rows``, ``groups``, ``meta``, ``h0`` …) of release ``name``."""
    return f"{name}__kanon_{part}"


def temp_name(part: str) -> str:
    """A fresh name for a temporary table or view of one call (no user object has it)."""
    return f"__kanon_{part}_{uuid.uuid4().hex[:16]}"


def is_temporary(con: duckdb.DuckDBPyConnection, table: Table) -> bool:
    """Whether only ``con`` can read ``table``: a TEMP object, or a view reading one.

    Another connection to the same database (a cursor, which has its own temporary
    catalog) tries to bind the fully qualified name.
    """
    if table.identity is None:
        sql = table.sql
    else:
        catalog, schema, name = table.identity
        if catalog.lower() == "temp":
            return True
        sql = ".".join(ident(part) for part in (catalog, schema, name))
    other = con.cursor()
    try:
        other.execute(f"DESCRIBE SELECT * FROM {sql}").fetchall()
    except duckdb.Error:
        return True
    finally:
        other.close()
    return False


def _existing(con: duckdb.DuckDBPyConnection, names: list[str]) -> dict[str, str]:
    """Lower-cased name → kind of the objects ``names`` would clash with.

    The kind is ``BASE TABLE`` or ``VIEW`` in the current schema, ``TEMP`` for a
    temporary object (which would shadow the release's own when it is read).
    """
    if not names:
        return {}
    rows = con.execute(
        "SELECT lower(table_name), if(table_catalog = 'temp', 'TEMP', table_type) "
        "FROM information_schema.tables "
        "WHERE lower(table_name) IN (SELECT lower(unnest(?::VARCHAR[]))) "
        "AND ((table_catalog = current_database() AND table_schema = current_schema()) "
        "OR table_catalog = 'temp')",
        [names],
    ).fetchall()
    kinds: dict[str, str] = {}
    for n, kind in rows:  # a temporary object shadows a persistent one of its name
        if kinds.get(str(n)) != "TEMP":
            kinds[str(n)] = str(kind)
    return kinds


def read_meta(con: duckdb.DuckDBPyConnection, name: str) -> dict[str, Any] | None:
    """The stored meta of release ``name``, or None when there is no such release."""
    table = helper(name, "meta")
    if not _existing(con, [table]):
        return None
    try:
        rows = con.execute(f"SELECT meta FROM {ident(table)}").fetchall()
        meta = json.loads(rows[0][0]) if len(rows) == 1 else None
    except Exception:  # any other shape is not a kanon meta table
        return None
    if not isinstance(meta, dict) or "source" not in meta or "qi" not in meta:
        return None
    return meta


def write_meta(con: duckdb.DuckDBPyConnection, name: str, meta: dict[str, Any], kind: str) -> None:
    """Write the meta table of release ``name`` (``kind``: ``TABLE`` or ``TEMP TABLE``)."""
    con.execute(
        f"CREATE OR REPLACE {kind} {ident(helper(name, 'meta'))} AS SELECT ? AS meta",
        [json.dumps(meta)],
    )


def _owned(name: str, meta: dict[str, Any] | None) -> set[str]:
    """Lower-cased names of the objects release ``name`` created (none without a meta)."""
    if meta is None:
        return set()
    if "objects" in meta:
        return {str(o).lower() for o in meta["objects"]}
    # Releases stored before the list was kept: every name their layout could use.
    parts = ["meta", "rows", "groups"] + [f"h{j}" for j in range(len(meta["qi"]))]
    return {name.lower()} | {helper(name, p).lower() for p in parts}


def claim(
    con: duckdb.DuckDBPyConnection, name: str, objects: list[str], *, temporary: bool = False
) -> set[str]:
    """Check that release ``name`` may create ``objects``; return what it owns now.

    A temporary release (``temporary``) may replace the objects of an earlier release of
    that name, stored or temporary; a stored one may not be created under a temporary
    release of its name, which would hide it.

    Raises:
        ConfigError: one of ``objects`` exists and was not created by this release, or
            a stored release is asked for where a temporary one of its name exists.
    """
    meta_kind = _existing(con, [helper(name, "meta")]).get(helper(name, "meta").lower())
    owned = _owned(name, read_meta(con, name))
    existing = _existing(con, sorted(set(objects) | owned))
    if not temporary and meta_kind == "TEMP" and owned:
        drops = "; ".join(
            f"DROP {'VIEW' if obj == name.lower() else 'TABLE'} temp.main.{ident(obj)}"
            for obj in sorted(owned)
            if existing.get(obj) == "TEMP"
        )
        msg = (
            f"a temporary release {name!r} (of a TEMP source) exists on this connection and "
            "would hide a stored release of that name: choose another name, or drop it "
            f"first ({drops})"
        )
        raise ConfigError(msg)
    for obj, kind in existing.items():
        # A name the release owns, of the kind its meta table is: a TEMP object under a
        # stored release's name (or the reverse) belongs to the user.
        mine = obj in owned and (kind == "TEMP") == (meta_kind == "TEMP")
        if not mine or (kind == "TEMP" and not temporary):
            what = {"VIEW": "view", "TEMP": "temporary table or view"}.get(kind, "table")
            msg = (
                f"a {what} named {obj!r} exists and was not created by kanon.materialize "
                f"for release {name!r}; kanon does not replace it: choose another release "
                "name, or drop or rename that object"
            )
            raise ConfigError(msg)
    return owned


def drop_stale(con: duckdb.DuckDBPyConnection, owned: set[str], keep: list[str]) -> None:
    """Drop the objects a release created before and no longer uses."""
    kept = {k.lower() for k in keep}
    for obj, kind in _existing(con, sorted(owned - kept)).items():
        if kind == "TEMP":  # of a temporary release
            ((views,),) = con.execute(
                "SELECT count(*) FROM duckdb_views() WHERE temporary AND lower(view_name) = ?",
                [obj],
            ).fetchall()
            con.execute(f"DROP {'VIEW' if views else 'TABLE'} IF EXISTS temp.main.{ident(obj)}")
        elif kind == "VIEW":
            con.execute(f"DROP VIEW IF EXISTS {ident(obj)}")
        else:
            con.execute(f"DROP TABLE IF EXISTS {ident(obj)}")
