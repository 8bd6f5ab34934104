"""An independent, deliberately naive re-implementation of the check, row by row."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any


def _key(value: Any) -> tuple[int, Any]:
    """Sort NULLs last, like the planner's ``ORDER BY ... NULLS LAST``."""
    return (1, 0) if value is None else (0, value)


def naive_check(
    rows: list[dict[str, Any]], qi: list[str], sensitive: str | None, ordered: bool = False
) -> dict[str, Any]:
    classes: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for row in rows:
        classes[tuple(row[q] for q in qi)].append(None if sensitive is None else row[sensitive])
    sizes = [len(v) for v in classes.values()]
    n = len(rows)
    out: dict[str, Any] = {
        "k": min(sizes),
        "classes": len(sizes),
        "rows": n,
        "prosecutor_max": 1 / min(sizes),
        "prosecutor_avg": len(sizes) / n,
        "prosecutor_at_risk": sum(s for s in sizes if 1 / s > 0.2) / n,
    }
    if sensitive is None:
        return out
    values = sorted({row[sensitive] for row in rows}, key=_key)
    total = Counter(row[sensitive] for row in rows)
    q = [total[v] / n for v in values]
    l_distinct, min_entropy, t = math.inf, math.inf, 0.0
    for members in classes.values():
        counts = Counter(members)
        l_distinct = min(l_distinct, len(counts))
        size = len(members)
        entropy = -sum(c / size * math.log(c / size) for c in counts.values())
        min_entropy = min(min_entropy, entropy)
        p = [counts[v] / size for v in values]
        if ordered:
            acc, emd = 0.0, 0.0
            for pi, qi_ in zip(p, q, strict=True):
                acc += pi - qi_
                emd += abs(acc)
            emd = emd / (len(values) - 1) if len(values) > 1 else 0.0
        else:
            emd = 0.5 * sum(abs(pi - qi_) for pi, qi_ in zip(p, q, strict=True))
        t = max(t, emd)
    out.update(l_distinct=l_distinct, l_entropy=math.exp(min_entropy), t=t)
    return out
