"""``Hierarchy.to_csv`` and ``kanon hierarchy``: hierarchies written in ARX's format.

A hierarchy written and read back (``from_csv``, ``--hierarchy``) gives the same release
as the table it was written from, for every builder, with values holding the delimiter,
quotes, unicode and NULLs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb
import pytest

import kanon
from kanon import datagen, hierarchy
from kanon.cli import commands as cli
from kanon.exceptions import HierarchyError, InvalidInputError

if TYPE_CHECKING:
    from pathlib import Path

BUILDS = [
    ("age", hierarchy.intervals, {"width": 5}),
    ("age", hierarchy.intervals, {}),
    ("income", hierarchy.intervals, {"width": 2500.5}),
    ("zip", hierarchy.mask, {}),
    ("birth_date", hierarchy.dates, {}),
    ("odd", hierarchy.auto, {"fanout": 3}),
    ("odd", hierarchy.suppress, {}),
    ("odd", hierarchy.prefix_words, {}),
]


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    con = kanon.install(duckdb.connect())
    datagen.census(con, "people", rows=300, seed=5)
    con.execute(
        "CREATE TABLE t AS SELECT age, CAST(income AS DOUBLE) / 3 AS income, zip, birth_date, "
        "CASE WHEN person_id % 11 = 0 THEN NULL ELSE ['a;b', 'say \"hi\"', 'émigré x', "
        "'line\nbreak', 'plain words'][1 + person_id % 5] END AS odd, occupation FROM people"
    ).fetchall()
    return con


@pytest.mark.parametrize(("column", "build", "options"), BUILDS)
def test_written_and_read_back_gives_the_same_release(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, column: str, build: object, options: dict
) -> None:
    built = build(con, "h", table="t", column=column, **options)  # type: ignore[operator]
    path = built.to_csv(con, tmp_path / "h.csv")
    read = hierarchy.from_csv(con, path, "h_read")
    assert read.levels == built.levels
    releases = []
    for name in ("h", "h_read"):
        kanon.configure(con, "t", qi={column: name}, insensitive=["occupation"])
        releases.append(
            sorted(
                con.sql(
                    f"SELECT * FROM kanon('t', k := 3, qi := ['{column}'], keep_undeclared := true)"
                ).fetchall(),
                key=repr,
            )
        )
    assert releases[0] == releases[1]


def test_bad_delimiter(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    built = hierarchy.suppress(con, "h", table="t", column="zip")
    with pytest.raises(InvalidInputError, match="delimiter"):
        built.to_csv(con, tmp_path / "h.csv", delimiter='"')
    with pytest.raises(InvalidInputError, match="cannot write"):
        built.to_csv(con, tmp_path / "no" / "such" / "h.csv")


def test_kanon_hierarchy_writes_what_anonymize_reads(
    con: duckdb.DuckDBPyConnection, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "t.csv"
    con.execute(f"COPY (SELECT age, zip, occupation FROM t) TO '{data}'").fetchall()
    ages, zips = tmp_path / "age.csv", tmp_path / "zip.csv"
    assert (
        cli.main(
            [
                "hierarchy",
                str(data),
                "--column",
                "age",
                "--kind",
                "intervals",
                "--width",
                "5",
                "--out",
                str(ages),
            ]
        )
        == 0
    )
    (distinct,) = con.sql("SELECT count(DISTINCT age) FROM t").fetchall()[0]
    assert len(ages.read_text().splitlines()) == distinct
    assert (
        cli.main(["hierarchy", str(data), "--column", "zip", "--kind", "mask", "--out", str(zips)])
        == 0
    )
    capsys.readouterr()
    out = tmp_path / "out.csv"
    args = ["anonymize", str(data), "--k", "4", "--qi", "age,zip", "--insensitive", "occupation"]
    args += ["--hierarchy", f"age={ages}", "--hierarchy", f"zip={zips}", "--out", str(out)]
    assert cli.main(args) == 0
    worst = con.sql(
        f"SELECT min(n) FROM (SELECT count(*) AS n FROM read_csv('{out}', all_varchar = true) "
        "GROUP BY age, zip)"
    ).fetchall()
    assert worst[0][0] >= 4
    assert (
        cli.main(
            [
                "hierarchy",
                str(data),
                "--column",
                "zip",
                "--kind",
                "mask",
                "--width",
                "2",
                "--out",
                str(zips),
            ]
        )
        == 2
    )
    assert "--kind mask takes no --width" in capsys.readouterr().err


# An ARX hierarchy whose file repeats rows: line 4 repeats line 1 and line 6 the quoted
# two-line row of lines 2-3 (line 5 is blank, so lines are not records).
DUPLICATED = '1;low;*\n2;"lo\nw";*\n1;low;*\n\n2;"lo\nw";*\n3;high;*\n'


def test_from_csv_merges_exact_duplicate_rows(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    path = tmp_path / "dup.csv"
    path.write_text(DUPLICATED, encoding="utf-8")
    assert hierarchy.from_csv(con, path, "h") == hierarchy.Hierarchy("h", 2)
    # One row per value, in the order of the file.
    assert con.sql("SELECT * FROM h").fetchall() == [
        ("1", "low", "*"),
        ("2", "lo\nw", "*"),
        ("3", "high", "*"),
    ]


def test_from_csv_refuses_conflicting_rows_naming_their_lines(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    path = tmp_path / "conflict.csv"
    path.write_text(DUPLICATED + "0;low;*\n2;high;*\n", encoding="utf-8")
    with pytest.raises(HierarchyError) as err:
        hierarchy.from_csv(con, path, "h")
    message = str(err.value)
    assert repr(str(path)) in message
    assert "'2'" in message
    # The lines of file, not the records DuckDB read.
    assert "lines 2 and 6" in message
    assert "line 10" in message
    assert "__kanon" not in message
    assert con.sql("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'h'").fetchall() == [
        (0,)
    ]


def test_cli_reads_hierarchy_files_with_duplicate_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data.csv"
    data.write_text("v,x\n" + "1,a\n2,b\n3,c\n" * 3, encoding="utf-8")
    dup, conflict = tmp_path / "dup.csv", tmp_path / "conflict.csv"
    dup.write_text(DUPLICATED, encoding="utf-8")
    conflict.write_text(DUPLICATED + "2;high;*\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    base = ["anonymize", str(data), "--k", "3", "--qi", "v", "--out", str(out), "--quiet"]
    assert cli.main([*base, "--hierarchy", f"v={dup}"]) == 0, capsys.readouterr().err
    assert out.is_file()
    assert cli.main([*base, "--hierarchy", f"v={conflict}"]) == 2
    err = capsys.readouterr().err
    assert str(conflict) in err
    assert "lines 2 and 6" in err
    assert "line 9" in err
