"""Real Codex runs: ``sevro.codex.continuation``, ``sevro.codex.native-calls`` and child rollouts.

Sub-agent threads ask the model concurrently with their parent, so the mock answers each
request from the script of the thread that sent it (a child's first user message carries
``CHILD_TASK``); a reply may be built from the request (to name the child Codex spawned).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sevro_core.hosts.credentials import REDACTED
from sevro_core.models import CancelToken, HostRequest, HostResult
from sevro_core.plugin.protocols import HostOptions
from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import (
    Message,
    OpenAIResponses,
    RecordedRequest,
    Reply,
    ToolCall,
    reply,
)
from sevro_hosts_codex.host import CodexHost
from sevro_hosts_codex.testing import require_codex
from tests.hosts_codex.helpers import (
    API_KEY,
    API_KEY_ENV,
    PROVIDER_KEY_ENV,
    observation,
    retained_bytes,
    run_codex,
    shell,
    trial,
)

pytestmark = pytest.mark.slow

CHILD_TASK = "CHILD-TASK: answer child-done"
SPAWN_ID = API_KEY
"""The spawn's call id, chosen by the model: here it repeats the credential, which is scrubbed."""
READY = {"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}}
Scripted = Reply | Callable[[Any], Reply]


class RoutedResponses(OpenAIResponses):
    """Responses API replies chosen per thread (and delayed as each says); ``ns.name`` tool
    calls get a ``namespace``."""

    def __init__(self, parent: list[Scripted], child: list[Scripted]) -> None:
        self.scripts = {"parent": list(parent), "child": list(child)}
        self.lock = threading.Lock()

    def render(self, reply: Reply, request: RecordedRequest, serial: int) -> Iterator[bytes]:
        body = request.json()
        with self.lock:
            script = self.scripts["child" if is_child(body) else "parent"]
            chosen = script.pop(0) if script else Reply(error="mock: script exhausted")
        answer = chosen(body) if callable(chosen) else chosen
        time.sleep(answer.delay_s)  # the server's own delay applied to the placeholder reply
        yield from super().render(answer, request, serial)

    @staticmethod
    def _item(item: Any, serial: int, index: int) -> dict[str, Any]:
        wire = OpenAIResponses._item(item, serial, index)
        if isinstance(item, ToolCall) and "." in item.name:
            wire["namespace"], wire["name"] = item.name.split(".", 1)
        return wire


def is_child(body: dict[str, Any]) -> bool:
    return any(
        x.get("type") == "message" and x.get("role") == "user" and CHILD_TASK in json.dumps(x)
        for x in body.get("input", [])
    )


def wait_for_child(body: dict[str, Any]) -> Reply:
    """``wait_agent`` on the child the earlier ``spawn_agent`` output named."""
    (output,) = [
        x["output"]
        for x in body["input"]
        if x.get("type") == "function_call_output" and x.get("call_id") == SPAWN_ID
    ]
    agent = json.loads(output)["agent_id"]
    return reply(ToolCall("multi_agent_v1.wait_agent", {"targets": [agent]}, call_id="wait-1"))


@pytest.fixture
def codex() -> str:
    return require_codex()


def routed(mock_model: Callable[..., Any], parent: list[Scripted], child: list[Scripted]) -> Any:
    protocol = RoutedResponses(parent, child)
    return mock_model([Reply()] * (len(parent) + len(child)), protocols=(protocol,))


@pytest.mark.parametrize("writes", [False, True])
def test_continuation_boundary_of_a_resumed_thread(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], writes: bool
) -> None:
    first = shell("printf x > made.txt") if writes else ToolCall("create_goal", {"objective": "o"})
    server = routed(
        mock_model,
        [
            reply(first),
            reply(Message("first")),
            reply(ToolCall("get_goal", {})),
            reply(Message("ready")),
        ],
        [],
    )
    required = ["sevro.codex.continuation", "sevro.codex.native-calls"]
    case = sevro_project.case(
        prompt="One.", followUpPrompt="Two.", checks=[READY], requiredEvidence=required
    )
    result = run_codex(sevro_project, codex, server, case)
    assert result.json()["task"]["verdict"] == "passed", result.stdout + result.stderr
    document = trial(sevro_project)
    turns = observation(document, "sevro.codex.turns")["data"]["turns"]
    found = observation(document, "sevro.codex.continuation")
    assert found["completeness"] == "complete", found
    data = found["data"]
    assert data["method"] == "same_thread_resume" and data["threadId"] == turns[0]["threadId"]
    # The negative control: a first turn that wrote a file did not leave the workspace as it was.
    assert data["preFollowUpWorktreeUnchanged"] is (not writes)
    boundary = data["nativeAfterOrdinal"]
    assert isinstance(boundary, int)
    assert data["boundaries"] == [
        {
            "turn": 2,
            "threadId": turns[0]["threadId"],
            "nativeAfterOrdinal": boundary,
            "unchangedSincePreviousPrompt": not writes,
            "workspaceUnchanged": True,  # nothing touched it between turn 1's end and prompt 2
        }
    ]
    calls = observation(document, "sevro.codex.native-calls")["data"]["calls"]
    # Each call lies on its own side of the boundary: the goal read came after the resume.
    assert [(c["name"], c["ordinal"] > boundary) for c in calls] == (
        [("get_goal", True)] if writes else [("create_goal", False), ("get_goal", True)]
    )


def test_native_calls_keep_only_allowlisted_controls(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = routed(
        mock_model,
        [
            reply(shell("true")),
            reply(ToolCall("create_goal", {"objective": "SECRET-OBJ"})),
            reply(Message("ready")),
        ],
        [],
    )
    result = run_codex(sevro_project, codex, server, sevro_project.case(checks=[READY]))
    assert result.json()["task"]["verdict"] == "passed", result.stdout + result.stderr
    document = trial(sevro_project)
    assert all(o["id"] != "sevro.codex.continuation" for o in document["evidence"]["observations"])
    found = observation(document, "sevro.codex.native-calls")
    assert found["completeness"] == "complete", found
    data = found["data"]
    assert [(c["namespace"], c["name"]) for c in data["calls"]] == [("functions", "create_goal")]
    # The shell call is a direct tool call, never an allowlisted control.
    assert [c["name"] for c in data["toolCalls"]] == ["exec_command", "create_goal"]
    assert data["acceptedSpawns"] == [] and data["childSessions"] == []
    assert "SECRET-OBJ" not in json.dumps(found)


@pytest.mark.parametrize("waits", [True, False])
def test_an_accepted_spawn_and_its_child_rollout(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], waits: bool
) -> None:
    spawn = reply(ToolCall("multi_agent_v1.spawn_agent", {"message": CHILD_TASK}, call_id=SPAWN_ID))
    parent: list[Scripted] = [spawn, wait_for_child, reply(Message("ready"))]
    # The negative control: the parent ends its turn at once, so the child never returns.
    child: list[Scripted] = (
        [reply(Message("child-done"))] if waits else [reply(Message("late"), delay_s=20)]
    )
    if not waits:
        parent = [spawn, reply(Message("ready"))]
    server = routed(mock_model, parent, child)
    result = run_codex(sevro_project, codex, server, sevro_project.case(checks=[READY]))
    assert result.json()["task"]["verdict"] == "passed", result.stdout + result.stderr
    found = observation(trial(sevro_project), "sevro.codex.native-calls")
    data = found["data"]
    names = [c["name"] for c in data["calls"]]
    assert names == (["spawn_agent", "wait_agent"] if waits else ["spawn_agent"])
    assert {c["namespace"] for c in data["calls"]} == {"multi_agent_v1"}
    (spawned,) = data["acceptedSpawns"]
    assert spawned["callId"] == REDACTED  # the model's call id repeated the credential
    assert API_KEY.encode() not in retained_bytes(sevro_project)
    assert spawned["requestedOrdinal"] < spawned["startedOrdinal"] < spawned["acceptedOrdinal"]
    (child_session,) = data["childSessions"]
    assert child_session["threadId"] == spawned["threadId"]
    assert child_session["status"] == "available", data
    assert child_session["resultStatus"] == ("completed" if waits else "unavailable")
    assert data["childrenTruncated"] is False
    assert found["completeness"] == "complete"
    assert "child-done" not in json.dumps(found) and CHILD_TASK not in json.dumps(found)


def run_direct(
    codex: str,
    server: Any,
    tmp_path: Path,
    prompts: tuple[str, ...],
    settled: Callable[[int], None],
) -> HostResult:
    """The host itself (no engine), so a test can act when a turn settles."""
    config = {
        "format": "sevro.codex-host.v1",
        "modelProvider": {
            "id": "mock",
            "baseUrl": server.base_url,
            "envKey": PROVIDER_KEY_ENV,
            "requestMaxRetries": 0,
            "streamMaxRetries": 0,
        },
        "turnTimeoutSeconds": 60,
    }
    settings = {"codex.bin": codex, "codex.apiKeyEnv": API_KEY_ENV}
    configured = CodexHost().configure(
        HostOptions(config=config, model="mock-model", settings=settings)
    )
    workspace, private = tmp_path / "ws", tmp_path / "private"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("first\n")
    private.mkdir(mode=0o700)
    request = HostRequest(
        case_id="continued",
        trial=1,
        prompts=prompts,
        workspace=workspace,
        condition="passive",
        cancel=CancelToken(),
        private_root=private,
        turn_settled=lambda number, _reply: settled(number),
    )
    return configured.run(request)


@pytest.mark.parametrize("edited", [False, True])
def test_every_resumed_prompt_has_a_boundary(
    codex: str,
    mock_model: Callable[..., Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    edited: bool,
) -> None:
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    server = mock_model([reply(Message("one")), reply(Message("two")), reply(Message("three"))])

    def settled(number: int) -> None:
        if edited and number == 2:  # something other than the candidate touched it
            (tmp_path / "ws" / "notes.txt").write_text("edited between turns\n")

    result = run_direct(codex, server, tmp_path, ("One.", "Two.", "Three."), settled)
    assert result.error is None and result.final_message == "three", result.error
    (found,) = [o for o in result.observations if o.id == "sevro.codex.continuation"]
    assert found.completeness == "complete"
    first, second = found.data["boundaries"]
    assert (first["turn"], second["turn"]) == (2, 3)
    assert first["threadId"] == second["threadId"] == found.data["threadId"]
    assert first["nativeAfterOrdinal"] < second["nativeAfterOrdinal"]
    assert first["workspaceUnchanged"] and first["unchangedSincePreviousPrompt"]
    # The negative control: an edit after turn 2 ended shows in both of turn 3's comparisons.
    assert second["workspaceUnchanged"] is (not edited)
    assert second["unchangedSincePreviousPrompt"] is (not edited)
    assert "notes.txt" not in json.dumps(found.data)


def test_a_failed_first_turn_leaves_the_continuation_unavailable(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(Message("partial"), error="boom mid-turn"), reply(Message("x"))])
    case = sevro_project.case(prompt="One.", followUpPrompt="Two.", checks=[READY])
    run_codex(sevro_project, codex, server, case)
    found = observation(trial(sevro_project), "sevro.codex.continuation")
    assert found["completeness"] == "unavailable"
    assert found["data"]["boundaries"] == [] and found["data"]["threadId"] is None


def test_a_required_continuation_of_a_single_prompt_is_unavailable(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(Message("ready"))])
    case = sevro_project.case(checks=[READY], requiredEvidence=["sevro.codex.continuation"])
    result = run_codex(sevro_project, codex, server, case)
    assert result.json()["grading"]["status"] == "unavailable", result.stdout
    assert result.exit_code == 4
