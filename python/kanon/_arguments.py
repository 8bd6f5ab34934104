"""The arguments of kanon's SQL macros, as the planners receive them: one JSON object.

Each macro hands its planner ``to_json({...})`` of all its parameters, so a value of any
SQL type reaches Python and is checked here, by name: a wrong type gives a kanon error
naming the parameter and what it accepts, never a binder error about the planner's
signature. Ranges and choices are checked by the options objects the planners build.
"""

from __future__ import annotations

import json
import math
from typing import Any

from kanon.exceptions import InvalidInputError

__all__ = ["MACRO_ARGUMENTS", "column_names", "parse"]

#: What each kind of parameter accepts, as said in errors.
_ACCEPTS = {
    "name": "a name (a string)",
    "text": "a string",
    "int": "a whole number",
    "number": "a number",
    "bool": "TRUE or FALSE",
    "names": "a list of column names, e.g. ['age', 'zip']",
    "levels": "a map of column name to level, e.g. MAP {'age': 1}",
    "name_or_names": "a column name or a list of them",
    "items": "a list of items, e.g. [3, 4] or ['milk']",
}
_MODELS = {
    "sensitive": "name_or_names",
    "l": "number",
    "l_diversity": "text",
    "c": "number",
    "t": "number",
    "t_distance": "text",
    "population": "name",
    "delta_min": "number",
    "delta_max": "number",
}
_OPTIMAL = {
    "method": "text",
    "metric": "text",
    "max_suppression": "number",
    "drop_suppressed": "bool",
    "min_level": "levels",
    "max_level": "levels",
}
_HKP = {
    "tbl": "name",
    "h": "number",
    "k": "int",
    "p": "int",
    "private": "items",
    "roles": "name",
    "public_fraction": "number",
    "seed": "int",
    "method": "text",
    "min_support": "number",
    "items": "name",
    "tid": "name",
    "item": "name",
    "max_itemsets": "int",
}
#: Every parameter of every SQL macro and the kind of value it takes (the macros in
#: sql/ pass exactly these names to their planner).
MACRO_ARGUMENTS: dict[str, dict[str, str]] = {
    "kanon": {
        "tbl": "name",
        "k": "int",
        "qi": "names",
        "seed": "int",
        **_OPTIMAL,
        **_MODELS,
        "labels": "text",
        "block_size": "int",
        "effort": "text",
        "identifiers": "names",
        "insensitive": "names",
        "keep_undeclared": "bool",
    },
    "kanon_search": {"tbl": "name", "k": "int", "qi": "names", **_OPTIMAL, **_MODELS},
    "kanon_check": {
        "tbl": "name",
        "qi": "names",
        "sensitive": "name",
        "population": "name",
        "t_distance": "text",
        "recursive_l": "int",
        "recursive_c": "number",
        "risk_threshold": "number",
        "identifiers": "names",
        "insensitive": "names",
    },
    "kanon_classes": {"tbl": "name", "qi": "names"},
    "kanon_metrics": {"original": "name", "released": "name", "qi": "names", "k": "int"},
    "kanon_hkp": _HKP,
    "kanon_hkp_report": _HKP,
}


def _fits(kind: str, value: Any) -> bool:
    if kind in ("name", "text"):
        return isinstance(value, str) and (kind == "text" or value != "")
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "names":
        return isinstance(value, list) and all(isinstance(v, str) and v for v in value)
    if kind == "name_or_names":
        return _fits("name", value) or _fits("names", value)
    if kind == "items":
        return isinstance(value, list) and all(
            isinstance(v, str | int | float) and not isinstance(v, bool) for v in value
        )
    if kind == "levels":
        return isinstance(value, dict) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value.values()
        )
    return isinstance(value, dict)


def _shown(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def parse(call: str, text: str | None) -> dict[str, Any]:
    """Return the arguments of macro ``call`` as Python values, checked by their kinds.

    A NULL (``None``) is always accepted here: it stands for the parameter's default, and
    the planner says when a parameter is required.

    Raises:
        InvalidInputError: a value of the wrong type, naming the parameter.
    """
    values = json.loads(text) if text is not None else {}
    if not isinstance(values, dict):  # the macros always build an object
        msg = f"{call}(...): internal error, arguments are not an object: {text!r}"
        raise InvalidInputError(msg)
    kinds = MACRO_ARGUMENTS[call]
    for name, kind in kinds.items():
        value = values.get(name)
        if value is not None and not _fits(kind, value):
            msg = f"{call}(...): {name} must be {_ACCEPTS[kind]}, got {_shown(value)}"
            raise InvalidInputError(msg)
    return {name: values.get(name) for name in kinds}


def column_names(what: str, value: object) -> tuple[str, ...]:
    """Column names given to a Python function: a name or a list of names (None: none).

    Raises:
        InvalidInputError: anything else, naming the parameter.
    """
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple) and all(isinstance(n, str) for n in value):
        return tuple(value)
    msg = f"{what} must be a column name or a list of column names, got {value!r}"
    raise InvalidInputError(msg)
