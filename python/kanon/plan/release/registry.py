"""The methods of ``kanon(...)`` by name: a new method is one module and one line here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kanon.plan.release.forest import FOREST, FOREST_PAPER
from kanon.plan.release.historic import DATAFLY, MU_ARGUS
from kanon.plan.release.mondrian import MONDRIAN
from kanon.plan.release.optimal import OPTIMAL
from kanon.plan.release.priority import ITERATED, PRIORITY

if TYPE_CHECKING:
    from kanon.plan.release.method import Method

__all__ = ["METHODS"]

#: Method name → its planner (``kanon.plan.release.options.ALL_METHODS``, in that order).
METHODS: dict[str, Method] = {
    m.name: m
    for m in (FOREST, FOREST_PAPER, MONDRIAN, PRIORITY, ITERATED, OPTIMAL, DATAFLY, MU_ARGUS)
}
