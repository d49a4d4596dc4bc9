"""Task fingerprints: what the agent is given, never the oracle (docs/holdouts.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from attrs import evolve

from sevro_core.errors import InvocationError
from sevro_core.limits import MAX_HOLDOUT_PLAN_BYTES
from sevro_core.models import Case, CheckDeclaration
from sevro_core.run.holdout import distinct_tasks, read_plan, seal, task_fingerprint

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
