# Hand-written stub of the compiled module kanon._core (rust/kanon-py).
from typing import Any

Buffer = memoryview | bytes

__version__: str

def class_stats(
    counts: Buffer,
    offsets: Buffer | None = None,
    sensitive: Buffer | None = None,
    population: Buffer | None = None,
    ordered: bool = False,
    recursive_l: int | None = None,
    recursive_c: float | None = None,
    risk_threshold: float = 0.2,
) -> dict[str, Any]: ...
def encode_strings(values: list[str | None]) -> tuple[bytes, list[int]]: ...
def validate_hierarchy(levels: list[Buffer]) -> int: ...
def groupify(
    columns: list[Buffer],
    hierarchies: list[list[Buffer]],
    levels: list[int],
    weights: Buffer | None = None,
) -> tuple[bytes, bytes]: ...
def sql_bundle() -> list[tuple[str, str]]: ...
