"""Tests of :mod:`kanon.datagen`: the seeded census-like table generator."""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb
import pytest

from kanon.datagen import CENSUS_ROLES, census
from kanon.sql.quote import ident

if TYPE_CHECKING:
    from collections.abc import Iterator

EXPECTED_COLUMNS = [
    ("person_id", "BIGINT"),
    ("name", "VARCHAR"),
    ("age", "INTEGER"),
    ("sex", "VARCHAR"),
    ("race", "VARCHAR"),
    ("marital_status", "VARCHAR"),
    ("education", "VARCHAR"),
    ("zip", "VARCHAR"),
    ("birth_date", "DATE"),
    ("native_country", "VARCHAR"),
    ("occupation", "VARCHAR"),
    ("income", "INTEGER"),
    ("hours_per_week", "INTEGER"),
]
QIS = [
    "age",
    "sex",
    "race",
    "marital_status",
    "education",
    "zip",
    "birth_date",
    "native_country",
]


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    """Yield a fresh in-memory connection, closed after the test."""
    connection = duckdb.connect()
    yield connection
    connection.close()


def scalar(con: duckdb.DuckDBPyConnection, sql: str) -> object:
    """Return the single value of ``sql``."""
    row = con.execute(sql).fetchone()
    assert row is not None
    return row[0]


def checksum(con: duckdb.DuckDBPyConnection, table: str) -> tuple[object, ...]:
    """Return an order-independent fingerprint of ``table``."""
    row = con.execute(
        f"SELECT count(*), sum(hash(t)::HUGEINT), bit_xor(hash(t)) FROM {ident(table)} AS t"
    ).fetchone()
    assert row is not None
    return tuple(row)


def ordered_rows(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[object, ...]]:
    """Return every row of ``table`` ordered by ``person_id``."""
    return con.execute(f"SELECT * FROM {ident(table)} ORDER BY person_id").fetchall()


def test_shape_types_and_no_nulls(con: duckdb.DuckDBPyConnection) -> None:
    assert census(con, rows=2_000) == "census"
    columns = con.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = 'census' ORDER BY ordinal_position"
    ).fetchall()
    assert columns == EXPECTED_COLUMNS
    assert scalar(con, "SELECT count(*) FROM census") == 2_000
    nulls = " + ".join(f"count(*) FILTER (WHERE {ident(c)} IS NULL)" for c, _ in columns)
    assert scalar(con, f"SELECT {nulls} FROM census") == 0
    assert con.execute(
        "SELECT min(person_id), max(person_id), count(DISTINCT person_id) FROM census"
    ).fetchone() == (1, 2_000, 2_000)


def test_zero_rows_and_replace(con: duckdb.DuckDBPyConnection) -> None:
    census(con, "t", rows=10)
    census(con, "t", rows=0)
    assert scalar(con, "SELECT count(*) FROM t") == 0
    assert [r[1] for r in con.execute("DESCRIBE t").fetchall()] == [t for _, t in EXPECTED_COLUMNS]


def test_bad_arguments(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(ValueError, match="rows"):
        census(con, rows=-1)
    with pytest.raises(ValueError, match="rows"):
        census(con, rows=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seed"):
        census(con, rows=1, seed=2**63)


def test_hostile_table_name(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("CREATE TABLE y AS SELECT 1 AS a")
    name = 'x"; DROP TABLE y; --'
    assert census(con, name, rows=100) == name
    assert scalar(con, f"SELECT count(*) FROM {ident(name)}") == 100
    assert scalar(con, "SELECT a FROM y") == 1


def test_same_seed_same_table(con: duckdb.DuckDBPyConnection) -> None:
    census(con, "a", rows=20_000, seed=7)
    census(con, "b", rows=20_000, seed=7)
    assert checksum(con, "a") == checksum(con, "b")
    assert ordered_rows(con, "a") == ordered_rows(con, "b")
    # A prefix of a larger table is the smaller table: rows depend only on (seed, row).
    census(con, "c", rows=30_000, seed=7)
    assert ordered_rows(con, "a") == ordered_rows(con, "c")[:20_000]


def test_different_seed_different_table(con: duckdb.DuckDBPyConnection) -> None:
    census(con, "a", rows=20_000, seed=7)
    census(con, "b", rows=20_000, seed=8)
    assert checksum(con, "a") != checksum(con, "b")
    same_age = scalar(con, "SELECT avg((a.age = b.age)::INTEGER) FROM a JOIN b USING (person_id)")
    assert isinstance(same_age, float)
    assert same_age < 0.2
    same_zip = scalar(con, "SELECT avg((a.zip = b.zip)::INTEGER) FROM a JOIN b USING (person_id)")
    assert isinstance(same_zip, float)
    assert same_zip < 0.05


def test_thread_count_does_not_matter(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("SET threads = 1")
    census(con, "one", rows=150_000, seed=3)
    con.execute("SET threads = 2")
    census(con, "two", rows=150_000, seed=3)
    assert checksum(con, "one") == checksum(con, "two")
    assert ordered_rows(con, "one") == ordered_rows(con, "two")


def test_value_ranges(con: duckdb.DuckDBPyConnection) -> None:
    census(con, rows=50_000)
    assert con.execute("SELECT min(age), max(age) FROM census").fetchone() == (17, 90)
    bad = con.execute(
        """
        SELECT
          count(*) FILTER (WHERE NOT regexp_full_match(zip, '[0-9]{5}')),
          count(*) FILTER (WHERE age <> 2026 - year(birth_date)
                                 - (strftime(birth_date, '%m%d') > '0101')::INTEGER),
          count(*) FILTER (WHERE hours_per_week NOT BETWEEN 1 AND 99),
          count(*) FILTER (WHERE income <= 0 OR income % 100 <> 0),
          count(*) FILTER (WHERE NOT regexp_full_match(name, '\\S+ \\S+'))
        FROM census
        """
    ).fetchone()
    assert bad == (0, 0, 0, 0, 0)
    # Birth dates cover whole years, not just one day per age.
    days = scalar(con, "SELECT count(DISTINCT strftime(birth_date, '%m%d')) FROM census")
    assert isinstance(days, int)
    assert days >= 360
    assert scalar(con, "SELECT count(DISTINCT education) FROM census") == 16
    assert scalar(con, "SELECT count(DISTINCT occupation) FROM census") == 14
    assert scalar(con, "SELECT count(DISTINCT sex) FROM census") == 2


def test_skew(con: duckdb.DuckDBPyConnection) -> None:
    census(con, rows=50_000)
    top_race = scalar(
        con, "SELECT max(n) / sum(n) FROM (SELECT count(*) AS n FROM census GROUP BY race)"
    )
    assert isinstance(top_race, float)
    assert top_race > 0.6
    top_country, countries = con.execute(
        "SELECT max(n) / sum(n), count(*) "
        "FROM (SELECT count(*) AS n FROM census GROUP BY native_country)"
    ).fetchone() or (None, None)
    assert isinstance(top_country, float)
    assert top_country > 0.8
    assert isinstance(countries, int)
    assert countries >= 30
    unicode = {r[0] for r in con.execute("SELECT DISTINCT native_country FROM census").fetchall()}
    assert {"México", "Côte d’Ivoire"} <= unicode  # noqa: RUF001

    prefixes = [
        r[0]
        for r in con.execute(
            "SELECT count(*) AS n FROM census GROUP BY left(zip, 3) ORDER BY n DESC"
        ).fetchall()
    ]
    assert 200 <= len(prefixes) < 1000
    assert prefixes[0] > 10 * prefixes[len(prefixes) // 2]
    assert sum(prefixes[:10]) > 0.1 * 50_000
    assert prefixes[-1] < 0.1 * prefixes[0]


def test_uniqueness(con: duckdb.DuckDBPyConnection) -> None:
    census(con, rows=50_000)
    qi = ", ".join(ident(c) for c in QIS)
    unique_share = scalar(
        con,
        f"SELECT avg((n = 1)::INTEGER) FROM (SELECT count(*) OVER (PARTITION BY {qi}) AS n "
        "FROM census)",
    )
    assert isinstance(unique_share, float)
    assert unique_share > 0.3
    smallest = scalar(
        con, "SELECT min(n) FROM (SELECT count(*) AS n FROM census GROUP BY sex, race)"
    )
    assert isinstance(smallest, int)
    assert smallest >= 20


def test_correlations(con: duckdb.DuckDBPyConnection) -> None:
    census(con, rows=50_000)

    def share(where: str, of: str) -> float:
        value = scalar(con, f"SELECT avg(({of})::INTEGER) FROM census WHERE {where}")
        assert isinstance(value, float)
        return value

    assert share("age < 25", "marital_status = 'Never-married'") > 0.6
    assert share("age >= 70", "marital_status = 'Widowed'") > 5 * share(
        "age < 40", "marital_status = 'Widowed'"
    )
    assert share(
        "education IN ('Bachelors', 'Masters', 'Doctorate')",
        "occupation IN ('Prof-specialty', 'Exec-managerial')",
    ) > 2 * share("education = 'HS-grad'", "occupation IN ('Prof-specialty', 'Exec-managerial')")
    high, low = con.execute(
        "SELECT median(income) FILTER (WHERE education IN ('Bachelors', 'Masters', 'Doctorate')),"
        " median(income) FILTER (WHERE education = 'HS-grad') FROM census"
    ).fetchone() or (0, 0)
    assert high > 1.3 * low
    assert share("age = 17", "education IN ('Bachelors', 'Masters', 'Doctorate')") == 0.0
    # Region (first ZIP digit) drives race: more Asian people on the west coast (9xxxx).
    assert share("zip LIKE '9%'", "race = 'Asian-Pac-Islander'") > 2 * share(
        "zip NOT LIKE '9%'", "race = 'Asian-Pac-Islander'"
    )


def test_roles() -> None:
    assert list(CENSUS_ROLES) == [c for c, _ in EXPECTED_COLUMNS]
    assert set(CENSUS_ROLES.values()) == {"identifier", "qi", "sensitive", "insensitive"}
    assert [c for c, r in CENSUS_ROLES.items() if r == "identifier"] == ["person_id", "name"]
    assert [c for c, r in CENSUS_ROLES.items() if r == "qi"] == QIS
    assert [c for c, r in CENSUS_ROLES.items() if r == "sensitive"] == ["occupation", "income"]
    assert [c for c, r in CENSUS_ROLES.items() if r == "insensitive"] == ["hours_per_week"]
