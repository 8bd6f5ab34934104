"""Hypothesis strategies: small tables with NULLs, duplicates, unicode and skew."""

from __future__ import annotations

from hypothesis import strategies as st

TEXT = st.sampled_from(["a", "b", "Ünïcødé", "", "x y", "日本", "naïve", "O'Brien", '"q"'])
INTS = st.integers(min_value=-3, max_value=4)


@st.composite
def tables(draw: st.DrawFn, max_rows: int = 40) -> dict[str, list[object]]:
    """Columns q0 (int), q1 (text), q2 (int, skewed), s (text), v (int) with NULLs."""
    n = draw(st.integers(min_value=1, max_value=max_rows))
    nullable_int = st.one_of(st.none(), INTS)
    nullable_text = st.one_of(st.none(), TEXT)
    skewed = st.one_of(st.just(0), st.just(0), st.just(0), st.none(), INTS)
    return {
        "q0": draw(st.lists(nullable_int, min_size=n, max_size=n)),
        "q1": draw(st.lists(nullable_text, min_size=n, max_size=n)),
        "q2": draw(st.lists(skewed, min_size=n, max_size=n)),
        "s": draw(st.lists(nullable_text, min_size=n, max_size=n)),
        "v": draw(st.lists(st.one_of(st.none(), st.integers(0, 6)), min_size=n, max_size=n)),
    }
