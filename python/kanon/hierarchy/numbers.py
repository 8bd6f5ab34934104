"""Interval hierarchies of numbers and the default hierarchy of every type."""

from __future__ import annotations

import json
import math
from decimal import Context, Decimal
from typing import TYPE_CHECKING, Any

from kanon.exceptions import InvalidInputError
from kanon.hierarchy.base import (
    CODE_PREFIX,
    DATE_LEVELS,
    ROOT,
    Hierarchy,
    _agg,
    _chunk_tree_sql,
    _create,
    _dates_sql,
    _is_int,
    _is_number,
    _leaf,
    _leaves_sql,
    _level_cols,
    _num,
    _prepare,
    _source_column,
    _suppress_sql,
    leaves_from,
    value_text,
)
from kanon.sql.quote import ident, literal
from kanon.sql.types import DATE_TYPES, FLOAT_TYPES, INT_TYPES

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import duckdb


# The Go library's FloatRange compares bounds with this absolute tolerance; a float
# range no wider than it is not split any further.
_FLOAT_DELTA = 1e-5
# Binary splits deeper than this are refused (a range that needs more levels than a
# BIGINT has bits is better served by fixed-width intervals).
_MAX_SPLIT_LEVELS = 64
# Decimal arithmetic without rounding for DECIMAL(38) values (the default context keeps
# 28 digits).
_EXACT = Context(prec=100)


def intervals(
    con: duckdb.DuckDBPyConnection,
    name: str,
    *,
    table: str,
    column: str,
    width: float | None = None,
    fanout: int = 2,
    min: float | None = None,
    max: float | None = None,
) -> Hierarchy:
    """Build a hierarchy of nested intervals over a numeric column.

    **Fixed width** (``width`` given): level 1 is the interval ``[lo, lo + width)``
    containing the value, with boundaries aligned at ``min``; level ``i + 1`` merges
    ``fanout`` consecutive intervals of level ``i`` (aligned at ``min`` as well), up to
    the first level whose single interval covers ``[min, max]``; then a final ``'*'``.
    Labels read ``'[20..29]'``, the integers from 20 to 29 (``'[20]'`` for one), when the
    column, ``width`` and ``min`` are integers, as the default hierarchies and range
    labels write integers; otherwise ``'[20.5..30.5)'``, half-open, in DuckDB's
    ``DOUBLE`` text.

    **Binary splits** (no ``width``): the Go library's ``RangeGeneralizer`` (thesis
    §3.4.5, Figure 3.5). The root is ``[min, max]``; a range is split at its median
    into two children and the splits go on until a range cannot be split. For
    integers, ``[a..b]`` splits into ``[a .. a+c-1]`` and ``[a+c .. b]`` with
    ``c = (b - a + 1) // 2`` (ranges of one value stop) and there are
    ``L = ceil(log2(max - min + 1))`` levels; for floats, ``[a..b]`` splits at
    ``m = a + (b - a) / 2`` into ``[a..m]`` and ``[m..b]`` (the midpoint belongs to the
    left half), a range no wider than ``1e-5`` stops (so does one with no double
    between its bounds, where Go would loop forever), and ``L`` is the number of
    splits of the upper half until that happens. Level ``L`` is the root, level
    ``L - 1`` the two halves, and so on: level ``n`` of a value is its ancestor
    ``L - n`` splits below the root, or its smallest range if that is reached sooner.
    Labels are the Go library's, ``'[a..b]'`` / ``'[a]'``, for integers, and with six
    decimals (``%f``) for floats (where Go writes ``(a..b)``: kanon writes every interval
    as ``[lo..hi]``). There is no ``'*'``
    level: the root range is the single top label, as in Go.

    Args:
        con: The DuckDB connection.
        name: The table to create (replaced if it exists).
        table: The source table.
        column: An integer, floating-point or decimal column.
        width: The width of the level-1 intervals (> 0), or ``None`` for binary splits.
        fanout: How many intervals of one level make one of the next (≥ 2; fixed
            width only).
        min: Lower end of the domain (default: the column's minimum; must not exceed
            it).
        max: Upper end of the domain (default: the column's maximum; must not be
            below it).

    Returns:
        The hierarchy.

    Raises:
        ConfigError: The table or column does not exist.
        InvalidInputError: A parameter is malformed or does not cover the data, the
            column is not numeric, holds NaN or infinity, or has no non-NULL value, or
            the requested hierarchy would need more than 64 levels.
    """
    lo_arg, hi_arg = min, max
    for label, value in (("min", lo_arg), ("max", hi_arg), ("width", width)):
        if value is not None and (not _is_number(value) or not math.isfinite(value)):
            msg = f"{label} must be a finite number or None, got {value!r}"
            raise InvalidInputError(msg)
    if width is not None and width <= 0:
        msg = f"width must be positive, got {width!r}"
        raise InvalidInputError(msg)
    if not _is_int(fanout) or fanout < 2:
        msg = f"fanout must be an integer of at least 2, got {fanout!r}"
        raise InvalidInputError(msg)
    if width is None and fanout != 2:
        msg = "fanout applies to fixed-width intervals only; pass width= or leave fanout at 2"
        raise InvalidInputError(msg)
    col, typ = _source_column(con, table, column)
    is_int = typ in INT_TYPES
    if not (is_int or typ in FLOAT_TYPES or typ.startswith("DECIMAL")):
        msg = f"intervals() needs a numeric column; {col!r} of table {table!r} is {typ}"
        raise InvalidInputError(msg)
    col, typ, _ = _prepare(con, name, table, column)
    leaves = _leaves_sql(table, col, typ)
    if is_int:
        row = _agg(con, f"SELECT min(v), max(v) FROM ({leaves})")
    else:
        row = _agg(
            con,
            f"SELECT min(CAST(v AS DOUBLE)), max(CAST(v AS DOUBLE)), "
            f"count(*) FILTER (WHERE NOT isfinite(CAST(v AS DOUBLE))) FROM ({leaves})",
        )
        if row[2]:
            msg = f"column {col!r} of table {table!r} holds NaN or infinite values"
            raise InvalidInputError(msg)
    data_lo, data_hi = row[0], row[1]
    lo = data_lo if lo_arg is None else lo_arg
    hi = data_hi if hi_arg is None else hi_arg
    if lo > data_lo:
        msg = f"min={lo_arg!r} is above the smallest value {data_lo!r} of column {col!r}"
        raise InvalidInputError(msg)
    if hi < data_hi:
        msg = f"max={hi_arg!r} is below the largest value {data_hi!r} of column {col!r}"
        raise InvalidInputError(msg)
    if width is None:
        if is_int and _is_int(lo) and _is_int(hi):
            select = _binary_int_sql(leaves, int(lo), int(hi))
        else:
            select = _binary_float_sql(leaves, float(lo), float(hi))
    elif is_int and _is_int(width) and _is_int(lo):
        select = _fixed_int_sql(leaves, int(lo), int(hi), int(width), fanout)
    else:
        select = _fixed_float_sql(leaves, float(lo), float(hi), float(width), fanout)
    return _create(con, name, select, table=table, column=column)


def _too_deep(levels_needed: int) -> InvalidInputError:
    return InvalidInputError(
        f"this interval hierarchy would need {levels_needed} levels (more than "
        f"{_MAX_SPLIT_LEVELS}); use a larger width, a larger fanout or a smaller range"
    )


def _fixed_levels(buckets: int, fanout: int) -> int:
    """Interval levels until one interval covers buckets ``0 … buckets``."""
    count = 1
    while buckets // fanout ** (count - 1) > 0:
        count += 1
    return count


def _int_type(*bounds: int) -> str:
    """The narrowest of BIGINT, HUGEINT, UHUGEINT whose range holds the bounds with room.

    The room (``2**64`` short of the type's limits) is what the splits of a range of at
    most ``2**64`` integers add to its bounds.
    """
    if all(abs(b) < 2**61 for b in bounds):
        return "BIGINT"
    if all(abs(b) < 2**127 - 2**65 for b in bounds) or any(b < 0 for b in bounds):
        return "HUGEINT"
    return "UHUGEINT"


def _int_lit(value: int, cast: str) -> str:
    """An exact integer literal of type ``cast`` (a bare literal above HUGEINT is a DOUBLE)."""
    return f"CAST('{int(value)}' AS {cast})"


def _fixed_int_sql(leaves: str, lo: int, hi: int, width: int, fanout: int) -> str:
    count = _fixed_levels((hi - lo) // width, fanout)
    if count + 1 > _MAX_SPLIT_LEVELS:
        raise _too_deep(count + 1)
    top_step = width * fanout ** (count - 1)
    # The largest intermediate value: differences from lo (signed) or the last end.
    reach = 2 * top_step + (abs(lo) + abs(hi) if lo < 0 else hi)
    if reach >= (2**127 if lo < 0 else 2**128):
        msg = (
            f"intervals of width {width} over [{lo}, {hi}] end beyond the largest integer "
            "type; use a smaller width or fanout"
        )
        raise InvalidInputError(msg)
    cast = _int_type(lo, hi, reach)
    exprs = ["v"]
    for j in range(1, count + 1):
        step = width * fanout ** (j - 1)
        low, size = _int_lit(lo, cast), _int_lit(step, cast)
        start = f"({low} + (CAST(v AS {cast}) - {low}) // {size} * {size})"
        # Closed, as the default hierarchies and range labels write integers: [30..34].
        last = f"CAST({start} + {size} - 1 AS VARCHAR)"
        exprs.append(
            f"'[' || CAST({start} AS VARCHAR) || "
            + ("']'" if step == 1 else f"'..' || {last} || ']'")
        )
    exprs.append(literal(ROOT))
    return f"SELECT {_level_cols(exprs)} FROM ({leaves}) ORDER BY 1"


def _fixed_float_sql(leaves: str, lo: float, hi: float, width: float, fanout: int) -> str:
    buckets = math.floor((hi - lo) / width)
    if buckets > 2**53:
        msg = (
            f"width={width!r} cuts [{lo!r}, {hi!r}] into more than 2**53 intervals; "
            "use a larger width"
        )
        raise InvalidInputError(msg)
    count = _fixed_levels(buckets, fanout)
    if count + 1 > _MAX_SPLIT_LEVELS:
        raise _too_deep(count + 1)
    bucket = f"CAST(floor((CAST(v AS DOUBLE) - {_num(lo)}) / {_num(width)}) AS BIGINT)"
    exprs = ["v"]
    for j in range(1, count + 1):
        size = fanout ** (j - 1)
        step = _num(width * size)
        idx = f"({bucket} // {size})"
        exprs.append(
            f"'[' || CAST({_num(lo)} + {idx} * {step} AS VARCHAR) || '..' "
            f"|| CAST({_num(lo)} + ({idx} + 1) * {step} AS VARCHAR) || ')'"
        )
    exprs.append(literal(ROOT))
    return f"SELECT {_level_cols(exprs)} FROM ({leaves}) ORDER BY 1"


def _float_splits(lo: float, hi: float) -> int:
    """Go's ``FloatRange.MaxSplit``: splits of the upper half until it is ≤ 1e-5 wide."""
    count = 0
    while abs(hi - lo) > _FLOAT_DELTA:
        mid = lo + (hi - lo) / 2
        if mid == lo:  # no double between the bounds (Go would loop forever here)
            break
        lo = mid
        count += 1
        if count > _MAX_SPLIT_LEVELS:
            raise _too_deep(count)
    return count


def _binary_sql(leaves: str, recursion: str, splits: int, label: str) -> str:
    """Pivot the split paths into one row per value.

    Level ``n`` is the node ``splits - n`` below the root, or the value's smallest
    range where that is reached sooner (Go pads the path with it).
    """
    exprs = ["v"]
    exprs += [
        f"labels[greatest(0, least({splits - n}, len(labels) - 1)) + 1]"
        for n in range(1, max(splits, 1) + 1)
    ]
    return f"""
        WITH RECURSIVE
        t(v, depth, a, b) AS ({recursion}),
        paths AS (
            SELECT v, list({label} ORDER BY depth) AS labels FROM t GROUP BY v
        )
        SELECT {_level_cols(exprs)} FROM paths ORDER BY 1
    """


def _binary_int_sql(leaves: str, lo: int, hi: int, scale: int = 0) -> str:
    """Go's integer binary splits of ``[lo, hi]``, in exact integer arithmetic.

    With ``scale`` > 0 the leaves are decimals of that scale and ``lo``, ``hi`` their
    unscaled integers (value * 10**scale): the splits run over the decimal's own grid
    and the labels print the bounds as the decimal's text.
    """
    splits = (hi - lo).bit_length()  # ceil(log2(hi - lo + 1)), Go's IntRange.MaxSplit
    if splits > _MAX_SPLIT_LEVELS:
        raise _too_deep(splits)
    cast = _int_type(lo, hi, hi - lo + 1)
    if scale:
        # The decimal's text without its point is its unscaled integer, exactly.
        x = f"CAST(replace(CAST(v AS VARCHAR), '.', '') AS {cast})"
        unit = _int_lit(10**scale, "HUGEINT")

        def text(e: str) -> str:
            return (
                f"(CASE WHEN {e} < 0 THEN '-' ELSE '' END || CAST(abs({e}) // {unit} AS VARCHAR) "
                f"|| '.' || lpad(CAST(abs({e}) % {unit} AS VARCHAR), {scale}, '0'))"
            )

        a_text, b_text = text("a"), text("b")
    else:
        x = f"CAST(v AS {cast})"
        a_text, b_text = "a", "b"
    cut = "a + (b - a + 1) // 2"
    label = (
        f"CASE WHEN a = b THEN '[' || {a_text} || ']' "
        f"ELSE '[' || {a_text} || '..' || {b_text} || ']' END"
    )
    recursion = f"""
        SELECT v, 0, {_int_lit(lo, cast)}, {_int_lit(hi, cast)}
        FROM ({leaves})
        UNION ALL
        SELECT v, depth + 1,
               CASE WHEN {x} < {cut} THEN a ELSE {cut} END,
               CASE WHEN {x} < {cut} THEN {cut} - 1 ELSE b END
        FROM t WHERE a < b AND depth < {splits}
    """
    return _binary_sql(leaves, recursion, splits, label)


def _binary_float_sql(leaves: str, lo: float, hi: float, *, exact: bool = False) -> str:
    """Go's float binary splits of ``[lo, hi]``.

    Labels print their bounds with six decimals (``%f``, as Go), or with ``exact`` as
    the shortest text that reads back as the same double, so that a label's range
    holds its values whatever their digits.
    """
    if not math.isfinite(hi - lo):
        msg = f"the range [{lo!r}, {hi!r}] is too wide for binary splits; pass width="
        raise InvalidInputError(msg)
    splits = _float_splits(lo, hi)
    x = "CAST(v AS DOUBLE)"
    mid = "(a + (b - a) / 2)"
    delta = literal(_FLOAT_DELTA)
    a, b = (
        ("CAST(a AS VARCHAR)", "CAST(b AS VARCHAR)")
        if exact
        else ("printf('%f', a)", "printf('%f', b)")
    )
    label = (
        # Go names a range no wider than the tolerance by its lower bound; exact labels
        # do so only for a single value.
        f"CASE WHEN {'a = b' if exact else f'abs(b - a) <= {delta}'} THEN '[' || {a} || ']' "
        f"ELSE '[' || {a} || '..' || {b} || ']' END"
    )
    recursion = f"""
        SELECT v, 0, CAST({_num(lo)} AS DOUBLE), CAST({_num(hi)} AS DOUBLE)
        FROM ({leaves})
        UNION ALL
        SELECT v, depth + 1,
               CASE WHEN {x} <= {mid} THEN a ELSE {mid} END,
               CASE WHEN {x} <= {mid} THEN {mid} ELSE b END
        FROM t WHERE abs(b - a) > {delta} AND depth < {splits}
    """
    return _binary_sql(leaves, recursion, splits, label)


def _splits_kernel_sql(
    leaves: str,
    *,
    kernel: str,
    key: str,
    within: str,
    options: dict[str, Any],
    levels: int,
    label: Callable[[str, str], str],
    codes: bool,
) -> str:
    """The binary splits of ``leaves`` by kernel ``kernel`` (one call over every value).

    ``key`` is a leaf's kernel input (an offset from ``lo``, or the double), ``within``
    the condition that a leaf lies in the planned range (the others get no row: the
    coded rows stop on them), ``label(a, b)`` the SQL of a node's label from its bounds.
    The kernel returns every value's rank and node per level as dense codes (by
    position: nothing is sorted in SQL) and every node's bounds; only the nodes are
    labelled, and each value finds its labels by its codes.
    """
    opts = literal(json.dumps(options))
    node_labels = ", ".join(
        f"list_transform(r.lo[{n}], lambda a, i: {label('a', f'r.hi[{n}][i]')}) AS n{n}"
        for n in range(1, levels + 1)
    )
    unnested = ", ".join(f"unnest(r.codes[{n + 1}]) AS c{n}" for n in range(levels + 1))
    exprs = ["u.p.v"] + [f"l.n{n}[u.c{n} + 1]" for n in range(1, levels + 1)]
    cols = _level_cols(exprs)
    if codes:
        cols += ", " + ", ".join(
            f"u.c{n} AS {ident(f'{CODE_PREFIX}{n}')}" for n in range(levels + 1)
        )
    return f"""
        WITH s AS (
            SELECT p, {kernel}(list_transform(p, lambda x: x.k), {opts}) AS r
            FROM (SELECT list({{'v': v, 'k': {key}}}) AS p FROM ({leaves}) WHERE {within})
        ),
        l AS (SELECT {node_labels} FROM s),
        u AS (SELECT unnest(p) AS p, {unnested} FROM s)
        SELECT {cols} FROM u, l
    """


def _int_splits_sql(leaves: str, lo: int, hi: int, scale: int = 0, *, codes: bool = False) -> str:
    """:func:`_binary_int_sql` by the splits kernel (same labels, one row per value)."""
    splits = (hi - lo).bit_length()
    if splits > _MAX_SPLIT_LEVELS:
        raise _too_deep(splits)
    cast = _int_type(lo, hi, hi - lo + 1)
    low, high = _int_lit(lo, cast), _int_lit(hi, cast)
    if scale:
        x = f"CAST(replace(CAST(v AS VARCHAR), '.', '') AS {cast})"
        unit = _int_lit(10**scale, "HUGEINT")

        def text(o: str) -> str:
            e = f"({low} + CAST({o} AS {cast}))"
            return (
                f"(CASE WHEN {e} < 0 THEN '-' ELSE '' END || CAST(abs({e}) // {unit} AS VARCHAR) "
                f"|| '.' || lpad(CAST(abs({e}) % {unit} AS VARCHAR), {scale}, '0'))"
            )

    else:
        x = f"CAST(v AS {cast})"

        def text(o: str) -> str:
            return f"CAST({low} + CAST({o} AS {cast}) AS VARCHAR)"

    return _splits_kernel_sql(
        leaves,
        kernel="kanon_int_splits",
        key=f"CAST({x} - {low} AS UBIGINT)",
        within=f"{x} BETWEEN {low} AND {high}",
        options={"span": hi - lo, "splits": splits},
        levels=max(splits, 1),
        label=lambda a, b: (
            f"CASE WHEN {a} = {b} THEN '[' || {text(a)} || ']' "
            f"ELSE '[' || {text(a)} || '..' || {text(b)} || ']' END"
        ),
        codes=codes,
    )


def _float_splits_sql(leaves: str, lo: float, hi: float, *, codes: bool = False) -> str:
    """:func:`_binary_float_sql` with ``exact`` labels by the splits kernel."""
    if not math.isfinite(hi - lo):
        msg = f"the range [{lo!r}, {hi!r}] is too wide for binary splits; pass width="
        raise InvalidInputError(msg)
    splits = _float_splits(lo, hi)
    x = "CAST(v AS DOUBLE)"

    def text(e: str) -> str:
        return f"CAST({e} AS VARCHAR)"

    return _splits_kernel_sql(
        leaves,
        kernel="kanon_float_splits",
        key=x,
        within=f"{x} BETWEEN {_num(lo)} AND {_num(hi)}",
        options={"lo": lo, "hi": hi, "splits": splits},
        levels=max(splits, 1),
        label=lambda a, b: (
            f"CASE WHEN {a} = {b} THEN '[' || {text(a)} || ']' "
            f"ELSE '[' || {text(a)} || '..' || {text(b)} || ']' END"
        ),
        codes=codes,
    )


def _splits_fit(lo: float, hi: float) -> bool:
    """Whether Go's float splits of ``[lo, hi]`` take at most ``_MAX_SPLIT_LEVELS`` levels."""
    if not math.isfinite(hi - lo):
        return False
    try:
        _float_splits(lo, hi)
    except InvalidInputError:
        return False
    return True


def _ranks_spec(con: duckdb.DuckDBPyConnection, leaves: str) -> dict[str, Any]:
    """The distinct-value splits' spec: enough levels to split the values to singletons."""
    n = int(_agg(con, f"SELECT count(*) FROM ({leaves})")[0])
    depth = 1
    while 2**depth < n:
        depth += 1
    return {"kind": "ranks", "levels": depth}


def _decimal_text(unscaled: int, scale: int) -> str:
    """The exact text of the decimal ``unscaled * 10**-scale`` (no exponent)."""
    return format(Decimal(int(unscaled)).scaleb(-scale, _EXACT), "f")


def _decimal_scale(typ: str) -> int:
    """The scale of a ``DECIMAL(p,s)`` type name."""
    inner = typ[typ.index("(") + 1 : typ.index(")")]
    return int(inner.split(",")[1])


def default_spec(
    con: duckdb.DuckDBPyConnection, source_sql: str, column: str, typ: str
) -> dict[str, Any]:
    """Choose a column's type-based default hierarchy and its parameters.

    Integers get binary interval splits of ``[min, max]`` (``{"kind": "int", "lo", "hi"}``,
    as :func:`intervals` without ``width``), in exact integer arithmetic; decimals the
    same splits over their own grid of ``10**-scale`` steps (``"decimal"``: unscaled
    ``lo``, ``hi`` and the ``scale``; labels ``'[1.50..2.25]'``); floats Go's splits over
    doubles (``"float"``). Where those splits would need more than 64 levels (HUGEINT or
    DECIMAL(38) spans, doubles spanning ±1e308) or a float column holds NaN or ±inf,
    the sorted distinct values are halved level by level instead (``"ranks"``: labels
    ``'[lo..hi]'`` of the values present, in DuckDB's order ``-inf < numbers < inf <
    NaN``, under a root ``'*'``). Dates and timestamps get the calendar levels of
    :func:`dates` (``"dates"``; time zones read in UTC), every other type (and a column
    without values) suppression (``"suppress"``). The result is JSON-serializable;
    :func:`default_select` builds the hierarchy from it for any set of leaves.

    Raises:
        InvalidInputError: A date column holds infinity.
    """
    return default_specs(con, source_sql, [(column, typ)])[0]


def default_specs(
    con: duckdb.DuckDBPyConnection, source_sql: str, columns: Sequence[tuple[str, str]]
) -> list[dict[str, Any]]:
    """:func:`default_spec` of several ``(column, type)`` of one relation, in one query.

    One aggregate pass over ``source_sql`` reads what every column's choice needs; only
    a column falling back to ``"ranks"`` (a rare, huge range) costs a query of its own.

    Raises:
        InvalidInputError: A date column holds infinity.
    """
    aggs: list[str] = []
    slots: list[tuple[int, int]] = []  # per column, where its aggregates start and end
    for column, typ in columns:
        base = typ.split("(")[0]
        c = ident(column)
        v = _leaf(c, typ)
        first = len(aggs)
        if base in INT_TYPES or base == "DECIMAL":
            aggs += [f"min({v})", f"max({v})"]
        elif base in FLOAT_TYPES:
            d = f"CAST({v} AS DOUBLE)"
            aggs += [f"min({d})", f"max({d})", f"count({c}) FILTER (WHERE NOT isfinite({d}))"]
        elif base in DATE_TYPES:
            aggs.append(f"count({c}) FILTER (WHERE NOT isfinite({c}))")
        slots.append((first, len(aggs)))
    row = _agg(con, f"SELECT {', '.join(aggs)} FROM {source_sql}") if aggs else ()
    return [
        _spec_of(con, source_sql, column, typ, row[a:b])
        for (column, typ), (a, b) in zip(columns, slots, strict=True)
    ]


def _spec_of(
    con: duckdb.DuckDBPyConnection,
    source_sql: str,
    column: str,
    typ: str,
    agg: tuple[Any, ...],
) -> dict[str, Any]:
    """A column's default spec from its aggregates (see :func:`default_specs`)."""
    base = typ.split("(")[0]
    if base in INT_TYPES:
        lo, hi = agg
        if lo is None:
            return {"kind": "suppress"}
        if (int(hi) - int(lo)).bit_length() > _MAX_SPLIT_LEVELS:
            return _ranks_spec(con, leaves_from(source_sql, column, typ))
        return {"kind": "int", "lo": int(lo), "hi": int(hi)}
    if base == "DECIMAL":
        lo, hi = agg
        if lo is None:
            return {"kind": "suppress"}
        scale = _decimal_scale(typ)
        ulo, uhi = int(Decimal(lo).scaleb(scale, _EXACT)), int(Decimal(hi).scaleb(scale, _EXACT))
        if (uhi - ulo).bit_length() > _MAX_SPLIT_LEVELS:
            return _ranks_spec(con, leaves_from(source_sql, column, typ))
        return {"kind": "decimal", "lo": ulo, "hi": uhi, "scale": scale}
    if base in FLOAT_TYPES:
        lo, hi, bad = agg
        if lo is None and not bad:
            return {"kind": "suppress"}
        if bad or not _splits_fit(float(lo), float(hi)):
            return _ranks_spec(con, leaves_from(source_sql, column, typ))
        return {"kind": "float", "lo": float(lo), "hi": float(hi)}
    if base in DATE_TYPES:
        if agg[0]:
            msg = f"column {column!r} holds infinite dates, which have no calendar"
            raise InvalidInputError(msg)
        return {"kind": "dates"}
    return {"kind": "suppress"}


def default_select(leaves: str, spec: dict[str, Any], typ: str, *, codes: bool = False) -> str:
    """The SELECT (columns ``level_0`` … ``level_L``) of a default hierarchy over ``leaves``.

    ``leaves`` is SQL selecting distinct non-NULL values of type ``typ`` as column ``v``;
    ``spec`` comes from :func:`default_spec`. Interval hierarchies (built by the
    ``kanon_int_splits`` / ``kanon_float_splits`` kernels, which must be installed on
    the connection) leave out leaves outside ``[lo, hi]`` (see :func:`default_outside`);
    with ``codes`` they, and calendar hierarchies, add columns ``CODE_PREFIX || n`` for
    ``n`` = 0 … L: the leaf's position in value order and its node's dense code (in
    value order) at level ``n``.
    Their rows come in no particular order.
    Use :func:`has_codes` to know whether a spec gets them.

    Raises:
        InvalidInputError: A range is too wide to split.
    """
    kind = spec["kind"]
    if kind == "int":
        return _int_splits_sql(leaves, int(spec["lo"]), int(spec["hi"]), codes=codes)
    if kind == "decimal":
        lo, hi, scale = int(spec["lo"]), int(spec["hi"]), int(spec["scale"])
        return _int_splits_sql(leaves, lo, hi, scale, codes=codes)
    if kind == "float":
        return _float_splits_sql(leaves, float(spec["lo"]), float(spec["hi"]), codes=codes)
    if kind == "ranks":
        return _ranks_sql(leaves, int(spec["levels"]), typ)
    if kind == "dates":
        return _dates_sql(leaves, typ, codes=codes)
    return _suppress_sql(leaves)


def has_codes(spec: dict[str, Any]) -> bool:
    """Whether :func:`default_select` of ``spec`` can add the code columns."""
    return spec["kind"] in ("int", "decimal", "float", "dates")


def coded_levels(spec: dict[str, Any]) -> int:
    """The levels above the leaves of a default with codes (:func:`has_codes`)."""
    if spec["kind"] == "dates":
        return DATE_LEVELS
    if spec["kind"] == "float":
        splits = _float_splits(float(spec["lo"]), float(spec["hi"]))
    else:
        splits = (int(spec["hi"]) - int(spec["lo"])).bit_length()
    return max(splits, 1)


def default_outside(expr: str, spec: dict[str, Any] | None, typ: str) -> str | None:
    """SQL that is true when value ``expr`` lies outside the range a default was planned for.

    ``None`` when the default has no range (its hierarchy is built from whatever values
    there are). Integers and decimals compare exactly, in the column's own type.
    """
    if spec is None:
        return None
    kind = spec["kind"]
    if kind == "int":
        lo, hi = _int_lit(spec["lo"], typ), _int_lit(spec["hi"], typ)
    elif kind == "decimal":
        scale = int(spec["scale"])
        lo = f"CAST('{_decimal_text(spec['lo'], scale)}' AS {typ})"
        hi = f"CAST('{_decimal_text(spec['hi'], scale)}' AS {typ})"
    elif kind == "float":
        x = f"CAST({expr} AS DOUBLE)"
        lo_f, hi_f = float(spec["lo"]), float(spec["hi"])
        return f"({x} < {lo_f!r} OR {x} > {hi_f!r} OR NOT isfinite({x}))"
    else:
        return None
    return f"({expr} < {lo} OR {expr} > {hi})"


def default_range_text(spec: dict[str, Any]) -> str:
    """The planned range of an interval default, for messages (exact)."""
    if spec["kind"] == "decimal":
        scale = int(spec["scale"])
        return f"[{_decimal_text(spec['lo'], scale)}, {_decimal_text(spec['hi'], scale)}]"
    return f"[{spec['lo']!r}, {spec['hi']!r}]"


def _ranks_sql(leaves: str, depth: int, typ: str) -> str:
    """Binary splits of the sorted distinct values: each level halves a node's values.

    The root ``'*'`` holds every value; a node of ``s`` values splits into its first
    ``ceil(s / 2)`` and the rest, ``depth - 1`` times (the bottom nodes hold more than
    one value when there are more than ``2**depth`` values now than when planned). A
    node is labelled ``'[first..last]'`` by its least and greatest value, ``'[v]'``
    when it holds one. The values are ordered as DuckDB orders them (for doubles:
    ``-inf < numbers < inf < NaN``), so every label's range holds its values.
    """
    first, last = value_text("f.v", typ), value_text("l.v", typ)
    return _chunk_tree_sql(leaves, depth, 2, "(SELECT count(*) FROM p)", first, last)


# --------------------------------------------------------------------------- checks
