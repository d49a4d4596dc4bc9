"""Evaluator directories through the real Claude Code CLI: the agent probes the directory with
its Bash and Read tools and sees nothing, while the checks of the same trial read it (issue 17,
item 3)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, ToolCall, reply
from sevro_hosts_claude.testing import require_claude
from tests.core.evaluator_probes import MARKER, assert_blind, evaluator_area, probes
from tests.hosts_claude.helpers import PROTOCOLS, bash, run_claude

pytestmark = pytest.mark.slow


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def test_the_agent_cannot_see_the_evaluator(
    sevro_project: SevroProject, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    case, gold, workspaces = evaluator_area(tmp_path)
    attempts = [bash(c) for c in probes(gold)]
    attempts.append(ToolCall("Read", {"file_path": f"{gold}/secret.txt"}))
    server = mock_model(
        [reply(a) for a in attempts] + [reply(Message("ready"))], protocols=PROTOCOLS
    )
    done = run_claude(
        sevro_project, require_claude(), server, case, "--workspace-root", str(workspaces)
    )
    assert len(server.requests) == len(attempts) + 1 and not server.unexpected
    results = [
        block
        for message in server.requests[-1].json()["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    texts = [_text(r) for r in results]
    assert_blind(texts[:-1])
    read = results[-1]
    assert read.get("is_error") is True and MARKER not in texts[-1], read
    assert MARKER.encode() not in b"".join(r.body for r in server.requests)
    (trial,) = done.json()["cases"][0]["trials"]
    statuses = {c["id"]: c["status"] for c in trial["checks"]}
    assert statuses == {"checks-read-it": "passed", "checks-list-it": "passed"}, done.stdout
    assert done.exit_code == 0, done.stdout + done.stderr
