"""What a plan needs of DuckDB's ``memory_limit``, checked before its kernel runs.

DuckDB spills what it can (sorts, hash joins, aggregates) to its temporary directory, but
every plan has a floor it cannot spill below: the packed lists the kernels take and
return, the hash tables joining every row back to its group, the many small operators of a
plan, and buffers per thread. Below that floor a plan dies with DuckDB's ``Out of Memory
Error``, after seconds or a minute of work. So every method checks, as soon as it knows
the number of distinct quasi-identifier tuples (before its kernel gets them), that the
limit is at least an estimate of its floor, and otherwise stops with an error naming the
limit, a limit that fits, and the methods and thread count that fit the one set.

The estimate of a floor is ``COVER · bound · (1 + THREADS · log2 threads)``: ``bound``
(:data:`FLOORS`) is linear in the quasi-identifiers ``m``, the rows, the distinct tuples
and the leaves of the QIs' hierarchies, fitted under the floors measured with ``SET
threads = 1`` on generated census tables of 20,000 to 2,000,000 rows, 16 uniform QIs,
power-law categories and 1M rows of independent high-cardinality columns; ``COVER``
lifts it over every one of them, the thread term over those measured at 2, 4 and 16
threads (benches/README.md). An estimate above the floor refuses some limits a plan would
have fitted in; shapes far from those measured may still meet DuckDB's error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kanon.sql.cte import Cte, internal
from kanon.sql.quote import ident, literal

if TYPE_CHECKING:
    from kanon.plan.coding import Coded
    from kanon.plan.hierarchies import QuasiIdentifier

__all__ = ["COVER", "FLOORS", "LIMIT_BYTES", "MB", "OK", "THREADS", "Floor", "memory_guard"]

#: The column of :func:`memory_guard`'s one row, quoted.
OK = ident(internal("ok"))

#: The unit of the bounds and messages: DuckDB's ``MB`` (``SET memory_limit = '200MB'``).
MB = 1_000_000

#: The largest lattice ``optimal`` searches (``kanon-core``'s ``lattice::MAX_NODES``).
MAX_NODES = 1 << 26

#: How many times its bound a floor measured at one thread is at most (1.37).
COVER = 1.4

#: A plan's floor grows with DuckDB's threads: by at most this share of the floor at one
#: thread per doubling of them (measured at 2, 4 and 16 threads: 0.04 to 0.28).
THREADS = 0.3


@dataclass(frozen=True)
class Floor:
    """A lower bound of a plan's memory floor at one thread, in bytes.

    ``(base_mb + qi_mb · m) MB + row_bytes · rows + tuple_bytes · m · tuples +
    value_bytes · values + node_bytes · nodes``, ``values`` the leaves of the QIs'
    hierarchies together, ``nodes`` their lattice's (the product of heights + 1).
    """

    base_mb: float
    qi_mb: float
    row_bytes: float
    tuple_bytes: float
    value_bytes: float
    node_bytes: float = 0.0

    def bytes_sql(self, m: int, rows: int, nodes: int, tuples: str, values: str) -> str:
        """SQL (a DOUBLE) of the bound (``tuples``, ``values``: SQL)."""
        fixed = (self.base_mb + self.qi_mb * m) * MB + self.row_bytes * rows
        fixed += self.node_bytes * nodes
        return (
            f"({literal(float(fixed))} + {literal(float(self.tuple_bytes * m))} * {tuples} + "
            f"{literal(float(self.value_bytes))} * {values})"
        )


_FOREST = Floor(base_mb=20, qi_mb=7, row_bytes=80, tuple_bytes=16, value_bytes=700)
_HISTORIC = Floor(base_mb=30, qi_mb=4, row_bytes=70, tuple_bytes=34, value_bytes=260)
#: ``iterated`` and ``priority`` refuse the uniform shape's lattice: their value term is
#: ``optimal``'s, not measured.
_GREEDY_VALUE = 470

#: Per method (or kernel the methods share), the lower bound of its floor at one thread
#: (module docs; benches/README.md).
FLOORS: dict[str, Floor] = {
    "forest": _FOREST,
    "forest_paper": _FOREST,
    "mondrian": Floor(base_mb=20, qi_mb=8, row_bytes=10, tuple_bytes=14, value_bytes=300),
    "iterated": Floor(50, 4, row_bytes=45, tuple_bytes=8, value_bytes=_GREEDY_VALUE),
    "priority": Floor(50, 4, row_bytes=50, tuple_bytes=8, value_bytes=_GREEDY_VALUE),
    "optimal": Floor(20, 4, row_bytes=40, tuple_bytes=0, value_bytes=470, node_bytes=50),
    "historic": _HISTORIC,  # the algorithms of kanon_historic (datafly, mu_argus)
}

_UNITS = {
    "bytes": "1",
    "KiB": "1024.0",
    "MiB": "1048576.0",
    "GiB": "1073741824.0",
    "TiB": "1099511627776.0",
    "PiB": "1125899906842624.0",
}

#: SQL of DuckDB's memory limit in bytes (a DOUBLE; NULL if its text is not understood,
#: and then nothing is checked). DuckDB folds ``current_setting`` while planning.
LIMIT_BYTES = (
    "(TRY_CAST(regexp_extract(current_setting('memory_limit'), '^([0-9.]+) ', 1) AS DOUBLE) * "
    "CASE regexp_extract(current_setting('memory_limit'), ' ([A-Za-z]+)$', 1) "
    + " ".join(f"WHEN '{unit}' THEN {factor}" for unit, factor in _UNITS.items())
    + " END)"
)

#: SQL of the growth of a floor with DuckDB's threads (1 at one thread).
_SPREAD = f"(1 + {THREADS} * log2(greatest(CAST(current_setting('threads') AS DOUBLE), 1)))"


def _mb(expr: str) -> str:
    """SQL of ``expr`` bytes in whole MB, rounded up, as text."""
    return f"CAST(CAST(ceil({expr} / {MB}) AS BIGINT) AS VARCHAR)"


def memory_guard(
    method: str,
    alternatives: tuple[str, ...],
    qis: list[QuasiIdentifier],
    rows: int,
    coded: Coded,
    floor: str | None = None,
) -> Cte:
    """One row, :data:`OK`: true, or an error when ``memory_limit`` is below the plan's floor.

    ``method`` names the call's method, ``floor`` its key of :data:`FLOORS` (default
    ``method``); ``coded`` holds the
    plan's distinct tuples and its ``qis``' coded hierarchies. The error names the
    estimate, the limit, a limit that fits (10 % above the estimate, in whole MB), one
    thread where more are set and it fits, and those of ``alternatives`` (keys of
    :data:`FLOORS`) that fit.
    """
    n, v, lim, spread = "__kanon_n", "__kanon_v", "__kanon_limit", "__kanon_spread"
    m, nodes = len(qis), math.prod(q.height + 1 for q in qis)
    if nodes > MAX_NODES:  # the search refuses such a lattice with its own error
        nodes = 0

    def need(name: str, threads: str = spread) -> str:
        return f"{COVER} * {threads} * {FLOORS[name].bytes_sql(m, rows, nodes, n, v)}"

    own = floor or method

    fits = [
        f"CASE WHEN {lim} >= {need(other)} THEN "
        f"{literal(f'method := {other!r} (which needs about ')} || {_mb(need(other))} || "
        "' MB)' END"
        for other in alternatives
    ]
    one_thread = (
        f"CASE WHEN {spread} > 1 AND {lim} >= {need(own, '1')} THEN "
        f"'SET threads = 1 (which needs about ' || {_mb(need(own, '1'))} || ' MB)' END"
    )
    others = f"concat_ws(', ', {', '.join([one_thread, *fits])})"
    message = " || ".join(
        [
            literal(f"method := {method!r} needs about "),
            _mb(need(own)),
            literal(f" MB of DuckDB memory for these {rows} rows of {m} quasi-identifier(s) ("),
            f"CAST({n} AS VARCHAR)",
            literal(" distinct tuples) at threads = "),
            "current_setting('threads')::VARCHAR",
            literal(", more than memory_limit = "),
            "current_setting('memory_limit')",
            literal(": raise the limit (SET memory_limit = '"),
            _mb(f"1.1 * {need(own)}"),
            literal("MB')"),
            f"CASE WHEN {others} = '' THEN '' ELSE ', or ' || {others} END",
        ]
    )
    values = " + ".join(f"(SELECT count(*) FROM {c.ref})" for c in coded.values[:m])
    return Cte(
        internal("memory"),
        f"SELECT CASE WHEN {lim} < {need(own)} THEN error({message}) ELSE true END "
        f"AS {OK} FROM (SELECT count(*) AS {n}, {values} AS {v}, {LIMIT_BYTES} AS {lim}, "
        f"{_SPREAD} AS {spread} FROM {coded.tuples.ref})",
        (OK,),
    )
