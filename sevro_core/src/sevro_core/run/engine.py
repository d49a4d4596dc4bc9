"""The trial engine: fixture → host → graders → verdict → persist → cleanup, for one trial.

Graders never run hosts and hosts never grade. Evidence is written before the workspace is
removed; if writing fails the workspace is kept and named.
"""

from __future__ import annotations

import functools
import hashlib
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from attrs import evolve, frozen

from sevro_core.errors import GradingError, PersistenceError, SevroError
from sevro_core.experiments.mounting import mount_arm
from sevro_core.fixtures.workspace import PRIVATE_PREFIX, create_workspace, remove_tree
from sevro_core.formats.canonical import canonical_json
from sevro_core.formats.jsonio import JsonValue
from sevro_core.isolation.sandbox import CheckResources, Isolation
from sevro_core.judges.advisory import (
    AdvisoryInputs,
    AdvisoryReview,
    not_run,
    review_trial,
    withheld_paths,
)
from sevro_core.judges.session import JudgeSession
from sevro_core.judges.subjects import base_files
from sevro_core.judges.textdiff import text_diff
from sevro_core.limits import (
    MAX_ARTIFACT_BYTES,
    MAX_ARTIFACTS,
    MAX_CHECK_OBSERVATION_BYTES,
    MAX_DIAGNOSTIC_CHARS,
    MAX_FINAL_MESSAGE_BYTES,
    MAX_FIXTURE_ARTIFACTS,
    MAX_FIXTURE_OBSERVATIONS,
    MAX_OBSERVATION_BYTES,
    MAX_OBSERVATIONS,
    MAX_OBSERVATIONS_PER_CHECK,
    MAX_TOTAL_ARTIFACT_BYTES,
)
from sevro_core.models import (
    Artifact,
    CancelToken,
    CheckDeclaration,
    CheckOutcome,
    HostRequest,
    HostResult,
    Observation,
    TrialIsolation,
    TrialStates,
    TrialView,
)
from sevro_core.plugin.casesources import EvaluationResult
from sevro_core.plugin.protocols import (
    ID_PATTERN,
    ConfiguredHost,
    FixtureReport,
    MaterialisedFixture,
)
from sevro_core.run.checkinputs import (
    candidate_artifacts,
    candidate_state,
    candidate_transcripts,
    check_resources,
    check_resources_unwritten,
    combined,
)
from sevro_core.run.checkparts import declared, parts_problem, with_parts
from sevro_core.run.evaluation import (
    Executed as _Executed,
)
from sevro_core.run.evaluation import (
    evaluate_trial,
    install_preparation,
    merge_evaluation,
    recommended_verdict,
)
from sevro_core.run.evaluator import changed_since_loaded
from sevro_core.run.planning import PlannedArm, PlannedCase, RunPlan
from sevro_core.run.records import TrialRecord
from sevro_core.run.trialevidence import (
    TrialFindings,
    elapsed_ms,
    timestamp,
    trial_document,
    trial_evidence,
)
from sevro_core.run.turns import TurnRecorder
from sevro_core.states import (
    CheckStatus,
    Completeness,
    Execution,
    Grading,
    Verdict,
    trial_grading,
)
from sevro_core.store.evidence import EvidenceStore
from sevro_core.store.spendgate import CANDIDATE_ROLE, SpendGate, SpendRefused
from sevro_core.vocabulary import (
    ADVISORY_ROLE,
    COMPARATOR_ROLE,
    DIFF_ARTIFACT,
    ENGINE_OBSERVATION_PREFIX,
    FILES_DIFF_ARTIFACT,
    FILES_DIFF_OBSERVATION,
    FINAL_MESSAGE_OBSERVATION,
    GIT_CAPABILITY,
    HOST_RUNTIME_OBSERVATION,
    SKILLS_OBSERVATION,
    TURNS_OBSERVATION,
    WORKSPACE_OBSERVATION,
)

PRISTINE_PREFIX = "sevro-pristine-"
WORKSPACE_TOKEN = "{{sevro.workspace}}"  # noqa: S105 - a template token
_ID_RE = re.compile(ID_PATTERN)


def render_prompt(template: str, workspace: Path) -> str:
    return template.replace(WORKSPACE_TOKEN, str(workspace))


@frozen
class _Trial:
    """One trial's fixed context, which every step of :func:`execute_trial` reads."""

    plan: RunPlan
    planned: PlannedCase
    trial: int
    cancel: CancelToken
    store: EvidenceStore
    workspace: Path
    private: Path
    """The trial's private directory (hosts' and checks' homes), outside the workspace."""
    turns: TurnRecorder
    spend: SpendGate | None = None
    """The run's spend gate: the candidate's call ceiling, and each judge call's reservation."""


def execute_trial(
    plan: RunPlan,
    planned: PlannedCase,
    trial: int,
    cancel: CancelToken,
    store: EvidenceStore,
    spend: SpendGate | None = None,
) -> TrialRecord:
    """Run one trial end to end and persist its evidence (the candidate's call was reserved
    by the scheduler when ``spend`` is given)."""
    started_at = timestamp()
    t0 = time.monotonic()
    workspace = create_workspace(plan.settings.workspace_root)
    private = create_workspace(plan.settings.workspace_root, prefix=PRIVATE_PREFIX)
    turns = _recorder(planned, workspace, private)
    run = _Trial(plan, planned, trial, cancel, store, workspace, private, turns, spend)
    fixture, baseline = _prepare_fixture(run)
    _install_preparation(run, fixture)
    t_fixture = time.monotonic()
    isolation = plan.sandbox.bind(
        workspace=workspace, private_root=private, cancel=cancel, fixture_bin_dir=fixture.bin_dir
    )
    host_result, execution, error = _run_candidate(run, fixture, isolation)
    t_host = time.monotonic()
    report = _inspect_after_host(run, fixture, baseline, host_result)
    observations = _observations(host_result, run)
    observations.update((o.id, o) for o in report.observations)
    judges = _judge_session(run)
    grading = _Grading(isolation, baseline, judges, report.artifacts)
    executed = _Executed(execution, error, host_result)
    executed, outcomes, grader_error, evaluation = _grade_trial(
        run, executed, observations, grading
    )
    execution, error = executed.execution, executed.error
    t_grade = time.monotonic()
    required = _required_evidence(planned, observations, host_result, report)
    states, grader_error = _judge(
        plan, planned, execution, outcomes, grader_error, required, evaluation
    )
    advisory = _advisory(run, execution, host_result, report, judges)
    findings = TrialFindings(
        plan=plan,
        planned=planned,
        trial=trial,
        workspace=workspace,
        started_at=started_at,
        t0=t0,
        durations=_durations(plan.settings.dry, t0, t_fixture, t_host, t_grade),
        result=host_result,
        report=report,
        observations=observations,
        outcomes=outcomes,
        grader_error=grader_error,
        required=required,
        states=states,
        error=error,
        judges=judges,
        advisory=advisory,
        evaluation=evaluation,
    )
    return _persist(run, findings)


def _grade_trial(
    run: _Trial, executed: _Executed, observations: dict[str, Observation], grading: _Grading
) -> tuple[_Executed, list[CheckOutcome], dict[str, str] | None, EvaluationResult | None]:
    """Built-in checks (a completed execution only), then the case source's evaluation (when
    they graded without an error); a run cancelled mid-grading cancels the trial."""
    outcomes: list[CheckOutcome] = []
    grader_error: dict[str, str] | None = None
    if executed.execution is Execution.COMPLETED:
        outcomes, grader_error = _grade(run, executed.result, observations, grading)
        graded = len(declared(outcomes))
        builtin = [c for c in run.planned.checks if not c.extension]
        if run.cancel.cancelled and grader_error is None and graded < len(builtin):
            cancelled = ("sevro.run.cancelled", "run cancelled")
            executed = _Executed(Execution.CANCELLED, cancelled, executed.result)
    evaluation = None
    if executed.execution is Execution.COMPLETED and grader_error is None:
        evaluation = _evaluate(run, executed, observations, outcomes)
    if evaluation is not None:
        outcomes, grader_error = merge_evaluation(run.planned, outcomes, grader_error, evaluation)
    return executed, outcomes, grader_error, evaluation


def _install_preparation(run: _Trial, fixture: MaterialisedFixture) -> None:
    """Install the case source's preparation (artifacts, fixture setup) in the fixture; a
    failure is the fixture's, and the host never starts."""
    source = run.plan.case_source
    preparation = source.preparations.get(run.planned.case.id) if source is not None else None
    if preparation is None:
        return
    with _fixture_step(run.planned.case.id, "prepared", run.workspace, run.private):
        install_preparation(
            preparation,
            run.workspace,
            git=GIT_CAPABILITY in run.planned.fixture.capabilities,
            fixture_bin_dir=fixture.bin_dir,
            settings=(run.plan.settings.project_root, run.cancel),
        )


def _evaluate(
    run: _Trial,
    executed: _Executed,
    observations: Mapping[str, Observation],
    outcomes: Sequence[CheckOutcome],
) -> EvaluationResult | None:
    """The case source's evaluation after the built-in checks of a completed execution that
    graded without an error (Sevro); None without a case source."""
    source = run.plan.case_source
    if source is None:
        return None
    preparation = source.preparations.get(run.planned.case.id)
    return evaluate_trial(
        source.evaluator,
        run.planned.case.id,
        executed,
        observations,
        (outcomes, preparation.artifacts(run.workspace) if preparation is not None else ()),
        run.cancel,
    )


def _durations(
    dry: bool, t0: float, t_fixture: float, t_host: float, t_grade: float
) -> dict[str, float | None]:
    return {
        "fixtureMs": elapsed_ms(t0, t_fixture),
        "candidateMs": None if dry else elapsed_ms(t_fixture, t_host),
        "gradingMs": elapsed_ms(t_host, t_grade),
    }


def _change(report: FixtureReport) -> tuple[bytes | None, bool]:
    """The trial's change as the fixture reported it (a Git diff, or sevro's text diff of a
    fixture without Git) and whether it was cut; None when there is none."""
    diff = next((a for a in report.artifacts if a.id in (DIFF_ARTIFACT, FILES_DIFF_ARTIFACT)), None)
    found = {o.id: o for o in report.observations}
    git = found.get(WORKSPACE_OBSERVATION)
    files = found.get(FILES_DIFF_OBSERVATION)
    cut = (git is not None and git.data.get("diffTruncated") is True) or (
        files is not None and files.data.get("truncated") is True
    )
    return (None if diff is None else diff.content), cut


def _mounted(arm: PlannedArm | None) -> tuple[str, ...]:
    """Where the engine installed the trial's arm: its skills directory and context files."""
    if arm is None or arm.places is None:
        return ()
    places = arm.places
    return (places.skills_dir, places.instructions_file, *places.overrides)


def _judges_read_changes(plan: RunPlan) -> bool:
    return any(plan.judges.get(role) is not None for role in (ADVISORY_ROLE, COMPARATOR_ROLE))


def _files_change(run: _Trial) -> FixtureReport:
    """A fixture without Git: its files materialised again (no arm) against the workspace's,
    as a Git-style text diff; nothing when the fixture cannot be materialised again (the
    review and comparison then say the change is unavailable)."""
    try:
        before = base_files(run.planned.fixture, run.plan.settings.workspace_root)
        diff, truncated = text_diff(before, run.workspace, _mounted(run.planned.arm))
    except Exception:  # judges say the change is unavailable; the trial is unaffected
        return FixtureReport()
    data = {
        "byteLength": len(diff),
        "sha256": hashlib.sha256(diff).hexdigest(),
        "truncated": truncated,
    }
    completeness = Completeness.PARTIAL if truncated else Completeness.COMPLETE
    observation = Observation(FILES_DIFF_OBSERVATION, "sevro.engine", completeness, data)
    return FixtureReport(
        observations=(observation,), artifacts=(Artifact(FILES_DIFF_ARTIFACT, diff),)
    )


def _advisory(
    run: _Trial,
    execution: Execution,
    result: HostResult | None,
    report: FixtureReport,
    judges: JudgeSession | None,
) -> AdvisoryReview | None:
    """The trial's advisory review, after grading and before the workspace is removed; None
    when the run has no advisory judge. It never touches the trial's states."""
    plan, planned = run.plan, run.planned
    if judges is None or not judges.available(ADVISORY_ROLE):
        return None
    reviewer = plan.registry.reviewer(plan.settings.judges.reviewer)
    if reviewer is None:  # planning refused this; kept as a failed review, never a crash
        return not_run(f"advisory reviewer {plan.settings.judges.reviewer} is not installed")
    if execution is not Execution.COMPLETED or result is None or run.cancel.cancelled:
        return not_run(f"the trial's execution did not complete ({execution.value})", reviewer)
    git = GIT_CAPABILITY in planned.fixture.capabilities
    diff, diff_truncated = _change(report)
    inputs = AdvisoryInputs(
        git=git,
        case_id=planned.case.id,
        prompts=tuple(render_prompt(p, run.workspace) for p in planned.case.prompts),
        final_message=result.final_message,
        diff=diff,
        diff_truncated=diff_truncated,
        workspace=run.workspace,
        withheld=withheld_paths(
            plan.registry.hosts().values(),
            planned.arm.places if planned.arm is not None else None,
            plan.settings.judges.advisory_exclude,
        ),
        questions=planned.case.review_questions,
        expected_output=planned.case.expected_output,
    )
    return review_trial(reviewer, judges, inputs)


def _judge_session(run: _Trial) -> JudgeSession | None:
    """The trial's judges (None when the run has none): each call in its own empty workspace."""
    if not run.plan.judges.routes:
        return None
    return JudgeSession(
        run.plan.judges,
        run.plan.sandbox,
        run.cancel,
        label=(run.planned.case.id, run.trial),
        workspace_root=run.plan.settings.workspace_root,
        spend=run.spend,
    )


@frozen
class _Grading:
    """What grading needs beyond the host's result: the sandbox, the baseline, the judges."""

    isolation: Isolation
    baseline: Mapping[str, Any]
    judges: JudgeSession | None
    artifacts: tuple[Artifact, ...] = ()
    """The fixture's artifacts (the workspace diff handed to checks)."""
    evaluator_problem: str | None = None
    """Why the evaluator directories differ from those loaded (set before checks), or None."""


def _recorder(planned: PlannedCase, workspace: Path, private: Path) -> TurnRecorder:
    """Keeps each turn's reply, and the workspace after each turn a check grades."""
    graded = frozenset(c.declaration.turn for c in planned.checks if c.declaration.turn)
    return TurnRecorder(len(planned.case.prompts), graded, workspace, private)


def _prepare_fixture(run: _Trial) -> tuple[MaterialisedFixture, Mapping[str, Any]]:
    """Materialise the fixture and take its pre-host baseline (none when dry or unprobed)."""
    case_id, workspace, private = run.planned.case.id, run.workspace, run.private
    with _fixture_step(case_id, "materialised", workspace, private):
        fixture = run.planned.fixture.materialise(workspace)
    if run.planned.arm is not None:
        _mount_arm(run)
    baseline: Mapping[str, Any] = {}
    if fixture.probe is not None and not run.plan.settings.dry:
        with _fixture_step(case_id, "inspected before the host", workspace, private):
            baseline = fixture.probe.baseline(run.cancel)
    return fixture, baseline


def _mount_arm(run: _Trial) -> None:
    """Install the trial's arm where its host's CLI looks, from sources verified just now.

    A working-tree source edited since planning fails the run (it must never mix versions);
    a fixture that conflicts with the arm is a fixture failure naming the conflict."""
    arm = run.planned.arm
    assert arm is not None
    try:
        resolved = arm.resolved.for_case(run.planned.case.id).verified()
    except Exception:
        remove_tree(run.workspace)
        remove_tree(run.private)
        raise
    if arm.places is None:
        return  # an arm with nothing to mount (planning refused any other)
    step = f"given arm {arm.id}'s skills and context"
    with _fixture_step(run.planned.case.id, step, run.workspace, run.private):
        mount_arm(run.workspace, arm.places, resolved.bundles(), resolved.context)


def _run_candidate(
    run: _Trial, fixture: MaterialisedFixture, isolation: Isolation
) -> tuple[HostResult | None, Execution, tuple[str, str] | None]:
    """Give the host its rendered prompts; a dry run never calls it (``not_run``)."""
    if run.plan.settings.dry:
        return None, Execution.NOT_RUN, None
    case = run.planned.case
    prompts = tuple(render_prompt(p, run.workspace) for p in case.prompts)
    run.turns.begin()
    request = HostRequest(
        case_id=case.id,
        trial=run.trial,
        prompts=prompts,
        workspace=run.workspace,
        condition=run.plan.settings.condition,
        cancel=run.cancel,
        private_root=run.private,
        fixture_bin_dir=fixture.bin_dir,
        isolation=isolation,
        turn_settled=run.turns.settle,
        profile=case.host_profile,
        max_cost_usd=run.spend.ceilings.call_ceiling(CANDIDATE_ROLE) if run.spend else None,
    )
    result, execution, error = _run_host(run.plan.host_for(run.planned), request)
    if result is not None and run.planned.arm is not None:
        result = _stamp_arm(result, run.planned.arm, run.planned.case.id)
    return result, execution, error


def _stamp_arm(result: HostResult, arm: PlannedArm, case_id: str) -> HostResult:
    """Name the arm and its target skill in the host's ``sevro.skills`` observation."""
    stamped = tuple(
        evolve(o, data={**o.data, "arm": arm.id, "target": arm.resolved.for_case(case_id).target})
        if o.id == SKILLS_OBSERVATION and isinstance(o.data, Mapping)
        else o
        for o in result.observations
    )
    return evolve(result, observations=stamped)


def _inspect_after_host(
    run: _Trial,
    fixture: MaterialisedFixture,
    baseline: Mapping[str, Any],
    host_result: HostResult | None,
) -> FixtureReport:
    """What the fixture observed of the host's changes, held to the engine's bounds (for a
    fixture without Git whose change a judge reads: sevro's own text diff of its files)."""
    if run.plan.settings.dry:
        return FixtureReport()
    if fixture.probe is None:
        return _files_change(run) if _judges_read_changes(run.plan) else FixtureReport()
    with _fixture_step(run.planned.case.id, "inspected after the host", run.workspace, run.private):
        return _checked_report(fixture.probe.observe(baseline, run.cancel), host_result)


def _judge(
    plan: RunPlan,
    planned: PlannedCase,
    execution: Execution,
    outcomes: Sequence[CheckOutcome],
    grader_error: dict[str, str] | None,
    required: Sequence[Mapping[str, str]],
    evaluation: EvaluationResult | None = None,
) -> tuple[TrialStates, dict[str, str] | None]:
    """The trial's grading and verdict; a failing policy leaves it unassessed, never passed.
    With an extension's policy selected its recommendation is the verdict, under the same
    guard."""
    grading = trial_grading(
        execution,
        grader_error=grader_error is not None,
        declared_checks=len(planned.checks),
        outcomes=[o.status for o in declared(outcomes)],
        required_evidence_missing=any(r["status"] != "complete" for r in required),
    )
    try:
        verdict = plan.verdict_policy.verdict(execution, grading, outcomes)
        if plan.case_source is not None and plan.case_source.task_verdict_policy is not None:
            verdict = recommended_verdict(evaluation)
    except Exception as exc:  # a policy bug leaves the trial unassessed, never passed
        message = f"verdict policy {plan.verdict_policy.id} failed: {type(exc).__name__}: {exc}"
        grader_error = {
            "checkId": planned.case.checks[0].id if planned.case.checks else "-",
            "message": message[:MAX_DIAGNOSTIC_CHARS],
        }
        grading, verdict = Grading.ERROR, Verdict.NOT_ASSESSED
    if verdict is Verdict.PASSED and (
        execution is not Execution.COMPLETED or grading is not Grading.COMPLETED
    ):
        verdict = Verdict.NOT_ASSESSED  # no policy may pass what was not fully graded
    return TrialStates(execution, grading, verdict), grader_error


def _persist(run: _Trial, findings: TrialFindings) -> TrialRecord:
    """Write the trial's evidence, then remove its directories.

    Evidence is written before the workspace is removed; if writing fails the workspace is
    kept and named (a persistence failure, exit 70).
    """
    error, grader_error = findings.error, findings.grader_error
    error_code = error[0] if error else ("sevro.grader.error" if grader_error else None)
    try:
        evidence = trial_evidence(findings, run.store)
        path = run.store.case_dir(run.planned.unit) / f"trial-{run.trial}.json"
        record = TrialRecord(
            arm=run.planned.arm.id if run.planned.arm is not None else None,
            case_id=run.planned.case.id,
            trial=run.trial,
            states=findings.states,
            checks=tuple(findings.outcomes),
            path=path,
            error_code=error_code,
            attempt=run.store.attempt,
        )
        document = trial_document(record, path, evidence, run.store)
        _, digest = run.store.write_trial(document)
    except Exception as exc:
        remove_tree(run.private)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise PersistenceError(
            f"trial persistence failed ({reason}); fixture retained at {run.workspace}"
        ) from exc
    remove_tree(run.workspace)
    remove_tree(run.private)
    return evolve(record, document=document, sha256=digest)


@contextmanager
def _fixture_step(case_id: str, step: str, workspace: Path, private: Path) -> Iterator[None]:
    """A fixture that fails is a runner failure (exit 70); its workspace is removed."""
    try:
        yield
    except Exception as exc:
        remove_tree(workspace)
        remove_tree(private)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SevroError(f"fixture for case {case_id} could not be {step}: {reason}") from exc


def _checked_report(report: FixtureReport, result: HostResult | None) -> FixtureReport:
    """Hold fixture evidence to the engine's bounds; a violation is a fixture bug."""
    taken = {o.id for o in result.observations} if result is not None else set()
    taken.add(FINAL_MESSAGE_OBSERVATION)
    artifacts = {a.id for a in result.artifacts} if result is not None else set()
    problem = None
    if len(report.observations) > MAX_FIXTURE_OBSERVATIONS:
        problem = f"more than {MAX_FIXTURE_OBSERVATIONS} observations"
    elif len(report.artifacts) > MAX_FIXTURE_ARTIFACTS:
        problem = f"more than {MAX_FIXTURE_ARTIFACTS} artifacts"
    for obs in report.observations:
        if not _ID_RE.match(obs.id) or obs.id in taken:
            problem = f"observation id {obs.id!r} is not namespaced or is already taken"
        taken.add(obs.id)
        if len(canonical_json(obs.to_json())) > MAX_OBSERVATION_BYTES:
            problem = f"observation {obs.id} exceeds {MAX_OBSERVATION_BYTES} bytes"
    for artifact in report.artifacts:
        if not _ID_RE.match(artifact.id) or artifact.id in artifacts:
            problem = f"artifact id {artifact.id!r} is not namespaced or is already taken"
        artifacts.add(artifact.id)
        if len(artifact.content) > MAX_ARTIFACT_BYTES:
            problem = f"artifact {artifact.id} exceeds {MAX_ARTIFACT_BYTES} bytes"
    if problem is not None:
        raise ValueError(f"fixture evidence refused: {problem}")
    return report


def _run_host(
    host: ConfiguredHost, request: HostRequest
) -> tuple[HostResult | None, Execution, tuple[str, str] | None]:
    try:
        result = host.run(request)
    except Exception as exc:  # a host bug is an execution failure, never a pass
        return (
            None,
            Execution.FAILED,
            ("sevro.host.failed", f"host raised {type(exc).__name__}: {exc}"),
        )
    if result.cancelled or (request.cancel.cancelled and not result.complete):
        return result, Execution.CANCELLED, ("sevro.run.cancelled", "run cancelled")
    if result.execution_failed:
        return result, Execution.FAILED, ("sevro.host.failed", result.error or "host failed")
    problem = _bounds_problem(result)
    if problem is not None:
        return None, Execution.FAILED, ("sevro.host.invalid-result", problem)
    return result, Execution.COMPLETED, None


def _bounds_problem(result: HostResult) -> str | None:
    final = result.final_message
    if final is not None and len(final.encode("utf-8", "surrogatepass")) > MAX_FINAL_MESSAGE_BYTES:
        return f"final message is larger than {MAX_FINAL_MESSAGE_BYTES} bytes"
    if len(result.observations) > MAX_OBSERVATIONS:
        return f"more than {MAX_OBSERVATIONS} observations"
    seen: set[str] = set()
    total = 0
    for obs in result.observations:
        if (
            not _ID_RE.match(obs.id)
            or obs.id.startswith(ENGINE_OBSERVATION_PREFIX)
            or obs.id == HOST_RUNTIME_OBSERVATION
        ):
            return f"observation id {obs.id!r} is not namespaced or is reserved for the engine"
        if obs.id in seen:
            return f"observation id {obs.id!r} appears twice"
        seen.add(obs.id)
        try:
            total += len(canonical_json(obs.to_json()))
        except ValueError as exc:
            return f"observation {obs.id} is not JSON: {exc}"
    if total > MAX_OBSERVATION_BYTES:
        return f"observations exceed {MAX_OBSERVATION_BYTES} bytes"
    if len(result.artifacts) > MAX_ARTIFACTS:
        return f"more than {MAX_ARTIFACTS} artifacts"
    ids = [a.id for a in result.artifacts]
    if len(set(ids)) != len(ids) or not all(_ID_RE.match(i) for i in ids):
        return "artifact ids must be namespaced and unique"
    sizes = [len(a.content) for a in result.artifacts]
    if any(s > MAX_ARTIFACT_BYTES for s in sizes) or sum(sizes) > MAX_TOTAL_ARTIFACT_BYTES:
        return "artifacts exceed their size bounds"
    return None


def _final_observation(result: HostResult | None) -> Observation:
    if result is None or result.final_message is None:
        return Observation(FINAL_MESSAGE_OBSERVATION, "sevro.engine", Completeness.UNAVAILABLE, {})
    data = result.final_message.encode("utf-8", "surrogatepass")
    completeness = Completeness.COMPLETE if result.complete else Completeness.PARTIAL
    return Observation(
        FINAL_MESSAGE_OBSERVATION,
        "sevro.engine",
        completeness,
        {"sha256": hashlib.sha256(data).hexdigest(), "byteLength": len(data)},
    )


def _observations(result: HostResult | None, run: _Trial) -> dict[str, Observation]:
    out = {FINAL_MESSAGE_OBSERVATION: _final_observation(result)}
    if run.turns.turns > 1:
        out[TURNS_OBSERVATION] = run.turns.observation()
    if result is not None:
        out.update((o.id, o) for o in result.observations)
    runtime = _runtime_observation(run.plan)
    if runtime is not None:
        out[HOST_RUNTIME_OBSERVATION] = runtime
    return out


def _runtime_observation(plan: RunPlan) -> Observation | None:
    """The runtime policy every role's host was given (the same value for each), absent
    without a runtime file and in a dry run (no host ran): names, ``set`` values, PATH and read
    roots, never an inherited value other than PATH (that enters only the digest)."""
    runtime = plan.settings.host_options.runtime
    if runtime is None or plan.settings.dry:
        return None
    roles: list[JsonValue] = [plan.settings.host_options.role, *sorted(plan.judges.routes)]
    data = {**runtime.record, "roles": roles}
    return Observation(HOST_RUNTIME_OBSERVATION, "sevro.engine", Completeness.COMPLETE, data)


def _grade(
    run: _Trial,
    result: HostResult | None,
    observations: dict[str, Observation],
    grading: _Grading,
) -> tuple[list[CheckOutcome], dict[str, str] | None]:
    """Grade in stage order; observations that graders record join ``observations``."""
    planned, cancel = run.planned, grading.isolation.cancel
    assert result is not None  # only a completed execution is graded
    drift = changed_since_loaded(planned.case.evaluator)
    grading = evolve(grading, evaluator_problem=drift)
    grading = evolve(grading, isolation=_grant_checks(run, result, observations, grading))
    view = _final_view(run, result, observations, grading)
    by_id: dict[str, CheckOutcome] = {}
    error: dict[str, str] | None = None
    for check in planned.graded_checks:
        if cancel.cancelled:
            break
        if check.extension:
            continue  # the case source's evaluator grades it after the built-in checks
        declaration = check.declaration
        seen = _view_for(run, view, result, declaration)
        if isinstance(seen, str):
            by_id[declaration.id] = CheckOutcome(
                declaration.id, declaration.grader, CheckStatus.UNAVAILABLE, detail=seen
            )
            continue
        try:
            outcome = check.compiled.grade(declaration.id, seen)
            problem = _check_observations_problem(outcome, observations) or parts_problem(outcome)
        except SpendRefused as exc:  # the ceiling stops new calls: the check was not asked
            detail = f"not asked: {exc}"[:MAX_DIAGNOSTIC_CHARS]
            by_id[declaration.id] = CheckOutcome(
                declaration.id, declaration.grader, CheckStatus.UNAVAILABLE, detail=detail
            )
            continue
        except GradingError as exc:
            message = str(exc)
        except Exception as exc:  # a grader bug is a grading error, never a pass
            message = f"{type(exc).__name__}: {exc}"
        else:
            if problem is None:
                by_id[declaration.id] = evolve(
                    outcome,
                    observations=(),
                    detail=_turn_detail(declaration, outcome.detail),
                    part_of=None,
                )
                observations.update((o.id, o) for o in outcome.observations)
                continue
            message = problem
        if cancel.reason is not None:
            break  # interrupted mid-check: the trial is cancelled, not a grading error
        message = message[:MAX_DIAGNOSTIC_CHARS]
        error = error or {"checkId": declaration.id, "message": message}
        by_id[declaration.id] = CheckOutcome(
            declaration.id,
            declaration.grader,
            CheckStatus.UNAVAILABLE,
            detail=f"grader error: {message}",
        )
    ordered = [o for c in planned.case.checks if c.id in by_id for o in with_parts(by_id[c.id])]
    return ordered, error


def _grant_checks(
    run: _Trial, result: HostResult, observations: Mapping[str, Observation], grading: _Grading
) -> Isolation:
    """The trial's sandbox with what checks receive: the evaluator directories, the final
    output, each turn's output, the workspace diff, the candidate's transcripts and its
    declared artifact directories (``run/checkinputs.py``)."""
    complete = observations[FINAL_MESSAGE_OBSERVATION].completeness is Completeness.COMPLETE
    turns = {number: turn.reply for number, turn in run.turns.settled.items()}
    try:
        granted = check_resources(
            run.private,
            run.planned.case.evaluator,
            result.final_message if complete else None,
            turns,
            grading.artifacts,
        )
    except OSError:  # the inputs could not be written: checks still get the evaluator
        granted = check_resources_unwritten(run.planned.case.evaluator)
    return evolve(
        grading.isolation,
        check_resources=combined(
            CheckResources(problem=grading.evaluator_problem),
            granted,
            *_candidate_evidence(run, result),
        ),
    )


def _candidate_evidence(run: _Trial, result: HostResult) -> tuple[CheckResources, ...]:
    """The candidate's transcripts (left out when they cannot be written) and its declared
    artifact directories (a problem when they cannot be read)."""
    runtime = run.plan.sandbox.runtime
    host = run.plan.host_for(run.planned).route.host
    artifacts = combined(
        candidate_artifacts(result.home, runtime.artifacts if runtime else ()),
        candidate_state(runtime is not None and runtime.codex_state, host, result.state),
    )
    try:
        return candidate_transcripts(run.private, host, result), artifacts
    except OSError:
        return (artifacts,)


def _final_view(
    run: _Trial, result: HostResult, observations: dict[str, Observation], grading: _Grading
) -> TrialView:
    """What checks of the final state see; ``checks`` are those graded against it."""
    isolation, case = grading.isolation, run.planned.case
    return TrialView(
        case_id=case.id,
        trial=run.trial,
        final_message=result.final_message,
        final_message_complete=observations[FINAL_MESSAGE_OBSERVATION].completeness
        is Completeness.COMPLETE,
        observations=observations,
        workspace=isolation.workspace,
        baseline=grading.baseline,
        fixture_bin_dir=isolation.fixture_bin_dir,
        isolation=isolation,
        judges=grading.judges,
        checks=tuple(c.declaration for c in run.planned.checks if c.declaration.turn is None),
        prompts=tuple(render_prompt(p, run.workspace) for p in case.prompts),
        evaluator={e.name: e.path for e in case.evaluator},
        evaluator_problem=grading.evaluator_problem,
        pristine=functools.partial(_pristine, run, isolation),
    )


@contextmanager
def _pristine(run: _Trial, isolation: Isolation) -> Iterator[TrialIsolation]:
    """The case's fixture materialised afresh beside the workspace (no arm), as the sandbox's
    workspace for one check; removed afterwards, whatever the check did."""
    workspace = create_workspace(run.plan.settings.workspace_root, prefix=PRISTINE_PREFIX)
    try:
        fixture = run.planned.fixture.materialise(workspace)
        yield evolve(isolation, workspace=workspace, fixture_bin_dir=fixture.bin_dir)
    finally:
        remove_tree(workspace)


def _view_for(
    run: _Trial, view: TrialView, result: HostResult, declaration: CheckDeclaration
) -> TrialView | str:
    """The view a check grades: the final one, or its turn's (with that turn's checks)."""
    if declaration.turn is None:
        return view
    seen = run.turns.view(view, result, declaration.turn)
    if isinstance(seen, str):
        return seen
    same = tuple(
        c.declaration for c in run.planned.checks if c.declaration.turn == declaration.turn
    )
    return evolve(seen, checks=same)


def _turn_detail(declaration: CheckDeclaration, detail: str | None) -> str | None:
    """A turn-scoped check's detail says which turn it graded, where users read failures."""
    if detail is None or declaration.turn is None:
        return detail
    return f"after turn {declaration.turn}: {detail}"


def _check_observations_problem(
    outcome: CheckOutcome, observations: Mapping[str, Observation]
) -> str | None:
    """Why a grader's observations cannot be kept, or None: they are bounded like a host's."""
    if len(outcome.observations) > MAX_OBSERVATIONS_PER_CHECK:
        return f"more than {MAX_OBSERVATIONS_PER_CHECK} observations for one check"
    for obs in outcome.observations:
        if not _ID_RE.match(obs.id) or obs.id in observations:
            return f"observation id {obs.id!r} is not namespaced or is already taken"
        try:
            size = len(canonical_json(obs.to_json()))
        except ValueError as exc:
            return f"observation {obs.id} is not JSON: {exc}"
        if size > MAX_CHECK_OBSERVATION_BYTES:
            return f"observation {obs.id} exceeds {MAX_CHECK_OBSERVATION_BYTES} bytes"
    return None


def _required_evidence(
    planned: PlannedCase,
    observations: Mapping[str, Observation],
    result: HostResult | None,
    report: FixtureReport,
) -> list[dict[str, str]]:
    artifacts = {a.id for a in result.artifacts} if result is not None else set()
    artifacts |= {a.id for a in report.artifacts}
    out = []
    for evidence_id in planned.case.required_evidence:
        if evidence_id in observations:
            status = observations[evidence_id].completeness.value
        else:
            status = "complete" if evidence_id in artifacts else "unavailable"
        out.append({"id": evidence_id, "status": status})
    return out
