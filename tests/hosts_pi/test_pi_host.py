"""The pi host against the real pi CLI (0.73.1), pointed at the mock model through sevro's bridge.

A handful of real runs (each takes seconds): a bash round trip with every shared observation (on
OpenAI Responses and Chat Completions), a two-turn session, skill activations with their
controls, model failures that must never pass (on each of pi's wire APIs), a cut OpenAI stream
pi takes for a reply (failed by the bridge), and the credential kept out of everything retained.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import CliResult, SevroProject
from sevro_core.testing.mockmodel import (
    AnthropicMessages,
    Message,
    MockModelServer,
    OpenAIChatCompletions,
    OpenAIResponses,
    ToolCall,
    reply,
)
from sevro_hosts_pi.testing import require_pi
from tests.hosts_codex.helpers import observation, retained_bytes, trial
from tests.hosts_codex.test_native_transcripts_real_cli import (
    OBSERVATION,
    bundle_bytes,
    runtime,
    verified,
)
from tests.skilleval import seed
from tests.skilleval.test_skilleval_real_clis import GROUP

pytestmark = pytest.mark.slow

API_KEY_ENV = "SEVRO_TEST_PI_HOST_KEY"
API_KEY = "sk-sevro-pi-host-0123456789abcdef"  # a planted credential: must reach only headers
LEAKS = 'env; cat "$PI_CODING_AGENT_DIR"/*.json; echo made'
"""What the agent's commands could show of pi's environment and configuration."""
OTHER_ENDPOINT = (
    "exec 3<>/dev/tcp/127.0.0.1/47000; "  # the bridge's listener (pi's models.json names it)
    "printf 'GET /v1/models HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n' >&3; "
    "head -c 12 <&3; echo"
)
"""A command asking the bridge for another endpoint of the provider than the model call."""
READY = {"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}}
PROTOCOLS = {
    "openai-responses": OpenAIResponses,
    "anthropic-messages": AnthropicMessages,
    "openai-completions": OpenAIChatCompletions,
}
"""The mock model's protocol for each of pi's wire APIs (``--pi-api``)."""
SKILL = "---\nname: greet\ndescription: Greets people.\n---\nSay hello warmly.\n"


@pytest.fixture
def pi() -> str:
    return require_pi()


def bash(command: str, call_id: str | None = None) -> ToolCall:
    return ToolCall("bash", {"command": command}, call_id=call_id)


def run_pi(
    project: SevroProject,
    pi: str,
    server: MockModelServer,
    case: Path,
    *args: str,
    api: str = "openai-responses",
    credential_file: Path | None = None,
) -> CliResult:
    base = server.base_url if api != "anthropic-messages" else server.origin
    credential = ["--pi-api-key-env", API_KEY_ENV]
    if credential_file is not None:
        credential = ["--pi-credential-file", str(credential_file)]
    config = project.write_json(
        "pi-host.json", {"format": "sevro.pi-host.v1", "turnTimeoutSeconds": 90}
    )
    return project.run(
        case,
        "--host",
        "pi",
        "--host-config",
        str(config),
        "--model",
        "mock-model",
        "--pi-bin",
        pi,
        "--pi-api",
        api,
        "--pi-base-url",
        base,
        *credential,
        *args,
        env={API_KEY_ENV: API_KEY},
        timeout=240,
    )


@pytest.mark.parametrize("api", ["openai-responses", "openai-completions"])
def test_a_bash_round_trip_with_every_shared_observation(
    sevro_project: SevroProject, pi: str, mock_model: Callable[..., Any], api: str
) -> None:
    server = mock_model(
        [
            reply(bash(f"printf 'x\\n' > made.txt && {LEAKS} && exit 3", "call_1")),
            reply(bash(OTHER_ENDPOINT)),
            reply(Message("ready")),
        ],
        protocols=(PROTOCOLS[api](),),
    )
    case = sevro_project.case(checks=[READY])
    result = run_pi(sevro_project, pi, server, case, api=api)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.json()["task"]["verdict"] == "passed", result.stdout
    document = trial(sevro_project)
    evidence = document["evidence"]
    command, other = observation(document, "sevro.commands")["data"]["commands"]
    assert command["command"].startswith("printf") and command["exitCode"] == 3
    assert command["status"] == "failed" and command["turn"] == 1 and command["ordinal"] == 1
    call = observation(document, "sevro.tool-calls")["data"]["calls"][0]
    assert call["tool"] == "bash" and call["kind"] == "command_execution"
    changed = observation(document, "sevro.files-changed")
    assert "made.txt" in json.dumps(changed["data"]) and changed["completeness"] == "complete"
    usage = evidence["usage"]
    assert usage["inputTokens"] == 300 and usage["cachedInputTokens"] == 60
    assert usage["outputTokens"] == 30
    # pi reports no reasoning tokens and prices a custom model at 0: unknown, so not complete
    assert usage["reasoningTokens"] is None and usage["costUsd"] is None
    assert usage["complete"] is False
    # three model requests, all through the bridge with the credential set outside the sandbox;
    # the command's request for another endpoint was refused there, never forwarded
    assert len(server.requests) == 3 and not server.unexpected
    assert other["exitCode"] == 0 and b"HTTP/1.1 4" in server.requests[2].body
    shown = server.requests[1].body  # the command's output went back to the model
    assert b"sevro-bridge-injects-the-credential" in shown and b"PI_CODING_AGENT_DIR=" in shown
    assert API_KEY.encode() not in shown and API_KEY_ENV.encode() not in shown
    for request in server.requests:
        assert request.headers["authorization"] == f"Bearer {API_KEY}"
        assert request.protocol == PROTOCOLS[api].name
        sent = request.json()  # no --effort: no thinking level
        assert "reasoning" not in sent and "reasoning_effort" not in sent
        assert request.tools is not None and sorted(request.tools) == sorted(
            ["read", "bash", "edit", "write"]
        )
    turns = observation(document, "sevro.pi.turns")["data"]["turns"]
    assert turns[0]["requests"] == 3 and turns[0]["toolCalls"] == 2
    assert [a["id"] for a in evidence["artifactRefs"]] == ["sevro.pi.events"]
    retained = retained_bytes(sevro_project)
    assert API_KEY.encode() not in retained
    # the stream was kept with its updates as stubs (events_filter.mjs): it grows linearly
    assert b'{"type":"message_update"}\n' in retained


def test_a_follow_up_continues_the_same_session(
    sevro_project: SevroProject, pi: str, mock_model: Callable[..., Any]
) -> None:
    # the second reply reports no usage: pi shows zeros, which is unknown, never a measured 0
    server = mock_model([reply(Message("first answer")), reply(Message("ready"), usage=None)])
    case = sevro_project.case(prompt="First prompt.", followUpPrompt="Second.", checks=[READY])
    result = run_pi(sevro_project, pi, server, case, "--effort", "high")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.json()["task"]["verdict"] == "passed", result.stdout
    document = trial(sevro_project)
    turns = observation(document, "sevro.pi.turns")["data"]["turns"]
    assert [t["turn"] for t in turns] == [1, 2]
    assert turns[0]["sessionId"] == turns[1]["sessionId"]
    # the second turn's request carries the first turn's history
    for request in server.requests:  # --effort: pi's thinking level, sent as reasoning effort
        assert request.json()["reasoning"]["effort"] == "high"
    second = json.dumps(server.requests[1].json()["input"])
    assert "First prompt." in second and "first answer" in second and "Second." in second
    usage = document["evidence"]["usage"]
    assert usage["inputTokens"] is None and usage["outputTokens"] is None
    refs = [a["id"] for a in document["evidence"]["artifactRefs"]]
    assert refs == ["sevro.pi.events", "sevro.pi.follow-up-events"]  # no session kept


READS = {
    "whole": (ToolCall("read", {"path": "@.agents/skills/greet/SKILL.md"}), ["greet"]),
    "paged": (ToolCall("read", {"path": ".agents/skills/greet/SKILL.md", "limit": 2}), []),
    "offset": (ToolCall("read", {"path": ".agents/skills/greet/SKILL.md", "offset": 2}), []),
    "none": (None, []),
}


@pytest.mark.parametrize("how", sorted(READS))
def test_a_whole_read_of_a_mounted_skill_activates_it(
    sevro_project: SevroProject, pi: str, mock_model: Callable[..., Any], how: str
) -> None:
    call, expected = READS[how]
    server = mock_model([*([reply(call)] if call else []), reply(Message("ready"))])
    case = sevro_project.case(fixture={"files": {".agents/skills/greet/SKILL.md": SKILL}})
    result = run_pi(sevro_project, pi, server, case)
    assert result.exit_code == 0, result.stdout + result.stderr
    skills = observation(trial(sevro_project), "sevro.skills")
    assert skills["completeness"] == "complete"
    assert [s["name"] for s in skills["data"]["offered"]] == ["greet"]
    assert skills["data"]["read"] == expected
    statuses = [r["status"] for r in skills["data"]["reads"]]
    assert statuses == {"whole": ["read"], "none": []}.get(how, ["partial"])
    # pi listed the mounted skill to the model, at its place in the workspace
    system = json.dumps(server.requests[0].json()["input"][0])
    assert "<name>greet</name>" in system and ".agents/skills/greet/SKILL.md" in system


FAILURES: dict[str, tuple[str, dict[str, Any]]] = {
    "openai-responses-500": ("openai-responses", {"status": 500}),
    "anthropic-messages-cut": ("anthropic-messages", {"cut": True}),
    "openai-completions-500": ("openai-completions", {"status": 500}),
    "openai-completions-error": ("openai-completions", {"error": "overloaded"}),
}
"""pi exits 0 on a model error; only the stream's stopReason tells. An HTTP 500 on the OpenAI
APIs; on Anthropic Messages a stream cut before message_stop (which pi detects there); on Chat
Completions an error chunk after the reply's text (no finish_reason, no [DONE])."""


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_a_model_failure_is_an_execution_failure_never_a_pass(
    sevro_project: SevroProject, pi: str, mock_model: Callable[..., Any], failure: str
) -> None:
    api, how = FAILURES[failure]
    server = mock_model([reply(Message("ready"), **how)], protocols=(PROTOCOLS[api](),))
    case = sevro_project.case(checks=[READY])
    key_file = sevro_project.root / "pi-key"  # the other credential route: a private file
    key_file.write_text(API_KEY + "\n")
    key_file.chmod(0o600)
    result = run_pi(sevro_project, pi, server, case, api=api, credential_file=key_file)
    out = result.json()
    assert out["execution"]["status"] == "failed", result.stdout
    assert out["task"]["verdict"] == "not_assessed"
    assert len(server.requests) == 1  # retries are off: one request, one failure
    (request,) = server.requests
    header = "x-api-key" if api == "anthropic-messages" else "authorization"
    assert request.headers[header].removeprefix("Bearer ") == API_KEY
    message = trial(sevro_project)["evidence"]["execution"]["message"]
    assert message.startswith("turn 1 failed"), message
    assert how.get("error", "turn 1") in message  # the provider's own error text, when it sent one
    assert API_KEY.encode() not in retained_bytes(sevro_project)


@pytest.mark.parametrize("cut", [True, False])
@pytest.mark.parametrize("api", ["openai-completions", "openai-responses"])
def test_a_cut_openai_stream_pi_takes_for_a_reply_fails_at_the_bridge(
    sevro_project: SevroProject, pi: str, mock_model: Callable[..., Any], api: str, cut: bool
) -> None:
    # On both OpenAI wire APIs pi ends a stream cut before its closing event ([DONE],
    # response.completed) with stopReason "stop" and runs a tool call that arrived whole: it
    # cannot tell the cut. The bridge sees every byte and counts the event stream that never
    # closed, so the turn fails; the uncut stream (the control) passes.
    protocol = OpenAIChatCompletions() if api == "openai-completions" else OpenAIResponses()
    server = mock_model(
        [reply(bash("echo ran", "call_1"), cut=cut), reply(Message("ready"), cut=cut)],
        protocols=(protocol,),
    )
    case = sevro_project.case(checks=[READY])
    result = run_pi(sevro_project, pi, server, case, api=api)
    out = result.json()
    if not cut:
        assert result.exit_code == 0, result.stdout + result.stderr
        assert out["execution"]["status"] == "completed" and out["task"]["verdict"] == "passed"
        assert len(server.requests) == 2 and not server.unexpected
        return
    assert out["execution"]["status"] == "failed", result.stdout
    assert out["task"]["verdict"] != "passed"
    message = trial(sevro_project)["evidence"]["execution"]["message"]
    assert "ended before their closing event" in message, message
    (ref, *_) = trial(sevro_project)["evidence"]["artifactRefs"]  # what pi itself saw
    events = (Path(out["evidencePath"]).parent / ref["path"]).read_text().splitlines()
    stops = [
        event["message"].get("stopReason")
        for event in map(json.loads, events)
        if event["type"] == "message_end" and event["message"]["role"] == "assistant"
    ]
    assert stops and stops[0] == "stop"  # pi took the cut reply for a whole one


def test_an_unknown_declared_tool_is_refused_before_pi_runs(
    tmp_path: Path, pi: str, mock_model: Callable[..., Any]
) -> None:
    # pi would silently drop the name (`--tools read,bogus` offers only read): refused, exit 64
    project = SevroProject(seed.seed_repository(tmp_path / "repo").resolve())
    group = json.loads((project.root / GROUP).read_text())
    group["tools"] = ["read", "bogus"]
    bad = project.write_json("groups/bad-tools.json", group)
    server = mock_model([reply(Message("ready"))])
    done = run_pi(project, pi, server, bad)
    assert done.exit_code == 64, done.stdout + done.stderr
    assert "'bogus'" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr and server.requests == []


def test_native_transcripts_retain_the_session_file_only(
    sevro_project: SevroProject, pi: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(bash("echo native-7f3a")), reply(Message("ready"))])
    case = sevro_project.case(requiredEvidence=[OBSERVATION])
    config = runtime(sevro_project, nativeTranscripts=True)
    result = run_pi(sevro_project, pi, server, case, "--runtime-config-file", str(config))
    assert result.exit_code == 0, result.stdout + result.stderr
    document = trial(sevro_project)
    found = observation(document, OBSERVATION)
    assert found["completeness"] == "complete" and found["source"] == "sevro.host.pi", found
    retained = bundle_bytes(sevro_project, document)
    assert retained is not None
    files = verified(retained, found["data"], "pi", "sessions")
    (transcript,) = files  # sessions/session.jsonl: pi's own session, nothing beside it
    assert transcript.endswith("/session.jsonl") and b"native-7f3a" in files[transcript]
    assert API_KEY.encode() not in retained_bytes(sevro_project)


def test_an_effort_pi_has_no_thinking_level_for_is_refused(
    sevro_project: SevroProject, pi: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(Message("ready"))])
    done = run_pi(sevro_project, pi, server, sevro_project.case(), "--effort", "huge")
    assert done.exit_code == 64, done.stdout + done.stderr
    assert "--effort must be one of pi's thinking levels" in done.stderr
    assert "--host-config" not in done.stderr  # a flag's error, not the host file's
    assert server.requests == []
