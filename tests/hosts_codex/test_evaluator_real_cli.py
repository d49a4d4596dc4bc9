"""Evaluator directories through the real Codex CLI: the agent probes the directory every way
it can and sees nothing, while the checks of the same trial read it (issue 17, item 3)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_codex.testing import require_codex
from tests.core.evaluator_probes import MARKER, assert_blind, evaluator_area, probes
from tests.hosts_codex.helpers import run_codex, shell

pytestmark = pytest.mark.slow


def test_the_agent_cannot_see_the_evaluator(
    sevro_project: SevroProject, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    case, gold, workspaces = evaluator_area(tmp_path)
    attempts = probes(gold)
    server = mock_model([reply(shell(c)) for c in attempts] + [reply(Message("ready"))])
    done = run_codex(
        sevro_project, require_codex(), server, case, "--workspace-root", str(workspaces)
    )
    assert len(server.requests) == len(attempts) + 1 and not server.unexpected
    outputs = [
        item["output"]
        for item in server.requests[-1].json()["input"]
        if item.get("type") == "function_call_output"
    ]
    assert_blind(outputs)
    assert MARKER.encode() not in b"".join(r.body for r in server.requests)
    (trial,) = done.json()["cases"][0]["trials"]
    statuses = {c["id"]: c["status"] for c in trial["checks"]}
    assert statuses == {"checks-read-it": "passed", "checks-list-it": "passed"}, done.stdout
    assert done.exit_code == 0, done.stdout + done.stderr
