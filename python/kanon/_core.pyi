# Hand-written stub of the compiled module kanon._core (rust/kanon-py).
from typing import Any, TypeAlias

_Buffer: TypeAlias = memoryview | bytes

__all__ = [
    "__version__",
    "class_stats",
    "encode_strings",
    "forest_anonymize",
    "forest_extend",
    "groupify",
    "historic_release",
    "hkp",
    "lattice_optimal",
    "mondrian_partition",
    "progress",
    "progress_cancel",
    "progress_reset",
    "progress_uncancel",
    "sql_bundle",
    "validate_hierarchy",
]

__version__: str

def class_stats(
    counts: _Buffer,
    offsets: _Buffer | None = None,
    sensitive: _Buffer | None = None,
    population: _Buffer | None = None,
    ordered: bool = False,
    recursive_l: int | None = None,
    recursive_c: float | None = None,
    risk_threshold: float = 0.2,
    hierarchy: list[_Buffer] | None = None,
) -> dict[str, Any]: ...
def encode_strings(values: list[str | None]) -> tuple[bytes, list[int]]: ...
def validate_hierarchy(levels: list[_Buffer]) -> int: ...
def groupify(
    columns: list[_Buffer],
    hierarchies: list[list[_Buffer]],
    levels: list[int],
    weights: _Buffer | None = None,
) -> tuple[bytes, bytes]: ...
def forest_anonymize(
    tuples: _Buffer,
    m: int,
    counts: _Buffer,
    hierarchies: list[list[_Buffer]],
    weights: list[float],
    cost: str,
    k: int,
    seed: int = 0,
    improve: str = "full",
    keys: list[_Buffer | None] | None = None,
    blocks: tuple[list[_Buffer], list[float], int] | None = None,
) -> tuple[bytes, int, bytes, dict[str, Any]]: ...
def lattice_optimal(
    low: _Buffer,
    high: _Buffer,
    counts: _Buffer,
    hierarchies: list[list[_Buffer]],
    weights: list[float],
    node_loss: list[list[_Buffer]],
    metric: str,
    k: int,
    max_suppressed: int,
    keep_suppressed: bool,
    min_level: list[int],
    max_level: list[int],
    *,
    sensitive: tuple[_Buffer, _Buffer, _Buffer, int] | None = None,
    sensitive_hierarchy: list[_Buffer] | None = None,
    population: tuple[_Buffer, _Buffer] | None = None,
    l: float | None = None,
    l_diversity: str = "distinct",
    c: float | None = None,
    t: float | None = None,
    t_distance: str = "equal",
    delta: tuple[float, float] | None = None,
) -> tuple[list[int], bytes, dict[str, Any]]: ...
def mondrian_partition(
    tuples: _Buffer,
    m: int,
    counts: _Buffer,
    keys: list[_Buffer],
    spans: list[float],
    hierarchies: list[list[_Buffer]],
    k: int,
    stop: int,
    *,
    sets: list[bool] | None = None,
    sensitive: tuple[_Buffer, _Buffer, _Buffer, int] | None = None,
    sensitive_hierarchy: list[_Buffer] | None = None,
    l: float | None = None,
    l_diversity: str = "distinct",
    c: float | None = None,
    t: float | None = None,
    t_distance: str = "equal",
) -> tuple[int, bytes, bytes]: ...
def progress() -> tuple[int, int]: ...
def progress_cancel() -> None: ...
def progress_reset(total: int) -> None: ...
def progress_uncancel() -> None: ...
def historic_release(
    tuples: _Buffer,
    m: int,
    counts: _Buffer,
    hierarchies: list[list[_Buffer]],
    method: str,
    k: int,
    max_suppressed: int | None,
    keep_suppressed: bool,
) -> tuple[list[int], bytes, bytes, dict[str, Any]]: ...
def forest_extend(
    tuples: _Buffer,
    m: int,
    hierarchies: list[list[_Buffer]],
    weights: list[float],
    cost: str,
    tuple_of_row: _Buffer,
    group_of_row: _Buffer,
    groups: int,
    k: int,
) -> tuple[bytes, int, bytes, dict[str, Any]]: ...
def hkp(
    offsets: _Buffer,
    items: _Buffer,
    n_items: int,
    h: float,
    k: int,
    p: int,
    *,
    private: _Buffer | None = None,
    public_fraction: float | None = None,
    seed: int = 0,
    method: str = "mmil",
    min_support: float = 0.0,
    max_itemsets: int = ...,
) -> dict[str, Any]: ...
def sql_bundle() -> list[tuple[str, str]]: ...
