"""Labels of a release: hierarchy nodes at a level, observed ranges, the release's columns.

Every method publishes quasi-identifier ``j`` of a row as a label read from its coded
hierarchy ``v{j}`` (:mod:`kanon.plan.coding`): the node at the row's level
(:func:`label_at`, ``'*'`` at the top), or, for the local recodings' ``labels :=
'range'``, the group's observed values (:func:`range_label`). :func:`release_columns`
puts the columns back in the source's order, identifiers as ``'*'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kanon.hierarchy.base import ROOT
from kanon.sql import types as _types
from kanon.sql.quote import ident, literal

if TYPE_CHECKING:
    from collections.abc import Callable

    from kanon.plan.catalog import Table
    from kanon.plan.hierarchies import QuasiIdentifier

__all__ = ["is_ordered", "label_at", "range_label", "release_columns", "uses_range"]


def is_ordered(q: QuasiIdentifier) -> bool:
    """Whether QI ``q`` lies on an axis (numbers and dates): ranges, not sets."""
    return _types.has_position(q.column.type)


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


def range_label(q: QuasiIdentifier, text: str, val: str, n: str) -> str:
    """SQL aggregate of a group's label of QI ``q``, over its rows or its tuples.

    Per row or tuple: ``text``, the value as hierarchy text (NULL for NULL); ``val``, the
    value itself (numbers and dates); ``n``, its rows (``1`` over rows).

    Numbers and dates: ``[lo..hi]``; other types: ``{a, b}`` (sorted as text). One value:
    the value; only NULLs: NULL; NULLs and values: ``'*'``.
    """
    if is_ordered(q):
        # One value iff the texts of the least and the greatest are one (a leaf has one
        # text and one value): no DISTINCT aggregate.
        lo, hi = f"arg_min({text}, {val})", f"arg_max({text}, {val})"
        one, many = f"{lo} = {hi}", f"'[' || {lo} || '..' || {hi} || ']'"
    else:
        one = f"count(DISTINCT {text}) = 1"
        many = f"'{{' || string_agg(DISTINCT {text}, ', ' ORDER BY {text}) || '}}'"
    present = f"coalesce(sum({n}) FILTER (WHERE {text} IS NOT NULL), 0)"
    return (
        f"CASE WHEN {present} = 0 THEN NULL WHEN {present} < sum({n}) THEN {literal(ROOT)} "
        f"WHEN {one} THEN any_value({text}) ELSE {many} END"
    )


def uses_range(q: QuasiIdentifier, labels: str) -> bool:
    """Whether QI ``q`` is labelled by its observed values under ``labels``."""
    return labels == "range" or (labels == "mondrian" and is_ordered(q))
