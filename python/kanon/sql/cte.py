"""Parts of generated SQL: common table expressions that own their names and columns.

A :class:`Cte` is defined once, by the module that emits it, and read by others through
the object (its :attr:`~Cte.ref`), never by retyping its name. :func:`with_query`
renders a statement from its parts.
"""

from __future__ import annotations

from dataclasses import dataclass

from kanon.sql.quote import ident

__all__ = ["Cte", "internal", "with_query"]


def internal(name: str) -> str:
    """The name of an internal part: ``name`` in kanon's reserved ``__kanon`` namespace."""
    return f"__kanon_{name}"


@dataclass(frozen=True)
class Cte:
    """One common table expression: its name, its columns (for readers) and its body.

    ``columns`` documents what readers may use (empty when it carries the source's
    columns through ``*``); ``materialized`` asks DuckDB to compute it once.
    """

    name: str
    sql: str
    columns: tuple[str, ...] = ()
    materialized: bool = False

    @property
    def ref(self) -> str:
        """The quoted name, to read the CTE by."""
        return ident(self.name)

    def render(self) -> str:
        """The CTE's definition, as it stands in a ``WITH`` clause."""
        hint = "MATERIALIZED " if self.materialized else ""
        return f"{self.ref} AS {hint}({self.sql})"


def with_query(ctes: list[Cte], select: str) -> str:
    """A statement of ``ctes`` followed by ``select`` (one CTE per line)."""
    if not ctes:
        return select
    return "WITH " + ",\n".join(c.render() for c in ctes) + "\n" + select
