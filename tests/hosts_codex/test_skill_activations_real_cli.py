"""``sevro.host.skill-activations`` through the real Codex CLI: its passive ``PostToolUse`` hook
records what each command returned, and prepared skill bodies are matched in that content."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_codex.testing import require_codex
from tests.core.activation_controls import (
    BODY,
    NEGATIVE,
    POSITIVE,
    activations,
    check_negative,
    check_positive,
    fixture,
)
from tests.hosts_codex.helpers import observation, run_codex, shell, trial

pytestmark = pytest.mark.slow
SKILLS = ".agents/skills"


def _run(project: SevroProject, mock_model: Callable[..., Any], commands: list[str]) -> Any:
    codex = require_codex()
    server = mock_model([*(reply(shell(c)) for c in commands), reply(Message("ready"))])
    case = project.case(fixture=fixture(SKILLS))
    result = run_codex(project, codex, server, case)
    assert result.exit_code == 0, result.stdout + result.stderr
    return trial(project)


def test_whole_paged_and_composed_reads_activate(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    document = _run(sevro_project, mock_model, POSITIVE(SKILLS))
    check_positive(document)
    assert observation(document, "sevro.skills")["data"]["read"] == ["greet"]


def test_partial_reads_and_other_files_do_not_activate(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    document = _run(sevro_project, mock_model, NEGATIVE(SKILLS))
    check_negative(document)
    assert observation(document, "sevro.skills")["data"]["read"] == []
    assert BODY not in str(activations(document))
