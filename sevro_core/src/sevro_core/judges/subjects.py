"""What the blinded comparator is shown of a pair, built from the run's persisted evidence.

Each side is a :class:`JudgedResult`: the trial's final message (its raw blob) and its Git diff
(the ``sevro.git.diff`` artifact), each verified against the digest the trial recorded and cut
to ``MAX_JUDGED_RESULT_BYTES`` (truncation flagged). The base is the case's fixture as the agent
found it: materialised afresh into a private temporary directory, *without* mounting any arm
(so no skill, context or arm name can leak into it), its UTF-8 text files read up to
``MAX_JUDGED_BASE_FILES_BYTES``, and the directory removed. Evidence that is missing, changed or
unavailable raises :class:`SubjectError`: the pair is then a judge error, never a guess.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.fixtures.workspace import (
    WorkspaceEscapeError,
    create_workspace,
    read_confined,
    remove_tree,
)
from sevro_core.limits import (
    MAX_ARTIFACT_BYTES,
    MAX_FINAL_MESSAGE_BYTES,
    MAX_JUDGED_BASE_FILE_ENTRIES,
    MAX_JUDGED_BASE_FILES_BYTES,
    MAX_JUDGED_RESULT_BYTES,
)
from sevro_core.plugin.protocols import CompiledFixture, JudgedResult
from sevro_core.states import Completeness
from sevro_core.vocabulary import (
    DIFF_ARTIFACT,
    FILES_DIFF_ARTIFACT,
    FILES_DIFF_OBSERVATION,
    WORKSPACE_OBSERVATION,
)

BASE_PREFIX = "sevro-judged-base-"


class SubjectError(Exception):
    """A side of the pair cannot be shown to the judge as it was (missing, changed, unavailable)."""


def _blob(run_dir: Path, ref: Mapping[str, Any], limit: int, what: str) -> bytes:
    """A blob the trial recorded, verified against its length and digest."""
    try:
        data, size = read_confined(run_dir, str(ref["path"]), limit)
    except (OSError, WorkspaceEscapeError, KeyError) as exc:
        raise SubjectError(f"the {what} is unreadable: {exc}") from None
    if size != ref.get("byteLength") or hashlib.sha256(data).hexdigest() != ref.get("sha256"):
        raise SubjectError(f"the {what} does not match the digest its trial recorded")
    return data


def _cut(data: bytes) -> tuple[str, bool]:
    """At most ``MAX_JUDGED_RESULT_BYTES`` of ``data`` as text, and whether it was cut."""
    return data[:MAX_JUDGED_RESULT_BYTES].decode("utf-8", "replace"), (
        len(data) > MAX_JUDGED_RESULT_BYTES
    )


def _observation(evidence: Mapping[str, Any], observation_id: str) -> Mapping[str, Any] | None:
    observations = evidence.get("observations")
    for item in observations if isinstance(observations, list) else []:
        if isinstance(item, Mapping) and item.get("id") == observation_id:
            return item
    return None


def _workspace_observation(evidence: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return _observation(evidence, WORKSPACE_OBSERVATION)


def _files_diff_observation(evidence: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return _observation(evidence, FILES_DIFF_OBSERVATION)


def _diff(run_dir: Path, evidence: Mapping[str, Any]) -> tuple[str | None, bool]:
    """The trial's diff and whether it is incomplete: a Git fixture's ``git diff``, or sevro's
    text diff of a fixture without Git; (None, False) when the trial recorded neither."""
    observation = _workspace_observation(evidence)
    artifact = DIFF_ARTIFACT
    if observation is None:
        observation = _files_diff_observation(evidence)
        artifact = FILES_DIFF_ARTIFACT
    refs = [
        r
        for r in evidence.get("artifactRefs") or []
        if isinstance(r, Mapping) and r.get("id") == artifact
    ]
    if observation is None and not refs:
        return None, False
    if observation is not None and observation.get("completeness") == Completeness.UNAVAILABLE:
        raise SubjectError("the trial's workspace change is unavailable")
    if observation is None or len(refs) != 1:
        raise SubjectError("the trial's workspace change was not recorded with exactly one diff")
    data = observation.get("data")
    partial = observation.get("completeness") != Completeness.COMPLETE or (
        isinstance(data, Mapping)
        and (data.get("diffTruncated") is True or data.get("truncated") is True)
    )
    text, cut = _cut(_blob(run_dir, refs[0], MAX_ARTIFACT_BYTES, "diff"))
    return text, cut or partial


def judged_result(run_dir: Path, evidence: Mapping[str, Any]) -> JudgedResult:
    """One side of a pair from its trial's ``evidence`` (a ``sevro.trial-evidence.v1``
    document's ``evidence``), blobs read from ``run_dir`` and bounded."""
    raw = evidence.get("rawResult")
    message, message_cut = None, False
    if isinstance(raw, Mapping):
        message, message_cut = _cut(_blob(run_dir, raw, MAX_FINAL_MESSAGE_BYTES, "final message"))
    elif raw is not None:
        raise SubjectError("the trial's final message reference is malformed")
    diff, diff_truncated = _diff(run_dir, evidence)
    return JudgedResult(
        final_message=message,
        diff=diff,
        diff_truncated=diff_truncated,
        final_message_truncated=message_cut,
    )


@frozen
class BaseFiles:
    """The fixture's text files before any agent ran: path → text, and whether some were left
    out (over the bounds)."""

    files: Mapping[str, str]
    truncated: bool


def _listing(root: Path) -> tuple[list[str], bool]:
    """Relative paths of the regular files under ``root`` (no ``.git``, no symlinks followed),
    sorted, and whether the walk stopped at ``MAX_JUDGED_BASE_FILE_ENTRIES``."""
    found: list[str] = []
    pending = [""]
    visited = 0
    while pending:
        relative = pending.pop()
        with os.scandir(root / relative if relative else root) as entries:
            for entry in entries:
                visited += 1
                if visited > MAX_JUDGED_BASE_FILE_ENTRIES:
                    return sorted(found), True
                path = f"{relative}/{entry.name}" if relative else entry.name
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != ".git":
                        pending.append(path)
                elif stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode):
                    found.append(path)
    return sorted(found), False


def _text(data: bytes) -> str | None:
    """The file as text, or None for a binary (not UTF-8, or holding NUL)."""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def read_base_files(root: Path) -> BaseFiles:
    """The UTF-8 text files under ``root`` in path order, paths plus contents within
    ``MAX_JUDGED_BASE_FILES_BYTES`` (a file that does not fit is left out, the rest still
    considered; either way ``truncated``). Binaries and symlinks are skipped silently."""
    paths, truncated = _listing(root)
    files: dict[str, str] = {}
    budget = MAX_JUDGED_BASE_FILES_BYTES
    for path in paths:
        room = budget - len(path.encode("utf-8", "surrogateescape"))
        if room < 0:
            truncated = True
            continue
        data, size = read_confined(root, path, room + 1)
        if size > room:  # left out for size (it may be a binary, which is never shown anyway)
            truncated = True
            continue
        text = _text(data)
        if text is None:
            continue
        files[path] = text
        budget = room - len(data)
    return BaseFiles(files=files, truncated=truncated)


def base_files(fixture: CompiledFixture, workspace_root: Path | None = None) -> BaseFiles:
    """Materialise ``fixture`` (no arm mounted) into a private temporary directory under
    ``workspace_root``, read its text files, and remove it."""
    workspace = create_workspace(workspace_root, prefix=BASE_PREFIX)
    try:
        fixture.materialise(workspace)
        return read_base_files(workspace)
    finally:
        remove_tree(workspace)
