"""The spend gate: every call reserves its ceiling before it starts and is settled after.

A call (a candidate trial, one judge call) asks the gate for a reservation of its role's
per-call ceiling. The gate writes it to the run's spend journal (fsynced) before the call may
start, unless the reservation would take what is committed (charged plus still reserved) past
the run's ceiling or its role's: then no new call of any role starts, calls already running
finish, and the run ends stopped at its ceiling. After the call, the reservation is reconciled
to the call's computed cost, or forfeited in full when that cost is unknown (a subscription
login, a model not in the price table, a call that failed before reporting usage).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from sevro_core.formats.jsonio import JsonValue
from sevro_core.models import Usage

if TYPE_CHECKING:
    from sevro_core.store.spendjournal import SpendJournal, SpendTotals

CANDIDATE_ROLE = "candidate"
SPEND_STOP_CODE = "sevro.spend.ceiling-reached"
"""The error code of a run the ceiling stopped, and of each trial it kept from starting."""
CEILING_SLACK_USD = 1e-9
"""Reservations are compared with this much slack: sums of decimal prices are not exact."""


@frozen
class SpendCeilings:
    """What the operator allowed (``--max-cost-usd``, ``--max-call-cost-usd``)."""

    run_usd: float | None = None
    """The run's ceiling over every role, or None."""
    role_usd: Mapping[str, float] = field(factory=dict)
    """Ceilings for one role's calls (``--max-cost-usd ROLE=X``)."""
    call_usd: Mapping[str, float] = field(factory=dict)
    """Each running role's per-call ceiling: what one call reserves."""
    accept_exposure: bool = False
    """Run even when the worst case exceeds a ceiling (``--accept-exposure``)."""

    def call_ceiling(self, role: str) -> float | None:
        return self.call_usd.get(role)

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "run": self.run_usd,
            "roles": dict(sorted(self.role_usd.items())),
            "call": dict(sorted(self.call_usd.items())),
        }


@frozen
class Reservation:
    """One call's reservation in the journal."""

    call: str
    role: str
    usd: float


@frozen
class SpendStop:
    """Why the gate stopped new calls: the ceiling the next reservation would have passed."""

    reason: str
    role: str

    def to_json(self, trials: int, judge_calls: int) -> dict[str, JsonValue]:
        return {
            "reason": self.reason,
            "role": self.role,
            "trialsNotStarted": trials,
            "judgeCallsNotAsked": judge_calls,
        }


class SpendRefused(Exception):
    """A call the ceiling refused to start (the run is stopping at its ceiling)."""


def candidate_usage(document: Mapping[str, Any]) -> Usage | None:
    """A persisted trial's candidate usage (``evidence.usage``), or None when it has none."""
    evidence = document.get("evidence")
    usage = evidence.get("usage") if isinstance(evidence, Mapping) else None
    if not isinstance(usage, Mapping):
        return None
    try:
        return Usage.from_json(usage)
    except (KeyError, TypeError, ValueError):
        return None


def usage_cost(usage: Usage | None) -> float | None:
    """What a finished call is charged, when its cost is known: complete usage with a computed
    cost; the CLI's own reported cost instead when it is higher (a computed cost can be a lower
    bound: prompt-cache writes priced as input), so the journal never understates a call."""
    if usage is None or not usage.complete or usage.cost_usd is None:
        return None
    cost = float(usage.cost_usd)
    if not math.isfinite(cost) or cost < 0:
        return None
    reported = usage.reported_cost_usd
    if reported is not None and math.isfinite(reported) and reported > cost:
        return float(reported)
    return cost


class SpendGate:
    """The run's reservations against its ceilings; thread-safe (trials run in parallel)."""

    def __init__(self, journal: SpendJournal, ceilings: SpendCeilings, attempt: int) -> None:
        self._journal = journal
        self._ceilings = ceilings
        self._attempt = attempt
        self._lock = threading.Lock()
        self._count = 0
        self._not_asked = 0
        self._not_admitted = 0
        self.stopped: SpendStop | None = None

    @property
    def ceilings(self) -> SpendCeilings:
        return self._ceilings

    @property
    def journal(self) -> SpendJournal:
        return self._journal

    def reserve(self, role: str, label: str) -> Reservation | None:
        """Reserve one call of ``role``; None when a ceiling stops it (and every later call)."""
        amount = self._ceilings.call_ceiling(role)
        if amount is None:
            raise ValueError(f"no per-call ceiling for the {role} role")
        with self._lock:
            if self.stopped is None:
                self.stopped = self._passes(role, amount, self._journal.totals())
            if self.stopped is not None:
                if role != CANDIDATE_ROLE:  # trials are counted as the scheduler drops them
                    self._not_asked += 1
                return None
            self._count += 1
            call = f"{self._attempt}:{self._count}"
            self._journal.reserve(call, role, amount, label)
            return Reservation(call, role, amount)

    def _passes(self, role: str, amount: float, totals: SpendTotals) -> SpendStop | None:
        """The ceiling this reservation would pass, or None."""
        run = self._ceilings.run_usd
        committed = totals.committed()
        if run is not None and committed + amount > run + CEILING_SLACK_USD:
            return SpendStop(
                f"the run's spend ceiling ${run:g} is reached: ${committed:.6g} charged or "
                f"reserved, and the next {role} call reserves ${amount:g}",
                role,
            )
        limit = self._ceilings.role_usd.get(role)
        committed = totals.committed(role)
        if limit is not None and committed + amount > limit + CEILING_SLACK_USD:
            return SpendStop(
                f"the {role} spend ceiling ${limit:g} is reached: ${committed:.6g} charged or "
                f"reserved, and the next {role} call reserves ${amount:g}",
                role,
            )
        return None

    def settle(self, reservation: Reservation, usage: Usage | None) -> None:
        """Reconcile to the call's known cost, else forfeit the whole reservation."""
        cost = usage_cost(usage)
        with self._lock:
            if cost is None:
                self._journal.forfeit(reservation.call, "cost unknown")
            else:
                self._journal.reconcile(reservation.call, cost)

    def reconcile(self, reservation: Reservation, usd: float) -> None:
        with self._lock:
            self._journal.reconcile(reservation.call, usd)

    def forfeit(self, reservation: Reservation, reason: str) -> None:
        with self._lock:
            self._journal.forfeit(reservation.call, reason)

    def not_admitted(self) -> None:
        """Count one trial the ceiling kept from starting."""
        with self._lock:
            self._not_admitted += 1

    def evidence(self, exposure: Mapping[str, JsonValue] | None) -> dict[str, JsonValue]:
        """``run.json`` ``spend``: the ceilings, the exposure, the journal and its totals."""
        with self._lock:
            totals = self._journal.totals()
            return {
                "ceilings": self._ceilings.to_json(),
                "exposure": dict(exposure) if exposure is not None else None,
                "journal": {
                    "path": f"{self._journal.path.parent.name}/{self._journal.path.name}",
                    "sha256": self._journal.sha256(),
                    "records": totals.reservations + totals.reconciled + totals.forfeits,
                },
                "totals": totals.to_json(),
                "stopped": (
                    self.stopped.to_json(self._not_admitted, self._not_asked)
                    if self.stopped is not None
                    else None
                ),
            }
