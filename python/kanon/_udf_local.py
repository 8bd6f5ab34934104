"""DuckDB adapter of the Mondrian kernel: one packed table (a pack of rows) per row."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from kanon import _core
from kanon._arrow import buffer, from_bytes
from kanon._udf import _model_args, _offsets

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
    g_arrays: list[pa.Array] = []
    lv_arrays: list[pa.Array] = []
    nulls: list[bool] = []
    for i in range(len(cols[0])):
        row = [c[i] for c in cols]
        if not all(v.is_valid for v in row[:7]):
            g_arrays.append(pa.array([], pa.uint32()))
            lv_arrays.append(pa.array([], pa.list_(pa.uint32())))
            nulls.append(True)
            continue
        g, lv = _mondrian_one(row)
        g_arrays.append(g)
        lv_arrays.append(lv)
        nulls.append(False)
    mask = pa.array(nulls)
    g_list = pa.ListArray.from_arrays(_offsets(g_arrays), pa.concat_arrays(g_arrays), mask=mask)
    lv_list = pa.ListArray.from_arrays(_offsets(lv_arrays), pa.concat_arrays(lv_arrays), mask=mask)
    return pa.StructArray.from_arrays([g_list, lv_list], names=["g", "lv"], mask=mask)
