"""Task fingerprints: what the agent is given, never the oracle (docs/holdouts.md)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from attrs import evolve

from sevro_core.errors import InvocationError
from sevro_core.limits import MAX_HOLDOUT_PLAN_BYTES
from sevro_core.models import Case, CheckDeclaration
from sevro_core.run.holdout import (
    distinct_tasks,
    read_plan,
    seal,
    task_fingerprint,
    tasks_by_skill,
)

BASE = Case(id="a", prompt="Write NOTES.md.", fixture={"files": {}})
FIXTURE = "0" * 64


def test_the_oracle_does_not_change_the_task() -> None:
    graded = evolve(
        BASE,
        id="b",
        checks=(CheckDeclaration(id="c", grader="sevro.regex", configuration={"pattern": "x"}),),
        required_evidence=("sevro.observation.final-message",),
        review_questions=("Is it terse?",),
        expected_output="A terse note.",
    )
    assert task_fingerprint(graded, FIXTURE) == task_fingerprint(BASE, FIXTURE)


@pytest.mark.parametrize(
    "other",
    [
        evolve(BASE, prompt="Write CHANGES.md."),
        evolve(BASE, follow_up_prompt="Now shorten it."),
        evolve(BASE, turns=("Write NOTES.md.", "Again.")),
    ],
)
def test_what_the_agent_is_given_changes_the_task(other: Case) -> None:
    assert task_fingerprint(other, FIXTURE) != task_fingerprint(BASE, FIXTURE)
    assert task_fingerprint(BASE, "1" * 64) != task_fingerprint(BASE, FIXTURE)


def test_near_duplicates_count_once() -> None:
    cases = [{"taskFingerprint": f} for f in ("x", "x", "y")]
    assert distinct_tasks(cases) == 2


def test_an_oversized_plan_is_refused(tmp_path: Path) -> None:
    plan = tmp_path / "big.json"
    with pytest.raises(InvocationError, match="larger than"):
        seal(plan, {"padding": "x" * MAX_HOLDOUT_PLAN_BYTES})
    assert not plan.exists()
    fd = os.open(plan, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.ftruncate(fd, MAX_HOLDOUT_PLAN_BYTES + 1)
    os.close(fd)
    with pytest.raises(InvocationError, match="larger than"):
        read_plan(plan)


def test_a_plan_of_another_format_is_refused(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    seal(plan, {"format": "sevro.run-settings.v1"})
    with pytest.raises(InvocationError, match="'planId' is required"):
        read_plan(plan)


def _planned(case_id: str, target: str | None) -> Any:
    """A planned case of an arm whose target skill for it is ``target`` (the fields
    ``tasks_by_skill`` reads)."""
    resolved = SimpleNamespace(for_case=lambda _: SimpleNamespace(target=target))
    return SimpleNamespace(case=SimpleNamespace(id=case_id), arm=SimpleNamespace(resolved=resolved))


def test_distinct_tasks_are_counted_per_skill_under_test() -> None:
    """Two skills share a run: each counts only the cases an arm targets it on, and a
    near-duplicate counts once within its skill."""
    cases = [{"caseId": f"c{i}", "taskFingerprint": f"t{i}"} for i in range(5)]
    cases.append({"caseId": "twin", "taskFingerprint": "t0"})
    targets = {"c0": "alpha", "c1": "alpha", "twin": "alpha", "c2": "beta", "c3": "beta"}
    planned = [_planned(c["caseId"], targets.get(c["caseId"])) for c in cases]
    plan = SimpleNamespace(cases=planned)
    assert tasks_by_skill(plan, cases) == {"alpha": 2, "beta": 2}  # type: ignore[arg-type]
    untargeted = SimpleNamespace(cases=[_planned(c["caseId"], None) for c in cases])
    assert tasks_by_skill(untargeted, cases) == {}  # type: ignore[arg-type]
