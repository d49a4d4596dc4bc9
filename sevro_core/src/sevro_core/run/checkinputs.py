"""What checks receive beside the workspace, once the candidate finished.

A verifier often needs more than the files the agent left: its final answer, each turn's answer,
the change it made, and evaluator-owned files the agent must never see. The engine writes the
answers and the change as files in the trial's private directory (never the workspace, so the
candidate's commands can neither read nor forge them), and hands them, with the case's
evaluator directories, to role ``checks`` only: mounted read-only and named by documented
variables (``docs/evaluator-resources.md``). Each file is bounded; one that would be longer is
left out and its variable unset, so a verifier sees that it is missing rather than a cut text.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from sevro_core.isolation.sandbox import CheckResources
from sevro_core.limits import MAX_CHECK_INPUT_BYTES
from sevro_core.models import Artifact, EvaluatorDirectory
from sevro_core.vocabulary import DIFF_ARTIFACT, FILES_DIFF_ARTIFACT

INPUTS_DIRECTORY = "check-inputs"
EVALUATOR_VARIABLE = "SEVRO_EVALUATOR_"
FINAL_OUTPUT_VARIABLE = "SEVRO_FINAL_OUTPUT"
WORKSPACE_DIFF_VARIABLE = "SEVRO_WORKSPACE_DIFF"


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


def _text(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o400)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
