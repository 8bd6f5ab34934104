"""The interface of a method's planner: what it needs from the catalog, what it emits.

Every method of ``kanon(...)`` is one module of :mod:`kanon.plan.release` defining a
:class:`Method`, listed in :mod:`kanon.plan.release.registry`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kanon.plan.models import MODELS

if TYPE_CHECKING:
    from collections.abc import Callable

    from kanon.plan.catalog import Table
    from kanon.plan.hierarchies import QuasiIdentifier
    from kanon.plan.release.models import ResolvedModels
    from kanon.plan.release.options import AnonymizeOptions
    from kanon.sql.cte import Cte
    from kanon.sql.kernel import Kernel

__all__ = ["ALL_MODEL_OPTIONS", "MODEL_OPTIONS", "Method", "Request"]


@dataclass(frozen=True)
class Request:
    """What a method's planner receives: the call, resolved against the catalog."""

    table: Table
    qis: list[QuasiIdentifier]
    identifiers: tuple[str, ...]  # released as '*'
    options: AnonymizeOptions
    rows: int  # the table's rows when planned
    hierarchies: list[Cte]  # hierarchy_cte of every QI (and the sensitive column's)
    models: ResolvedModels | None = None  # privacy models besides k
    #: The spans of the QIs' keys that Mondrian cuts normalize ranges by (None: this
    #: table's); kanon.spark gives every part the whole table's.
    spans: tuple[float, ...] | None = None

    @property
    def coded(self) -> list[QuasiIdentifier]:
        """The QIs, with the sensitive column's hierarchy last when the models code it."""
        sensitive = None if self.models is None else self.models.hierarchy
        return self.qis if sensitive is None else [*self.qis, sensitive]


@dataclass(frozen=True)
class Method:
    """A method of ``kanon(...)``: its name, its kernel UDF, its options and its planners.

    ``release`` returns the release query and the assignment query (every source
    column, ``"__kanon_grp"`` and ``"__kanon_lvl"`` per row; the release itself for the
    full-domain methods, which store no groups). ``search`` returns the one-row query of
    ``kanon_search`` (full-domain methods only).
    """

    name: str
    kernel: Kernel
    release: Callable[[Request], tuple[str, str]]
    search: Callable[[Request], str] | None = None
    #: The scoped options it takes (``kanon._options``, ``Opt.scoped``); a scoped option
    #: given to a method that does not name it is an error.
    options: tuple[str, ...] = ()

    @property
    def local(self) -> bool:
        """A local recoding: a group per row (no search, which the full-domain have)."""
        return self.search is None


#: The options of the privacy models besides k that Mondrian enforces, and all of them
#: (the optimal search's).
MODEL_OPTIONS = tuple(o for m in MODELS if m.local for o in m.options)
ALL_MODEL_OPTIONS = tuple(o for m in MODELS for o in m.options)
