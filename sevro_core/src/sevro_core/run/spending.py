"""A run's worst-case spend before dispatch: how many calls of each role, times their ceilings.

The exposure is an upper bound the operator sees before any call starts: every candidate trial
still to run; for each of them one judge call per check that needs a judge (graders batching
their checks ask fewer) and one advisory review when the run has an advisory judge; and both
orders of every comparator pair. On resume it adds what the journal already charged or
reserved. A run whose exposure exceeds a ceiling is refused (exit 64) unless the operator
accepts it, in which case the gate stops the run at the ceiling instead.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from attrs import field, frozen

from sevro_core.errors import InvocationError
from sevro_core.formats.jsonio import JsonValue
from sevro_core.limits import MAX_SPEND_CEILING_USD
from sevro_core.run.planning import PlannedCase, RunPlan
from sevro_core.store.runstate import Claim
from sevro_core.store.spendgate import (
    CANDIDATE_ROLE,
    CEILING_SLACK_USD,
    SpendCeilings,
    SpendGate,
)
from sevro_core.vocabulary import ADVISORY_ROLE, COMPARATOR_ROLE, JUDGE_PREFIX, JUDGE_ROLES

if TYPE_CHECKING:
    from sevro_core.store.spendjournal import SpendTotals

COMPARATOR_CALLS_PER_PAIR = 2
"""The comparator asks both orders of every pair."""


@frozen
class Exposure:
    """The worst case of the calls still to make, plus what the journal already holds."""

    calls: Mapping[str, int]
    ceilings: SpendCeilings
    committed_usd: float = 0.0
    committed_by_role: Mapping[str, float] = field(factory=dict)

    def role_usd(self, role: str) -> float:
        ceiling = self.ceilings.call_ceiling(role) or 0.0
        return self.committed_by_role.get(role, 0.0) + self.calls.get(role, 0) * ceiling

    @property
    def worst_case_usd(self) -> float:
        ceilings = self.ceilings
        return self.committed_usd + sum(
            n * (ceilings.call_ceiling(role) or 0.0) for role, n in self.calls.items()
        )

    def exceeded(self) -> list[str]:
        """Each ceiling the worst case passes, described."""
        out = []
        run = self.ceilings.run_usd
        if run is not None and self.worst_case_usd > run + CEILING_SLACK_USD:
            out.append(f"the run ceiling ${run:g}")
        for role, limit in sorted(self.ceilings.role_usd.items()):
            if self.role_usd(role) > limit + CEILING_SLACK_USD:
                out.append(f"the {role} ceiling ${limit:g}")
        return out

    def line(self) -> str:
        """One line for the operator: the worst case and how it is made up."""
        parts = [
            f"{n} {role} x ${self.ceilings.call_ceiling(role):g}"
            for role, n in self.calls.items()
            if n
        ]
        if self.committed_usd:
            parts.insert(0, f"${self.committed_usd:.6g} already charged or reserved")
        made_of = " + ".join(parts) or "no calls"
        line = f"spend: worst case ${self.worst_case_usd:.6g} ({made_of})"
        run = self.ceilings.run_usd
        return line + (f"; run ceiling ${run:g}" if run is not None else "")

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "calls": dict(self.calls),
            "worstCaseUsd": round(self.worst_case_usd, 9),
            "committedUsd": round(self.committed_usd, 9),
            "accepted": bool(self.exceeded()) and self.ceilings.accept_exposure,
        }


def planned_calls(plan: RunPlan, remaining: Collection[tuple[str, int]]) -> dict[str, int]:
    """The most calls of each role the run can still make; ``remaining`` are the
    ``(unit, trial)`` keys of the trials still to run."""
    roles = plan.judges.routes
    calls = {CANDIDATE_ROLE: len(remaining), **{role: 0 for role in roles}}
    by_unit = {p.unit: p for p in plan.cases}
    for unit, _ in remaining:
        for role, n in _judge_calls(by_unit[unit], roles).items():
            calls[role] += n
    experiment = plan.settings.experiment
    if COMPARATOR_ROLE in roles and experiment is not None:
        case_count = len({p.case.id for p in plan.cases})
        pairs = len(experiment.comparisons) * case_count * plan.settings.trials
        calls[COMPARATOR_ROLE] = pairs * COMPARATOR_CALLS_PER_PAIR
    return calls


def _judge_calls(planned: PlannedCase, roles: Collection[str]) -> dict[str, int]:
    """One trial's judge calls at most: one per check needing a judge, one advisory review."""
    out: dict[str, int] = {}
    for check in planned.checks:
        for requirement in check.grader.requires:
            role = requirement.removeprefix(JUDGE_PREFIX)
            if requirement.startswith(JUDGE_PREFIX) and role in roles:
                out[role] = out.get(role, 0) + 1
    if ADVISORY_ROLE in roles:
        out[ADVISORY_ROLE] = out.get(ADVISORY_ROLE, 0) + 1
    return out


def exposure(
    plan: RunPlan,
    ceilings: SpendCeilings,
    remaining: Collection[tuple[str, int]],
    totals: SpendTotals | None = None,
) -> Exposure:
    """The run's exposure; refused (exit 64) when it passes a ceiling and is not accepted."""
    committed = 0.0 if totals is None else totals.committed()
    by_role = {} if totals is None else {r: totals.committed(r) for r in ceilings.call_usd}
    found = Exposure(planned_calls(plan, remaining), ceilings, committed, by_role)
    exceeded = found.exceeded()
    if exceeded and not ceilings.accept_exposure:
        raise InvocationError(
            f"{found.line()}: this passes {' and '.join(exceeded)}; lower --trials or the "
            "per-call ceilings, raise the ceiling, or pass --accept-exposure to run until the "
            "ceiling stops it"
        )
    return found


def all_trials(plan: RunPlan) -> list[tuple[str, int]]:
    """Every ``(unit, trial)`` of the plan."""
    trials = range(1, plan.settings.trials + 1)
    return [(p.unit, t) for p in plan.cases for t in trials]


SPEND_ROLES = (CANDIDATE_ROLE, *JUDGE_ROLES)


def _amount(text: str, flag: str) -> tuple[str | None, float]:
    """``[ROLE=]X`` as (role or None, X); exit 64 naming the flag on anything else."""
    role, sep, value = text.partition("=")
    if not sep:
        role, value = "", text
    role = role.strip()
    if sep and role not in SPEND_ROLES:
        raise InvocationError(
            f"{flag} {text!r}: unknown role {role!r}; roles are {', '.join(SPEND_ROLES)}"
        )
    try:
        usd = float(value.strip().removeprefix("$"))
    except ValueError:
        usd = math.nan
    if not math.isfinite(usd) or not 0 < usd <= MAX_SPEND_CEILING_USD:
        raise InvocationError(
            f"{flag} {text!r}: the amount must be a number of USD above 0 and at most "
            f"{MAX_SPEND_CEILING_USD:g}"
        )
    return role or None, usd


def _amounts(values: Sequence[str], flag: str) -> tuple[float | None, dict[str, float]]:
    """The bare amount and the per-role ones; a repeated role or bare amount is refused."""
    bare: float | None = None
    roles: dict[str, float] = {}
    for text in values:
        role, usd = _amount(text, flag)
        if (role is None and bare is not None) or role in roles:
            raise InvocationError(f"{flag} is given twice for {role or 'the run'}")
        if role is None:
            bare = usd
        else:
            roles[role] = usd
    return bare, roles


def spend_ceilings(
    max_cost: Sequence[str], max_call_cost: Sequence[str], accept: bool, roles: Sequence[str]
) -> SpendCeilings | None:
    """The run's ceilings for the ``roles`` that run (the candidate and each configured judge),
    or None without any spend flag; exit 64 on a ceiling that cannot work."""
    if not max_cost and not max_call_cost:
        if accept:
            raise InvocationError("--accept-exposure needs --max-cost-usd")
        return None
    run_usd, role_usd = _amounts(max_cost, "--max-cost-usd")
    default, call_usd = _amounts(max_call_cost, "--max-call-cost-usd")
    for role in [*role_usd, *call_usd]:
        if role not in roles:
            raise InvocationError(f"a spend ceiling names the {role} role, which this run lacks")
    resolved: dict[str, float] = {}
    for role in roles:
        ceiling = call_usd.get(role, default)
        if ceiling is None:
            raise InvocationError(
                f"the {role} calls have no per-call ceiling: give --max-call-cost-usd "
                f"{role}=X (or a bare --max-call-cost-usd X for every role)"
            )
        for limit, what in ((run_usd, "the run's"), (role_usd.get(role), f"the {role}")):
            if limit is not None and ceiling > limit:
                raise InvocationError(
                    f"a {role} call's ceiling ${ceiling:g} is above {what} ceiling ${limit:g}: "
                    "no call could start"
                )
        resolved[role] = ceiling
    return SpendCeilings(run_usd, role_usd, resolved, accept)


STOPPED = "stopped"
"""run.json ``status`` of a run the spend ceiling stopped (the run state keeps it
``interrupted``: it can be resumed with a higher ceiling)."""


@frozen
class RunSpend:
    """The run's gate and the exposure told before dispatch (all None without a ceiling)."""

    gate: SpendGate | None = None
    found: Exposure | None = None

    @property
    def line(self) -> str | None:
        return self.found.line() if self.found is not None else None

    @property
    def stopped(self) -> str | None:
        """Why the ceiling stopped the run, or None."""
        if self.gate is None or self.gate.stopped is None:
            return None
        return self.gate.stopped.reason

    def evidence(self) -> dict[str, JsonValue]:
        """run.json's ``spend`` block (nothing without a ceiling)."""
        if self.gate is None:
            return {}
        found = self.found.to_json() if self.found is not None else None
        return {"spend": self.gate.evidence(found)}

    def close(self) -> None:
        if self.gate is not None:
            self.gate.journal.close()


def open_spend(
    plan: RunPlan, root: Path, claim: Claim, reused: Collection[tuple[str, int]]
) -> RunSpend:
    """Open (or on resume replay) the run's journal in the run-state ``root`` and check the
    exposure of the trials still to run against what it already holds."""
    from sevro_core.store.spendjournal import SpendJournal

    ceilings = plan.settings.spend
    journaled = SpendJournal.exists(root, claim.run_id)
    if ceilings is None:
        if claim.resumed and journaled:
            raise InvocationError(
                f"run {claim.run_id} was started with a spend ceiling: resume it with "
                "--max-cost-usd/--max-call-cost-usd again (a higher ceiling to go on)"
            )
        return RunSpend()
    if claim.resumed and not journaled:
        raise InvocationError(
            f"run {claim.run_id} ran without a spend ceiling, so its earlier calls were never "
            "journaled: resume it without --max-cost-usd/--max-call-cost-usd, or start anew"
        )
    journal = SpendJournal.open(root, claim.run_id, attempt=claim.attempt)
    try:
        remaining = [key for key in all_trials(plan) if key not in reused]
        found = exposure(plan, ceilings, remaining, journal.totals())
    except BaseException:
        journal.close()
        raise
    return RunSpend(SpendGate(journal, ceilings, claim.attempt), found)
