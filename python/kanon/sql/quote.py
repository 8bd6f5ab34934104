"""Helpers that turn names and values into SQL text: the only place SQL is quoted.

Every identifier that reaches generated SQL goes through :func:`ident`, every literal
through :func:`literal`. User text never reaches SQL any other way. The quoting rules
are DuckDB's (double a ``"`` inside an identifier, a ``'`` inside a string), written out
here because the planner runs on every bind and sqlglot's generator costs ~0.1 ms per
name (plus a one-off 150 ms dialect import); ``tests/test_sql_quoting.py`` checks that
both produce the same text and that DuckDB reads it back unchanged.
"""

from __future__ import annotations

import math

__all__ = ["ident", "literal", "string_list"]


def ident(name: str) -> str:
    """Return ``name`` as a quoted DuckDB identifier (``"a""b"`` for ``a"b``)."""
    if not isinstance(name, str) or name == "":
        msg = f"an identifier must be a non-empty string, got {name!r}"
        raise TypeError(msg)
    if "\x00" in name:
        msg = f"an identifier cannot contain a NUL character: {name!r}"
        raise ValueError(msg)
    return '"' + name.replace('"', '""') + '"'


def literal(value: str | float | bool | None) -> str:
    """Return ``value`` as a SQL literal (strings quoted and escaped)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value) if math.isfinite(value) else f"'{value}'"
        return f"CAST({text} AS DOUBLE)"  # a bare 0.2 would be read as a DECIMAL
    text = str(value)
    if "\x00" in text:
        msg = f"a string literal cannot contain a NUL character: {text!r}"
        raise ValueError(msg)
    return "'" + text.replace("'", "''") + "'"


def string_list(values: list[str]) -> str:
    """Return a ``VARCHAR[]`` literal holding ``values``."""
    return "[" + ", ".join(literal(v) for v in values) + "]::VARCHAR[]"
