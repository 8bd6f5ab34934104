"""Helpers that turn names and values into SQL text: the only place SQL is quoted.

Every identifier that reaches generated SQL goes through :func:`ident`, every literal
through :func:`literal`. User text never reaches SQL any other way.
"""

from __future__ import annotations

from sqlglot import exp

__all__ = ["ident", "literal", "string_list"]


def ident(name: str) -> str:
    """Return ``name`` as a quoted DuckDB identifier (``"a""b"`` for ``a"b``)."""
    if not isinstance(name, str) or name == "":
        msg = f"an identifier must be a non-empty string, got {name!r}"
        raise TypeError(msg)
    return exp.to_identifier(name, quoted=True).sql(dialect="duckdb")


def literal(value: str | float | bool | None) -> str:
    """Return ``value`` as a SQL literal (strings quoted and escaped)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return exp.Literal.number(value).sql(dialect="duckdb")
    return exp.Literal.string(str(value)).sql(dialect="duckdb")


def string_list(values: list[str]) -> str:
    """Return a ``VARCHAR[]`` literal holding ``values``."""
    return "[" + ", ".join(literal(v) for v in values) + "]::VARCHAR[]"
