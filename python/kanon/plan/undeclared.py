"""Undeclared columns must not carry the quasi-identifiers: the check, on the release.

A column with no role is released unchanged only if adding it to the released
quasi-identifiers keeps every class at least k rows (:data:`RULE`): a copy of a QI, a
free-text column repeating them, a hash or a rare category fails, whatever its share of
unique values. The check is plain SQL over the release as published, run by every
statement that releases rows (no result is reused): inside the release's own SQL for
``kanon(...)``, the Python API and the command line (:func:`guarded`), and over the
stored view for ``materialize`` and ``refresh`` (:func:`check_release`). A value held by
fewer than k rows of the source fails whatever the release, so the plan refuses it at
once (:func:`check_source`), before the expensive part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kanon.exceptions import ConfigError
from kanon.plan.catalog import RESERVED_PREFIX
from kanon.sql.quote import ident, literal

if TYPE_CHECKING:
    from collections.abc import Sequence

    import duckdb

__all__ = ["RULE", "check_release", "check_source", "guarded", "reraised"]

#: The rule, as the errors and the docs state it.
RULE = "beside the released quasi-identifiers, every value of the column is shared by k rows"

_RELEASE = '"__kanon_release"'
_FOUND = '"__kanon_carriers"'


def _fixes() -> str:
    return (
        ". Declare their roles: identifiers (released as '*'), qi (generalized with the "
        "others), or sensitive / insensitive (released unchanged, by your decision), with "
        "the arguments identifiers, qi, sensitive, insensitive (command line: --identifiers, "
        "--qi, --sensitive, --insensitive) or kanon.configure; or release undeclared columns "
        "unchanged anyway with keep_undeclared (SQL: keep_undeclared := true; Python: "
        "keep_undeclared=True; command line: --keep-undeclared)"
    )


_MARK = "with no declared role would carry the quasi-identifiers"


def _head(table: str, k: int) -> str:
    # A DataFrame's registered name is kanon's own: "the data" names it for the user.
    where = "the data" if table.lower().startswith(RESERVED_PREFIX) else f"table {table!r}"
    return (
        f"columns of {where} {_MARK}: released unchanged beside them, they make classes "
        f"smaller than k = {k}: "
    )


def reraised(err: Exception) -> Exception:
    """``err`` as the :class:`ConfigError` it is, if :func:`guarded`'s SQL raised it."""
    text = str(err)
    if _MARK not in text:
        return err
    return ConfigError(text[text.index("columns of ") :])


def _carriers(relation: str, qis: Sequence[str], columns: Sequence[str], k: int) -> str:
    """SQL of ``(__kanon_col, __kanon_smallest, __kanon_pos)`` per column that fails.

    One ``GROUP BY`` of the released QIs and the column per column; NULL is a value
    like any other.
    """
    keys = "".join(f"{ident(q)}, " for q in qis)
    probes = [
        f"SELECT {literal(repr(c))} AS __kanon_col, {i} AS __kanon_pos, count(*) AS __kanon_n "
        f"FROM {relation} GROUP BY {keys}{ident(c)}"
        for i, c in enumerate(columns)
    ]
    return (
        "SELECT __kanon_col, min(__kanon_n) AS __kanon_smallest, __kanon_pos "
        f"FROM ({' UNION ALL '.join(probes)}) GROUP BY __kanon_col, __kanon_pos "
        f"HAVING min(__kanon_n) < {int(k)}"
    )


def guarded(sql: str, table: str, qis: Sequence[str], columns: Sequence[str], k: int) -> str:
    """``sql`` (a release of ``table``), stopped with a kanon error if a column fails.

    The release is computed once (a materialized CTE); the query returns its rows
    unchanged when every undeclared column passes, and raises naming each failing
    column, the smallest class it makes and the fixes otherwise. Without columns to
    check, or for k = 1, ``sql`` itself.
    """
    if not columns or k <= 1:
        return sql
    head, fixes = literal(_head(table, k)), literal(_fixes())
    listed = (
        "string_agg(__kanon_col || ' (smallest class: ' || __kanon_smallest || ')', ', ' "
        "ORDER BY __kanon_pos)"
    )
    return (
        f"WITH {_RELEASE} AS MATERIALIZED ({sql}), "
        f"{_FOUND} AS ({_carriers(_RELEASE, qis, columns, k)}), "
        '"__kanon_verdict" AS (SELECT CASE WHEN count(*) > 0 THEN '
        f"error({head} || {listed} || {fixes}) ELSE true END AS __kanon_ok FROM {_FOUND}) "
        f'SELECT {_RELEASE}.* FROM {_RELEASE}, "__kanon_verdict" WHERE "__kanon_verdict".__kanon_ok'
    )


def check_source(
    con: duckdb.DuckDBPyConnection, source: str, table: str, columns: Sequence[str], k: int
) -> None:
    """Raise the kanon error if a column holds a value of fewer than k rows of ``source``.

    Such a value's class in any release that keeps all rows is smaller than k: the
    release's check over the source with no QIs, its classes an upper bound.
    """
    _refuse(con, source, table, (), columns, k, bound="at most ")


def check_release(
    con: duckdb.DuckDBPyConnection,
    relation: str,
    table: str,
    qis: Sequence[str],
    columns: Sequence[str],
    k: int,
) -> None:
    """Raise the kanon error if an undeclared column of ``relation`` (a release) fails.

    ``relation`` is SQL naming the release as stored (a view); ``table`` the source's
    name, for the message.
    """
    _refuse(con, relation, table, qis, columns, k)


def _refuse(
    con: duckdb.DuckDBPyConnection,
    relation: str,
    table: str,
    qis: Sequence[str],
    columns: Sequence[str],
    k: int,
    bound: str = "",
) -> None:
    """Raise the kanon error naming the ``columns`` that fail beside ``qis`` in ``relation``."""
    if not columns or k <= 1:
        return
    found = con.execute(
        f"SELECT __kanon_col, __kanon_smallest FROM ({_carriers(relation, qis, columns, k)}) "
        "ORDER BY __kanon_pos"
    ).fetchall()
    if found:
        listed = ", ".join(f"{c} (smallest class: {bound}{n})" for c, n in found)
        msg = f"{_head(table, k)}{listed}{_fixes()}"
        raise ConfigError(msg)
