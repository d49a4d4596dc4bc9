"""Roles through the real Codex CLI (issue 17, item 2): the agent's commands write to their
HOME and TMPDIR; the shell checks and the verifier of the same trial have homes of their own
and can neither read nor list the agent's (tests/core/test_role_separation.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_codex.testing import require_codex
from tests.core.test_role_separation import CANDIDATE_WRITES, PASSED, role_checks
from tests.hosts_codex.helpers import run_codex, shell

pytestmark = pytest.mark.slow


def test_the_agent_s_home_is_not_the_checks(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(shell(CANDIDATE_WRITES)), reply(Message("ready"))])
    case = sevro_project.case(checks=role_checks())
    done = run_codex(sevro_project, require_codex(), server, case)
    (output,) = [
        item["output"]
        for item in server.requests[-1].json()["input"]
        if item.get("type") == "function_call_output"
    ]
    assert "exited with code 0" in output, output  # the agent did write its home
    (trial,) = done.json()["cases"][0]["trials"]
    statuses = {c["id"]: c["status"] for c in trial["checks"]}
    assert statuses == PASSED, done.stdout
    assert done.exit_code == 0, done.stdout + done.stderr
