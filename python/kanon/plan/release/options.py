"""The options of ``kanon(...)`` besides the table, and the names of its methods.

:class:`AnonymizeOptions` checks its arguments against the methods and modes listed
here; :mod:`kanon.plan.release.registry` maps each method name to its planner module.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from kanon._options import PRIORITIZED, column_names, defaults
from kanon.exceptions import InvalidInputError
from kanon.plan.release.models import PrivacyModels

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "ALL_METHODS",
    "EFFORTS",
    "FOREST_METHODS",
    "HISTORIC_METHODS",
    "LABELS",
    "LOCAL_METHODS",
    "OPTIMAL_METRICS",
    "PRIORITY_METHODS",
    "AnonymizeOptions",
]

#: The forest's variants. "forest": NCP pair costs, repair and improvement passes (the
#: default); "forest_paper": Aggarwal et al.'s algorithm as published.
FOREST_METHODS = ("forest", "forest_paper")
#: Sweeney's historic greedy full-domain algorithms (baselines; ``kanon.plan.release.historic``).
HISTORIC_METHODS = ("datafly", "mu_argus")
#: The methods that take ``priorities``: the forest and Mondrian weigh their QIs by them
#: (:func:`kanon.plan.hierarchies.priority_weights`), as does ``'iterated'``;
#: ``'priority'`` is built on them.
PRIORITY_METHODS = PRIORITIZED
#: The local recodings: a group per row, released with its group's labels.
LOCAL_METHODS = (*FOREST_METHODS, "mondrian", "priority", "iterated")
#: Every method of ``kanon(...)``: the forest's two variants, Mondrian, PrioPrivacy's
#: prioritized QIs, ARX's iterated global recoding, the optimal search and the historic
#: algorithms (the keys of ``kanon.plan.release.registry.METHODS``).
ALL_METHODS = (
    *FOREST_METHODS,
    "mondrian",
    "priority",
    "iterated",
    "optimal",
    *HISTORIC_METHODS,
)
#: Label modes of the local recodings (forest, Mondrian): ``'hierarchy'`` (the default
#: of the forest: the group's lowest common hierarchy node) or ``'range'`` (the group's
#: observed values); Mondrian's default publishes ranges for numbers and dates and
#: hierarchy nodes for the rest.
LABELS = ("hierarchy", "range")

#: How hard the forest's improvement passes work (``kanon-core::improve::Effort``):
#: ``'full'`` runs every pass in rounds until nothing changes, ``'fast'`` one eject, split
#: and search pass over fewer near tuples. The default depends on the table's size
#: (``kanon.plan.release.forest.FULL_EFFORT_ROWS``).
EFFORTS = ("full", "fast")

#: The metrics of ``method := 'optimal'`` (see ``kanon-core::lattice::Metric``).
OPTIMAL_METRICS = ("loss", "height", "nue", "nue_nonmonotonic", "dm", "dm_star", "aecs")


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
    #: ``(column, priority)`` pairs as given (checked by :meth:`validate`; resolved
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
        """
        values = {**defaults("kanon"), **values}
        models = PrivacyModels(**{n: values[n] for n in PrivacyModels.__dataclass_fields__})
        sensitive = column_names("sensitive", models.sensitive)
        if models.sensitive is not None:
            if models.needs_sensitive and len(sensitive) != 1:
                msg = (
                    "l-diversity and t-closeness protect one sensitive column: give "
                    f"sensitive one column, got {models.sensitive!r}"
                )
                raise InvalidInputError(msg)
            models = replace(models, sensitive=sensitive[0] if models.needs_sensitive else None)
        own = {"k", "qi", "models", "sensitive", "given"}
        planned = {f.name: _planned(values[f.name]) for f in fields(cls) if f.name not in own}
        return cls(
            k=k,
            qi=column_names("qi", qi),
            models=models,
            sensitive=sensitive,
            given=dict(values),
            **planned,
        )

    def validate(self) -> None:
        """Reject out-of-range arguments with a message naming the parameter."""
        if not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 1:
            msg = f"k must be a positive integer, got {self.k!r}"
            raise InvalidInputError(msg)
        seed = self.seed
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64:
            msg = f"seed must be an integer in [0, 2^64), got {seed!r}"
            raise InvalidInputError(msg)
        if self.method not in ALL_METHODS:
            msg = f"method must be one of {', '.join(map(repr, ALL_METHODS))}, got {self.method!r}"
            raise InvalidInputError(msg)
        s = self.max_suppression
        if isinstance(s, bool) or not isinstance(s, int | float) or not 0.0 <= s < 1.0:
            msg = f"max_suppression must be a fraction of the rows in [0, 1), got {s!r}"
            raise InvalidInputError(msg)
        self.models.validate()
        self._validate_local()
        self._validate_priorities()
        if self.method == "optimal":
            if self.metric is not None and self.metric not in OPTIMAL_METRICS:
                msg = (
                    f"metric must be one of {', '.join(map(repr, OPTIMAL_METRICS))}, "
                    f"got {self.metric!r}"
                )
                raise InvalidInputError(msg)
            return
        if self.method in HISTORIC_METHODS:
            self._validate_historic()
            return
        models_unset = not self.models.any()
        if self.method == "mondrian":
            # Mondrian cuts only where both sides satisfy l-diversity / t-closeness.
            models_unset = self.models.population is None
        given = [
            name
            for name, unset in (
                ("metric", self.metric is None),
                ("max_suppression", s == 0.0),
                ("drop_suppressed", not self.drop_suppressed),
                ("min_level", not self.min_level),
                ("max_level", not self.max_level),
                ("privacy models (l, t, population)", models_unset),
            )
            if not unset
        ]
        if given:
            msg = (
                f"{', '.join(given)} do not apply to method {self.method!r}, which never "
                "suppresses rows and minimizes its own cost (they apply to method 'optimal'; "
                "max_suppression and drop_suppressed also to 'datafly' and 'mu_argus')"
            )
            raise InvalidInputError(msg)

    def _validate_local(self) -> None:
        """``labels``, ``block_size`` and ``effort`` belong to the local recodings."""
        if self.effort is not None:
            if self.effort not in EFFORTS:
                msg = f"effort must be 'full' or 'fast', got {self.effort!r}"
                raise InvalidInputError(msg)
            if self.method != "forest":
                msg = (
                    f"effort applies to method 'forest' (its improvement passes), not to "
                    f"{self.method!r}"
                )
                raise InvalidInputError(msg)
        local = self.method in (*FOREST_METHODS, "mondrian")
        if self.labels is not None:
            if self.labels not in LABELS:
                msg = f"labels must be 'hierarchy' or 'range', got {self.labels!r}"
                raise InvalidInputError(msg)
            if not local:
                msg = (
                    f"labels apply to the local recodings 'forest', 'forest_paper' and "
                    f"'mondrian', not to method {self.method!r} (its labels are hierarchy "
                    "nodes at one level per column)"
                )
                raise InvalidInputError(msg)
        b = self.block_size
        if b is not None:
            if isinstance(b, bool) or not isinstance(b, int) or b < 1:
                msg = f"block_size must be a positive number of rows, got {b!r}"
                raise InvalidInputError(msg)
            if self.method not in FOREST_METHODS:
                msg = (
                    f"block_size applies to methods 'forest' and 'forest_paper', not to "
                    f"{self.method!r}"
                )
                raise InvalidInputError(msg)

    def _validate_priorities(self) -> None:
        """Priorities are whole numbers >= 1, for the methods that use them."""
        if not self.priorities:
            return
        if self.method not in PRIORITY_METHODS:
            msg = (
                f"priorities do not apply to method {self.method!r}, which ignores them: they "
                f"apply to methods {', '.join(map(repr, PRIORITY_METHODS))}; leave priorities "
                "out or choose one of those methods"
            )
            raise InvalidInputError(msg)
        for column, priority in self.priorities:
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

    def _validate_historic(self) -> None:
        """Datafly and μ-Argus choose their own levels, by their own rules, for k only."""
        given = [
            name
            for name, unset in (
                ("metric", self.metric is None),
                ("max_suppression", self.method != "mu_argus" or self.max_suppression == 0.0),
                ("min_level", not self.min_level),
                ("max_level", not self.max_level),
                ("privacy models (l, t, population)", not self.models.any()),
            )
            if not unset
        ]
        if given:
            msg = (
                f"method {self.method!r} takes no {', '.join(given)}: it chooses its levels "
                "by Sweeney's greedy rules for k-anonymity alone"
            )
            if "max_suppression" in given:
                msg += " and suppresses what its rules leave below k (no limit)"
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
