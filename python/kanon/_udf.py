"""DuckDB adapters: pyarrow columns in, ``kanon._core`` call, pyarrow array out."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kanon import _core
from kanon._arrow import buffer

__all__ = ["STATS_SQL_TYPE", "STATS_TYPE", "class_stats"]

STATS_TYPE = pa.struct(
    [
        ("k", pa.uint64()),
        ("classes", pa.uint64()),
        ("rows", pa.uint64()),
        ("l_distinct", pa.uint64()),
        ("l_entropy", pa.float64()),
        ("recursive_l", pa.uint64()),
        ("recursive_c", pa.float64()),
        ("recursive_ok", pa.bool_()),
        ("t", pa.float64()),
        ("prosecutor_max", pa.float64()),
        ("prosecutor_avg", pa.float64()),
        ("prosecutor_at_risk", pa.float64()),
        ("marketer", pa.float64()),
        ("journalist_max", pa.float64()),
        ("journalist_avg", pa.float64()),
        ("journalist_at_risk", pa.float64()),
    ]
)

_SQL_NAMES = {
    pa.uint64(): "UBIGINT",
    pa.float64(): "DOUBLE",
    pa.bool_(): "BOOLEAN",
}
STATS_SQL_TYPE = "STRUCT(" + ", ".join(f"{f.name} {_SQL_NAMES[f.type]}" for f in STATS_TYPE) + ")"
CLASSES_SQL_TYPE = "STRUCT(n UBIGINT, pop UBIGINT, entries STRUCT(c UINTEGER, n UBIGINT)[])[]"


def _stats_of_classes(classes: pa.StructArray, options: dict[str, Any]) -> dict[str, Any]:
    counts = classes.field("n")
    kwargs: dict[str, Any] = {
        "ordered": bool(options.get("ordered")),
        "recursive_l": options.get("recursive_l"),
        "recursive_c": options.get("recursive_c"),
        "risk_threshold": float(options.get("risk_threshold", 0.2)),
    }
    if options.get("population"):
        kwargs["population"] = buffer(classes.field("pop"), pa.uint64(), "population")
    if not options.get("sensitive"):
        return _core.class_stats(buffer(counts, pa.uint64(), "counts"), **kwargs)
    entries: pa.ListArray = classes.field("entries")
    offsets = pc.subtract(entries.offsets, entries.offsets[0])
    flat: pa.StructArray = entries.flatten()
    return _core.class_stats(
        buffer(flat.field("n"), pa.uint64(), "counts"),
        offsets=buffer(offsets, pa.uint64(), "offsets"),
        sensitive=buffer(flat.field("c"), pa.uint32(), "sensitive"),
        **kwargs,
    )


def class_stats(classes: pa.ChunkedArray, options: pa.ChunkedArray) -> pa.Array:
    """SQL ``kanon_class_stats(classes, options)``: statistics of one packed partition.

    ``classes`` holds, per row, a list with one struct per equivalence class: its size
    ``n``, its population size ``pop`` and its sensitive histogram ``entries``.
    """
    lists = classes.combine_chunks()
    opts = options.to_pylist()
    results: list[dict[str, Any] | None] = []
    for i in range(len(lists)):
        if opts[i] is None:
            results.append(None)
            continue
        parsed = json.loads(opts[i])
        if not lists[i].is_valid:  # list() over no rows: an empty table
            results.append(
                _core.class_stats(buffer(pa.array([], pa.uint64()), pa.uint64(), "counts"))
            )
            continue
        results.append(_stats_of_classes(lists[i].values, parsed))
    return pa.array(results, type=STATS_TYPE)
