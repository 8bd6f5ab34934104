"""The objects a materialized release owns: kanon replaces or drops only those.

A release ``name`` is the view ``name`` plus helper tables ``{name}__kanon_{part}``. Its
meta table lists every object it created; an object of one of those names that the meta
does not list belongs to the user, and materializing over it is refused. Temporary
tables and views of a single statement get fresh names that nothing else holds.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from kanon._sql import ident
from kanon.exceptions import ConfigError

if TYPE_CHECKING:
    import duckdb

__all__ = ["claim", "drop_stale", "helper", "read_meta", "temp_name"]


def helper(name: str, part: str) -> str:
    """The helper table ``part`` (``rows``, ``groups``, ``meta``, ``h0`` …) of release ``name``."""
    return f"{name}__kanon_{part}"


def temp_name(part: str) -> str:
    """A fresh name for a temporary table or view of one call (no user object has it)."""
    return f"__kanon_{part}_{uuid.uuid4().hex[:16]}"


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


def _owned(name: str, meta: dict[str, Any] | None) -> set[str]:
    """Lower-cased names of the objects release ``name`` created (none without a meta)."""
    if meta is None:
        return set()
    if "objects" in meta:
        return {str(o).lower() for o in meta["objects"]}
    # Releases stored before the list was kept: every name their layout could use.
    parts = ["meta", "rows", "groups"] + [f"h{j}" for j in range(len(meta["qi"]))]
    return {name.lower()} | {helper(name, p).lower() for p in parts}


def claim(con: duckdb.DuckDBPyConnection, name: str, objects: list[str]) -> set[str]:
    """Check that release ``name`` may create ``objects``; return what it owns now.

    Raises:
        ConfigError: one of ``objects`` exists and was not created by this release.
    """
    owned = _owned(name, read_meta(con, name))
    for obj, kind in _existing(con, sorted(set(objects) | owned)).items():
        if obj not in owned or kind == "TEMP":
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
        if kind == "VIEW":
            con.execute(f"DROP VIEW IF EXISTS {ident(obj)}")
        else:
            con.execute(f"DROP TABLE IF EXISTS {ident(obj)}")
