"""``kanon_metrics`` of releases that publish observed values: ``[lo..hi]`` and ``{a, b}``.

The GCP of such a label depends on the label alone: ``(hi - lo) / (max - min)`` for
numbers, ``(values named - 1) / (distinct values - 1)`` for the others. The test
computes it in Python from the released labels and compares.
"""

from __future__ import annotations

import duckdb
import pytest

import kanon
from kanon import datagen


def expected_gcp(con: duckdb.DuckDBPyConnection, column: str, labels: list[str | None]) -> float:
    values = [v for (v,) in con.execute(f'SELECT DISTINCT "{column}" FROM src').fetchall()]
    present = [v for v in values if v is not None]
    total = 0.0
    for label in labels:
        if label is None or label in {str(v) for v in present}:
            continue
        if label == "*":
            total += 1.0
        elif label.startswith("["):
            lo, hi = (int(x) for x in label[1:-1].split(".."))
            total += (hi - lo) / (max(present) - min(present))
        else:
            named = sorted(str(v) for v in present if f", {v}, " in f", {label[1:-1]}, ")
            assert "{" + ", ".join(named) + "}" == label
            total += (len(named) - 1) / (len(present) - 1)
    return total / len(labels)


@pytest.mark.parametrize(
    "call",
    [
        "kanon('src', k := 4, labels := 'range')",
        "kanon('src', k := 4, method := 'mondrian')",
        "kanon('src', k := 4, method := 'mondrian', labels := 'range')",
    ],
)
def test_gcp_of_range_and_set_labels(call: str) -> None:
    con = kanon.install(duckdb.connect())
    datagen.census(con, "people", rows=400, seed=11)
    con.execute(
        "CREATE TABLE src AS SELECT age, marital_status, "
        "CASE WHEN person_id % 9 = 0 THEN NULL ELSE race || ', ' || sex END AS who, "
        "occupation FROM people"
    ).fetchall()
    kanon.configure(
        con,
        "src",
        qi={"age": None, "marital_status": None, "who": None},
        insensitive=["occupation"],
    )
    con.execute(f"CREATE TABLE rel AS SELECT * FROM {call}").fetchall()
    m = kanon.metrics("src", "rel", con=con)
    for column in ("age", "marital_status", "who"):
        labels = [v for (v,) in con.execute(f'SELECT "{column}" FROM rel').fetchall()]
        assert column != "age" or any(x is not None and x[0] == "[" for x in labels)
        assert m.gcp_by_column[column] == pytest.approx(expected_gcp(con, column, labels))
    # SQL agrees, and a label naming a value the original lacks is an error.
    (gcp,) = con.sql("SELECT gcp FROM kanon_metrics('src', 'rel')").fetchall()[0]
    assert gcp == pytest.approx(m.gcp)
    con.execute("UPDATE rel SET age = '[1..200]' WHERE rowid = 0").fetchall()
    with pytest.raises(duckdb.Error, match=r"label \[1\.\.200\] of column age"):
        kanon.metrics("src", "rel", con=con)


def test_a_text_label_costs_its_values_not_their_alphabetical_span() -> None:
    """Node x holds a and c, node y b and d: each covers 2 of 4 values, GCP 1/3."""
    con = kanon.install(duckdb.connect())
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES ('a'), ('b'), ('c'), ('d')) v(s)")
    con.execute(
        "CREATE TABLE h AS SELECT * FROM "
        "(VALUES ('a', 'x', '*'), ('c', 'x', '*'), ('b', 'y', '*'), ('d', 'y', '*')) v(a, b, c)"
    )
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES ('x'), ('y'), ('x'), ('y')) v(s)")
    kanon.configure(con, "t", qi={"s": "h"})
    assert kanon.metrics("t", "r", con=con).gcp == pytest.approx(1 / 3)
