"""The options of ``kanon(...)`` besides the table: the typed request of one call.

:meth:`AnonymizeOptions.of` makes the typed request of one call from its values, each
already checked by its declaration in ``kanon._options`` (kind, choices, bounds); the
planner then checks it against the method's declaration, which names the scoped options
the method takes (:func:`kanon.plan.release.resolve.check_method`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from kanon._options import column_names, defaults
from kanon.exceptions import InvalidInputError
from kanon.plan.models import PrivacyModels, models_reading

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["AnonymizeOptions"]


@dataclass(frozen=True)
class AnonymizeOptions:
    """Arguments of an anonymization besides the table: the planner's view of the options.

    Each field is the declared option of its name (``kanon._options``, where the
    options, their types, defaults and the methods they apply to are declared);
    ``models`` gathers the privacy models, and ``given`` holds every option as declared.
    A test checks that every field here is a declared option.
    """

    k: int
    qi: tuple[str, ...]
    seed: int
    method: str
    metric: str | None
    max_suppression: float
    drop_suppressed: bool
    min_level: tuple[tuple[str, int], ...]
    max_level: tuple[tuple[str, int], ...]
    models: PrivacyModels
    labels: str | None
    block_size: int | None
    effort: str | None
    #: ``(column, priority)`` pairs as given (checked by :meth:`of`; resolved
    #: against the table's QIs by :func:`kanon.plan.hierarchies.resolve_qis`).
    priorities: tuple[tuple[str, Any], ...]
    identifiers: tuple[str, ...]
    sensitive: tuple[str, ...]
    insensitive: tuple[str, ...]
    keep_undeclared: bool
    #: Every declared option of the call (``kanon._options``), defaults filled in.
    given: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, k: int, qi: list[str] | None, values: Mapping[str, Any]) -> AnonymizeOptions:
        """Return the options of one call: ``values`` as completed by ``kanon._options``.

        The fields below are the planner's view of the options of the same name (lists
        as tuples, level maps as pairs). The models' ``sensitive`` may list several
        columns: all are declared sensitive, and l-diversity or t-closeness (which
        protect one) need exactly one.

        Raises:
            InvalidInputError: ``k`` below 1, a bad priority or privacy model, named
                (the method and the scoped options it takes:
                :func:`kanon.plan.release.resolve.check_method`).
        """
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            msg = f"k must be a positive integer, got {k!r}"
            raise InvalidInputError(msg)
        values = {**defaults("kanon"), **values}
        models = PrivacyModels.of(values)
        sensitive = column_names("sensitive", models.sensitive)
        if models.sensitive is not None:
            if models.needs_sensitive and len(sensitive) != 1:
                msg = (
                    f"{models_reading('sensitive')} protect one sensitive column: give "
                    f"sensitive one column, got {models.sensitive!r}"
                )
                raise InvalidInputError(msg)
            models = replace(models, sensitive=sensitive[0] if models.needs_sensitive else None)
        models.validate()
        own = {"k", "qi", "models", "sensitive", "given"}
        planned = {f.name: _planned(values[f.name]) for f in fields(cls) if f.name not in own}
        _check_priorities(planned["priorities"])
        return cls(
            k=k,
            qi=column_names("qi", qi),
            models=models,
            sensitive=sensitive,
            given=dict(values),
            **planned,
        )


def _check_priorities(priorities: tuple[tuple[str, Any], ...]) -> None:
    """Priorities are whole numbers >= 1, named by column."""
    for column, priority in priorities:
        if isinstance(priority, bool) or not isinstance(priority, int):
            msg = (
                "priorities must be whole numbers >= 1 (lower = more important), got "
                f"{_shown(priority)} for column {column!r}"
            )
            raise InvalidInputError(msg)
        if priority < 1:
            msg = (
                f"priorities must be >= 1 (1 = most important), got {priority} for column "
                f"{column!r}; leave a column out of priorities to give it none"
            )
            raise InvalidInputError(msg)


def _shown(value: Any) -> str:
    """A value as JSON shows it (as ``kanon._options`` names wrong values)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _planned(value: Any) -> Any:
    """An option's value as the planner holds it: lists as tuples, maps as pairs."""
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, dict):
        return tuple(value.items())
    return value
