"""The compiled kernels at the Python boundary: Arrow arrays, slices, error classes."""

from __future__ import annotations

import inspect
import json
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from kanon import _core
from kanon.engine.kernels import KERNELS, udf
from kanon.exceptions import HierarchyError, InvalidInputError


def u32(values: list[int]) -> pa.Array:
    return pa.array(values, pa.uint32())


def u64(values: list[int]) -> pa.Array:
    return pa.array(values, pa.uint64())


def test_kernels_read_slices_buffers_and_refuse_nulls() -> None:
    # A slice (an offset into the Arrow buffers) is read in place, as are numpy arrays
    # and memoryviews (the buffer protocol).
    sliced = pa.array([9, 0, 1, 2, 9], pa.uint32()).slice(1, 3)
    assert _core.validate_hierarchy([sliced, u32([0, 0, 0])]) == 1
    flat = np.array([0, 1, 2], dtype=np.uint32)
    assert _core.validate_hierarchy([flat, memoryview(np.zeros(3, np.uint32))]) == 1
    with pytest.raises(InvalidInputError, match="'levels' contains 1 NULL"):
        _core.validate_hierarchy([pa.array([0, None], pa.uint32())])
    with pytest.raises(InvalidInputError, match="'levels' must hold UInt32"):
        _core.validate_hierarchy([pa.array([0, 1], pa.int64())])


def test_encode_strings_orders_codes_by_value() -> None:
    codes, first = _core.encode_strings(["b", None, "a", "b"])
    assert codes.to_pylist() == [2, 0, 1, 2]
    assert first == [1, 2, 0]


def test_validate_hierarchy_and_its_errors() -> None:
    assert _core.validate_hierarchy([u32([0, 1, 2]), u32([0, 0, 1]), u32([0, 0, 0])]) == 2
    with pytest.raises(HierarchyError, match=r"not nested.*level 1"):
        _core.validate_hierarchy([u32([0, 1, 2]), u32([0, 0, 1]), u32([0, 1, 1])])
    with pytest.raises(HierarchyError, match="exactly one root"):
        _core.validate_hierarchy([u32([0, 1]), u32([0, 1])])
    with pytest.raises(InvalidInputError, match="listed twice"):
        _core.validate_hierarchy([u32([0, 0]), u32([0, 0])])


def test_groupify_generalizes_through_hierarchies() -> None:
    age = [u32([0, 1, 2, 3]), u32([0, 0, 1, 1]), u32([0, 0, 0, 0])]
    sex = [u32([0, 1]), u32([0, 0])]
    rows_age = u32([0, 1, 2, 3, 0])
    rows_sex = u32([0, 0, 1, 1, 1])
    classes, sizes = _core.groupify([rows_age, rows_sex], [age, sex], [1, 0])
    assert classes.to_pylist() == [0, 0, 1, 1, 2]
    assert sizes.to_pylist() == [2, 2, 1]
    _, sizes = _core.groupify([rows_age, rows_sex], [age, sex], [2, 1], weights=u64([1] * 5))
    assert sizes.to_pylist() == [5]
    with pytest.raises(InvalidInputError, match="exceeds its hierarchy's height"):
        _core.groupify([rows_age], [age], [3])


def class_stats(
    counts: list[int],
    offsets: list[int] | None = None,
    sensitive: list[int] | None = None,
    population: list[int] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """``kanon_class_stats`` on one partition: classes cut from the entries at ``offsets``."""
    bounds = offsets if offsets is not None else list(range(len(counts) + 1))
    classes = []
    for c in range(len(bounds) - 1):
        entries = [
            {"c": sensitive[e] if sensitive is not None else 0, "n": counts[e]}
            for e in range(bounds[c], min(bounds[c + 1], len(counts)))
        ]
        n = sum(e["n"] for e in entries)
        pop = population[c] if population is not None else None
        classes.append({"n": n, "pop": pop, "entries": entries})
    options |= {"sensitive": sensitive is not None, "population": population is not None}
    typ = pa.list_(
        pa.struct(
            [
                ("n", pa.uint64()),
                ("pop", pa.uint64()),
                ("entries", pa.list_(pa.struct([("c", pa.uint32()), ("n", pa.uint64())]))),
            ]
        )
    )
    out = _core.class_stats(pa.array([classes], typ), pa.array([json.dumps(options)]))
    result: dict[str, Any] = out.to_pylist()[0]
    return result


def test_class_stats_errors_map_to_kanon_exceptions() -> None:
    with pytest.raises(InvalidInputError, match="option 'ordered': invalid type"):
        _core.class_stats(pa.array([None], pa.list_(pa.struct([]))), pa.array(['{"ordered": 1}']))
    with pytest.raises(InvalidInputError, match="unknown field `fancy`"):
        class_stats([1, 2], fancy=True)
    with pytest.raises(InvalidInputError, match="is not a leaf"):
        class_stats([1, 1], offsets=[0, 2], sensitive=[0, 9], hierarchy=[[0, 1], [0, 0]])


def test_class_stats_hierarchy_and_delta() -> None:
    # Leaves {0, 1} and {2, 3} under two labels; classes {0, 1} and {2, 3}, one row each.
    tree = [[0, 1, 2, 3], [0, 0, 1, 1], [0, 0, 0, 0]]
    args = ([1, 1, 1, 1],)
    kwargs: dict[str, Any] = {"offsets": [0, 2, 4], "sensitive": [0, 1, 2, 3]}
    s = class_stats(*args, **kwargs, hierarchy=tree, population=[4, 2])
    assert s["t"] == pytest.approx(0.5)  # half of each class crosses the root
    assert (s["delta_min"], s["delta_max"]) == (0.5, 1.0)
    assert class_stats(*args, **kwargs)["delta_min"] is None
    with pytest.raises(InvalidInputError, match="exclude each other"):
        class_stats(*args, **kwargs, hierarchy=tree, ordered=True)
    with pytest.raises(InvalidInputError, match="not a leaf"):
        class_stats(*args, offsets=[0, 2, 4], sensitive=[0, 1, 2, 7], hierarchy=tree)
    bad = [[0, 1, 2, 3], [0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 0, 0]]
    with pytest.raises(HierarchyError, match="not nested"):
        class_stats(*args, **kwargs, hierarchy=bad)


def test_kernels_return_their_declared_sql_types() -> None:
    # Every kernel on no rows: an empty struct array of its declared SQL return type.
    con = duckdb.connect()

    def empty(sql_type: str) -> pa.ChunkedArray:
        column: pa.ChunkedArray = con.sql(f"SELECT NULL::{sql_type} AS x LIMIT 0").to_arrow_table()[
            "x"
        ]
        return column

    def described(sql: str) -> str:
        return str(con.execute(f"DESCRIBE {sql}").fetchall()[0][1])

    for kernel in KERNELS:
        out = udf(kernel)(*(empty(t) for _, t in kernel.parameters))
        assert len(out) == 0
        con.register("kernel_out", pa.table({"x": out}))
        assert described("SELECT x FROM kernel_out") == described(
            f"SELECT NULL::{kernel.returns} AS x"
        ), kernel.name


def _forest(
    options: dict[str, Any],
    codes: tuple[int, ...] = (0, 1),
    counts: tuple[int, ...] = (2, 1),
    ts: tuple[int, ...] = (0, 1),
) -> dict[str, Any]:
    """``kanon_forest`` on one pack: tuples (0), (1), (1) of one QI, counts 2, 1."""
    u32s, u64s, f64s = pa.list_(pa.uint32()), pa.list_(pa.uint64()), pa.list_(pa.float64())
    out = _core.forest(
        pa.array([[list(codes)]], pa.list_(u32s)),
        pa.array([list(counts)], u64s),
        pa.array([list(ts)], u64s),
        pa.array([[[[0, 1], [0, 0]]]], pa.list_(pa.list_(u32s))),
        pa.array([[1.0]], f64s),
        pa.array([3], pa.uint64()),
        pa.array([0], pa.uint64()),
        pa.array([json.dumps(options)]),
        pa.array([[[]]], pa.list_(f64s)),
        pa.array([[]], pa.list_(f64s)),
        pa.array([[]], f64s),
    )
    row: dict[str, Any] = out.to_pylist()[0]
    return row


def test_forest_reads_a_pack_in_order_of_its_tuple_numbers() -> None:
    # The lists of a pack come in an order SQL does not fix: the same pack listed
    # backwards gives the same groups, and the row starts in the order of the lists.
    options = {"m": 1, "cost": "ncp", "improve": "full", "block_size": None}
    out = _forest(options, codes=(1, 0), counts=(1, 2), ts=(1, 0))
    assert out["g"] == [0, 0, 0]
    assert out["o"] == [2, 0]
    with pytest.raises(InvalidInputError, match="must hold 1 lists of the length of 'ts'"):
        _forest(options, ts=(0,))


def test_forest_returns_groups_levels_row_starts_and_typed_stats() -> None:
    out = _forest({"m": 1, "cost": "ncp", "improve": "full", "block_size": None})
    assert out["g"] == [0, 0, 0]
    assert out["lv"] == [[1]]
    assert out["o"] == [0, 2]  # where the rows of each tuple start in g
    assert out["stats"]["groups"] == 1
    assert out["stats"]["cost"] == pytest.approx(3.0)  # three rows at the root
    with pytest.raises(InvalidInputError, match="option 'cost': unknown variant `fancy`"):
        _forest({"m": 1, "cost": "fancy", "improve": "full"})
    with pytest.raises(InvalidInputError, match="unknown field `colour`"):
        _forest({"m": 1, "cost": "ncp", "improve": "full", "colour": 1})
    with pytest.raises(InvalidInputError, match="missing field `improve`"):
        _forest({"m": 1, "cost": "ncp"})


def test_kernels_name_the_compiled_functions_parameters() -> None:
    """Every kernel's parameters are the compiled function's, by name and in order."""
    for kernel in KERNELS:
        compiled = inspect.signature(getattr(_core, kernel.function)).parameters
        assert [name for name, _ in kernel.parameters] == list(compiled), kernel.name


def test_a_kernel_call_names_every_argument() -> None:
    """The SQL of a call casts each argument to its declared type; a name missing fails."""
    kernel = KERNELS[0]
    args = {name: f"a_{name}" for name, _ in kernel.parameters}
    sql = kernel.call(**args)
    assert sql.startswith(f"{kernel.name}(CAST(a_")
    for name, sql_type in kernel.parameters:
        assert f"CAST(a_{name} AS {sql_type})" in sql
    with pytest.raises(TypeError, match="missing"):
        kernel.call(**dict(list(args.items())[1:]))
    with pytest.raises(TypeError, match="unknown"):
        kernel.call(**args, extra="1")
