"""The options of ``kanon(...)`` besides the table, and the names of its methods.

:class:`AnonymizeOptions` checks its arguments against the methods and modes listed
here; :mod:`kanon.planner.registry` maps each method name to its planner module.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from kanon._arguments import column_names
from kanon._models import PrivacyModels
from kanon.exceptions import InvalidInputError

__all__ = [
    "ALL_METHODS",
    "EFFORTS",
    "FOREST_METHODS",
    "HISTORIC_METHODS",
    "LABELS",
    "OPTIMAL_METRICS",
    "AnonymizeOptions",
]

#: The forest's variants. "forest": NCP pair costs, repair and improvement passes (the
#: default); "forest_paper": Aggarwal et al.'s algorithm as published.
FOREST_METHODS = ("forest", "forest_paper")
#: Sweeney's historic greedy full-domain algorithms (baselines; ``kanon.planner.historic``).
HISTORIC_METHODS = ("datafly", "mu_argus")
#: Every method of ``kanon(...)``: the forest's two variants, Mondrian, the optimal search
#: and the historic algorithms (the keys of ``kanon.planner.registry.METHODS``).
ALL_METHODS = (*FOREST_METHODS, "mondrian", "optimal", *HISTORIC_METHODS)
#: Label modes of the local recodings (forest, Mondrian): ``'hierarchy'`` (the default
#: of the forest: the group's lowest common hierarchy node) or ``'range'`` (the group's
#: observed values); Mondrian's default publishes ranges for numbers and dates and
#: hierarchy nodes for the rest.
LABELS = ("hierarchy", "range")

#: How hard the forest's improvement passes work (``kanon-core::improve::Effort``):
#: ``'full'`` runs every pass in rounds until nothing changes, ``'fast'`` one eject, split
#: and search pass over fewer near tuples. The default depends on the table's size
#: (``kanon.planner.forest.FULL_EFFORT_ROWS``).
EFFORTS = ("full", "fast")

#: The metrics of ``method := 'optimal'`` (see ``kanon-core::lattice::Metric``).
OPTIMAL_METRICS = ("loss", "height", "nue", "nue_nonmonotonic", "dm", "dm_star", "aecs")


@dataclass(frozen=True)
class AnonymizeOptions:
    """Arguments of an anonymization besides the table.

    ``metric``, ``max_suppression``, ``drop_suppressed``, ``min_level`` and
    ``max_level`` (pairs of column and level) apply to ``method='optimal'``;
    ``drop_suppressed`` to ``'datafly'`` and ``'mu_argus'`` too, and
    ``max_suppression`` to ``'datafly'`` (0: Sweeney's rule, at most k rows).
    ``identifiers``, ``sensitive`` and ``insensitive`` declare column roles for the call
    (over the configuration, see ``kanon._roles``); ``keep_undeclared`` releases columns
    without a role unchanged even when their values single out rows.
    """

    k: int
    qi: tuple[str, ...] = ()
    seed: int = 0
    method: str = "forest"
    metric: str | None = None
    max_suppression: float = 0.0
    drop_suppressed: bool = False
    min_level: tuple[tuple[str, int], ...] = ()
    max_level: tuple[tuple[str, int], ...] = ()
    models: PrivacyModels = field(default_factory=PrivacyModels)
    labels: str | None = None
    block_size: int | None = None
    effort: str | None = None
    identifiers: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    insensitive: tuple[str, ...] = ()
    keep_undeclared: bool = False

    @classmethod
    def of(
        cls,
        k: int,
        qi: list[str] | None = None,
        *,
        seed: int | None = 0,
        method: str | None = "forest",
        metric: str | None = None,
        max_suppression: float | None = 0.0,
        drop_suppressed: bool | None = False,
        min_level: dict[str, int] | None = None,
        max_level: dict[str, int] | None = None,
        models: PrivacyModels | None = None,
        labels: str | None = None,
        block_size: int | None = None,
        effort: str | None = None,
        identifiers: list[str] | None = None,
        insensitive: list[str] | None = None,
        keep_undeclared: bool | None = False,
    ) -> AnonymizeOptions:
        """Return the options of one call from Python or SQL.

        ``None`` means the default, and the level bounds come as dicts. The models'
        ``sensitive`` may list several columns: all are declared sensitive, and
        l-diversity or t-closeness (which protect one) need exactly one.
        """
        models = models or PrivacyModels()
        sensitive = column_names("sensitive", models.sensitive)
        if models.sensitive is not None:
            if models.needs_sensitive and len(sensitive) != 1:
                msg = (
                    "l-diversity and t-closeness protect one sensitive column: give "
                    f"sensitive one column, got {models.sensitive!r}"
                )
                raise InvalidInputError(msg)
            models = replace(models, sensitive=sensitive[0] if models.needs_sensitive else None)
        return cls(
            k=k,
            qi=column_names("qi", qi),
            seed=0 if seed is None else seed,
            method=method or "forest",
            metric=metric,
            max_suppression=0.0 if max_suppression is None else max_suppression,
            drop_suppressed=bool(drop_suppressed),
            min_level=_levels("min_level", min_level),
            max_level=_levels("max_level", max_level),
            models=models,
            labels=labels,
            block_size=block_size,
            effort=effort,
            identifiers=column_names("identifiers", identifiers),
            sensitive=sensitive,
            insensitive=column_names("insensitive", insensitive),
            keep_undeclared=_flag("keep_undeclared", keep_undeclared),
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


def _levels(what: str, levels: dict[str, int] | None) -> tuple[tuple[str, int], ...]:
    """Per-column level bounds: a dict of column name to level (None: none)."""
    if levels is None:
        return ()
    if isinstance(levels, dict) and all(
        isinstance(c, str) and isinstance(v, int) and not isinstance(v, bool)
        for c, v in levels.items()
    ):
        return tuple(levels.items())
    msg = f"{what} must map column names to levels, e.g. {{'age': 1}}, got {levels!r}"
    raise InvalidInputError(msg)


def _flag(what: str, value: bool | None) -> bool:
    """A boolean argument (None: false)."""
    if value is None:
        return False
    if not isinstance(value, bool):
        msg = f"{what} must be true or false, got {value!r}"
        raise InvalidInputError(msg)
    return value
