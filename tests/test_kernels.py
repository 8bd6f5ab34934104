"""The compiled kernels at the Python boundary: buffers, slices, chunks, error classes."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kanon import _core
from kanon._arrow import buffer, from_bytes
from kanon.exceptions import HierarchyError, InvalidInputError


def u32(values: list[int]) -> memoryview:
    return buffer(pa.array(values, pa.uint32()), pa.uint32(), "test")


def u64(values: list[int]) -> memoryview:
    return buffer(pa.array(values, pa.uint64()), pa.uint64(), "test")


def test_buffer_honours_slices_chunks_and_casts() -> None:
    sliced = pa.array([9, 1, 2, 3, 9], pa.uint32()).slice(1, 3)
    assert list(buffer(sliced, pa.uint32(), "x")) == [1, 2, 3]
    chunked = pa.chunked_array([pa.array([1, 2], pa.int64()), pa.array([3], pa.int64())])
    assert list(buffer(chunked, pa.uint64(), "x")) == [1, 2, 3]
    assert list(buffer(pa.array([], pa.uint32()), pa.uint32(), "x")) == []
    with pytest.raises(InvalidInputError, match="'x' contains 1 NULL"):
        buffer(pa.array([1, None], pa.uint32()), pa.uint32(), "x")


def test_encode_strings_orders_codes_by_value() -> None:
    codes, first = _core.encode_strings(["b", None, "a", "b"])
    assert from_bytes(codes, pa.uint32()).to_pylist() == [2, 0, 1, 2]
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
    assert from_bytes(classes, pa.uint32()).to_pylist() == [0, 0, 1, 1, 2]
    assert from_bytes(sizes, pa.uint64()).to_pylist() == [2, 2, 1]
    _, sizes = _core.groupify([rows_age, rows_sex], [age, sex], [2, 1], weights=u64([1] * 5))
    assert from_bytes(sizes, pa.uint64()).to_pylist() == [5]
    with pytest.raises(InvalidInputError, match="exceeds its hierarchy's height"):
        _core.groupify([rows_age], [age], [3])


def test_class_stats_errors_map_to_kanon_exceptions() -> None:
    with pytest.raises(InvalidInputError, match="class_stats: class offsets end at 3"):
        _core.class_stats(u64([1, 2]), offsets=u64([0, 3]))
    with pytest.raises(InvalidInputError, match="has 1 entries"):
        _core.class_stats(u64([1, 2]), sensitive=u32([0]))


def test_class_stats_hierarchy_and_delta() -> None:
    # Leaves {0, 1} and {2, 3} under two labels; classes {0, 1} and {2, 3}, one row each.
    tree = [u32([0, 1, 2, 3]), u32([0, 0, 1, 1]), u32([0, 0, 0, 0])]
    args = (u64([1, 1, 1, 1]),)
    kwargs = {"offsets": u64([0, 2, 4]), "sensitive": u32([0, 1, 2, 3])}
    s = _core.class_stats(*args, **kwargs, hierarchy=tree, population=u64([4, 2]))
    assert s["t"] == pytest.approx(0.5)  # half of each class crosses the root
    assert (s["delta_min"], s["delta_max"]) == (0.5, 1.0)
    assert _core.class_stats(*args, **kwargs)["delta_min"] is None
    with pytest.raises(InvalidInputError, match="exclude each other"):
        _core.class_stats(*args, **kwargs, hierarchy=tree, ordered=True)
    with pytest.raises(InvalidInputError, match="not a leaf"):
        _core.class_stats(
            *args, offsets=u64([0, 2, 4]), sensitive=u32([0, 1, 2, 7]), hierarchy=tree
        )
    bad = [u32([0, 1, 2, 3]), u32([0, 0, 1, 1]), u32([0, 1, 1, 1]), u32([0, 0, 0, 0])]
    with pytest.raises(HierarchyError, match="not nested"):
        _core.class_stats(*args, **kwargs, hierarchy=bad)
