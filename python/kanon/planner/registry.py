"""The methods of ``kanon(...)`` by name: a new method is one module and one line here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kanon.planner.forest import FOREST, FOREST_PAPER
from kanon.planner.historic import DATAFLY, MU_ARGUS
from kanon.planner.mondrian import MONDRIAN
from kanon.planner.optimal import OPTIMAL
from kanon.planner.priority import ITERATED, PRIORITY

if TYPE_CHECKING:
    from kanon.planner.method import Method

__all__ = ["METHODS"]

#: Method name → its planner (``kanon.planner.options.ALL_METHODS``, in that order).
METHODS: dict[str, Method] = {
    m.name: m
    for m in (FOREST, FOREST_PAPER, MONDRIAN, PRIORITY, ITERATED, OPTIMAL, DATAFLY, MU_ARGUS)
}
