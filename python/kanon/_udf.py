"""DuckDB adapters: pyarrow columns in, ``kanon._core`` call, pyarrow array out."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kanon import _core
from kanon._arrow import buffer, from_bytes

__all__ = [
    "FOREST_SQL_PARAMS",
    "FOREST_SQL_TYPE",
    "HISTORIC_SQL_PARAMS",
    "HISTORIC_SQL_TYPE",
    "OPTIMAL_SQL_PARAMS",
    "OPTIMAL_SQL_TYPE",
    "STATS_SQL_TYPE",
    "STATS_TYPE",
    "class_stats",
    "forest",
    "historic",
    "list_column",
    "optimal",
]

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
        ("delta_min", pa.float64()),
        ("delta_max", pa.float64()),
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
    levels = options.get("hierarchy")
    if levels is not None:  # the sensitive hierarchy, one leaf-code list per level
        kwargs["hierarchy"] = [
            buffer(pa.array(level, pa.uint32()), pa.uint32(), "hierarchy") for level in levels
        ]
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
    ``options`` is JSON: ``sensitive``, ``population``, ``ordered``, ``recursive_l``,
    ``recursive_c``, ``risk_threshold`` and, for the hierarchical ground distance,
    ``hierarchy`` (per level, the label code of every leaf; entries' ``c`` are leaf codes).
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


FOREST_SQL_PARAMS = [
    "UINTEGER[]",
    "UBIGINT[]",
    "UINTEGER[][][]",
    "DOUBLE[]",
    "UBIGINT",
    "UBIGINT",
    "VARCHAR",
    "DOUBLE[][]",
    "DOUBLE[][]",
    "DOUBLE[]",
]
FOREST_TYPE = pa.struct(
    [
        ("g", pa.list_(pa.uint32())),
        ("lv", pa.list_(pa.list_(pa.uint32()))),
        ("stats", pa.string()),
        ("o", pa.list_(pa.uint64())),
    ]
)
FOREST_SQL_TYPE = "STRUCT(g UINTEGER[], lv UINTEGER[][], stats VARCHAR, o UBIGINT[])"


def _range_keys(keys: pa.ListScalar) -> list[memoryview | bytes | None] | None:
    """The ``keys`` of ``forest_anonymize``: a float64 buffer per numeric QI, else None.

    An empty list marks a categorical QI; NULL elements (the NULL leaf) become NaN, a
    missing value. The kernel checks that there is one list per QI and one key per leaf.
    """
    out: list[memoryview | bytes | None] = []
    for attribute in keys.values:
        if not attribute.is_valid or len(attribute.values) == 0:
            out.append(None)
            continue
        values = pc.fill_null(attribute.values.cast(pa.float64()), float("nan"))
        out.append(buffer(values, pa.float64(), "keys"))
    return out


def _forest_one(row: list[Any]) -> dict[str, Any]:
    tuples, counts, hierarchies, weights, k, seed, options_text, keys, cut_keys, spans = row
    options = json.loads(options_text.as_py())
    m = int(options["m"])
    cost = str(options["cost"])
    levels: list[list[memoryview | bytes]] = [
        [buffer(level.values, pa.uint32(), "hierarchies") for level in attribute.values]
        for attribute in hierarchies.values
    ]
    extra: dict[str, Any] = {}
    if cost == "range":
        extra["keys"] = _range_keys(keys)
    if options.get("block_size") is not None:
        extra["blocks"] = (
            [buffer(attribute.values, pa.float64(), "cut keys") for attribute in cut_keys.values],
            [float(x) for x in spans.values.to_pylist()],
            int(options["block_size"]),
        )
    group_of_row, groups, flat_levels, stats = _core.forest_anonymize(
        buffer(tuples.values, pa.uint32(), "tuples"),
        m,
        buffer(counts.values, pa.uint64(), "counts"),
        levels,
        [float(w) for w in weights.values.to_pylist()],
        cost,
        k.as_py(),
        seed.as_py(),
        str(options["improve"]),
        **extra,
    )
    lv = pa.ListArray.from_arrays(
        pa.array(range(0, groups * m + 1, m), pa.int32()), from_bytes(flat_levels, pa.uint32())
    )
    stats["groups"] = groups
    n = counts.values.cast(pa.uint64())
    return {
        "g": from_bytes(group_of_row, pa.uint32()),
        "lv": lv,
        "stats": json.dumps(stats),
        "o": pc.subtract(pc.cumulative_sum(n), n),
    }


def forest(
    tuples: pa.ChunkedArray,
    counts: pa.ChunkedArray,
    hierarchies: pa.ChunkedArray,
    weights: pa.ChunkedArray,
    k: pa.ChunkedArray,
    seed: pa.ChunkedArray,
    options: pa.ChunkedArray,
    keys: pa.ChunkedArray,
    cut_keys: pa.ChunkedArray,
    spans: pa.ChunkedArray,
) -> pa.Array:
    """SQL ``kanon_forest(...)``: the forest anonymizer on one packed table (pack) per row.

    Arguments (SQL types in :data:`FOREST_SQL_PARAMS`): ``tuples UINTEGER[]`` (``m`` leaf
    codes per distinct tuple), ``counts UBIGINT[]``, ``hierarchies UINTEGER[][][]`` (per
    QI, per level, the label code of every leaf), ``weights DOUBLE[]``, ``k UBIGINT``,
    ``seed UBIGINT``, ``options VARCHAR`` (JSON: ``m``, ``cost`` — ``'ncp'``,
    ``'height'`` or ``'range'`` — ``improve``, ``'full'``, ``'fast'`` or ``'none'``, and
    ``block_size``), ``keys DOUBLE[][]``
    (with ``'range'``: per QI the numeric value of every leaf in leaf-code order, a NULL
    element for the NULL leaf, or an empty list for a categorical QI), and the Mondrian
    cut keys and spans of the blocks (``DOUBLE[][]``, ``DOUBLE[]``; see
    ``kanon._local.key_lists``): a pack above ``block_size`` rows is cut into blocks of
    at most that many rows and the forest runs in each.

    Returns per row a struct: ``g`` the group of every data row (rows numbered tuple by
    tuple), ``lv`` the level of every group per quasi-identifier, ``stats`` a JSON
    object of counters (``cost``: the cost the kernel minimized).
    """
    cols = [
        c.combine_chunks()
        for c in (tuples, counts, hierarchies, weights, k, seed, options, keys, cut_keys, spans)
    ]
    results: list[dict[str, Any] | None] = []
    for i in range(len(cols[0])):
        row = [c[i] for c in cols]
        if not all(v.is_valid for v in row):
            results.append(None)
            continue
        results.append(_forest_one(row))
    mask = pa.array([r is None for r in results])
    g = list_column([None if r is None else r["g"] for r in results], pa.uint32())
    lv = list_column([None if r is None else r["lv"] for r in results], pa.list_(pa.uint32()))
    stats = pa.array([None if r is None else r["stats"] for r in results], pa.string())
    o = list_column([None if r is None else r["o"] for r in results], pa.uint64())
    return pa.StructArray.from_arrays([g, lv, stats, o], fields=list(FOREST_TYPE), mask=mask)


def list_column(arrays: list[pa.Array | None], typ: pa.DataType) -> pa.ListArray:
    """One list per row of a UDF's result: ``arrays[i]`` (of ``typ``), or NULL for None."""
    offsets = [0]
    for a in arrays:
        offsets.append(offsets[-1] + (0 if a is None else len(a)))
    values = [pa.array([], typ) if a is None else a for a in arrays]
    mask = pa.array([a is None for a in arrays])
    return pa.ListArray.from_arrays(
        pa.array(offsets, pa.int32()), pa.concat_arrays(values), mask=mask
    )


OPTIMAL_SQL_PARAMS = [
    "STRUCT(lo UBIGINT, hi UBIGINT, n UBIGINT)[]",
    "UINTEGER[][][]",
    "DOUBLE[]",
    "DOUBLE[][][]",
    "UBIGINT",
    "VARCHAR",
    "UINTEGER[]",
    "UINTEGER[]",
    "UBIGINT[]",
    "UINTEGER[][]",
    "UINTEGER[]",
    "UBIGINT[]",
]
OPTIMAL_TYPE = pa.struct(
    [
        ("levels", pa.list_(pa.uint32())),
        ("s", pa.list_(pa.list_(pa.uint32()))),
        ("stats", pa.string()),
    ]
)
OPTIMAL_SQL_TYPE = "STRUCT(levels UINTEGER[], s UINTEGER[][], stats VARCHAR)"


def _model_args(options: dict[str, Any], row: list[Any]) -> dict[str, Any]:
    """The keyword arguments of ``lattice_optimal`` for the privacy models."""
    models: dict[str, Any] = options.get("models") or {}
    if not models:
        return {}
    sens_t, sens_c, sens_n, sens_h, pop_paths, pop_counts = row
    out: dict[str, Any] = {}
    if "l" in models or "t" in models:
        levels = [buffer(level.values, pa.uint32(), "sensitive") for level in sens_h.values]
        codes = buffer(sens_c.values, pa.uint32(), "sensitive")
        if levels:
            values = len(sens_h.values[0])
        else:
            values = int(pc.max(sens_c.values).as_py() or 0) + 1 if len(sens_c.values) else 0
        out["sensitive"] = (
            buffer(sens_t.values, pa.uint32(), "sensitive"),
            codes,
            buffer(sens_n.values, pa.uint64(), "sensitive"),
            values,
        )
        if levels:
            out["sensitive_hierarchy"] = levels
    if "delta_min" in models:
        out["population"] = (
            buffer(pop_paths.values, pa.uint32(), "population"),
            buffer(pop_counts.values, pa.uint64(), "population"),
        )
        out["delta"] = (float(models["delta_min"]), float(models["delta_max"]))
    if "l" in models:
        out["l"] = float(models["l"])
        out["l_diversity"] = str(models["l_diversity"])
        out["c"] = None if models.get("c") is None else float(models["c"])
    if "t" in models:
        out["t"] = float(models["t"])
        out["t_distance"] = str(models["t_distance"])
    return out


def _optimal_one(row: list[Any]) -> dict[str, Any]:
    histogram, hierarchies, weights, node_loss, k, options_text = row[:6]
    options = json.loads(options_text.as_py())
    m = int(options["m"])
    # Tuple t is the histogram's entry t: its packed leaf codes and its count.
    entries: pa.StructArray = histogram.values
    levels: list[list[memoryview | bytes]] = [
        [buffer(level.values, pa.uint32(), "hierarchies") for level in attribute.values]
        for attribute in hierarchies.values
    ]
    losses: list[list[memoryview | bytes]] = [
        [buffer(level.values, pa.float64(), "node_loss") for level in attribute.values]
        for attribute in node_loss.values
    ]
    chosen, suppressed, stats = _core.lattice_optimal(
        buffer(entries.field("lo"), pa.uint64(), "histogram"),
        buffer(entries.field("hi"), pa.uint64(), "histogram"),
        buffer(entries.field("n"), pa.uint64(), "histogram"),
        levels,
        [float(w) for w in weights.values.to_pylist()],
        losses,
        str(options["metric"]),
        k.as_py(),
        int(options["max_suppressed"]),
        bool(options["keep_suppressed"]),
        [int(x) for x in options["min_level"]],
        [int(x) for x in options["max_level"]],
        **_model_args(options, row[6:]),
    )
    # The codes of the suppressed tuples, one list each (few: at most the rows allowed).
    codes = from_bytes(suppressed, pa.uint32())
    offsets = pa.array(np.arange(0, len(codes) + 1, m, dtype=np.int32))
    return {
        "levels": chosen,
        "s": pa.ListArray.from_arrays(offsets, codes),
        "stats": json.dumps(stats),
    }


def optimal(
    histogram: pa.ChunkedArray,
    hierarchies: pa.ChunkedArray,
    weights: pa.ChunkedArray,
    node_loss: pa.ChunkedArray,
    k: pa.ChunkedArray,
    options: pa.ChunkedArray,
    sensitive_tuples: pa.ChunkedArray,
    sensitive_codes: pa.ChunkedArray,
    sensitive_counts: pa.ChunkedArray,
    sensitive_hierarchy: pa.ChunkedArray,
    population_paths: pa.ChunkedArray,
    population_counts: pa.ChunkedArray,
) -> pa.Array:
    """SQL ``kanon_optimal(...)``: the optimal full-domain generalization of one histogram.

    ``histogram`` lists the distinct tuples, each as its ``m`` leaf codes packed into
    128 bits (``lo`` and ``hi``, their low and high 64 bits: attribute 0 in the lowest
    bits, each in just enough bits for its leaves, as ``kanon_core::lattice::key_bits``)
    and its row count ``n``, in any order (tuple ``t`` is entry ``t``, as the sensitive
    entries count them). The last six arguments carry the data of the privacy models named in
    the options' ``models`` (sensitive entries and hierarchy, population paths); empty
    lists without. Returns per row a struct: ``levels`` the level of every
    quasi-identifier, ``s`` the codes of the tuples whose class is suppressed (one list
    each), ``stats`` a JSON object (cost, suppressed rows, classes, lattice nodes, nodes
    checked).
    """
    args = (
        histogram,
        hierarchies,
        weights,
        node_loss,
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
    results: list[dict[str, Any] | None] = []
    for i in range(len(cols[0])):
        row = [c[i] for c in cols]
        results.append(_optimal_one(row) if all(v.is_valid for v in row) else None)
    mask = pa.array([r is None for r in results])
    levels = pa.array([None if r is None else r["levels"] for r in results], pa.list_(pa.uint32()))
    s = list_column([None if r is None else r["s"] for r in results], pa.list_(pa.uint32()))
    stats = pa.array([None if r is None else r["stats"] for r in results], pa.string())
    return pa.StructArray.from_arrays([levels, s, stats], fields=list(OPTIMAL_TYPE), mask=mask)


HISTORIC_SQL_PARAMS = ["UINTEGER[]", "UBIGINT[]", "UINTEGER[][][]", "UBIGINT", "VARCHAR"]
HISTORIC_TYPE = pa.struct(
    [("levels", pa.list_(pa.uint32())), ("cells", pa.list_(pa.uint64())), ("stats", pa.string())]
)
HISTORIC_SQL_TYPE = "STRUCT(levels UINTEGER[], cells UBIGINT[], stats VARCHAR)"


def _historic_one(row: list[Any]) -> dict[str, Any]:
    tuples, counts, hierarchies, k, options_text = row
    options = json.loads(options_text.as_py())
    levels: list[list[memoryview | bytes]] = [
        [buffer(level.values, pa.uint32(), "hierarchies") for level in attribute.values]
        for attribute in hierarchies.values
    ]
    limit = options.get("max_suppressed")
    chosen, cells, _, report = _core.historic_release(
        buffer(tuples.values, pa.uint32(), "tuples"),
        int(options["m"]),
        buffer(counts.values, pa.uint64(), "counts"),
        levels,
        str(options["method"]),
        k.as_py(),
        None if limit is None else int(limit),
        bool(options["keep_suppressed"]),
    )
    return {"levels": chosen, "cells": from_bytes(cells, pa.uint64()), "stats": json.dumps(report)}


def historic(
    tuples: pa.ChunkedArray,
    counts: pa.ChunkedArray,
    hierarchies: pa.ChunkedArray,
    k: pa.ChunkedArray,
    options: pa.ChunkedArray,
) -> pa.Array:
    """SQL ``kanon_historic(...)``: Datafly or μ-Argus on one histogram per row.

    ``options`` is JSON: ``m``, ``method`` (``'datafly'`` or ``'mu_argus'``),
    ``max_suppressed`` (Datafly; absent or null for Sweeney's k rows) and
    ``keep_suppressed``. Returns per row a struct: ``levels`` the level of every
    quasi-identifier, ``cells`` per distinct tuple the bitmask of its ``'*'`` cells
    (bit j for quasi-identifier j; all bits for a suppressed row), ``stats`` a JSON
    object with the report (unprotected rows and classes, suppressed cells and rows,
    topped-up rows, steps, classes, seconds).
    """
    cols = [c.combine_chunks() for c in (tuples, counts, hierarchies, k, options)]
    results: list[dict[str, Any] | None] = []
    for i in range(len(cols[0])):
        row = [c[i] for c in cols]
        results.append(_historic_one(row) if all(v.is_valid for v in row) else None)
    mask = pa.array([r is None for r in results])
    levels = pa.array([None if r is None else r["levels"] for r in results], pa.list_(pa.uint32()))
    cells = list_column([None if r is None else r["cells"] for r in results], pa.uint64())
    stats = pa.array([None if r is None else r["stats"] for r in results], pa.string())
    return pa.StructArray.from_arrays([levels, cells, stats], fields=list(HISTORIC_TYPE), mask=mask)
