"""Large tables cut in SQL into packs, one kernel call each (the local recodings' step 2).

Each round cuts the blocks above the pack size by Mondrian's rule: on the attribute of
widest normalized range (over the table's span) whose median cut (``x <= median``, or
else ``x < median``) leaves at least ``k`` rows on both sides. The
cuts are chosen on a sample of the tuples (every tuple up to :data:`SAMPLE_TUPLES` per
pack: then the cuts are exact), its counts scaled to the table's; the tuples are then
sent down the rounds' cuts in one streaming pass, and a pack left below ``k`` rows
joins the largest. Packs only bound the kernels' inputs: any pack of at least ``k`` rows
is anonymized on its own, so a sampled cut costs utility at most, never privacy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kanon.plan.coding import Coded, code_column
from kanon.plan.release.memory import OK
from kanon.sql.cte import Cte, internal

__all__ = ["LIST_PARTS", "PACK_PARAMETERS", "SAMPLE_TUPLES", "Packs", "pack_ctes", "rounds_for"]

#: The kernel parameters of a pack: per quasi-identifier the leaf code of every tuple,
#: the tuples' counts and numbers ``ts`` (in one order the kernels do not rely on: they
#: read the tuples in order of ts).
PACK_PARAMETERS = (("tuples", "UINTEGER[][]"), ("counts", "UBIGINT[]"), ("ts", "UBIGINT[]"))

#: Tuples sampled per pack the rounds make (2^rounds of them): the last round's medians
#: come from about this many tuples per block.
SAMPLE_TUPLES = 1 << 12

#: The packs' lists are built in at most this many parts (a scan of the tuples each).
LIST_PARTS = 16


def rounds_for(rows: int, pack_rows: int) -> int:
    """SQL cutting rounds that bring ``rows`` to packs of about ``pack_rows`` rows."""
    if rows <= pack_rows:
        return 0
    return math.ceil(math.log2(rows / pack_rows)) + 1


@dataclass(frozen=True)
class Packs:
    """The CTEs cutting the tuples into packs, and the two the kernels' plans read."""

    ctes: list[Cte]
    blocks: Cte  # every tuple with its pack b and keys x{j}
    packs: Cte  # one row per pack b: tuples (codes per QI), counts, ts (numbers t)


def pack_ctes(
    coded: Coded, keys: list[Cte], k: int, rounds: int, pack_rows: int, guard: Cte
) -> Packs:
    """CTEs cutting the tuples into packs of at most about ``pack_rows`` rows.

    The packs hold ``b`` (the pack), ``tuples`` (per QI the code of each of its tuples),
    ``counts`` and ``ts`` (their numbers ``t``), all in one order, not fixed. ``guard``
    (:func:`kanon.plan.release.memory.memory_guard`) is read before any tuple is packed: its
    error stops the query there.
    """
    m = len(keys)
    joins = " ".join(
        f"JOIN {key.ref} k{j} ON k{j}.a0 = t.{code_column(j)}" for j, key in enumerate(keys)
    )
    keyed = ", ".join(f"k{j}.x AS x{j}" for j in range(m))
    blocks = Cte(
        internal("blocks"),
        f"SELECT t.*, 0::UBIGINT AS b, {keyed} FROM {coded.tuples.ref} t {joins} "
        f"WHERE (SELECT {OK} FROM {guard.ref})",
    )
    ctes = [guard, blocks]
    if rounds:
        cuts, sampled = _sampled_cuts(blocks, keys, k, rounds, pack_rows)
        ctes += cuts
        full = blocks
        for i, cut in enumerate(sampled):
            full = _cut(internal(f"sent{i + 1}"), full, cut, m)
            ctes.append(full)
        sizes, blocks = _joined_to_largest(full, k)
        ctes += [sizes, blocks]
    # One list per QI, unordered (an ordered aggregate buffers and sorts every list): one
    # aggregate gives a pack's lists one order, and the kernels read the tuples in order
    # of t. The packs are listed in parts, one aggregate each, so that each part reaches
    # the kernel on its own.
    code_lists = ", ".join(f"list({code_column(j)})" for j in range(m))
    listed = (
        f"SELECT b, [{code_lists}] AS tuples, list(n) AS counts, list(t) AS ts FROM {blocks.ref}"
    )
    parts = min(1 << rounds, LIST_PARTS)
    packs = Cte(
        internal("packs"),
        " UNION ALL ".join(
            f"{listed} {f'WHERE b % {parts} = {i} ' if parts > 1 else ''}GROUP BY b"
            for i in range(parts)
        ),
        ("b", "tuples", "counts", "ts"),
    )
    return Packs([*ctes, packs], blocks, packs)


def _sampled_cuts(
    blocks: Cte, keys: list[Cte], k: int, rounds: int, pack_rows: int
) -> tuple[list[Cte], list[Cte]]:
    """The rounds' CTEs on the sample, and the cuts ``(b, j, cut, inclusive)`` of each.

    The sample: the tuples whose hash of ``t`` is a multiple of ``stride`` (deterministic;
    every tuple when there are at most ``SAMPLE_TUPLES << rounds``); its
    counts ``n`` are scaled by the table's rows over the sample's.
    """
    m = len(keys)
    xs = [f"x{j}" for j in range(m)]
    size = SAMPLE_TUPLES << rounds
    totals = Cte(
        internal("totals"),
        f"SELECT greatest(count(*) // {size}, 1)::UBIGINT AS stride, sum(n)::DOUBLE AS rows "
        f"FROM {blocks.ref}",
        ("stride", "rows"),
    )
    picked = Cte(
        internal("picked"),
        f"SELECT * FROM {blocks.ref} WHERE hash(t) % (SELECT stride FROM {totals.ref}) = 0",
    )
    sample = Cte(
        internal("sample0"),
        f"SELECT s.* EXCLUDE (n), s.n * w.scale AS n FROM {picked.ref} s CROSS JOIN "
        f"(SELECT (SELECT rows FROM {totals.ref}) / sum(n) AS scale FROM {picked.ref}) w",
    )
    spans = ", ".join(f"(SELECT max(x) - min(x) FROM {key.ref})" for key in keys)
    span = Cte(internal("spans"), f"SELECT [{spans}] AS span", ("span",))
    ctes, cuts = [totals, picked, sample, span], []
    lo = ", ".join(f"min({x})" for x in xs)
    hi = ", ".join(f"max({x})" for x in xs)
    for i in range(rounds):
        src = sample.ref
        large = Cte(
            internal(f"large{i}"),
            f"SELECT b, sum(n) AS rows, [{lo}] AS lo, [{hi}] AS hi "
            f"FROM {src} GROUP BY b HAVING sum(n) > {pack_rows}",
            ("b", "rows", "lo", "hi"),
        )
        # The median of every attribute (as quantile_disc: the value at position
        # floor((tuples - 1) / 2)) from a histogram of its keys per block: hash
        # aggregates spill to disk, quantile_disc's state does not.
        counts = " UNION ALL ".join(
            f"SELECT b, {j} AS j, {x} AS x, count(*) AS c FROM {src} "
            f"WHERE b IN (SELECT b FROM {large.ref}) GROUP BY b, {x}"
            for j, x in enumerate(xs)
        )
        medians = Cte(
            internal(f"medians{i}"),
            f"SELECT q.*, m.med FROM {large.ref} q JOIN ("
            "SELECT b, list(x ORDER BY j) AS med FROM (SELECT b, j, x, c, "
            "sum(c) OVER (PARTITION BY b, j ORDER BY x ROWS UNBOUNDED PRECEDING) AS upto, "
            f"sum(c) OVER (PARTITION BY b, j) AS total FROM ({counts})) "
            "WHERE upto - c <= (total - 1) // 2 AND (total - 1) // 2 < upto GROUP BY b"
            ") m USING (b)",
            ("b", "rows", "lo", "hi", "med"),
        )
        le = ", ".join(
            f"coalesce(sum(s.n) FILTER (WHERE s.{x} <= q.med[{j + 1}]), 0)"
            for j, x in enumerate(xs)
        )
        lt = ", ".join(
            f"coalesce(sum(s.n) FILTER (WHERE s.{x} < q.med[{j + 1}]), 0)" for j, x in enumerate(xs)
        )
        sides = Cte(
            internal(f"sides{i}"),
            "SELECT s.b, any_value(q.rows) AS rows, any_value(q.lo) AS lo, "
            f"any_value(q.hi) AS hi, any_value(q.med) AS med, [{le}] AS le, [{lt}] AS lt "
            f"FROM {src} s JOIN {medians.ref} q USING (b) GROUP BY s.b",
            ("b", "rows", "lo", "hi", "med", "le", "lt"),
        )
        # Per attribute: the cut's side sizes, whether it is allowed, and its score (the
        # normalized range; -1 when not allowed). The chosen attribute is the first best.
        ok_le = [f"(w.le[{j}] >= {k} AND w.rows - w.le[{j}] >= {k})" for j in range(1, m + 1)]
        ok_lt = [f"(w.lt[{j}] >= {k} AND w.rows - w.lt[{j}] >= {k})" for j in range(1, m + 1)]
        scores = ", ".join(
            f"CASE WHEN sp.span[{j}] > 0 AND w.hi[{j}] > w.lo[{j}] AND ({ok_le[j - 1]} OR "
            f"{ok_lt[j - 1]}) THEN (w.hi[{j}] - w.lo[{j}]) / sp.span[{j}] ELSE -1.0 END"
            for j in range(1, m + 1)
        )
        # Of the two sides of the median value, the allowed one closer to half.
        inclusive = ", ".join(
            f"{ok_le[j - 1]} AND (NOT {ok_lt[j - 1]} OR "
            f"abs(2 * w.le[{j}] - w.rows) <= abs(2 * w.lt[{j}] - w.rows))"
            for j in range(1, m + 1)
        )
        cut = Cte(
            internal(f"cuts{i}"),
            "SELECT b, j, med[j] AS cut, inc[j] AS inclusive FROM ("
            f"SELECT w.b, w.med, [{inclusive}] AS inc, [{scores}] AS sc, "
            "list_position(sc, list_max(sc)) AS j "
            f"FROM {sides.ref} w CROSS JOIN {span.ref} sp) WHERE sc[j] >= 0",
            ("b", "j", "cut", "inclusive"),
        )
        cuts.append(cut)
        ctes += [large, medians, sides, cut]
        if i + 1 < rounds:
            sample = _cut(internal(f"sample{i + 1}"), sample, cut, m)
            ctes.append(sample)
    return ctes, cuts


def _cut(name: str, src: Cte, cuts: Cte, m: int) -> Cte:
    """``src``'s tuples with block ``b`` replaced by the side of its cut in ``cuts``.

    Block ``b`` becomes ``2b`` or ``2b + 1`` (the side above the cut); an uncut block ``2b``.
    """
    x_of = "CASE z.j " + " ".join(f"WHEN {j + 1} THEN s.x{j}" for j in range(m)) + " END"
    return Cte(
        name,
        "SELECT s.* EXCLUDE (b), s.b * 2 + CASE WHEN z.j IS NULL "
        f"THEN 0 WHEN {x_of} > z.cut OR (NOT z.inclusive AND {x_of} = z.cut) THEN 1 "
        f"ELSE 0 END AS b FROM {src.ref} s LEFT JOIN {cuts.ref} z ON z.b = s.b",
    )


def _joined_to_largest(blocks: Cte, k: int) -> tuple[Cte, Cte]:
    """``blocks`` with every block below ``k`` rows moved into the largest block.

    Cuts chosen on a sample may leave a side below ``k`` rows; exact cuts never do.
    """
    sizes = Cte(internal("sizes"), f"SELECT b, sum(n) AS rows FROM {blocks.ref} GROUP BY b")
    largest = f"(SELECT b FROM {sizes.ref} ORDER BY rows DESC, b LIMIT 1)"
    packed = Cte(
        internal("packed"),
        f"SELECT s.* EXCLUDE (b), CASE WHEN z.rows < {k} THEN {largest} ELSE s.b END AS b "
        f"FROM {blocks.ref} s JOIN {sizes.ref} z USING (b)",
    )
    return sizes, packed
