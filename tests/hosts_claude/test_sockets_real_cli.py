"""Claude Code's Bash under a deep ``--workspace-root``: its sandbox's sockets still fit.

Claude Code's own sandbox makes two bridge sockets in its temp directory, and a Unix socket's
path holds at most 107 bytes. sevro shows Claude Code its private temp directory at a short
path inside the outer sandbox, so a trial whose private root is deep still runs commands.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_claude.limits import MAX_SOCKET_PATH_BYTES
from sevro_hosts_claude.testing import require_claude
from tests.hosts_claude.helpers import PROTOCOLS, bash, run_claude

pytestmark = pytest.mark.slow

READY = {"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}}
COMMAND = 'echo kept > "$TMPDIR/probe" && echo ran-$((6 * 7)) in $PWD'
DEPTH = 160
"""Bytes of the workspace root's path: far past what a socket path holds (107)."""


@pytest.fixture
def claude() -> str:
    return require_claude()


def _deep(base: Path) -> Path:
    root = base
    while len(str(root).encode()) < DEPTH:
        root = root / ("deep-" + "d" * 20)
    root.mkdir(parents=True)
    return root


def test_bash_runs_under_a_deep_workspace_root(
    sevro_project: SevroProject, claude: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    workspaces = _deep(tmp_path)
    server = mock_model(
        [reply(bash(COMMAND)), reply(Message("ready"))],
        protocols=PROTOCOLS,
    )
    case = sevro_project.case(checks=[READY])
    result = run_claude(sevro_project, claude, server, case, "--workspace-root", str(workspaces))
    assert result.json()["task"]["verdict"] == "passed", result.stdout + result.stderr
    messages = server.requests[-1].json()["messages"]
    shown = json.dumps(messages)
    assert "ran-42 in " + str(workspaces) in shown, shown  # the command ran, in the workspace
    assert "Sandbox is required" not in shown
    run = result.json()
    assert run["execution"]["status"] == "completed"
    assert len(str(workspaces).encode()) > MAX_SOCKET_PATH_BYTES
