"""A stored release held to its policy: verified before it is committed, again at refresh.

``kanon.materialize(..., policy=...)`` builds its objects in one transaction and asks the
:class:`PolicyGate` for the verdict before it commits: on FAIL the transaction rolls back
(nothing is created) unless the caller forces it with a reason, which is recorded. The
policy, the verdict and any reason are kept in the release's meta table, so that
``kanon.refresh`` verifies the refreshed release against the same policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kanon._options import column_names
from kanon.api.verify import Verdict, run_verdict
from kanon.exceptions import InvalidInputError, PolicyError
from kanon.plan.policy import ACCEPT, Policy, policy_of
from kanon.plan.verify import plan_verify

if TYPE_CHECKING:
    import duckdb

__all__ = ["PolicyGate"]


@dataclass(frozen=True)
class PolicyGate:
    """The policy a stored release must meet, and whether a failing one is forced."""

    policy: Policy
    qi: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    force: str | None = None  # the reason a failing release is published anyway

    @classmethod
    def of(
        cls,
        con: duckdb.DuckDBPyConnection,
        policy: Any,
        qi: list[str] | None,
        sensitive: Any,
        force: str | None,
    ) -> PolicyGate | None:
        """The gate of ``materialize``'s arguments (None without a policy)."""
        if force is not None and (not isinstance(force, str) or not force.strip()):
            msg = f"force must be the reason for publishing a failing release, got {force!r}"
            raise InvalidInputError(msg)
        if policy is None:
            if force is not None:
                msg = (
                    "force is the reason for publishing a release that fails its policy: "
                    "give policy= too"
                )
                raise InvalidInputError(msg)
            return None
        return cls(
            policy_of(con, policy), tuple(qi or ()), column_names("sensitive", sensitive), force
        )

    @classmethod
    def stored(cls, meta: dict[str, Any], force: str | None) -> PolicyGate | None:
        """The gate a release was made with, from its meta table (None if it had none)."""
        entry = meta.get("policy")
        if entry is None:
            return None
        rules = (
            {**entry["rules"], ACCEPT: entry["accepted"]} if entry["accepted"] else entry["rules"]
        )
        return cls(
            Policy.of(rules, entry["name"]), tuple(meta["qi"]), tuple(entry["sensitive"]), force
        )

    def check(self, con: duckdb.DuckDBPyConnection, source: str, release: str) -> dict[str, Any]:
        """Verify ``release``; return the meta entries to keep, or raise on FAIL unforced."""
        # Inside the caller's transaction: plain SQL only (registering a UDF would fail).
        plan = plan_verify(con, source, release, self.policy, self.qi, self.sensitive)
        verdict = run_verdict(con, plan)
        if not verdict.passed and self.force is None:
            raise PolicyError(_failure(release, verdict), verdict)
        return {
            "policy": {
                "name": self.policy.name,
                "rules": dict(self.policy.thresholds),
                "accepted": dict(self.policy.accepted),
                "sensitive": list(self.sensitive),
            },
            "verdict": verdict.to_dict(),
            "forced": None if verdict.passed else self.force,
        }


def _failure(release: str, verdict: Verdict) -> str:
    """The error of a failing release: every failed rule with its counts, and the ways on."""
    name = "the inline policy" if verdict.policy.name is None else f"policy {verdict.policy.name!r}"
    failed = "; ".join(f"{r.bound} failed: {r.detail}" for r in verdict.failed)
    return (
        f"release {release!r} fails {name}, so nothing was changed: {failed}. Change the "
        "release (a larger k, l-diversity, more generalization, fewer columns released "
        "unchanged) or the policy; force='reason' publishes it anyway and records the reason"
    )
