"""Full-domain generalization and its GCP in plain Python: the brute-force oracle's tools.

A table's QI values and their hierarchy tables are fetched once; every level vector of
the lattice is then generalized (a value's label at the column's level, ``'*'`` at the
top, NULL below it) and priced by the GCP's definition in ``docs/sql.md`` without any
SQL, so brute force over a lattice costs no query per vector.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import duckdb

ROOT = "*"


def _text(column: str) -> str:
    return f'CAST("{column}" AS VARCHAR)'


@dataclass(frozen=True)
class Lattice:
    """The QIs of a table with their hierarchies, fetched once."""

    heights: list[int]
    rows: list[tuple[Any, ...]]  # the extra columns, then each QI's raw value
    texts: list[tuple[str | None, ...]]  # each QI's value as text (the hierarchies' keys)
    extra: int
    paths: list[dict[str, tuple[str, ...]]]  # per QI: value text -> its labels, level 0 up
    under: list[dict[str, list[Any]]]  # per QI: label -> raw values under it (lowest level)
    domain: list[list[Any]]  # per QI: its non-NULL source values

    @classmethod
    def load(
        cls,
        con: duckdb.DuckDBPyConnection,
        table: str,
        hierarchies: dict[str, str],
        extra: Sequence[str] = ("rid",),
    ) -> Lattice:
        paths, heights = [], []
        for h in hierarchies.values():
            names = [r[0] for r in con.execute(f'DESCRIBE "{h}"').fetchall()]
            select = ", ".join(_text(n) for n in names)
            paths.append({r[0]: r for r in con.execute(f'SELECT {select} FROM "{h}"').fetchall()})
            heights.append(len(names) - 1)
        e, m = len(extra), len(hierarchies)
        select = ", ".join([f'"{c}"' for c in (*extra, *hierarchies)])
        texts = ", ".join(_text(c) for c in hierarchies)
        fetched = con.execute(f'SELECT {select}, {texts} FROM "{table}"').fetchall()
        rows, keys = [r[: e + m] for r in fetched], [r[e + m :] for r in fetched]
        domain, unders = [], []
        for j in range(m):
            raw = [(r[e + j], t[j]) for r, t in zip(rows, keys, strict=True) if t[j] is not None]
            domain.append([v for v, _ in raw])
            under: dict[str, list[Any]] = {}
            for level in range(heights[j] + 1):
                at: dict[str, list[Any]] = {}
                for v, t in raw:
                    at.setdefault(paths[j][t][level], []).append(v)
                for label, vs in at.items():
                    under.setdefault(label, vs)
            unders.append(under)
        return cls(heights, rows, keys, e, paths, unders, domain)

    def vectors(self) -> Iterable[tuple[int, ...]]:
        """Every level vector of the lattice."""
        return itertools.product(*(range(h + 1) for h in self.heights))

    def generalized(self, levels: Sequence[int]) -> list[tuple[Any, ...]]:
        """Each row as (extra..., label per QI) at ``levels``."""
        out = []
        for row, texts in zip(self.rows, self.texts, strict=True):
            labels = tuple(
                ROOT
                if levels[j] == self.heights[j]
                else None
                if t is None
                else self.paths[j][t][levels[j]]
                for j, t in enumerate(texts)
            )
            out.append((*row[: self.extra], *labels))
        return out

    def ncp(self, j: int, label: str | None) -> float:
        """The normalized certainty penalty of ``label`` in QI ``j``."""
        if label is None:
            return 0.0
        if label == ROOT:
            return 1.0
        under, domain = self.under[j][label], self.domain[j]
        if all(isinstance(v, (int, float)) for v in domain):
            span = max(domain) - min(domain)
            return (max(under) - min(under)) / span if span > 0 else 0.0
        card = len(set(domain))
        return (len(set(under)) - 1) / (card - 1) if card > 1 else 0.0

    def gcp(self, labels: Iterable[Sequence[str | None]]) -> float:
        """The mean NCP over the released cells of ``labels`` (one tuple per row)."""
        rows = list(labels)
        m = len(self.heights)
        if not rows:
            return 0.0
        total = sum(self.ncp(j, row[j]) for row in rows for j in range(m))
        return total / m / len(rows)
