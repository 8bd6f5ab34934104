# Hand-written stub of the compiled module kanon._core (rust/kanon-py).
# The kernel UDFs take one Arrow array per SQL argument (any object exporting the Arrow C
# data interface) and return one pyarrow struct array; see their docstrings.
from typing import Any, TypeAlias

_Arrow: TypeAlias = Any  # pyarrow / numpy arrays, memoryviews: Arrow C data or buffers
_Array: TypeAlias = Any  # a pyarrow array (pyarrow ships no type information)

__all__ = [
    "__version__",
    "class_stats",
    "encode_strings",
    "float_splits",
    "forest",
    "forest_extend",
    "groupify",
    "historic",
    "hkp",
    "int_splits",
    "iterated",
    "mondrian",
    "optimal",
    "priority",
    "progress",
    "progress_cancel",
    "progress_reset",
    "progress_uncancel",
    "sql_bundle",
    "validate_hierarchy",
]

__version__: str

def class_stats(classes: _Arrow, options: _Arrow) -> _Array: ...
def forest(
    tuples: _Arrow,
    counts: _Arrow,
    ts: _Arrow,
    hierarchies: _Arrow,
    weights: _Arrow,
    k: _Arrow,
    seed: _Arrow,
    options: _Arrow,
    keys: _Arrow,
    cut_keys: _Arrow,
    spans: _Arrow,
) -> _Array: ...
def mondrian(
    tuples: _Arrow,
    counts: _Arrow,
    ts: _Arrow,
    keys: _Arrow,
    spans: _Arrow,
    hierarchies: _Arrow,
    k: _Arrow,
    options: _Arrow,
    sensitive_tuples: _Arrow,
    sensitive_codes: _Arrow,
    sensitive_counts: _Arrow,
    sensitive_hierarchy: _Arrow,
    population_paths: _Arrow,
    population_counts: _Arrow,
) -> _Array: ...
def priority(
    tuples: _Arrow,
    counts: _Arrow,
    ts: _Arrow,
    hierarchies: _Arrow,
    ranks: _Arrow,
    k: _Arrow,
    options: _Arrow,
) -> _Array: ...
def iterated(
    tuples: _Arrow,
    counts: _Arrow,
    ts: _Arrow,
    hierarchies: _Arrow,
    weights: _Arrow,
    k: _Arrow,
    options: _Arrow,
) -> _Array: ...
def optimal(
    histogram: _Arrow,
    hierarchies: _Arrow,
    weights: _Arrow,
    node_loss: _Arrow,
    k: _Arrow,
    options: _Arrow,
    sensitive_tuples: _Arrow,
    sensitive_codes: _Arrow,
    sensitive_counts: _Arrow,
    sensitive_hierarchy: _Arrow,
    population_paths: _Arrow,
    population_counts: _Arrow,
) -> _Array: ...
def historic(
    tuples: _Arrow, counts: _Arrow, hierarchies: _Arrow, k: _Arrow, options: _Arrow
) -> _Array: ...
def int_splits(offsets: _Arrow, options: _Arrow) -> _Array: ...
def float_splits(values: _Arrow, options: _Arrow) -> _Array: ...
def hkp(tx: _Arrow, n: _Arrow, n_items: _Arrow, private: _Arrow, options: _Arrow) -> _Array: ...
def encode_strings(values: list[str | None]) -> tuple[_Array, list[int]]: ...
def validate_hierarchy(levels: list[_Arrow]) -> int: ...
def groupify(
    columns: list[_Arrow],
    hierarchies: list[list[_Arrow]],
    levels: list[int],
    weights: _Arrow | None = None,
) -> tuple[_Array, _Array]: ...
def forest_extend(
    tuples: _Arrow,
    m: int,
    hierarchies: list[list[_Arrow]],
    weights: list[float],
    cost: str,
    tuple_of_row: _Arrow,
    group_of_row: _Arrow,
    groups: int,
    k: int,
) -> tuple[_Array, int, _Array, dict[str, Any]]: ...
def progress() -> tuple[int, int]: ...
def progress_cancel() -> None: ...
def progress_reset(total: int) -> None: ...
def progress_uncancel() -> None: ...
def sql_bundle() -> list[tuple[str, str]]: ...
