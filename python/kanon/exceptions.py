"""Exceptions raised by kanon.

Every error kanon raises on purpose derives from :class:`KanonError`. Through SQL the
user sees ``<ClassName>: <message>`` inside DuckDB's ``InvalidInputException``, so each
message is a complete sentence naming the offending table, column, value or parameter.
The Rust kernels raise the same classes (``kanon._core`` maps its errors onto them).
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "HierarchyError",
    "InfeasibleError",
    "InvalidInputError",
    "KanonError",
    "PolicyError",
]


class KanonError(Exception):
    """Root of every error raised by kanon on purpose."""


class InvalidInputError(KanonError, ValueError):
    """An argument is out of range or malformed (bad k, empty QI list, NULL codes).

    Example: ``kanon.check(con, "t", qi=[])`` raises it because no quasi-identifier
    was given.
    """


class ConfigError(KanonError, ValueError):
    """The configuration names something that does not exist or contradicts itself.

    Example: an unknown table or column, a role other than ``identifier``, ``qi``,
    ``sensitive`` or ``insensitive``, or a QI with no usable generalizer.
    """


class HierarchyError(KanonError, ValueError):
    """A generalization hierarchy is unusable for the column it is attached to.

    Example: a value of the column is missing from the hierarchy, a level is not a
    coarsening of the level below it, or the top level has more than one root.
    The message names the hierarchy, the value and the level.
    """


class InfeasibleError(KanonError):
    """The requested privacy guarantee cannot be met on this data (e.g. k > rows)."""


class PolicyError(KanonError):
    """A release fails the policy it must meet; nothing was published or changed.

    The message lists every failed rule with its threshold and counts; ``verdict`` holds
    the whole verdict (a ``kanon.Verdict``).
    """

    def __init__(self, message: str, verdict: object) -> None:
        super().__init__(message)
        self.verdict = verdict
