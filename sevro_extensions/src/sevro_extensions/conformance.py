"""``sevro extension check``: the conformance suite an extension author runs before a real run.

It drives the real extension process through the lifecycle the engine uses (``describe`` and
negotiation against the engine's and one host's capabilities, ``resolve``, ``prepare``, then
``evaluate`` on synthetic trials: a completed trial with complete evidence, a failed execution,
partial evidence; each with and without the extension's first task-verdict policy) and checks
every answer against the protocol: schemas and echo rules both ways
(:func:`~sevro_extensions.client.call_method`), the runtime rules a schema cannot state, the same
answer to two identical calls, an unchanged source closure before and after every call, and the
timeout. Each check is one line; a step that cannot run because an earlier one failed is a
failure too, so nothing passes by not being looked at.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Final

from attrs import define, frozen

from sevro_core.api import (
    DEFAULT_PATH,
    FINAL_MESSAGE_OBSERVATION,
    CancelToken,
    CaseSources,
    CheckOutcome,
    CheckStatus,
    Completeness,
    EvaluationInput,
    Execution,
    InvocationError,
    JsonValue,
    Observation,
    SevroError,
    load_case,
    read_json_file,
)
from sevro_extensions.client import call_method
from sevro_extensions.command import load_command
from sevro_extensions.errors import ExtensionError, ExtensionProtocolError, one_line, shown
from sevro_extensions.evaluation import (
    availability_map,
    check_evaluation,
    evaluate_params,
    merged_extension_data,
)
from sevro_extensions.lifecycle import ENGINE_CAPABILITIES
from sevro_extensions.limits import EXTENSION_TIMEOUT_MS, MAX_EXTENSION_CONFIGURATION_BYTES
from sevro_extensions.negotiation import (
    Negotiated,
    describe_params,
    description,
    negotiate,
)
from sevro_extensions.preparation import Preparation, check_preparation, declared_fixture_paths
from sevro_extensions.sources import SourceClosure, source_closure
from sevro_extensions.transport import CallOptions

SYNTHETIC_SOURCE: Final = "sevro.conformance"
SYNTHETIC_ERROR: Final = "sevro.conformance.synthetic-failure"
DECLARATIONS: Final = (
    "fixtureSetup",
    "codexMarketplace",
    "claudePluginDirs",
    "codexSkillInvocation",
    "codexRepositorySkillInvocation",
    "claudeRepositorySkillInvocation",
    "claudeSkillInvocation",
)
"""The ``prepare`` declarations a note names."""


@frozen
class CheckRequest:
    """Validated input of one ``sevro extension check``."""

    argv: tuple[str, ...]
    closure: SourceClosure
    configuration: Mapping[str, JsonValue]
    case_id: str | None
    host_id: str
    host_capabilities: tuple[str, ...]
    project_root: Path
    timeout_ms: int
    case_sources: CaseSources | None = None


@frozen
class Finding:
    """One check: its name, whether it held, and a one-line reason or note."""

    name: str
    ok: bool
    detail: str = ""

    def line(self) -> str:
        head = f"ok   {self.name}" if self.ok else f"FAIL {self.name}"
        return f"{head}: {self.detail}" if self.detail else head


@frozen
class Report:
    """Every finding in order, and who the extension said it is (``None`` if unknown)."""

    findings: tuple[Finding, ...]
    extension: Mapping[str, str] | None

    @property
    def failed(self) -> int:
        return sum(not finding.ok for finding in self.findings)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def text(self) -> str:
        lines = [finding.line() for finding in self.findings]
        ok = len(self.findings) - self.failed
        verdict = "conforms" if not self.failed else "does not conform"
        lines.append(f"{ok} ok, {self.failed} failed: the extension {verdict}")
        return "\n".join(lines) + "\n"

    def document(self) -> dict[str, JsonValue]:
        return {
            "extension": dict(self.extension) if self.extension is not None else None,
            "checks": [{"name": f.name, "ok": f.ok, "detail": f.detail} for f in self.findings],
            "ok": len(self.findings) - self.failed,
            "failed": self.failed,
            "conforms": not self.failed,
        }


# ---- input --------------------------------------------------------------------------------


def check_request(
    *,
    command_file: Path,
    source_files: Sequence[Path],
    configuration_file: Path | None,
    case_id: str | None,
    host_id: str,
    find_host: Callable[[str], tuple[str, tuple[str, ...]] | None],
    project_root: Path,
    timeout_ms: int,
    case_sources: CaseSources | None = None,
) -> CheckRequest:
    """Validate every input before anything runs; raise :class:`InvocationError` (exit 64)."""
    if not 0 < timeout_ms <= EXTENSION_TIMEOUT_MS:
        raise InvocationError(f"--timeout-ms must be between 1 and {EXTENSION_TIMEOUT_MS}")
    argv = load_command(command_file)
    closure = source_closure(argv[0], [str(path) for path in source_files])
    configuration: Mapping[str, JsonValue] = {}
    if configuration_file is not None:
        loaded = read_json_file(
            configuration_file,
            MAX_EXTENSION_CONFIGURATION_BYTES,
            what="extension configuration file",
        )
        if not isinstance(loaded, dict):
            raise InvocationError("must be a JSON object", source=configuration_file)
        configuration = loaded
    found = find_host(host_id)
    if found is None:
        raise InvocationError(f"--host {host_id} is not an installed host; see `sevro plugins`")
    host_id, capabilities = found
    return CheckRequest(
        argv=argv,
        closure=closure,
        configuration=configuration,
        case_id=case_id,
        host_id=host_id,
        host_capabilities=capabilities,
        project_root=project_root,
        timeout_ms=timeout_ms,
        case_sources=case_sources,
    )


# ---- the session --------------------------------------------------------------------------


class _Stop(Exception):
    """A step failed, so the steps that need its answer cannot run."""


@define
class _Session:
    request: CheckRequest
    closure: SourceClosure
    findings: list[Finding]
    slowest_ms: float = 0.0
    calls: int = 0

    def call(self, method: str, params: JsonValue) -> JsonValue:
        """One real call; the closure it returns is the one the next call checks."""
        options = CallOptions(
            cwd=self.request.project_root,
            env={"PATH": DEFAULT_PATH},
            cancel=CancelToken(),
            timeout_ms=self.request.timeout_ms,
        )
        answer = call_method(self.request.argv, self.closure, method, params, options)
        self.closure = answer.closure
        self.calls += 1
        self.slowest_ms = max(self.slowest_ms, answer.duration_ms)
        return answer.result

    def twice(self, method: str, params: JsonValue) -> JsonValue:
        """The answer to ``params``, which a second identical call must repeat exactly."""
        first = self.call(method, params)
        second = self.call(method, params)
        where = _first_difference(first, second, "")
        if where is not None:
            raise ExtensionProtocolError(
                f"two identical {method} calls answered differently at {where or '/'}"
            )
        return first

    def step(self, name: str, run: Callable[[], str], *, fatal: bool = True) -> None:
        """Run one check; record ``ok`` with its note or ``FAIL`` with the one-line reason."""
        try:
            note = run()
        except (ExtensionError, SevroError) as exc:
            self.findings.append(Finding(name, ok=False, detail=one_line(str(exc), 500)))
            if fatal:
                raise _Stop from None
            return
        self.findings.append(Finding(name, ok=True, detail=note))


def _first_difference(a: JsonValue, b: JsonValue, pointer: str) -> str | None:
    """The JSON pointer of the first place ``a`` and ``b`` differ, or None when equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{pointer}/{key}"
            found = _first_difference(a[key], b[key], f"{pointer}/{key}")
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return pointer
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_difference(x, y, f"{pointer}/{index}")
            if found is not None:
                return found
        return None
    same = type(a) is type(b) and a == b
    return None if same else pointer


# ---- the steps ----------------------------------------------------------------------------


def run_check(request: CheckRequest) -> Report:
    """Drive the extension through every method and report each check."""
    session = _Session(request=request, closure=request.closure, findings=[])
    state: dict[str, Any] = {}
    try:
        session.step("describe", lambda: _describe(session, state))
        session.step(f"negotiate with {request.host_id}", lambda: _negotiate(request, state))
        _resolve_steps(session, state)
        session.step("prepare", lambda: _prepare(session, state))
        with tempfile.TemporaryDirectory(prefix="sevro-extension-check-") as workspace:
            write_artifacts(state["prepared"], Path(workspace))
            state["workspace"] = Path(workspace)
            _evaluate_steps(session, state)
    except _Stop:
        failed = session.findings[-1].name
        hint = " (pass --case-id to check one case)" if failed == "resolve without case ids" else ""
        session.findings.append(
            Finding("remaining checks", ok=False, detail=f"not run, {failed} failed{hint}")
        )
    else:
        session.step("source closure", lambda: _closure_note(session), fatal=False)
        limit = request.timeout_ms
        session.findings.append(
            Finding(
                "timing",
                ok=True,
                detail=f"{session.calls} calls, slowest {session.slowest_ms:.0f} ms "
                f"(each within the {limit} ms timeout)",
            )
        )
    return Report(findings=tuple(session.findings), extension=state.get("extension"))


def _describe(session: _Session, state: dict[str, Any]) -> str:
    request = session.request
    result = session.twice(
        "describe", describe_params(ENGINE_CAPABILITIES, request.host_capabilities)
    )
    if not isinstance(result, dict):
        raise ExtensionProtocolError("describe result is not an object")
    described = description(result)
    state["described"] = described
    state["extension"] = {"id": described.extension_id, "version": described.version}
    return f"{described.extension_id} {described.version}, schema-valid, answered alike twice"


def _negotiate(request: CheckRequest, state: dict[str, Any]) -> str:
    described = state["described"]
    negotiated = negotiate(
        described,
        engine_capabilities=ENGINE_CAPABILITIES,
        host_capabilities=request.host_capabilities,
    )
    state["negotiated"] = negotiated
    kept = ", ".join(negotiated.capabilities) or "none"
    return f"capabilities {kept}"


def _resolve_steps(session: _Session, state: dict[str, Any]) -> None:
    request = session.request
    if request.case_id is None:
        session.step("resolve without case ids", lambda: _resolve_all(session, state))
    session.step(
        f"resolve {state.get('case_id', request.case_id)}",
        lambda: _resolve_one(session, state),
    )


def _resolve_params(session: _Session, state: dict[str, Any], selectors: JsonValue) -> JsonValue:
    request = session.request
    negotiated: Negotiated = state["negotiated"]
    params: dict[str, JsonValue] = {
        "projectRoot": request.project_root.as_uri(),
        "selectors": selectors,
        "configuration": dict(request.configuration),
    }
    if "sevro.case.host-route" in negotiated.capabilities:
        params["host"] = {"id": request.host_id, "capabilities": list(request.host_capabilities)}
    return params


def check_resolution(result: JsonValue, case_id: str | None) -> list[dict[str, Any]]:
    """The resolved cases: unique ids, and exactly ``case_id`` back when one was asked for."""
    assert isinstance(result, dict)  # the response schema makes it one
    cases: list[dict[str, Any]] = result["cases"]
    ids = [case["id"] for case in cases]
    twice = [case_id for index, case_id in enumerate(ids) if case_id in ids[:index]]
    if twice:
        raise ExtensionProtocolError(f"resolve returned case {shown(twice[0])} twice")
    if case_id is not None and ids != [case_id]:
        got = ", ".join(shown(i) for i in ids) or "no cases"
        raise ExtensionProtocolError(f"resolve for case {shown(case_id)} returned {got}")
    return cases


def _resolve_all(session: _Session, state: dict[str, Any]) -> str:
    result = session.twice("resolve", _resolve_params(session, state, {}))
    cases = check_resolution(result, None)
    if not cases:
        raise ExtensionProtocolError("resolve without case ids returned no cases; pass --case-id")
    state["case_id"] = cases[0]["id"]
    names = ", ".join(shown(case["id"]) for case in cases[:10])
    count = f"{len(cases)} case" + ("s" if len(cases) != 1 else "")
    return f"{count} ({names}); checking {shown(cases[0]['id'])} (choose with --case-id)"


def _resolve_one(session: _Session, state: dict[str, Any]) -> str:
    case_id = state.get("case_id", session.request.case_id)
    result = session.twice("resolve", _resolve_params(session, state, {"caseIds": [case_id]}))
    (case,) = check_resolution(result, case_id)
    document = {key: value for key, value in case.items() if key != "extensionData"}
    # the engine loads the resolved case like a case file (exit 64 in a run)
    state["core_case"] = load_case(document, source="the resolved case")
    state["case"] = case
    return "exactly the case asked for, loads as a case file, answered alike twice"


def _prepare(session: _Session, state: dict[str, Any]) -> str:
    """``prepare`` twice, then the engine's own preparation rules
    (:func:`sevro_extensions.preparation.check_preparation`)."""
    request = session.request
    case = state["case"]
    params: dict[str, JsonValue] = {
        "case": case,
        "host": {"id": request.host_id, "capabilities": list(request.host_capabilities)},
        "condition": "passive",
        "configuration": dict(request.configuration),
    }
    result = session.twice("prepare", params)
    assert isinstance(result, dict)  # the response schema makes it one
    prepared = check_preparation(
        result,
        case=state["core_case"],
        fixture_kind=case["fixture"]["kind"],
        fixture_paths=declared_fixture_paths(case["fixture"]),
        negotiated=state["negotiated"].capabilities,
        host_capabilities=request.host_capabilities,
        sources=request.case_sources,
        # a host offers instrumentation only once configured for a run: sevro run negotiates it
        instrumentation_negotiated=True,
    )
    state["prepared"] = prepared
    count = len(prepared.artifacts)
    note = f"{count} artifact" + ("s" if count != 1 else "")
    requested = len(result["requestedInstrumentation"])
    if requested:
        note += f", {requested} instrumentation requests (negotiated only in sevro run)"
    declared = [key for key in DECLARATIONS if key in result]
    if declared:
        note += f", declares {', '.join(declared)}"
    return note + ", answered alike twice"


def write_artifacts(prepared: Preparation, workspace: Path) -> None:
    """Write the checked artifacts under ``workspace``, where ``evaluate`` is told they are
    (no mode, no Git exclusion and no fixture setup: nothing here is a real workspace)."""
    for artifact in prepared.artifacts:
        path = workspace / artifact.relative_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(artifact.content)


def _evaluate_steps(session: _Session, state: dict[str, Any]) -> None:
    policies = state["described"].task_verdict_policies
    for trial in ("completed", "failed execution", "partial evidence"):
        for policy in (None, *policies[:1]):
            name = f"evaluate {trial}" + (f" with policy {policy}" if policy else "")
            session.step(name, partial(_evaluate, session, state, trial, policy), fatal=False)


def _evaluate(session: _Session, state: dict[str, Any], trial: str, policy: str | None) -> str:
    """``evaluate`` twice, then the engine's own evaluation rules
    (:func:`sevro_extensions.evaluation.check_evaluation`)."""
    params, availability = synthetic_trial(state, trial, policy, session.request.configuration)
    result = session.twice("evaluate", params)
    assert isinstance(result, dict)  # the response schema makes it one
    described = state["described"]
    declared = {
        check["id"]: check["grader"]
        for check in state["case"]["checks"]
        if check["grader"] in described.graders
    }
    checked = check_evaluation(
        result,
        extension_id=described.extension_id,
        declared=declared,
        availability=availability,
        policy=policy,
    )
    statuses = ", ".join(f"{o.id} {o.status.value}" for o in checked.outcomes)
    note = f"checks: {statuses or 'none'}"
    if checked.recommendation is not None:
        note += f"; recommends {checked.recommendation}"
    return note + "; answered alike twice"


def synthetic_trial(
    state: Mapping[str, Any],
    trial: str,
    policy: str | None,
    configuration: Mapping[str, JsonValue],
) -> tuple[dict[str, JsonValue], dict[str, bool]]:
    """``evaluate`` params for one synthetic trial, built as the engine builds them
    (:func:`~sevro_extensions.evaluation.evaluate_params`), and the trial's availability map.

    The synthetic agent's final message repeats the prompt; the other required evidence carries
    no data. Built-in checks (the case's checks of graders the extension does not advertise)
    pass on complete evidence and are ``unavailable`` otherwise.
    """
    case, prepared = state["case"], state["prepared"]
    completeness = {"completed": Completeness.COMPLETE, "partial evidence": Completeness.PARTIAL}
    level = completeness.get(trial, Completeness.UNAVAILABLE)
    ids = dict.fromkeys([FINAL_MESSAGE_OBSERVATION, *case["requiredEvidence"]])
    observations = {
        oid: Observation(id=oid, source=SYNTHETIC_SOURCE, completeness=level, data={})
        for oid in ids
    }
    graders = set(state["described"].graders)
    status = CheckStatus.PASSED if level is Completeness.COMPLETE else CheckStatus.UNAVAILABLE
    builtin = tuple(
        CheckOutcome(id=check["id"], grader=check["grader"], status=status)
        for check in case["checks"]
        if check["grader"] not in graders
    )
    failed = trial == "failed execution"
    synthetic = EvaluationInput(
        case_id=case["id"],
        execution=Execution.FAILED if failed else Execution.COMPLETED,
        error_code=SYNTHETIC_ERROR if failed else None,
        observations=observations,
        builtin=builtin,
        artifacts=prepared.artifacts_in(state["workspace"]),
        final_message=None if level is Completeness.UNAVAILABLE else case["prompt"],
    )
    params = evaluate_params(
        synthetic,
        extension_data=merged_extension_data(case["extensionData"], prepared.extension_data),
        policy=policy,
        configuration=dict(configuration),
    )
    return params, availability_map(synthetic)


def _closure_note(session: _Session) -> str:
    closure = session.closure.verify("after the last call")
    return f"{len(closure.files)} files unchanged by {session.calls} calls, digest {closure.digest}"


def report_json(report: Report) -> str:
    return json.dumps(report.document(), indent=2, ensure_ascii=False) + "\n"
