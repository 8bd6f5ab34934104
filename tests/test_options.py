"""Every option is declared once (``kanon._options``) and everything else follows from it.

The SQL macros' parameters, the planner's view of the options, the Python API's keywords,
the command line's flags and docs/sql.md's table are produced from the declaration or checked
against it here.
"""

from __future__ import annotations

import inspect
import re
import typing
from dataclasses import fields
from pathlib import Path

import pyarrow as pa
import pytest

import kanon
from kanon._options import MACROS, AnonymizeKeywords, SearchKeywords, defaults, markdown_table
from kanon.cli import commands as cli
from kanon.plan.release.registry import taking
from kanon.plan.release.resolve import AnonymizeOptions

if typing.TYPE_CHECKING:
    import duckdb

ROOT = Path(__file__).resolve().parents[1]


def test_the_planner_options_are_declared_options() -> None:
    """Every field of the planner's options object is the declared option of its name."""
    declared = set(MACROS["kanon"].options())
    planner_own = {"k", "qi", "models", "given"}
    names = {f.name for f in fields(AnonymizeOptions)} - planner_own
    assert names <= declared, names - declared
    # The privacy models are declared options too (threshold models by their names).
    models = set(kanon.plan.release.models.PrivacyModels.__dataclass_fields__) - {"thresholds"}
    assert models <= declared
    thresholds = {m.options[0] for m in kanon.plan.models.THRESHOLD_MODELS}
    assert thresholds <= declared


def test_a_declared_option_reaches_the_planner_from_sql_and_python(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """``given`` carries every declared option, with its default when not given."""
    options = AnonymizeOptions.of(3, ["age"], {"seed": 4})
    assert options.given == {**defaults("kanon"), "seed": 4}
    assert options.seed == 4
    assert options.method == "forest"
    search = AnonymizeOptions.of(3, None, defaults("kanon_search"))
    assert search.method == "optimal"


def test_the_python_api_takes_the_declared_keywords() -> None:
    """The keyword functions unpack the declared TypedDicts (what mypy and editors see)."""
    for function, keywords in (
        (kanon.anonymize, AnonymizeKeywords),
        (kanon.explain, AnonymizeKeywords),
        (kanon.materialize, AnonymizeKeywords),
        (kanon.search, SearchKeywords),
    ):
        # The modules' annotations are strings (``from __future__ import annotations``).
        annotation = function.__annotations__["options"]
        assert annotation == f"Unpack[{keywords.__name__}]", function.__name__


@pytest.mark.parametrize(
    ("function", "macro", "own"),
    [
        (kanon.check, "kanon_check", {"data", "con"}),
        (kanon.hkp, "kanon_hkp", {"data", "h", "k", "p", "con"}),
    ],
)
def test_python_functions_with_explicit_keywords_match_the_declaration(
    function: typing.Callable[..., object], macro: str, own: set[str]
) -> None:
    """Names and defaults of check and hkp equal their macro's declared options."""
    params = inspect.signature(function).parameters
    declared = MACROS[macro].options()
    leading = {p.name for p in MACROS[macro].leading} - {"tbl"}
    assert set(params) - own - leading == set(declared)
    for name, (_, opt) in declared.items():
        assert params[name].default == opt.default, name


def test_unknown_python_keywords_are_named() -> None:
    data = pa.table({"age": [30, 31, 32, 40, 41, 42]})
    with pytest.raises(kanon.exceptions.InvalidInputError, match="unknown keyword"):
        kanon.anonymize(data, 3, ["age"], blocksize=5)  # type: ignore[call-arg]
    with pytest.raises(kanon.exceptions.InvalidInputError, match="unknown keyword"):
        kanon.search(data, 3, ["age"], seed=1)  # type: ignore[call-arg]


@pytest.mark.parametrize(("command", "macro"), [("anonymize", "kanon"), ("check", "kanon_check")])
def test_the_command_line_has_a_flag_per_declared_option(command: str, macro: str) -> None:
    parser = cli._parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    flags = {o for a in sub.choices[command]._actions for o in a.option_strings}  # type: ignore[index]
    for name, (_, opt) in MACROS[macro].options().items():
        assert not opt.cli or ("--" + name.replace("_", "-")) in flags, name


def test_sql_reference_parameter_table_is_the_declaration() -> None:
    text = (ROOT / "docs" / "sql.md").read_text(encoding="utf-8")
    tables = re.findall(r"<!-- options: (\w+) -->\n(.*?)\n<!-- /options -->", text, re.S)
    assert [m for m, _ in tables] == ["kanon"]
    for macro, table in tables:
        methods = {name: taking(name) for name in MACROS[macro].options()}
        assert table == markdown_table(macro, methods), (
            "docs/sql.md's parameter table differs from the declared options: paste "
            f"kanon._options.markdown_table({macro!r}, ...)"
        )
