"""The kernel UDFs: one registration per kernel of ``kanon._core``.

Each kernel takes the Arrow arrays of its SQL arguments (one row per call of the SQL
function; read without copies through Arrow's C data interface), runs once per row and
returns one Arrow struct array. The SQL types below are the contract with the generated
SQL; the kernels' docstrings describe every argument and field.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kanon import _core

if TYPE_CHECKING:
    from collections.abc import Callable

    import pyarrow as pa

__all__ = ["KERNELS", "STATS_SQL_TYPE", "Kernel"]

#: The statistics of ``kanon_class_stats``.
STATS_SQL_TYPE = (
    "STRUCT(k UBIGINT, classes UBIGINT, rows UBIGINT, l_distinct UBIGINT, l_entropy DOUBLE, "
    "recursive_l UBIGINT, recursive_c DOUBLE, recursive_ok BOOLEAN, t DOUBLE, "
    "prosecutor_max DOUBLE, prosecutor_avg DOUBLE, prosecutor_at_risk DOUBLE, marketer DOUBLE, "
    "journalist_max DOUBLE, journalist_avg DOUBLE, journalist_at_risk DOUBLE, "
    "delta_min DOUBLE, delta_max DOUBLE)"
)
_CLASSES = "STRUCT(n UBIGINT, pop UBIGINT, entries STRUCT(c UINTEGER, n UBIGINT)[])[]"
#: The six model arguments of ``kanon_optimal`` and ``kanon_mondrian``: sensitive entries
#: (tuples, codes, rows), the sensitive hierarchy, population paths and rows.
_MODELS = ("UINTEGER[]", "UINTEGER[]", "UBIGINT[]", "UINTEGER[][]", "UINTEGER[]", "UBIGINT[]")
_HIERARCHIES = "UINTEGER[][][]"
#: A pack's tuples: per quasi-identifier the leaf code of every tuple (with its counts and
#: numbers ``ts``, in one order the kernel does not rely on: it reads them in order of ts).
_PACK_TUPLES = "UINTEGER[][]"
_FOREST_STATS = (
    "STRUCT(tuples UBIGINT, vertices UBIGINT, own_groups UBIGINT, cuts UBIGINT[], "
    "repaired UBIGINT, cost_before_improve DOUBLE, cost DOUBLE, groups UBIGINT)"
)
_OPTIMAL_STATS = (
    "STRUCT(seconds DOUBLE, cost DOUBLE, suppressed UBIGINT, classes UBIGINT, nodes UBIGINT, "
    "checked UBIGINT, rolled_up UBIGINT, tagged UBIGINT)"
)
_HISTORIC_STATS = (
    "STRUCT(unprotected_rows UBIGINT, unprotected_classes UBIGINT, suppressed_cells UBIGINT, "
    "suppressed_rows UBIGINT, topped_up_rows UBIGINT, steps UBIGINT, classes UBIGINT, "
    "seconds DOUBLE)"
)
_HKP = (
    "STRUCT(suppressed UINTEGER[], size1_moles UINTEGER[], moles UINTEGER[][], "
    "dropped UINTEGER[], private UINTEGER[], information_loss DOUBLE, "
    "suppressed_occurrences UBIGINT, occurrences UBIGINT, dropped_occurrences UBIGINT, "
    "transactions UBIGINT, items UBIGINT, public_items UBIGINT, candidates UBIGINT, "
    "method VARCHAR, seconds DOUBLE)"
)


@dataclass(frozen=True)
class Kernel:
    """A kernel UDF: its SQL name, its ``kanon._core`` function's name, its SQL signature."""

    name: str
    function: str
    parameters: tuple[str, ...]
    returns: str

    @functools.cached_property
    def udf(self) -> Callable[..., pa.Array]:
        """The function DuckDB calls: its chunked columns, joined, go to the kernel."""
        function = self.function

        def call(*columns: pa.ChunkedArray) -> pa.Array:
            # Looked up per call, so that a wrapped kernel (benches) is the one called.
            kernel = getattr(_core, function)
            # One chunk goes as it is: combining copies even one (a histogram of 10^7
            # tuples is a quarter of a gigabyte).
            return kernel(
                *(c.chunk(0) if c.num_chunks == 1 else c.combine_chunks() for c in columns)
            )

        call.__name__ = call.__qualname__ = self.name
        # DuckDB reads the number of arguments from the signature.
        positional = inspect.Parameter.POSITIONAL_ONLY
        call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(f"a{i}", positional) for i in range(len(self.parameters))]
        )
        return call


KERNELS: tuple[Kernel, ...] = (
    Kernel("kanon_class_stats", "class_stats", (_CLASSES, "VARCHAR"), STATS_SQL_TYPE),
    Kernel(
        "kanon_forest",
        "forest",
        (
            _PACK_TUPLES,
            "UBIGINT[]",  # counts
            "UBIGINT[]",  # ts
            _HIERARCHIES,
            "DOUBLE[]",  # weights
            "UBIGINT",  # k
            "UBIGINT",  # seed
            "VARCHAR",  # options
            "DOUBLE[][]",  # range keys
            "DOUBLE[][]",  # cut keys
            "DOUBLE[]",  # spans
        ),
        f"STRUCT(g UINTEGER[], lv UINTEGER[][], stats {_FOREST_STATS}, o UBIGINT[])",
    ),
    Kernel(
        "kanon_mondrian",
        "mondrian",
        (
            _PACK_TUPLES,
            "UBIGINT[]",  # counts
            "UBIGINT[]",  # ts
            "DOUBLE[][]",  # keys
            "DOUBLE[]",  # spans
            _HIERARCHIES,
            "UBIGINT",  # k
            "VARCHAR",  # options
            *_MODELS,
        ),
        "STRUCT(g UINTEGER[], lv UINTEGER[][])",
    ),
    Kernel(
        "kanon_priority",
        "priority",
        (
            _PACK_TUPLES,
            "UBIGINT[]",  # counts
            "UBIGINT[]",  # ts
            _HIERARCHIES,
            "UINTEGER[]",  # ranks
            "UBIGINT",  # k
            "VARCHAR",  # options
        ),
        "STRUCT(g UINTEGER[], lv UINTEGER[][])",
    ),
    Kernel(
        "kanon_iterated",
        "iterated",
        (
            _PACK_TUPLES,
            "UBIGINT[]",  # counts
            "UBIGINT[]",  # ts
            _HIERARCHIES,
            "DOUBLE[]",  # weights
            "UBIGINT",  # k
            "VARCHAR",  # options
        ),
        "STRUCT(g UINTEGER[], lv UINTEGER[][])",
    ),
    Kernel(
        "kanon_optimal",
        "optimal",
        (
            "STRUCT(lo UBIGINT, hi UBIGINT, n UBIGINT)[]",  # histogram
            _HIERARCHIES,
            "DOUBLE[]",  # weights
            "DOUBLE[][][]",  # node loss
            "UBIGINT",  # k
            "VARCHAR",  # options
            *_MODELS,
        ),
        f"STRUCT(levels UINTEGER[], s UINTEGER[][], stats {_OPTIMAL_STATS})",
    ),
    Kernel(
        "kanon_historic",
        "historic",
        ("UINTEGER[]", "UBIGINT[]", _HIERARCHIES, "UBIGINT", "VARCHAR"),
        f"STRUCT(levels UINTEGER[], cells UBIGINT[], stats {_HISTORIC_STATS})",
    ),
    Kernel(
        "kanon_int_splits",
        "int_splits",
        ("UBIGINT[]", "VARCHAR"),
        "STRUCT(codes UINTEGER[][], lo UBIGINT[][], hi UBIGINT[][])",
    ),
    Kernel(
        "kanon_float_splits",
        "float_splits",
        ("DOUBLE[]", "VARCHAR"),
        "STRUCT(codes UINTEGER[][], lo DOUBLE[][], hi DOUBLE[][])",
    ),
    Kernel(
        "kanon_hkp_run",
        "hkp",
        ("UINTEGER[][]", "UBIGINT", "UBIGINT", "UINTEGER[]", "VARCHAR"),
        _HKP,
    ),
)
