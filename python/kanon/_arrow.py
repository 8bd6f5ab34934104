"""Arrow arrays ⇄ the plain buffers the kernels take (no copies on the Python side)."""

from __future__ import annotations

from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from kanon.exceptions import InvalidInputError

__all__ = ["buffer", "from_bytes"]

_FORMATS: dict[pa.DataType, Literal["I", "Q", "d"]] = {
    pa.uint32(): "I",
    pa.uint64(): "Q",
    pa.float64(): "d",
}


def buffer(arr: pa.Array | pa.ChunkedArray, typ: pa.DataType, name: str) -> memoryview[Any]:
    """Return ``arr`` cast to ``typ`` as a typed memoryview the kernels accept."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.type != typ:
        arr = pc.cast(arr, typ)
    if arr.null_count:
        msg = f"argument {name!r} contains {arr.null_count} NULL values"
        raise InvalidInputError(msg)
    width = typ.bit_width // 8
    data = arr.buffers()[1]
    if data is None:  # empty array
        return memoryview(b"").cast(_FORMATS[typ])
    raw = memoryview(data).cast("B")
    return raw[arr.offset * width : (arr.offset + len(arr)) * width].cast(_FORMATS[typ])


def from_bytes(data: bytes, typ: pa.DataType) -> pa.Array:
    """Wrap little-endian bytes returned by a kernel as an Arrow array of ``typ``."""
    width = typ.bit_width // 8
    return pa.Array.from_buffers(typ, len(data) // width, [None, pa.py_buffer(data)])
