"""Minimal runtime rules for ``prepare`` results (inline artifacts only).

The lifecycle's stand-in until the full rules land (``preparation.py``, issue 20): the same
signature, fewer features. What it does not support yet it refuses (exit 64) rather than
ignores: ``sourceRef`` artifacts, fixture setup, plugin and skill declarations and
instrumentation requests.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.api import (
    NO_HOST_PREPARATION,
    CancelToken,
    Case,
    CaseSources,
    ConfigurationError,
    EvaluationArtifact,
    HostPreparation,
    InvocationError,
    JsonValue,
    check_git_path,
    check_relative_path,
    write_confined,
)

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
