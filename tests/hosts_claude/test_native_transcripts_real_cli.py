"""``nativeTranscripts`` through the real Claude Code CLI against the mock Messages server: the
private ``CLAUDE_CONFIG_DIR/projects`` transcripts retained as the verifiable
``sevro.native-transcripts.bundle`` (never the credentials beside them); off, no bundle; over
the bound, unavailable with the reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, Reply, ToolCall, reply
from sevro_hosts_claude.testing import require_claude
from tests.hosts_claude.helpers import API_KEY, PROTOCOLS, bash, run_claude
from tests.hosts_codex.helpers import observation, retained_bytes, trial
from tests.hosts_codex.test_native_transcripts_real_cli import (
    OBSERVATION,
    bundle_bytes,
    oversized,
    runtime,
    verified,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def claude() -> str:
    return require_claude()


@pytest.fixture
def model(mock_model: Callable[..., Any]) -> Callable[..., Any]:
    return lambda replies: mock_model(replies, protocols=PROTOCOLS)


def test_the_session_transcript_is_retained_and_verifiable(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    server = model([reply(bash("echo native-7f3a")), reply(Message("ready"))])
    case = sevro_project.case(requiredEvidence=[OBSERVATION])
    config = runtime(sevro_project, nativeTranscripts=True)
    result = run_claude(sevro_project, claude, server, case, "--runtime-config-file", config)
    assert result.exit_code == 0, result.stdout + result.stderr
    document = trial(sevro_project)
    found = observation(document, OBSERVATION)
    assert found["completeness"] == "complete", found
    assert found["source"] == "sevro.host.claude"
    assert found["data"]["status"] == "complete"
    retained = bundle_bytes(sevro_project, document)
    assert retained is not None
    files = verified(retained, found["data"], "claude", "projects")
    session = observation(document, "sevro.claude.turns")["data"]["turns"][0]["sessionId"]
    # projects/<project>/<session>.jsonl: the session's own transcript, holding the command.
    (transcript,) = [p for p in files if p.endswith(f"/{session}.jsonl")]
    assert transcript.count("/") == 3
    assert b"native-7f3a" in files[transcript]
    # Only the projects tree: the credentials, settings and hook records beside it stay out.
    assert not [p for p in files if ".credentials" in p or "settings" in p or "sevro-hooks" in p]
    assert not [c for c in files.values() if API_KEY.encode() in c]  # decoded: base64 hides it
    assert API_KEY.encode() not in retained_bytes(sevro_project)


def test_without_the_key_no_bundle_is_retained(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    server = model([reply(bash("echo native-7f3a")), reply(Message("ready"))])
    case = sevro_project.case()
    config = runtime(sevro_project)
    result = run_claude(sevro_project, claude, server, case, "--runtime-config-file", config)
    assert result.exit_code == 0, result.stdout + result.stderr
    document = trial(sevro_project)
    assert [o for o in document["evidence"]["observations"] if o["id"] == OBSERVATION] == []
    assert bundle_bytes(sevro_project, document) is None


def test_a_tree_over_the_bound_is_unavailable_with_the_reason(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    server = model(oversized(bash))
    case = sevro_project.case()
    config = runtime(sevro_project, nativeTranscripts=True)
    result = run_claude(sevro_project, claude, server, case, "--runtime-config-file", config)
    assert result.exit_code == 0, result.stdout + result.stderr
    document = trial(sevro_project)
    found = observation(document, OBSERVATION)
    assert found["completeness"] == "unavailable", found
    assert found["data"]["status"] == "unavailable" and found["data"]["artifact"] is None
    assert "MAX_NATIVE_TRANSCRIPT_TREE_BYTES" in found["data"]["reason"]
    assert bundle_bytes(sevro_project, document) is None


def test_a_failed_trial_keeps_what_was_written_as_truncated(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    server = model([reply(bash("echo native-7f3a")), Reply(status=400)])
    case = sevro_project.case()
    config = runtime(sevro_project, nativeTranscripts=True)
    result = run_claude(sevro_project, claude, server, case, "--runtime-config-file", config)
    assert result.exit_code == 2, result.stdout + result.stderr  # the host failed
    document = trial(sevro_project)
    found = observation(document, OBSERVATION)
    assert found["completeness"] == "partial", found
    assert found["data"]["status"] == "truncated" and found["data"]["reason"]
    retained = bundle_bytes(sevro_project, document)
    assert retained is not None
    files = verified(retained, found["data"], "claude", "projects")
    assert any(b"native-7f3a" in content for content in files.values())


def test_a_child_agent_sessions_transcript_is_in_the_bundle(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    agent = ToolCall(
        "Agent",
        {"description": "helper", "prompt": "CHILD-PROMPT-5", "subagent_type": "general-purpose"},
    )
    server = model([reply(agent), reply(Message("child-done-5")), reply(Message("ready"))])
    case = sevro_project.case()
    config = runtime(sevro_project, nativeTranscripts=True)
    result = run_claude(sevro_project, claude, server, case, "--runtime-config-file", config)
    assert result.exit_code == 0, result.stdout + result.stderr
    document = trial(sevro_project)
    found = observation(document, OBSERVATION)
    retained = bundle_bytes(sevro_project, document)
    assert retained is not None and found["completeness"] == "complete", found
    files = verified(retained, found["data"], "claude", "projects")
    session = observation(document, "sevro.claude.turns")["data"]["turns"][0]["sessionId"]
    # projects/<project>/<session>/subagents/agent-<id>.jsonl: the child's own transcript.
    children = [p for p in files if f"/{session}/subagents/agent-" in p and p.endswith(".jsonl")]
    assert len(children) == 1, sorted(files)
    assert b"child-done-5" in files[children[0]]
