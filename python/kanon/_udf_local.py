"""DuckDB adapter of the Mondrian kernel: one packed table (a pack of rows) per row."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from kanon import _core
from kanon._arrow import buffer, from_bytes
from kanon._udf import _model_args, list_column

__all__ = ["MONDRIAN_SQL_PARAMS", "MONDRIAN_SQL_TYPE", "mondrian"]

MONDRIAN_SQL_PARAMS = [
    "UINTEGER[]",
    "UBIGINT[]",
    "DOUBLE[][]",
    "DOUBLE[]",
    "UINTEGER[][][]",
    "UBIGINT",
    "VARCHAR",
    "UINTEGER[]",
    "UINTEGER[]",
    "UBIGINT[]",
    "UINTEGER[][]",
    "UINTEGER[]",
    "UBIGINT[]",
]
MONDRIAN_SQL_TYPE = "STRUCT(g UINTEGER[], lv UINTEGER[][])"


def _keys(keys: pa.ListScalar) -> list[memoryview[int] | bytes]:
    return [buffer(attribute.values, pa.float64(), "keys") for attribute in keys.values]


def _mondrian_one(row: list[Any]) -> tuple[pa.Array, pa.Array]:
    tuples, counts, keys, spans, hierarchies, k, options_text = row[:7]
    options = json.loads(options_text.as_py())
    m = int(options["m"])
    levels: list[list[memoryview[int] | bytes]] = [
        [buffer(level.values, pa.uint32(), "hierarchies") for level in attribute.values]
        for attribute in hierarchies.values
    ]
    parts, part_of_tuple, flat_levels = _core.mondrian_partition(
        buffer(tuples.values, pa.uint32(), "tuples"),
        m,
        buffer(counts.values, pa.uint64(), "counts"),
        _keys(keys),
        [float(s) for s in spans.values.to_pylist()],
        levels,
        k.as_py(),
        int(options.get("stop", 0)),
        sets=[bool(x) for x in options.get("sets") or [False] * m],
        **_model_args(options, row[7:]),
    )
    lv = pa.ListArray.from_arrays(
        pa.array(range(0, parts * m + 1, m), pa.int32()), from_bytes(flat_levels, pa.uint32())
    )
    return from_bytes(part_of_tuple, pa.uint32()), lv


def mondrian(
    tuples: pa.ChunkedArray,
    counts: pa.ChunkedArray,
    keys: pa.ChunkedArray,
    spans: pa.ChunkedArray,
    hierarchies: pa.ChunkedArray,
    k: pa.ChunkedArray,
    options: pa.ChunkedArray,
    sensitive_tuples: pa.ChunkedArray,
    sensitive_codes: pa.ChunkedArray,
    sensitive_counts: pa.ChunkedArray,
    sensitive_hierarchy: pa.ChunkedArray,
    population_paths: pa.ChunkedArray,
    population_counts: pa.ChunkedArray,
) -> pa.Array:
    """SQL ``kanon_mondrian(...)``: Mondrian partitioning of one pack per row.

    Arguments (``MONDRIAN_SQL_PARAMS``): the pack's tuples and counts, the keys per QI
    and leaf, the table-wide spans, the hierarchies, k, JSON options (``m``, ``stop``,
    ``models``) and the six model arguments of ``kanon_optimal`` (empty lists without).
    Returns per row a struct: ``g`` the part of every tuple, ``lv`` per part the level of
    the lowest common hierarchy node of every QI.
    """
    args = (
        tuples,
        counts,
        keys,
        spans,
        hierarchies,
        k,
        options,
        sensitive_tuples,
        sensitive_codes,
        sensitive_counts,
        sensitive_hierarchy,
        population_paths,
        population_counts,
    )
    cols = [c.combine_chunks() for c in args]
    results: list[tuple[pa.Array, pa.Array] | None] = []
    for i in range(len(cols[0])):
        row = [c[i] for c in cols]
        results.append(_mondrian_one(row) if all(v.is_valid for v in row[:7]) else None)
    mask = pa.array([r is None for r in results])
    g = list_column([None if r is None else r[0] for r in results], pa.uint32())
    lv = list_column([None if r is None else r[1] for r in results], pa.list_(pa.uint32()))
    return pa.StructArray.from_arrays([g, lv], names=["g", "lv"], mask=mask)
