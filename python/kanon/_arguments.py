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

__all__ = ["parse"]

#: What each kind of parameter accepts, as said in errors.
_ACCEPTS = {
    "name": "a name (a string)",
    "text": "a string",
    "int": "a whole number",
    "number": "a number",
    "bool": "TRUE or FALSE",
    "names": "a list of column names, e.g. ['age', 'zip']",
    "levels": "a map of column name to level, e.g. MAP {'age': 1}",
    "json": "a JSON object",
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
    if kind == "levels":
        return isinstance(value, dict) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value.values()
        )
    return isinstance(value, dict)


def _shown(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def parse(call: str, text: str | None, kinds: dict[str, str]) -> dict[str, Any]:
    """Return the arguments of macro ``call`` as Python values, checked against ``kinds``.

    A NULL (``None``) is always accepted here: it stands for the parameter's default, and
    the planner says when a parameter is required.

    Raises:
        InvalidInputError: a value of the wrong type, naming the parameter.
    """
    values = json.loads(text) if text is not None else {}
    if not isinstance(values, dict):  # the macros always build an object
        msg = f"{call}(...): internal error, arguments are not an object: {text!r}"
        raise InvalidInputError(msg)
    for name, kind in kinds.items():
        value = values.get(name)
        if value is not None and not _fits(kind, value):
            msg = f"{call}(...): {name} must be {_ACCEPTS[kind]}, got {_shown(value)}"
            raise InvalidInputError(msg)
    return {name: values.get(name) for name in kinds}
