"""The runtime rules of ``resolve``, ``prepare`` and ``evaluate`` answers that ``sevro extension
check`` states itself, on schema-valid results.

The conformance command needs them without a run: no host, no fixture, no source map. They are
the rules of Sevro's contract that can be checked from the answer, the case and the negotiated
capabilities alone (docs/extensions.md, "Checking an extension"); what needs a real run
(``sourceRef`` contents, plugin package layouts, fixture setup) is left to the engine.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Collection, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Final

from sevro_core.api import JsonValue
from sevro_extensions.errors import shown

RESERVED_ARTIFACT_IDS: Final = frozenset({"sevro.semantic.verdicts"})
SKILL_PLACEHOLDER: Final = "{{sevro.skill_invocation}}"
DECLARATION_CAPABILITIES: Final = {
    "fixtureSetup": "sevro.fixture.setup",
    "codexMarketplace": "sevro.codex.plugin-marketplace",
    "claudePluginDirs": "sevro.claude.plugin-dirs",
    "codexSkillInvocation": "sevro.codex.explicit-invocation",
    "codexRepositorySkillInvocation": "sevro.codex.repository-invocation",
    "claudeRepositorySkillInvocation": "sevro.claude.repository-invocation",
    "claudeSkillInvocation": "sevro.claude.explicit-invocation",
}
"""Each ``prepare`` declaration and the capability it needs negotiated and offered."""
INVOCATIONS: Final = tuple(name for name in DECLARATION_CAPABILITIES if name.endswith("Invocation"))


class ProtocolRuleError(Exception):
    """An answer broke a runtime rule of protocol v1; ``str`` is one line."""


def _unique(ids: list[str], what: str) -> None:
    seen: set[str] = set()
    for item in ids:
        if item in seen:
            raise ProtocolRuleError(f"{what} {shown(item)} appears twice")
        seen.add(item)


# ---- resolve ------------------------------------------------------------------------------


def check_resolution(result: JsonValue, case_id: str | None) -> list[dict[str, Any]]:
    """The resolved cases: unique ids, and exactly ``case_id`` back when one was asked for."""
    assert isinstance(result, dict)  # the response schema makes it one
    cases: list[dict[str, Any]] = result["cases"]
    _unique([case["id"] for case in cases], "resolve returned case")
    if case_id is not None and [case["id"] for case in cases] != [case_id]:
        got = ", ".join(shown(case["id"]) for case in cases) or "no cases"
        raise ProtocolRuleError(f"resolve for case {shown(case_id)} returned {got}")
    return cases


# ---- prepare ------------------------------------------------------------------------------


def _is_git(fixture: Mapping[str, Any]) -> bool:
    return fixture.get("kind") in ("generated", "repository") or fixture.get("git") is True


def _overlaps(a: PurePosixPath, b: PurePosixPath) -> bool:
    return a == b or a in b.parents or b in a.parents


def _check_path(relative: str, taken: list[PurePosixPath], git: bool) -> PurePosixPath:
    path = PurePosixPath(relative)
    if (
        path.is_absolute()
        or "\\" in relative
        or any(p in ("", ".", "..") for p in relative.split("/"))
    ):
        raise ProtocolRuleError(f"artifact path {shown(relative)} is not a plain relative path")
    if git and path.parts[0] == ".git":
        raise ProtocolRuleError(f"artifact path {shown(relative)} writes into .git")
    for other in taken:
        if _overlaps(path, other):
            raise ProtocolRuleError(f"artifact path {shown(relative)} collides with {other}")
    return path


def _check_content(artifact: Mapping[str, Any]) -> None:
    encoded = artifact.get("contentBase64")
    if encoded is None:
        return  # a sourceRef: only the engine, with the case source map, can read it
    try:
        content = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ProtocolRuleError(f"artifact {shown(artifact['id'])} is not base64") from None
    if base64.b64encode(content).decode("ascii") != encoded:
        raise ProtocolRuleError(f"artifact {shown(artifact['id'])} base64 is not canonical")
    if hashlib.sha256(content).hexdigest() != artifact["sha256"]:
        raise ProtocolRuleError(
            f"artifact {shown(artifact['id'])} sha256 does not match its content"
        )


def _check_artifacts(artifacts: list[dict[str, Any]], fixture: Mapping[str, Any]) -> None:
    _unique([artifact["id"] for artifact in artifacts], "artifact id")
    git = _is_git(fixture)
    files = fixture.get("files")
    taken = [PurePosixPath(name) for name in files] if isinstance(files, dict) else []
    for artifact in artifacts:
        if artifact["id"] in RESERVED_ARTIFACT_IDS:
            raise ProtocolRuleError(f"artifact id {artifact['id']} is reserved")
        if artifact.get("gitExclude") and not git:
            raise ProtocolRuleError(
                f"artifact {shown(artifact['id'])} asks for gitExclude in a fixture without Git"
            )
        taken.append(_check_path(artifact["relativePath"], taken, git))
        _check_content(artifact)


def _check_declarations(
    result: Mapping[str, Any],
    case: Mapping[str, Any],
    negotiated: Collection[str],
    host_capabilities: Collection[str],
) -> list[str]:
    declared = [name for name in DECLARATION_CAPABILITIES if name in result]
    for name in declared:
        capability = DECLARATION_CAPABILITIES[name]
        if capability not in negotiated:
            raise ProtocolRuleError(f"{name} needs capability {capability}, not negotiated")
        if capability not in host_capabilities and not capability.startswith("sevro.fixture."):
            raise ProtocolRuleError(f"{name} needs capability {capability}, which the host lacks")
    invocations = [name for name in declared if name in INVOCATIONS]
    if len(invocations) > 1:
        raise ProtocolRuleError(f"more than one invocation declaration: {', '.join(invocations)}")
    prompts = (case["prompt"], case.get("followUpPrompt") or "")
    placeholders = sum(prompt.count(SKILL_PLACEHOLDER) for prompt in prompts)
    if invocations and placeholders != 1:
        raise ProtocolRuleError(
            f"{invocations[0]} needs exactly one {SKILL_PLACEHOLDER} in the prompts, "
            f"found {placeholders}"
        )
    if placeholders and not invocations:
        raise ProtocolRuleError(f"the case uses {SKILL_PLACEHOLDER} but prepare declares none")
    return declared


def check_preparation_rules(
    result: JsonValue,
    *,
    case: Mapping[str, Any],
    negotiated: Collection[str],
    host_capabilities: Collection[str],
) -> str:
    """Check a schema-valid ``prepare`` result; return a one-line note of what it holds."""
    assert isinstance(result, dict)  # the response schema makes it one
    _check_artifacts(result["artifacts"], case["fixture"])
    declared = _check_declarations(result, case, negotiated, host_capabilities)
    refs = sum("sourceRef" in artifact for artifact in result["artifacts"])
    count = len(result["artifacts"])
    note = f"{count} artifact" + ("s" if count != 1 else "")
    if refs:
        note += f" ({refs} by sourceRef, read only in a run)"
    if declared:
        note += f", declares {', '.join(declared)}"
    return note + ", answered alike twice"


def written_artifacts(prepared: Mapping[str, Any], workspace: Path) -> list[JsonValue]:
    """Write the inline artifacts under ``workspace``; their ``evaluate`` references."""
    refs: list[JsonValue] = []
    for artifact in prepared["artifacts"]:
        if "contentBase64" not in artifact:
            continue
        path = workspace / artifact["relativePath"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(artifact["contentBase64"]))
        ref: dict[str, JsonValue] = {
            "id": artifact["id"],
            "path": path.as_uri(),
            "sha256": artifact["sha256"],
        }
        for flag in ("gitExclude", "executable"):
            if flag in artifact:
                ref[flag] = artifact[flag]
        refs.append(ref)
    return refs


# ---- evaluate -----------------------------------------------------------------------------


def _check_citations(item: Mapping[str, Any], what: str, availability: Mapping[str, bool]) -> None:
    if item["status"] != "passed":
        return
    for ref in item["evidenceRefs"]:
        if ref not in availability:
            raise ProtocolRuleError(
                f"passed {what} {item['id']} cites unknown evidence {shown(ref)}"
            )
        if not availability[ref]:
            raise ProtocolRuleError(
                f"passed {what} {item['id']} cites evidence {ref}, which is not complete"
            )


def check_evaluation_rules(
    result: JsonValue,
    *,
    extension_id: str,
    declared: Collection[str],
    availability: Mapping[str, bool],
    policy: str | None,
) -> str:
    """Check a schema-valid ``evaluate`` result; return a one-line note of what it holds."""
    assert isinstance(result, dict)  # the response schema makes it one
    checks, outcomes = result["checks"], result.get("domainOutcomes", [])
    for items, what in ((checks, "check"), (outcomes, "domain outcome")):
        _unique([item["id"] for item in items], f"{what} id")
        for item in items:
            if not item["id"].startswith(f"{extension_id}."):
                raise ProtocolRuleError(f"{what} id {item['id']} is not prefixed {extension_id}.")
            _check_citations(item, what, availability)
    for check in checks:
        if check["id"] not in declared:
            raise ProtocolRuleError(f"check {check['id']} is not declared by the case")
    recommendation = result.get("taskVerdictRecommendation")
    if recommendation is not None and policy is None:
        raise ProtocolRuleError("recommended a task verdict, but no policy was selected")
    if recommendation is None and policy is not None:
        raise ProtocolRuleError(
            f"policy {policy} was selected, but no task verdict was recommended"
        )
    statuses = ", ".join(
        f"{c['id'].removeprefix(extension_id + '.')} {c['status']}" for c in checks
    )
    note = f"checks: {statuses or 'none'}"
    if recommendation is not None:
        note += f"; recommends {recommendation}"
    return note + "; answered alike twice"
