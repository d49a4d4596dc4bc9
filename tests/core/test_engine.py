"""The trial engine (sevro_core.run.engine.execute_trial) in-process, with test-scoped hosts,
graders and verdict policies and faked processes: each outcome a trial can have, each beside the
passing trial that differs from it in one thing."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import GradingError
from sevro_core.formats.schemas import validator
from sevro_core.models import CancelToken, HostRequest, HostResult, Observation
from sevro_core.plugin.manager import Registry
from sevro_core.plugin.protocols import HostOptions
from sevro_core.run.engine import execute_trial
from sevro_core.run.records import TrialRecord
from sevro_core.states import CheckStatus, Completeness, Execution, Grading, Verdict
from sevro_core.store.evidence import EvidenceStore
from sevro_core.testing import FakeProcess, ProcessCall, ProcessLog, ScopedPlugins, observation
from tests.core.run_helpers import (
    StubGrader,
    StubHost,
    case,
    check,
    failing_grader,
    plan,
    replying,
)

FACTS = "acme.facts"
STUB = "acme.grader.stub"


def trial(registry: Registry, tmp_path: Path, *cases: Any, **fields: Any) -> TrialRecord:
    """Plan, then run trial 1 of the first case and persist it, as the scheduler would."""
    planned = plan(registry, tmp_path, *cases, **fields)
    store = EvidenceStore(tmp_path / "results", str(uuid.uuid4()))
    record = execute_trial(planned, planned.cases[0], 1, CancelToken(), store)
    assert record.document is not None and record.path is not None
    assert not list(validator("trial-evidence.v1").iter_errors(record.document))
    assert json.loads(record.path.read_text()) == record.document, "what is returned is on disk"
    return record


def states(record: TrialRecord) -> tuple[Execution, Grading, Verdict]:
    return record.states.execution, record.states.grading, record.states.verdict


PASSED = (Execution.COMPLETED, Grading.COMPLETED, Verdict.PASSED)


def with_host(
    sevro_plugins: ScopedPlugins,
    behaviour: Callable[[HostRequest], HostResult],
    *,
    capabilities: frozenset[str] = frozenset(),
    assess: Callable[..., CheckStatus] | None = None,
) -> Registry:
    sevro_plugins.register("host", StubHost(behaviour, capabilities=capabilities))
    sevro_plugins.register("grader", StubGrader(assess))
    return sevro_plugins.registry()


def test_a_completed_trial_passes_its_checks(sevro_plugins: ScopedPlugins, tmp_path: Path) -> None:
    record = trial(with_host(sevro_plugins, replying()), tmp_path, case(checks=[check(STUB)]))
    assert states(record) == PASSED
    assert record.error_code is None
    assert [c.status for c in record.checks] == [CheckStatus.PASSED]


# -- host failures -----------------------------------------------------------------------------


def test_a_host_that_raises_fails_the_trial_never_passes_it(
    sevro_plugins: ScopedPlugins, tmp_path: Path
) -> None:
    def boom(request: HostRequest) -> HostResult:
        raise RuntimeError("boom")

    record = trial(with_host(sevro_plugins, boom), tmp_path, case(checks=[check(STUB)]))
    assert states(record) == (Execution.FAILED, Grading.NOT_REQUESTED, Verdict.NOT_ASSESSED)
    assert record.error_code == "sevro.host.failed"
    assert record.document is not None
    execution = record.document["evidence"]["execution"]
    assert execution["message"] == "host raised RuntimeError: boom"
    assert record.checks == (), "no check is graded after a failed host"


def test_a_host_that_reports_failure_fails_the_trial(
    sevro_plugins: ScopedPlugins, tmp_path: Path
) -> None:
    failed = replying("ok", execution_failed=True, error="the agent crashed")
    record = trial(with_host(sevro_plugins, failed), tmp_path, case(checks=[check(STUB)]))
    assert states(record) == (Execution.FAILED, Grading.NOT_REQUESTED, Verdict.NOT_ASSESSED)
    assert record.document is not None
    assert record.document["evidence"]["execution"]["message"] == "the agent crashed"


@pytest.mark.parametrize("forged_id", ["sevro.observation.final-message", "sevro.host.runtime"])
def test_a_host_that_claims_an_engine_observation_is_an_invalid_result(
    sevro_plugins: ScopedPlugins, tmp_path: Path, forged_id: str
) -> None:
    forged = Observation(forged_id, "acme", Completeness.COMPLETE, {})
    record = trial(
        with_host(sevro_plugins, replying("ok", observations=(forged,))),
        tmp_path,
        case(checks=[check(STUB)]),
    )
    assert states(record) == (Execution.FAILED, Grading.NOT_REQUESTED, Verdict.NOT_ASSESSED)
    assert record.error_code == "sevro.host.invalid-result"


def test_a_cancelled_host_cancels_the_trial(sevro_plugins: ScopedPlugins, tmp_path: Path) -> None:
    cancelled = replying("ok", complete=False, cancelled=True)
    record = trial(with_host(sevro_plugins, cancelled), tmp_path, case(checks=[check(STUB)]))
    assert record.states.execution is Execution.CANCELLED
    assert record.states.verdict is Verdict.NOT_ASSESSED
    assert record.error_code == "sevro.run.cancelled"


# -- grader errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "detail"),
    [
        (GradingError("cannot tell"), "grader error: cannot tell"),
        (KeyError("bug"), "grader error: KeyError: 'bug'"),
    ],
)
def test_a_grader_that_cannot_assess_is_a_grading_error_never_a_pass(
    sevro_plugins: ScopedPlugins, tmp_path: Path, exc: Exception, detail: str
) -> None:
    record = trial(
        with_host(sevro_plugins, replying(), assess=failing_grader(exc)),
        tmp_path,
        case(checks=[check(STUB)]),
    )
    assert states(record) == (Execution.COMPLETED, Grading.ERROR, Verdict.NOT_ASSESSED)
    assert record.error_code == "sevro.grader.error"
    (outcome,) = record.checks
    assert (outcome.status, outcome.detail) == (CheckStatus.UNAVAILABLE, detail)


def test_a_failed_check_fails_the_task(sevro_plugins: ScopedPlugins, tmp_path: Path) -> None:
    record = trial(
        with_host(sevro_plugins, replying(), assess=lambda view: CheckStatus.FAILED),
        tmp_path,
        case(checks=[check(STUB)]),
    )
    assert states(record) == (Execution.COMPLETED, Grading.COMPLETED, Verdict.FAILED)


def test_a_verdict_policy_that_raises_leaves_the_trial_unassessed(
    sevro_plugins: ScopedPlugins, tmp_path: Path
) -> None:
    class Broken:
        id = "acme.verdict.broken"
        version = "1"
        capabilities: frozenset[str] = frozenset()
        requires: frozenset[str] = frozenset()

        def verdict(self, *args: Any) -> Verdict:
            raise ValueError("policy bug")

    registry = with_host(sevro_plugins, replying())
    sevro_plugins.register("verdict-policy", Broken())
    registry = sevro_plugins.registry()
    record = trial(registry, tmp_path, case(checks=[check(STUB)]), verdict_policy=Broken.id)
    assert states(record) == (Execution.COMPLETED, Grading.ERROR, Verdict.NOT_ASSESSED)
    assert record.document is not None
    error = record.document["evidence"]["grading"]["error"]
    assert error["message"] == "verdict policy acme.verdict.broken failed: ValueError: policy bug"


# -- unavailable evidence ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("completeness", "expected"),
    [
        (Completeness.COMPLETE, PASSED),
        (Completeness.PARTIAL, (Execution.COMPLETED, Grading.UNAVAILABLE, Verdict.NOT_ASSESSED)),
        (
            Completeness.UNAVAILABLE,
            (Execution.COMPLETED, Grading.UNAVAILABLE, Verdict.NOT_ASSESSED),
        ),
    ],
)
def test_required_evidence_that_is_not_complete_is_never_a_pass(
    sevro_plugins: ScopedPlugins,
    tmp_path: Path,
    completeness: Completeness,
    expected: tuple[Execution, Grading, Verdict],
) -> None:
    facts = observation(FACTS, {"n": 1}, completeness=completeness)
    registry = with_host(
        sevro_plugins, replying("ok", observations=(facts,)), capabilities=frozenset({FACTS})
    )
    record = trial(registry, tmp_path, case(checks=[check(STUB)], requiredEvidence=[FACTS]))
    assert states(record) == expected
    assert record.document is not None
    required = record.document["evidence"]["requiredEvidence"]
    assert required == [{"id": FACTS, "status": completeness.value}]


def test_required_evidence_the_host_never_recorded_is_unavailable(
    sevro_plugins: ScopedPlugins, tmp_path: Path
) -> None:
    registry = with_host(sevro_plugins, replying(), capabilities=frozenset({FACTS}))
    record = trial(registry, tmp_path, case(checks=[check(STUB)], requiredEvidence=[FACTS]))
    assert states(record) == (Execution.COMPLETED, Grading.UNAVAILABLE, Verdict.NOT_ASSESSED)


def test_a_partial_final_message_is_recorded_as_partial(
    sevro_plugins: ScopedPlugins, tmp_path: Path
) -> None:
    seen: list[bool] = []

    def assess(view: Any) -> CheckStatus:
        seen.append(view.final_message_complete)
        return CheckStatus.PASSED

    registry = with_host(sevro_plugins, replying("o", complete=False), assess=assess)
    record = trial(registry, tmp_path, case(checks=[check(STUB)]))
    assert seen == [False]
    assert record.document is not None
    assert record.document["evidence"]["observationCompleteness"] == "partial"


# -- faked processes: the scripted host and a shell check without launching anything ----------


def scripted(command: str) -> HostOptions:
    steps = [{"run": {"command": command}}, {"reply": {"text": "ok"}}]
    return HostOptions(
        config={"format": "sevro.scripted-host.v1", "default": {"turns": [steps]}},
        config_source="host.json",
    )


@pytest.mark.parametrize(
    ("stdout", "verdict"), [(b"7\n", Verdict.PASSED), (b"8\n", Verdict.FAILED)]
)
def test_faked_processes_drive_the_scripted_host_and_a_shell_check(
    sevro_plugins: ScopedPlugins,
    fake_processes: Callable[..., ProcessLog],
    tmp_path: Path,
    stdout: bytes,
    verdict: Verdict,
) -> None:
    marker = tmp_path / "launched"

    def handler(call: ProcessCall) -> FakeProcess:
        return FakeProcess(output=stdout) if call.role == "checks" else FakeProcess(exit_code=4)

    log = fake_processes(handler)
    shell = case(checks=[check("sevro.shell", run="echo 7", expectExact="7")])
    record = trial(
        sevro_plugins.registry(),
        tmp_path,
        shell,
        host="scripted",
        host_options=scripted(f"touch {marker}"),
    )
    assert record.states.verdict is verdict
    assert not marker.exists()
    assert [call.role for call in log.faked] == ["candidate", "checks"]
    assert record.document is not None
    observations = {o["id"]: o for o in record.document["evidence"]["observations"]}
    assert observations["sevro.commands"]["data"]["commands"][0]["exitCode"] == 4
