"""Quoting: DuckDB reads every quoted name and literal back unchanged; same text as sqlglot."""

from __future__ import annotations

import duckdb
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from kanon.sql.quote import ident, literal

NAMES = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=20,
)


@settings(max_examples=200, deadline=None)
@given(name=NAMES, text=NAMES, number=st.one_of(st.integers(-(2**62), 2**62), st.floats()))
def test_quoted_text_reads_back_unchanged(name: str, text: str, number: float) -> None:
    assert ident(name) == exp.to_identifier(name, quoted=True).sql(dialect="duckdb")
    assert literal(text) == exp.Literal.string(text).sql(dialect="duckdb")
    with duckdb.connect() as con:
        rel = con.execute(f"SELECT {literal(text)} AS {ident(name)}, {literal(number)}")
        assert rel.description[0][0] == name
        got_text, got_number = rel.fetchall()[0]
    assert got_text == text
    assert got_number == number or (got_number != got_number and number != number)


def test_hostile_name_is_one_identifier() -> None:
    name = 'x"; DROP TABLE y; --'
    with duckdb.connect() as con:
        con.execute("CREATE TABLE y (a INT)")
        con.execute(f"CREATE TABLE {ident(name)} (a INT)")
        tables = {r[0] for r in con.execute("SHOW TABLES").fetchall()}
    assert tables == {"y", name}
