"""The kernel UDFs: one registration per kernel of ``kanon._core``.

Each kernel takes the Arrow arrays of its SQL arguments (one row per call of the SQL
function; read without copies through Arrow's C data interface), runs once per row and
returns one Arrow struct array. A method's kernel is declared with the method
(``kanon.plan.release.<method>``); the kernels of the check, the numeric splits and
(h,k,p)-coherence below. The kernels' docstrings describe every argument and field.
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING

from kanon import _core
from kanon.plan.models import CHECK_MEASURES
from kanon.plan.release.registry import METHODS
from kanon.sql.kernel import Kernel

if TYPE_CHECKING:
    from collections.abc import Callable

    import pyarrow as pa

__all__ = ["KERNELS", "STATS_SQL_TYPE", "udf"]

#: The statistics of ``kanon_class_stats``: the measures of ``kanon_check``.
STATS_SQL_TYPE = f"STRUCT({', '.join(f'{m.name} {m.sql}' for m in CHECK_MEASURES)})"
_CLASSES = "STRUCT(n UBIGINT, pop UBIGINT, entries STRUCT(c UINTEGER, n UBIGINT)[])[]"
_HKP = (
    "STRUCT(suppressed UINTEGER[], size1_moles UINTEGER[], moles UINTEGER[][], "
    "dropped UINTEGER[], private UINTEGER[], information_loss DOUBLE, "
    "suppressed_occurrences UBIGINT, occurrences UBIGINT, dropped_occurrences UBIGINT, "
    "transactions UBIGINT, items UBIGINT, public_items UBIGINT, candidates UBIGINT, "
    "method VARCHAR, seconds DOUBLE)"
)


@functools.cache
def udf(kernel: Kernel) -> Callable[..., pa.Array]:
    """The function DuckDB calls: its chunked columns, joined, go to the kernel by name."""
    names = [name for name, _ in kernel.parameters]

    def call(*columns: pa.ChunkedArray) -> pa.Array:
        # Looked up per call, so that a wrapped kernel (benches) is the one called.
        function = getattr(_core, kernel.function)
        # One chunk goes as it is: combining copies even one (a histogram of 10^7
        # tuples is a quarter of a gigabyte).
        arrays = (c.chunk(0) if c.num_chunks == 1 else c.combine_chunks() for c in columns)
        return function(**dict(zip(names, arrays, strict=True)))

    call.__name__ = call.__qualname__ = kernel.name
    # DuckDB reads the number of arguments from the signature.
    positional = inspect.Parameter.POSITIONAL_ONLY
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(name, positional) for name in names]
    )
    return call


#: Every kernel UDF: the methods' (one per kernel), then the check's, the numeric
#: splits' and (h,k,p)-coherence's.
KERNELS: tuple[Kernel, ...] = (
    *{m.kernel.name: m.kernel for m in METHODS.values()}.values(),
    Kernel(
        "kanon_class_stats",
        "class_stats",
        (("classes", _CLASSES), ("options", "VARCHAR")),
        STATS_SQL_TYPE,
    ),
    Kernel(
        "kanon_int_splits",
        "int_splits",
        (("offsets", "UBIGINT[]"), ("options", "VARCHAR")),
        "STRUCT(codes UINTEGER[][], lo UBIGINT[][], hi UBIGINT[][])",
    ),
    Kernel(
        "kanon_float_splits",
        "float_splits",
        (("values", "DOUBLE[]"), ("options", "VARCHAR")),
        "STRUCT(codes UINTEGER[][], lo DOUBLE[][], hi DOUBLE[][])",
    ),
    Kernel(
        "kanon_hkp_run",
        "hkp",
        (
            ("tx", "UINTEGER[][]"),
            ("n", "UBIGINT"),
            ("n_items", "UBIGINT"),
            ("private", "UINTEGER[]"),
            ("options", "VARCHAR"),
        ),
        _HKP,
    ),
)
