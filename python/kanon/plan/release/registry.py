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

__all__ = ["LOCAL_METHODS", "METHODS", "taking"]

#: Method name → its declaration, in the order the docs list them.
METHODS: dict[str, Method] = {
    m.name: m
    for m in (FOREST, FOREST_PAPER, MONDRIAN, PRIORITY, ITERATED, OPTIMAL, DATAFLY, MU_ARGUS)
}
#: The local recodings: a group per row, released with its group's labels.
LOCAL_METHODS = tuple(name for name, m in METHODS.items() if m.local)


def taking(option: str) -> tuple[str, ...]:
    """The methods that take the scoped ``option``, in the registry's order."""
    return tuple(name for name, m in METHODS.items() if option in m.options)
