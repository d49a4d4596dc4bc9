"""The case source ``sevro.extension``: an extension's lifecycle in a ``sevro run``.

Before any trial (:meth:`ExtensionCaseSource.open`): the command file and source closure are
read, the extension is described and negotiated, the ``--case-id`` case is resolved and
checked like a case file, and it is prepared once. Per trial the engine installs the
preparation and calls :meth:`ExtensionEvaluator.evaluate` after the built-in checks.

Failures before the first trial: bad input (the files, the negotiation, a resolved case or a
preparation that breaks a rule) is an ``InvocationError`` (exit 64); a process or protocol
failure of the extension is a ``SevroError`` (exit 70), one line either way. During a trial
every failure is the evaluation's ``error``: a grading error, never a pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import evolve, frozen

from sevro_core.api import (
    DEFAULT_PATH,
    EXTENSION_CASE_SOURCE,
    CancelToken,
    Case,
    CaseSourceRequest,
    EvaluationArtifact,
    EvaluationInput,
    EvaluationResult,
    HostPreparation,
    InvocationError,
    JsonValue,
    OpenedCaseSource,
    SevroError,
    hash_json,
    load_case,
    read_json_file,
)
from sevro_extensions.client import Capabilities, call_method, discover
from sevro_extensions.command import load_command
from sevro_extensions.envelope import EXTENSION_PROTOCOL
from sevro_extensions.errors import ExtensionError, ExtensionProtocolError, NegotiationError
from sevro_extensions.evaluation import (
    CheckedEvaluation,
    availability_map,
    check_evaluation,
    evaluate_params,
)
from sevro_extensions.instrumentation import (
    NO_INSTRUMENTATION,
    InstrumentationAgreement,
    negotiate_instrumentation,
)
from sevro_extensions.limits import EXTENSION_TIMEOUT_MS, MAX_EXTENSION_CONFIGURATION_BYTES
from sevro_extensions.negotiation import Negotiated
from sevro_extensions.policy import check_replacements, extension_checks
from sevro_extensions.preparation import Preparation, check_preparation, declared_fixture_paths
from sevro_extensions.sources import SourceClosure, source_closure
from sevro_extensions.transport import CallOptions

ENGINE_CAPABILITIES = ("sevro.case.host-route", "sevro.fixture.setup", "sevro.host.exec")
"""What the engine offers every extension (docs/extensions.md)."""
VERSION = "1.0.0"


class ExtensionFailed(SevroError):
    """An extension call failed before any trial (exit 70)."""

    code = "sevro.extension.failed"


@frozen
class _Session:
    """One opened extension: how to call it and what was agreed."""

    argv: tuple[str, ...]
    closure: SourceClosure
    options: CallOptions
    negotiated: Negotiated
    configuration: JsonValue

    def call(self, method: str, params: JsonValue) -> dict[str, Any]:
        """One call; a failure is an :class:`ExtensionError` (the caller decides what it is)."""
        answer = call_method(self.argv, self.closure, method, params, self.options)
        if not isinstance(answer.result, dict):  # the schemas make every result an object
            raise ExtensionFailed(f"extension {method} result is not an object")
        return answer.result


@frozen
class ExtensionCaseSource:
    """Registered by ``sevro-extensions`` as the case source ``sevro.extension``."""

    id: str = EXTENSION_CASE_SOURCE
    version: str = VERSION
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset()

    def open(self, request: CaseSourceRequest, cancel: CancelToken) -> OpenedCaseSource:
        """Describe, negotiate, resolve and prepare, all before the first trial."""
        argv = load_command(request.command_file)
        closure = source_closure(argv[0], [str(p) for p in request.source_files])
        private, redacted = _configurations(request)
        options = CallOptions(
            cwd=request.project_root,
            env={"PATH": DEFAULT_PATH},
            cancel=cancel,
            timeout_ms=EXTENSION_TIMEOUT_MS,
        )
        offered = Capabilities(
            engine=ENGINE_CAPABILITIES,
            host=tuple(sorted(request.host_capabilities)),
            task_verdict_policy=request.task_verdict_policy,
        )
        discovered = _step("describe", lambda: discover(argv, closure, offered, options))
        session = _Session(argv, discovered.closure, options, discovered.negotiated, private)
        declared = _resolved(session, request)
        case, preparation = _prepared(session, declared, _core_case(declared, request), request)
        graders = session.negotiated.description.graders
        check_replacements(request.replaced_graders, case.checks, graders)
        return _opened(session, request, case, preparation, redacted)


def _step(method: str, call: Any) -> Any:
    """``call()``; negotiation failures are bad input (64), other extension failures are the
    extension's (70), each one line naming the method."""
    try:
        return call()
    except NegotiationError as exc:
        raise InvocationError(str(exc)) from None
    except ExtensionError as exc:
        raise ExtensionFailed(f"extension {method} failed: {exc}") from None


def _configurations(request: CaseSourceRequest) -> tuple[JsonValue, dict[str, JsonValue]]:
    """The private configuration (every request) and its redacted twin (evidence): JSON
    objects, both or neither."""
    files = (request.configuration_file, request.redacted_configuration_file)
    out: list[dict[str, JsonValue]] = []
    for path, what in zip(files, ("configuration", "redacted configuration"), strict=True):
        if path is None:
            out.append({})
            continue
        document = read_json_file(path, MAX_EXTENSION_CONFIGURATION_BYTES, what=f"extension {what}")
        if not isinstance(document, dict):
            raise InvocationError(f"the extension {what} must be a JSON object", source=path)
        out.append(document)
    return out[0], out[1]


def _resolved(session: _Session, request: CaseSourceRequest) -> dict[str, Any]:
    """The ``--case-id`` case, resolved: ids unique and exactly that case back (exit 64)."""
    params: dict[str, JsonValue] = {
        "projectRoot": request.project_root.resolve().as_uri(),
        "selectors": {"caseIds": [request.case_id]},
        "configuration": session.configuration,
        "host": {
            "id": request.host_id,
            "model": request.model,
            "effort": request.effort,
            "capabilities": sorted(request.host_capabilities),
        },
    }
    cases = _step("resolve", lambda: session.call("resolve", params))["cases"]
    ids = [case["id"] for case in cases]
    twice = sorted({case_id for case_id in ids if ids.count(case_id) > 1})
    if twice:
        raise InvocationError(f"extension resolve returned case id {twice[0]!r} twice")
    if ids != [request.case_id]:
        shown = ", ".join(repr(i) for i in ids) or "no case"
        raise InvocationError(
            f"extension resolve returned {shown} for --case-id {request.case_id!r}"
        )
    return dict(cases[0])


def _core_case(declared: Mapping[str, Any], request: CaseSourceRequest) -> Case:
    """The resolved case checked and structured like a case file's (exit 64)."""
    document = {k: v for k, v in declared.items() if k != "extensionData"}
    return load_case(document, source=f"{request.command_file} (resolve)", pointer="/cases/0")


def _prepare_params(
    session: _Session, declared: Mapping[str, Any], request: CaseSourceRequest
) -> dict[str, JsonValue]:
    return {
        "case": dict(declared),
        "host": {"id": request.host_id, "capabilities": sorted(request.host_capabilities)},
        "condition": request.condition,
        "configuration": session.configuration,
    }


def _opened(
    session: _Session,
    request: CaseSourceRequest,
    case: Case,
    preparation: ExtensionPreparation,
    redacted: dict[str, JsonValue],
) -> OpenedCaseSource:
    """What the run keeps: identity, the redacted record, the preparation and the evaluator."""
    described = session.negotiated.description
    policy = session.negotiated.task_verdict_policy
    replaced = sorted(request.replaced_graders)
    configuration_digest = hash_json(
        {
            "command": list(session.argv),
            "configuration": redacted,
            "taskVerdictPolicy": policy,
            "replacedBuiltinGraders": replaced,
        }
    )
    negotiated: dict[str, JsonValue] = {
        "id": described.extension_id,
        "version": described.version,
        "protocol": EXTENSION_PROTOCOL,
        "capabilities": list(session.negotiated.capabilities),
        "graders": list(described.graders),
        "sourceDigest": session.closure.digest,
        "configurationDigest": configuration_digest,
    }
    record: dict[str, JsonValue] = {
        "id": described.extension_id,
        "version": described.version,
        "sourceDigest": session.closure.digest,
        "configurationDigest": configuration_digest,
        "protocol": EXTENSION_PROTOCOL,
        "capabilities": list(session.negotiated.capabilities),
        "replacements": {"graders": list(replaced), "taskVerdictPolicy": policy},
        "configuration": redacted,
    }
    return OpenedCaseSource(
        cases=(case,),
        identity={
            "extensionDigest": session.closure.digest,
            "extensionProtocol": EXTENSION_PROTOCOL,
            "configurationDigest": configuration_digest,
            "evaluator": {
                "extension": negotiated,
                "extensionData": dict(preparation.extension_data),
            },
            "instrumentation": preparation.instrumentation.record(),
        },
        configuration=record,
        preparations={case.id: preparation},
        evaluator=ExtensionEvaluator(session, case, preparation),
        task_verdict_policy=policy,
        replaced_graders=tuple(replaced),
        graders=described.graders,
        version=described.version,
    )


@frozen
class ExtensionEvaluator:
    """Calls ``evaluate`` for each trial; whatever goes wrong is the result's ``error``."""

    session: _Session
    case: Case
    preparation: ExtensionPreparation

    def evaluate(self, trial: EvaluationInput) -> EvaluationResult:
        session = self.session
        described = session.negotiated.description
        params = evaluate_params(
            trial,
            extension_data=self.preparation.extension_data,
            policy=session.negotiated.task_verdict_policy,
            configuration=session.configuration,
        )
        declared = extension_checks(self.case.checks, described.graders)
        unapplied = self.preparation.instrumentation.unapplied(trial.observations)
        if unapplied:  # requested and applied differ: never a pass (Sevro's mismatch)
            return EvaluationResult(
                error=f"instrumentation {unapplied[0]} was requested, but the trial shows no "
                "sign of it (sevro.instrumentation.mismatch)"
            )
        try:
            options = session.options
            if trial.cancel is not None:  # the run's interruption ends the call at once
                options = evolve(options, cancel=trial.cancel)
            answer = call_method(session.argv, session.closure, "evaluate", params, options)
            checked = checked_evaluation(
                answer.result,
                trial,
                extension_id=described.extension_id,
                declared=declared,
                policy=session.negotiated.task_verdict_policy,
            )
        except ExtensionError as exc:
            return EvaluationResult(error=f"extension evaluate failed: {exc}")
        return EvaluationResult(
            outcomes=checked.outcomes,
            metrics=checked.metrics,
            domain_outcomes=checked.domain_outcomes,
            recommendation=checked.recommendation,
            record={
                "method": "evaluate",
                "durationMs": round(answer.duration_ms, 3),
                "checks": [o.id for o in checked.outcomes],
            },
        )


@frozen
class ExtensionPreparation:
    """A case's checked preparation, as the engine installs it (``CasePreparation``)."""

    checked: Preparation
    extension_data: Mapping[str, JsonValue]
    """The case's ``extensionData`` from ``resolve`` merged with ``prepare``'s."""
    instrumentation: InstrumentationAgreement = NO_INSTRUMENTATION
    """What ``prepare`` requested of the host and what it applies (the same, or refused)."""

    @property
    def host(self) -> HostPreparation:
        return self.checked.host

    @property
    def record(self) -> Mapping[str, JsonValue]:
        return {**self.checked.record, "instrumentation": self.instrumentation.record()}

    def install(
        self,
        workspace: Path,
        *,
        git: bool,
        fixture_bin_dir: Path | None,
        project_root: Path,
        cancel: CancelToken,
    ) -> None:
        self.checked.install(
            workspace,
            git=git,
            fixture_bin_dir=fixture_bin_dir,
            project_root=project_root,
            cancel=cancel,
        )

    def artifacts(self, workspace: Path) -> tuple[EvaluationArtifact, ...]:
        return self.checked.artifacts_in(workspace)


def _prepared(
    session: _Session, declared: Mapping[str, Any], case: Case, request: CaseSourceRequest
) -> tuple[Case, ExtensionPreparation]:
    """``prepare`` once, checked (exit 64); the case with its prompts as prepared."""
    params = _prepare_params(session, declared, request)
    result = _step("prepare", lambda: session.call("prepare", params))
    fixture = declared["fixture"]
    agreement = negotiate_instrumentation(
        result.get("requestedInstrumentation") or [],
        request.instrumentation,
        request.condition,
        negotiated=session.negotiated.capabilities,
    )
    checked = check_preparation(
        result,
        case=case,
        fixture_kind=fixture["kind"],
        fixture_paths=declared_fixture_paths(fixture),
        negotiated=session.negotiated.capabilities,
        host_capabilities=request.host_capabilities,
        sources=request.case_sources,
        instrumentation_negotiated=True,
    )
    data = {**declared["extensionData"], **checked.extension_data}
    prompts = evolve(case, prompt=checked.prompt, follow_up_prompt=checked.follow_up_prompt)
    return prompts, ExtensionPreparation(checked, data, agreement)


def checked_evaluation(
    result: JsonValue,
    trial: EvaluationInput,
    *,
    extension_id: str,
    declared: Mapping[str, str],
    policy: str | None,
) -> CheckedEvaluation:
    """The ``evaluate`` result checked against the trial's evidence (raises one line)."""
    if not isinstance(result, dict):  # the schema makes it one
        raise ExtensionProtocolError("extension evaluate result is not an object")
    return check_evaluation(
        result,
        extension_id=extension_id,
        declared=declared,
        availability=availability_map(trial),
        policy=policy,
    )
