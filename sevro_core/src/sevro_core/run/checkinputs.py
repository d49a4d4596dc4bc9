"""What checks receive beside the workspace, once the candidate finished.

A verifier often needs more than the files the agent left: its final answer, each turn's answer,
the change it made, and evaluator-owned files the agent must never see. The engine writes the
answers and the change as files in the trial's private directory (never the workspace, so the
candidate's commands can neither read nor forge them), and hands them, with the case's
evaluator directories, to role ``checks`` only: mounted read-only and named by documented
variables (``docs/evaluator-resources.md``). Each file is bounded; one that would be longer is
left out and its variable unset, so a verifier sees that it is missing rather than a cut text.

The candidate's side of the trial reaches checks too: the host's retained transcripts (event
streams), copied with an index that says what was kept and whether it is whole, and the
subtrees of the candidate's home the runtime file declares, checked and mounted as they are.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sevro_core.isolation.candidateartifacts import (
    ARTIFACT_VARIABLE,
    STATE_NAMES,
    ArtifactDirectory,
    checked_artifact_directory,
    checked_path,
)
from sevro_core.isolation.sandbox import CheckResources
from sevro_core.limits import MAX_CHECK_INPUT_BYTES, MAX_CHECK_TRANSCRIPT_BYTES
from sevro_core.models import Artifact, EvaluatorDirectory, HostResult, StateBinding
from sevro_core.vocabulary import DIFF_ARTIFACT, FILES_DIFF_ARTIFACT

INPUTS_DIRECTORY = "check-inputs"
EVALUATOR_VARIABLE = "SEVRO_EVALUATOR_"
FINAL_OUTPUT_VARIABLE = "SEVRO_FINAL_OUTPUT"
WORKSPACE_DIFF_VARIABLE = "SEVRO_WORKSPACE_DIFF"
TRANSCRIPTS_VARIABLE = "SEVRO_CANDIDATE_TRANSCRIPTS"
TRANSCRIPTS_DIRECTORY = "candidate-transcripts"
TRANSCRIPTS_FORMAT = "sevro.candidate-transcripts.v1"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def turn_output_variable(number: int) -> str:
    return f"SEVRO_TURN_{number}_OUTPUT"


def check_resources(
    private: Path,
    evaluator: Sequence[EvaluatorDirectory],
    final_output: str | None,
    turn_outputs: Mapping[int, str | None],
    artifacts: Sequence[Artifact],
) -> CheckResources:
    """Write the check inputs under ``private`` and return what role ``checks`` is granted."""
    environment = {EVALUATOR_VARIABLE + e.name.upper(): str(e.path) for e in evaluator}
    directory = private / INPUTS_DIRECTORY
    os.mkdir(directory, 0o700)
    files: dict[str, bytes] = {}
    if final_output is not None:
        files[FINAL_OUTPUT_VARIABLE] = _text(final_output)
    for number, reply in sorted(turn_outputs.items()):
        if reply is not None:
            files[turn_output_variable(number)] = _text(reply)
    diff = next((a for a in artifacts if a.id in (DIFF_ARTIFACT, FILES_DIFF_ARTIFACT)), None)
    if diff is not None:
        files[WORKSPACE_DIFF_VARIABLE] = diff.content
    for variable, data in files.items():
        if len(data) > MAX_CHECK_INPUT_BYTES:
            continue
        path = directory / variable.removeprefix("SEVRO_").lower()
        _write_private(path, data)
        environment[variable] = str(path)
    return CheckResources(
        read_only=(directory, *(e.path for e in evaluator)), environment=environment
    )


def check_resources_unwritten(evaluator: Sequence[EvaluatorDirectory]) -> CheckResources:
    """Only the evaluator directories, when the inputs could not be written."""
    environment = {EVALUATOR_VARIABLE + e.name.upper(): str(e.path) for e in evaluator}
    return CheckResources(read_only=tuple(e.path for e in evaluator), environment=environment)


def candidate_artifacts(home: Path | None, declared: Sequence[ArtifactDirectory]) -> CheckResources:
    """The declared subtrees of the candidate's home, each checked now (the candidate has
    finished); any that cannot be read as whole, link-free evidence makes every check a
    grading error (``problem``), never a pass."""
    if not declared:
        return CheckResources()
    if home is None:
        return CheckResources(
            problem="candidate artifact directories are declared, but the host names no "
            "candidate home to read them from"
        )
    read_only: list[Path] = []
    environment: dict[str, str] = {}
    for directory in declared:
        try:
            path = checked_artifact_directory(home, directory)
        except (ValueError, OSError) as exc:
            return CheckResources(problem=f"candidate artifact directory {directory.name}: {exc}")
        read_only.append(path)
        environment[directory.variable] = str(path)
    return CheckResources(read_only=tuple(read_only), environment=environment)


def candidate_state(
    selected: bool, host_id: str, bindings: Sequence[StateBinding]
) -> CheckResources:
    """The candidate host's native state, when the runtime file selects it: each of the
    reserved bindings checked now like an artifact directory (the configuration as one
    regular file) and granted read-only; a host that supplies none of them, or one that is
    missing or unsafe, makes every check a grading error, never a pass."""
    if not selected:
        return CheckResources()
    supplied = {b.name: b for b in bindings}
    missing = sorted(STATE_NAMES - set(supplied))
    if missing:
        return CheckResources(
            problem=f"the runtime file selects the host's native state, but candidate host "
            f"{host_id} supplies no {ARTIFACT_VARIABLE}{missing[0].upper()} (only a host that "
            "keeps that state can)"
        )
    read_only: list[Path] = []
    environment: dict[str, str] = {}
    for name in sorted(STATE_NAMES):
        binding = supplied[name]
        try:
            path = checked_path(binding.root, binding.path, "the host's state", file=binding.file)
        except (ValueError, OSError) as exc:
            return CheckResources(problem=f"candidate host state {name}: {exc}")
        read_only.append(path)
        environment[ARTIFACT_VARIABLE + name.upper()] = str(path)
    return CheckResources(read_only=tuple(read_only), environment=environment)


def candidate_transcripts(private: Path, host_id: str, result: HostResult) -> CheckResources:
    """Copy the host's retained artifacts to ``<private>/candidate-transcripts/<host>/`` with
    an ``index.json`` saying, per file, what was kept and whether it is whole; a file beyond
    the bounds is listed as ``omitted`` and not copied."""
    directory = private / TRANSCRIPTS_DIRECTORY
    host = host_directory(host_id)
    os.mkdir(directory, 0o700)
    os.mkdir(directory / host, 0o700)
    whole = result.complete and not result.execution_failed and not result.cancelled
    files: list[dict[str, Any]] = []
    names: set[str] = set()
    total = 0
    for index, artifact in enumerate(result.artifacts):
        name = artifact.id if _SAFE_NAME.match(artifact.id) else f"artifact-{index + 1}"
        if name in names or name == "index.json":
            name = f"artifact-{index + 1}"
        names.add(name)
        data = artifact.content
        entry: dict[str, Any] = {
            "id": artifact.id,
            "host": host,
            "path": f"{host}/{name}",
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "completeness": "complete" if whole else "partial",
        }
        if len(data) > MAX_CHECK_INPUT_BYTES or total + len(data) > MAX_CHECK_TRANSCRIPT_BYTES:
            entry.update(path=None, completeness="omitted")
        else:
            total += len(data)
            _write_private(directory / host / name, data)
        files.append(entry)
    _write_private(directory / "index.json", _index(host_id, host, files))
    return CheckResources(
        read_only=(directory,), environment={TRANSCRIPTS_VARIABLE: str(directory)}
    )


def host_directory(host_id: str) -> str:
    """The subdirectory named by the host: the last part of its plugin id."""
    name = host_id.rsplit(".", 1)[-1]
    return name if _SAFE_NAME.match(name) and name != "index.json" else "host"


def _index(host_id: str, host: str, files: list[dict[str, Any]]) -> bytes:
    kinds = {f["completeness"] for f in files}
    capture = "none" if not files else "complete" if kinds == {"complete"} else "partial"
    document = {
        "format": TRANSCRIPTS_FORMAT,
        "hostId": host_id,
        "host": host,
        "capture": capture,
        "files": files,
    }
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode()


def combined(*parts: CheckResources) -> CheckResources:
    """One grant of several: every read-only root and variable, and the first problem."""
    return CheckResources(
        read_only=tuple(p for part in parts for p in part.read_only),
        environment={k: v for part in parts for k, v in part.environment.items()},
        problem=next((part.problem for part in parts if part.problem is not None), None),
    )


def _text(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o400)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
