"""Minimal runtime rules for ``prepare`` and ``evaluate`` results (inline artifacts only).

The lifecycle's stand-in until the full rules land (``evaluation.py`` and ``preparation.py``,
issue 20): the same signatures, fewer features. What it does not support yet it refuses
(exit 64) rather than ignores: ``sourceRef`` artifacts, fixture setup, plugin and skill
declarations and instrumentation requests. What it checks it checks fully: a ``passed`` check
cites only known, complete evidence, ids are the extension's and declared, and a
recommendation comes if and only if a policy was selected.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.api import FINAL_MESSAGE_OBSERVATION as FINAL
from sevro_core.api import (
    NO_HOST_PREPARATION,
    CancelToken,
    Case,
    CaseSources,
    CheckOutcome,
    CheckStatus,
    Completeness,
    ConfigurationError,
    EvaluationArtifact,
    EvaluationInput,
    HostPreparation,
    InvocationError,
    JsonValue,
    check_git_path,
    check_relative_path,
    write_confined,
)
from sevro_extensions.errors import ExtensionProtocolError

_UNSUPPORTED = (
    "fixtureSetup",
    "codexMarketplace",
    "claudePluginDirs",
    "codexSkillInvocation",
    "codexRepositorySkillInvocation",
    "claudeRepositorySkillInvocation",
    "claudeSkillInvocation",
)


@frozen
class PreparedArtifact:
    id: str
    relative_path: str
    sha256: str
    content: bytes
    git_exclude: bool
    executable: bool


@frozen
class Preparation:
    """A checked ``prepare`` result; :meth:`install` writes it into a trial's fixture."""

    artifacts: tuple[PreparedArtifact, ...]
    host: HostPreparation
    prompt: str
    follow_up_prompt: str | None
    extension_data: Mapping[str, JsonValue]
    record: Mapping[str, JsonValue]

    def install(
        self,
        workspace: Path,
        *,
        git: bool,
        fixture_bin_dir: Path | None,
        project_root: Path,
        cancel: CancelToken,
    ) -> None:
        for artifact in self.artifacts:
            write_confined(workspace, artifact.relative_path, artifact.content)
            (workspace / artifact.relative_path).chmod(0o700 if artifact.executable else 0o600)
        excluded = [a.relative_path for a in self.artifacts if a.git_exclude]
        if excluded:
            with (workspace / ".git" / "info" / "exclude").open("a", encoding="utf-8") as file:
                file.writelines(f"/{path}\n" for path in excluded)

    def artifacts_in(self, workspace: Path) -> tuple[EvaluationArtifact, ...]:
        return tuple(
            EvaluationArtifact(
                id=a.id,
                path=workspace / a.relative_path,
                sha256=a.sha256,
                git_exclude=a.git_exclude,
                executable=a.executable,
            )
            for a in self.artifacts
        )


def check_preparation(
    result: Mapping[str, Any],
    *,
    case: Case,
    fixture_kind: str,
    fixture_paths: Collection[str],
    negotiated: Collection[str],
    host_capabilities: Collection[str],
    sources: CaseSources | None,
) -> Preparation:
    """The schema-valid ``prepare`` result checked (exit 64 on the first problem)."""
    for key in _UNSUPPORTED:
        if key in result:
            raise InvocationError(
                f"extension prepare declares {key}, which sevro does not support yet"
            )
    if result["requestedInstrumentation"]:
        wanted = result["requestedInstrumentation"][0]["id"]
        raise InvocationError(
            f"extension prepare requests instrumentation {wanted}, which no host offers"
        )
    artifacts = tuple(
        _artifact(item, index, git=fixture_kind != "inline", taken=fixture_paths)
        for index, item in enumerate(result["artifacts"])
    )
    ids = [a.id for a in artifacts]
    paths = [a.relative_path.casefold() for a in artifacts]
    if len(set(ids)) != len(ids) or len(set(paths)) != len(paths):
        raise InvocationError("extension prepare names an artifact id or path twice")
    record: dict[str, JsonValue] = {
        "artifacts": [
            {
                "id": a.id,
                "relativePath": a.relative_path,
                "sha256": a.sha256,
                "gitExclude": a.git_exclude,
                "executable": a.executable,
            }
            for a in artifacts
        ],
        "requestedInstrumentation": [],
        "appliedInstrumentation": [],
    }
    return Preparation(
        artifacts=artifacts,
        host=NO_HOST_PREPARATION,
        prompt=case.prompt,
        follow_up_prompt=case.follow_up_prompt,
        extension_data=dict(result["extensionData"]),
        record=record,
    )


def _artifact(
    item: Mapping[str, Any], index: int, *, git: bool, taken: Collection[str]
) -> PreparedArtifact:
    where = f"extension prepare artifact {item['id']!r}"
    if "contentBase64" not in item:
        raise InvocationError(f"{where} uses sourceRef, which sevro does not support yet")
    try:
        content = base64.b64decode(item["contentBase64"], validate=True)
    except (binascii.Error, ValueError):
        raise InvocationError(f"{where} is not base64") from None
    if base64.b64encode(content).decode() != item["contentBase64"]:
        raise InvocationError(f"{where} is not canonical base64")
    if hashlib.sha256(content).hexdigest() != item["sha256"]:
        raise InvocationError(f"{where} does not match its sha256")
    path = item["relativePath"]
    try:
        (check_git_path if git else check_relative_path)(path, f"/artifacts/{index}")
    except ConfigurationError as exc:
        raise InvocationError(f"{where}: {exc.message}") from None
    if path.casefold() in {p.casefold() for p in taken}:
        raise InvocationError(f"{where} collides with fixture path {path}")
    if item.get("gitExclude") and not git:
        raise InvocationError(f"{where} asks for gitExclude in a fixture without Git")
    return PreparedArtifact(
        id=item["id"],
        relative_path=path,
        sha256=item["sha256"],
        content=content,
        git_exclude=bool(item.get("gitExclude")),
        executable=bool(item.get("executable")),
    )


@frozen
class CheckedEvaluation:
    outcomes: tuple[CheckOutcome, ...]
    metrics: tuple[Mapping[str, JsonValue], ...]
    domain_outcomes: tuple[Mapping[str, JsonValue], ...]
    recommendation: str | None


def evaluate_params(
    trial: EvaluationInput,
    *,
    extension_data: Mapping[str, JsonValue],
    policy: str | None,
    configuration: JsonValue,
) -> dict[str, JsonValue]:
    """The ``evaluate`` request's params (the final message's text only here)."""
    execution: dict[str, JsonValue] = {"status": trial.execution.value}
    if trial.error_code is not None:
        execution["errorCode"] = trial.error_code
    observations: list[JsonValue] = []
    for observation in trial.observations.values():
        shown = observation.to_json()
        if observation.id == FINAL and trial.final_message is not None:
            shown = {**shown, "data": {**dict(observation.data), "text": trial.final_message}}
        observations.append(shown)
    params: dict[str, JsonValue] = {
        "caseId": trial.case_id,
        "execution": execution,
        "observations": observations,
        "builtinChecks": [
            {
                k: v
                for k, v in o.to_json().items()
                if k in ("id", "status", "detail", "evidenceRefs")
            }
            for o in trial.builtin
        ],
        "artifacts": [_artifact_ref(a) for a in trial.artifacts],
        "extensionData": dict(extension_data),
        "configuration": configuration,
    }
    if policy is not None:
        params["selectedTaskVerdictPolicy"] = policy
    return params


def _artifact_ref(artifact: EvaluationArtifact) -> JsonValue:
    return {
        "id": artifact.id,
        "path": artifact.path.resolve().as_uri(),
        "sha256": artifact.sha256,
        "gitExclude": artifact.git_exclude,
        "executable": artifact.executable,
    }


def availability_map(trial: EvaluationInput) -> dict[str, bool]:
    """What a ``passed`` item may cite: complete observations, artifacts, built-in checks
    that are not unavailable."""
    out = {o.id: o.completeness is Completeness.COMPLETE for o in trial.observations.values()}
    out.update((a.id, True) for a in trial.artifacts)
    out.update((o.id, o.status is not CheckStatus.UNAVAILABLE) for o in trial.builtin)
    return out


def check_evaluation(
    result: Mapping[str, Any],
    *,
    extension_id: str,
    declared: Collection[str],
    availability: Mapping[str, bool],
    policy: str | None,
) -> CheckedEvaluation:
    """The schema-valid ``evaluate`` result checked; any broken rule is an
    :class:`ExtensionProtocolError` (one line)."""
    seen: set[str] = set()
    items = [("check", c) for c in result["checks"]]
    items += [("domain outcome", d) for d in result.get("domainOutcomes", [])]
    for kind, item in items:
        _check_item(kind, item, extension_id, seen, availability)
        if kind == "check" and item["id"] not in declared:
            raise ExtensionProtocolError(
                f"extension evaluate check {item['id']} is not declared by the case"
            )
    recommendation = result.get("taskVerdictRecommendation")
    if (recommendation is None) != (policy is None):
        raise ExtensionProtocolError(
            "extension evaluate must recommend a task verdict exactly when a policy is selected"
        )
    outcomes = tuple(
        CheckOutcome(
            c["id"],
            c["id"],
            CheckStatus(c["status"]),
            detail=c.get("detail"),
            evidence_refs=tuple(c["evidenceRefs"]),
        )
        for c in result["checks"]
    )
    return CheckedEvaluation(
        outcomes=outcomes,
        metrics=tuple(result["metrics"]),
        domain_outcomes=tuple(result.get("domainOutcomes", [])),
        recommendation=recommendation,
    )


def _check_item(
    kind: str,
    item: Mapping[str, Any],
    extension_id: str,
    seen: set[str],
    available: Mapping[str, bool],
) -> None:
    name = f"extension evaluate {kind} {item['id']}"
    if not item["id"].startswith(f"{extension_id}."):
        raise ExtensionProtocolError(f"{name} is not prefixed {extension_id}.")
    if item["id"] in seen:
        raise ExtensionProtocolError(f"{name} appears twice")
    seen.add(item["id"])
    if item["status"] != "passed":
        return
    for ref in item["evidenceRefs"]:
        if ref not in available:
            raise ExtensionProtocolError(f"{name} passed citing unknown evidence {ref}")
        if not available[ref]:
            raise ExtensionProtocolError(f"{name} passed citing incomplete evidence {ref}")
