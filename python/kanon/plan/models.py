"""The privacy models besides k, declared once: the release enforces them, the check measures.

A :class:`Model` row of :data:`MODELS` names the options of ``kanon(...)`` that ask for
the model, the column it reads (the sensitive one, or a population table), whether the
local methods enforce it, and the columns of ``kanon_check`` that measure it
(:data:`CHECK_MEASURES`, the fields of ``kanon.CheckReport``). The kernels share one
definition of each model's measure of a class (``kanon_core::models``): the search and
Mondrian compare it with the threshold, ``kanon_class_stats`` reports its worst value
over the classes.

A model that is one measure of a class held to one threshold (measure ≤ or ≥ the option's
value) is declared by its :class:`Model` row with its ``threshold`` :class:`Measure`, its
option in ``kanon._options`` and its row of ``kanon_core::models::THRESHOLD_MODELS``; the
search, Mondrian, the check and ``kanon.CheckReport`` take it from there.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from kanon._options import L_VARIANTS, T_DISTANCES
from kanon.exceptions import ConfigError, InvalidInputError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from kanon.plan.catalog import Column, Table

__all__ = [
    "BASE_MEASURES",
    "CHECK_MEASURES",
    "L_VARIANTS",
    "MODELS",
    "THRESHOLD_MODELS",
    "T_DISTANCES",
    "Measure",
    "Model",
    "PrivacyModels",
    "ground_distance",
    "models_reading",
    "sensitive_column",
    "sensitive_hierarchy",
]


@dataclass(frozen=True)
class Measure:
    """One column of ``kanon_check`` (a field of ``kanon.CheckReport``) and its printed row.

    ``style``: ``'share'`` prints a percent, ``'decimal'`` four decimals, else the value
    as it is (counts with thousands separators); ``{l}`` in the label and legend is the
    check's ``recursive_l``.
    """

    name: str
    sql: str  # its SQL type in kanon_class_stats' struct
    label: str
    legend: str
    style: str = ""

    def shown(self, value: object) -> str:
        """The value as ``CheckReport`` prints it."""
        if not isinstance(value, int | float):
            return str(value)
        if isinstance(value, int):  # a bool too, printed 1 or 0
            return f"{value:,}"
        if self.style == "share":
            return f"{value:.2%}"
        return f"{value:.4f}" if self.style == "decimal" else f"{value:g}"


#: The measures of ``kanon_check`` besides the threshold models', in the kernel's order.
BASE_MEASURES = (
    Measure(
        "k",
        "UBIGINT",
        "k (smallest class)",
        "every row shares its quasi-identifiers with k - 1 others",
    ),
    Measure(
        "classes", "UBIGINT", "equivalence classes", "groups of rows equal on all quasi-identifiers"
    ),
    Measure("rows", "UBIGINT", "rows", "rows checked"),
    Measure(
        "l_distinct",
        "UBIGINT",
        "l-diversity (distinct)",
        "fewest sensitive values in a class; 1 reveals it",
    ),
    Measure(
        "l_entropy",
        "DOUBLE",
        "l-diversity (entropy)",
        "exp of the lowest sensitive entropy of a class",
        "decimal",
    ),
    Measure("recursive_l", "UBIGINT", "", ""),  # the l of the next two rows
    Measure(
        "recursive_c",
        "DOUBLE",
        "recursive (c,l): smallest c for l={l}",
        "most common value < c x the rest",
        "decimal",
    ),
    Measure("recursive_ok", "BOOLEAN", "recursive (c,l) holds", "for the c asked"),
    Measure(
        "t",
        "DOUBLE",
        "t-closeness (max EMD)",
        "farthest a class's sensitive values lie from the table's",
        "decimal",
    ),
    Measure(
        "prosecutor_max",
        "DOUBLE",
        "prosecutor risk, max",
        "1 / k: the best odds of finding a known person",
        "share",
    ),
    Measure(
        "prosecutor_avg",
        "DOUBLE",
        "prosecutor risk, average",
        "1 / class size, averaged over rows",
        "share",
    ),
    Measure(
        "prosecutor_at_risk",
        "DOUBLE",
        "records at risk (prosecutor)",
        "rows whose risk exceeds the threshold",
        "share",
    ),
    Measure(
        "marketer",
        "DOUBLE",
        "marketer risk",
        "share of rows re-identified matching everyone",
        "share",
    ),
    Measure(
        "journalist_max",
        "DOUBLE",
        "journalist risk, max",
        "the same, class sizes in the population",
        "share",
    ),
    Measure(
        "journalist_avg",
        "DOUBLE",
        "journalist risk, average",
        "1 / population class size, over rows",
        "share",
    ),
    Measure(
        "journalist_at_risk",
        "DOUBLE",
        "records at risk (journalist)",
        "rows above the threshold",
        "share",
    ),
    Measure(
        "delta_min",
        "DOUBLE",
        "δ-presence, smallest share",
        "least share of a class's population in the data",
        "decimal",
    ),
    Measure(
        "delta_max",
        "DOUBLE",
        "δ-presence, largest share",
        "largest share: how sure membership is",
        "decimal",
    ),
)


@dataclass(frozen=True)
class Model:
    """A privacy model besides k: what asks for it, what it reads, what measures it.

    ``options`` are the options of ``kanon(...)`` that parametrize it, the first one
    asking for it; ``reads`` is ``'sensitive'`` (the sensitive column's values per
    class) or ``'population'`` (a population table's rows per class); ``local``: the
    local methods (Mondrian) enforce it, not only the optimal search; ``measures``: the
    columns of ``kanon_check`` (:data:`CHECK_MEASURES`) that report it. A threshold
    model has one option, one measure of that name and its ``threshold`` declaration
    (the check's column; the kernels' measure is the Rust row of the same name).
    """

    name: str
    options: tuple[str, ...]
    reads: str
    measures: tuple[str, ...]
    local: bool = True
    threshold: Measure | None = None


MODELS = (
    Model(
        "l-diversity",
        ("l", "l_diversity", "c"),
        "sensitive",
        ("l_distinct", "l_entropy", "recursive_l", "recursive_c", "recursive_ok"),
    ),
    Model("t-closeness", ("t", "t_distance"), "sensitive", ("t",)),
    Model(
        "δ-presence",
        ("population", "delta_min", "delta_max"),
        "population",
        ("delta_min", "delta_max"),
        local=False,
    ),
    Model(
        "(α,k)-anonymity",
        ("alpha",),
        "sensitive",
        ("alpha",),
        threshold=Measure(
            "alpha",
            "DOUBLE",
            "(α,k): largest share of one value",
            "most of a class's rows holding one sensitive value",
            "share",
        ),
    ),
)

#: The threshold models, in the order the kernels report them (after :data:`BASE_MEASURES`).
THRESHOLD_MODELS = tuple(m for m in MODELS if m.threshold is not None)

#: The columns of ``kanon_check`` that ``kanon_class_stats`` computes, in its order.
CHECK_MEASURES = BASE_MEASURES + tuple(
    m.threshold for m in THRESHOLD_MODELS if m.threshold is not None
)


@dataclass(frozen=True)
class PrivacyModels:
    """The models a release must satisfy besides k-anonymity (all optional).

    ``l`` with ``l_diversity`` ``'distinct'`` (default), ``'entropy'`` or ``'recursive'``
    (with ``c``); ``t`` with ``t_distance`` ``'equal'``, ``'ordered'`` or
    ``'hierarchical'`` (default: ordered for numbers and dates, else equal); ``population``
    (a table holding the QI columns) with ``delta_min`` / ``delta_max``. ``sensitive``
    names the sensitive column (default: the one configured); as an argument of a call it
    may list several columns, all declared sensitive (``AnonymizeOptions.of``).
    """

    sensitive: str | list[str] | None = None
    l: float | None = None  # noqa: E741 (the model's name)
    l_diversity: str | None = None
    c: float | None = None
    t: float | None = None
    t_distance: str | None = None
    population: str | None = None
    delta_min: float | None = None
    delta_max: float | None = None
    #: The threshold models asked for: (name, threshold) in :data:`THRESHOLD_MODELS` order.
    thresholds: tuple[tuple[str, float], ...] = ()

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> PrivacyModels:
        """The models among a call's option values (absent or None: not asked for)."""
        plain = {k: values.get(k) for k in cls.__dataclass_fields__ if k != "thresholds"}
        asked = [m.options[0] for m in THRESHOLD_MODELS]
        thresholds = tuple((n, values[n]) for n in asked if values.get(n) is not None)
        return cls(**plain, thresholds=thresholds)

    @classmethod
    def from_json(cls, text: str | None) -> PrivacyModels:
        """The models packed by the SQL macros (``to_json`` of a struct)."""
        return cls.of(json.loads(text) if text else {})

    def to_dict(self) -> dict[str, Any]:
        """The models as a plain dict (threshold models by name)."""
        out = asdict(self)
        out.update(out.pop("thresholds"))
        return out

    def value(self, option: str) -> Any:
        """The value of a model's option (None: not given)."""
        if option in self.__dataclass_fields__:
            return getattr(self, option)
        return dict(self.thresholds).get(option)

    def asked(self) -> list[Model]:
        """The models asked for (their first option given)."""
        return [m for m in MODELS if self.value(m.options[0]) is not None]

    @property
    def needs_sensitive(self) -> bool:
        """Whether a model reading the sensitive column (l-diversity, t-closeness) is asked for."""
        return any(m.reads == "sensitive" for m in self.asked())

    @property
    def delta(self) -> bool:
        """Whether δ-presence is asked for."""
        return self.population is not None

    def any(self) -> bool:
        """Whether any model besides k is asked for."""
        return bool(self.asked())

    def validate(self) -> None:
        """Reject inconsistent or out-of-range parameters, naming them."""

        def bad(msg: str) -> InvalidInputError:
            return InvalidInputError(msg)

        def number(name: str, value: float | None) -> None:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            if value is not None and (not ok or math.isnan(value)):
                msg = f"{name} must be a number, got {value!r}"
                raise bad(msg)

        for name in ("l", "c", "t", "delta_min", "delta_max"):
            number(name, getattr(self, name))
        for name, threshold in self.thresholds:
            number(name, threshold)
        variant = self.l_diversity
        if variant is not None and variant not in L_VARIANTS:
            msg = f"l_diversity must be one of {', '.join(map(repr, L_VARIANTS))}, got {variant!r}"
            raise bad(msg)
        if self.l is None and (variant is not None or self.c is not None):
            msg = "l_diversity and c need l (the number of well-represented values)"
            raise bad(msg)
        if self.l is not None:
            variant = variant or "distinct"
            if variant != "entropy" and (self.l != int(self.l) or self.l < 1):
                msg = f"l must be a positive integer for {variant} l-diversity, got {self.l!r}"
                raise bad(msg)
            if variant == "entropy" and self.l < 1:
                msg = f"l must be at least 1, got {self.l!r}"
                raise bad(msg)
            if (variant == "recursive") != (self.c is not None):
                msg = "c is needed by, and only by, l_diversity := 'recursive'"
                raise bad(msg)
            if self.c is not None and self.c <= 0:
                msg = f"c must be positive, got {self.c!r}"
                raise bad(msg)
        if self.t_distance is not None and self.t is None:
            msg = "t_distance needs t (the largest distance allowed)"
            raise bad(msg)
        check_distance(self.t_distance)
        if self.t is not None and not 0 <= self.t <= 1:
            msg = f"t must lie in [0, 1], got {self.t!r}"
            raise bad(msg)
        if self.population is None and (self.delta_min is not None or self.delta_max is not None):
            msg = "delta_min and delta_max need population (the table the release is drawn from)"
            raise bad(msg)
        lo = 0.0 if self.delta_min is None else self.delta_min
        hi = 1.0 if self.delta_max is None else self.delta_max
        if not 0 <= lo <= hi <= 1:
            msg = f"δ-presence needs 0 <= delta_min <= delta_max <= 1, got {lo!r} and {hi!r}"
            raise bad(msg)
        if self.sensitive is not None and not self.needs_sensitive:
            msg = (
                f"sensitive names the column of {models_reading('sensitive', 'or')}; give "
                f"{' or '.join(m.options[0] for m in MODELS if m.reads == 'sensitive')} too"
            )
            raise bad(msg)

    def kernel(self, sensitive: Column | None) -> dict[str, Any]:
        """The models as the kernel UDF's options (distance resolved for ``sensitive``)."""
        out: dict[str, Any] = {}
        if self.l is not None:
            out["l"] = float(self.l)
            out["l_diversity"] = self.l_diversity or "distinct"
            out["c"] = self.c
        if self.t is not None:
            out["t"] = float(self.t)
            out["t_distance"] = ground_distance(self.t_distance, sensitive)
        if self.delta:
            out["delta_min"] = 0.0 if self.delta_min is None else float(self.delta_min)
            out["delta_max"] = 1.0 if self.delta_max is None else float(self.delta_max)
        if self.thresholds:
            out["thresholds"] = {name: float(value) for name, value in self.thresholds}
        return out


def models_reading(what: str, last: str = "and") -> str:
    """The models that read ``what``, named for messages: ``l-diversity and t-closeness``."""
    names = [m.name for m in MODELS if m.reads == what]
    return f" {last} ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def check_distance(distance: str | None) -> None:
    """A ground distance of t-closeness is one of :data:`T_DISTANCES` (or None)."""
    if distance is not None and distance not in T_DISTANCES:
        msg = f"t_distance must be one of {', '.join(map(repr, T_DISTANCES))}, got {distance!r}"
        raise InvalidInputError(msg)


def ground_distance(distance: str | None, sensitive: Column | None) -> str:
    """The ground distance of t-closeness: the one given, else ordered for numbers and dates."""
    if distance is not None:
        return distance
    return "ordered" if sensitive is not None and sensitive.ordered else "equal"


def sensitive_column(
    table: Table, sensitive: str | None, qis: list[Column], roles: Iterable[tuple[str, str]]
) -> Column | None:
    """The sensitive column given, else the one configured (None if none).

    ``roles``: the configured (column, role) pairs of ``table``.
    """
    if sensitive is None:
        configured_sens = [c for c, role in roles if role == "sensitive"]
        if len(configured_sens) > 1:
            names = ", ".join(repr(c) for c in configured_sens)
            msg = (
                f"table {table.name!r} has several sensitive columns configured ({names}); "
                "choose one with sensitive := '...'"
            )
            raise ConfigError(msg)
        if not configured_sens:
            return None
        sensitive = configured_sens[0]
    col = table.column(sensitive)
    if col.name in {q.name for q in qis}:
        msg = f"column {col.name!r} cannot be both a quasi-identifier and the sensitive column"
        raise ConfigError(msg)
    return col


def sensitive_hierarchy(
    table: Table, sensitive: Column, hierarchies: Iterable[tuple[str, str | None]]
) -> str:
    """The hierarchy table configured for the sensitive column (the hierarchical distance).

    ``hierarchies``: the configured (column, hierarchy table) pairs of ``table``.
    """
    name = next(
        (h for c, h in hierarchies if c.lower() == sensitive.name.lower() and h is not None), None
    )
    if name is None:
        msg = (
            f"t_distance 'hierarchical' needs a hierarchy for the sensitive column "
            f"{sensitive.name!r} of table {table.name!r}: configure one "
            "(kanon.configure(..., hierarchies=...) or kanon_columns.hierarchy)"
        )
        raise ConfigError(msg)
    return name
