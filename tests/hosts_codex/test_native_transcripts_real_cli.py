"""``nativeTranscripts`` through the real Codex CLI against the mock Responses server: the
private ``CODEX_HOME/sessions`` rollouts (child threads included) retained as the verifiable
``sevro.native-transcripts.bundle``; off, no bundle; over the bound, unavailable with the reason."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest

from sevro_core.hosts.credentials import REDACTED
from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, Reply, ToolCall, reply
from sevro_hosts_codex.testing import require_codex
from tests.hosts_codex.helpers import API_KEY, observation, retained_bytes, run_codex, shell, trial
from tests.hosts_codex.test_threads_real_cli import (
    CHILD_TASK,
    SPAWN_ID,
    Scripted,
    routed,
    wait_for_child,
)

pytestmark = pytest.mark.slow

OBSERVATION = "sevro.host.native-transcripts"
ARTIFACT = "sevro.native-transcripts.bundle"
CHUNK, CHUNKS = 900 * 1024, 7
"""Seven messages of 900 KiB in one turn: each event line stays under its 1 MiB bound and the
turn's stream under 8 MiB, the native tree does not stay under MAX_NATIVE_TRANSCRIPT_TREE_BYTES."""


def oversized(call: Callable[[str], ToolCall]) -> list[Reply]:
    """Replies that each say a large message and run one trivial command, then ``ready``."""
    big = [reply(Message(chr(ord("a") + n) * CHUNK), call("true")) for n in range(CHUNKS)]
    return [*big, reply(Message("ready"))]


GRADER_READS_IT = {
    "id": "bundle",
    "grader": "sevro.shell",
    "configuration": {
        "run": 'cd "$SEVRO_CANDIDATE_TRANSCRIPTS"'
        f' && grep -q "sevro.native-transcripts.v1" "codex/{ARTIFACT}"'
        f' && grep -q "{ARTIFACT}" index.json'
    },
}
"""A shell check finds the bundle in the candidate transcript view, like every host artifact."""


@pytest.fixture
def codex() -> str:
    return require_codex()


def runtime(project: SevroProject, **extra: Any) -> str:
    document = {"format": "sevro.runtime.v1", **extra}
    return str(project.write_json("runtime.json", document))


def bundle_bytes(project: SevroProject, document: dict[str, Any]) -> bytes | None:
    """The retained bundle (checked against its artifact reference), None when not retained."""
    refs = [a for a in document["evidence"]["artifactRefs"] if a["id"] == ARTIFACT]
    if not refs:
        return None
    (ref,) = refs
    (path,) = project.results.glob(f"*/cases/example/trial-1-{ARTIFACT}.bin")
    data = path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == ref["sha256"] and len(data) == ref["byteLength"]
    return data


def verified(data: bytes, found: dict[str, Any], native: str, tree: str) -> dict[str, bytes]:
    """Check the bundle against its observation and itself; its files by bundle path."""
    document = json.loads(data)
    assert document["format"] == "sevro.native-transcripts.v1"
    assert (document["native"], document["tree"]) == (native, tree)
    assert found["sha256"] == hashlib.sha256(data).hexdigest()
    assert found["encodedBytes"] == len(data) and found["artifact"] == ARTIFACT
    files: dict[str, bytes] = {}
    paths = [e["path"] for e in document["entries"]]
    assert paths == sorted(paths) and len(set(paths)) == len(paths)
    for entry in document["entries"]:
        content = base64.b64decode(entry["base64"], validate=True)
        assert hashlib.sha256(content).hexdigest() == entry["sha256"]
        assert len(content) == entry["bytes"]
        assert entry["path"].startswith(f"{native}/{tree}/")
        assert ".." not in entry["path"].split("/")
        files[entry["path"]] = content
    assert found["entries"] == len(files)
    assert found["rawBytes"] == sum(len(c) for c in files.values())
    # Canonical: the same tree is the same bytes.
    assert data == json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return files


def test_the_rollout_tree_is_retained_and_verifiable(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(shell("echo native-7f3a")), reply(Message("ready"))])
    case = sevro_project.case(requiredEvidence=[OBSERVATION], checks=[GRADER_READS_IT])
    config = runtime(sevro_project, nativeTranscripts=True)
    result = run_codex(sevro_project, codex, server, case, "--runtime-config-file", config)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.json()["task"]["verdict"] == "passed"  # a check read the bundle
    document = trial(sevro_project)
    found = observation(document, OBSERVATION)
    assert found["completeness"] == "complete", found
    assert found["source"] == "sevro.host.codex"
    data = found["data"]
    assert data["status"] == "complete" and data["reason"] is None
    retained = bundle_bytes(sevro_project, document)
    assert retained is not None
    files = verified(retained, data, "codex", "sessions")
    thread = observation(document, "sevro.codex.turns")["data"]["turns"][0]["threadId"]
    (rollout,) = files  # one thread, one rollout: sessions/YYYY/MM/DD/rollout-...-<thread>.jsonl
    assert rollout.endswith(f"-{thread}.jsonl") and "/rollout-" in rollout
    assert b"native-7f3a" in files[rollout]  # the command and its output are in it
    # Only the sessions tree: never the credential file, the config or anything else of the home.
    assert not [p for p in files if "auth.json" in p or "config.toml" in p]
    assert not [c for c in files.values() if API_KEY.encode() in c]  # decoded: base64 hides it
    runtime_policy = observation(document, "sevro.host.runtime")["data"]
    assert runtime_policy["nativeTranscripts"] is True


def test_child_thread_rollouts_are_in_the_bundle_and_scrubbed(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    spawn = reply(ToolCall("multi_agent_v1.spawn_agent", {"message": CHILD_TASK}, call_id=SPAWN_ID))
    parent: list[Scripted] = [spawn, wait_for_child, reply(Message("ready"))]
    server = routed(mock_model, parent, [reply(Message("child-done"))])
    config = runtime(sevro_project, nativeTranscripts=True)
    case = sevro_project.case()
    result = run_codex(sevro_project, codex, server, case, "--runtime-config-file", config)
    assert result.exit_code == 0, result.stdout + result.stderr
    document = trial(sevro_project)
    found = observation(document, OBSERVATION)
    retained = bundle_bytes(sevro_project, document)
    assert retained is not None and found["completeness"] == "complete", found
    files = verified(retained, found["data"], "codex", "sessions")
    (child,) = observation(document, "sevro.codex.native-calls")["data"]["childSessions"]
    assert len(files) == 2  # the root thread's rollout and the child's
    assert [p for p in files if p.endswith(f"-{child['threadId']}.jsonl")]
    assert any(b"child-done" in content for content in files.values())
    # The model chose the credential as a call id: the rollout holds it, the bundle does not.
    assert found["data"]["redacted"] is True
    assert not [c for c in files.values() if API_KEY.encode() in c]  # decoded: base64 hides it
    assert any(REDACTED.encode() in c for c in files.values())
    assert API_KEY.encode() not in retained_bytes(sevro_project)


def test_without_the_key_no_bundle_is_retained(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(shell("echo native-7f3a")), reply(Message("ready"))])
    config = runtime(sevro_project, nativeTranscripts=False)
    case = sevro_project.case(checks=[GRADER_READS_IT])
    result = run_codex(sevro_project, codex, server, case, "--runtime-config-file", config)
    assert result.json()["task"]["verdict"] == "failed", result.stdout + result.stderr
    document = trial(sevro_project)
    assert [o for o in document["evidence"]["observations"] if o["id"] == OBSERVATION] == []
    assert bundle_bytes(sevro_project, document) is None
    assert "nativeTranscripts" not in observation(document, "sevro.host.runtime")["data"]


def test_a_tree_over_the_bound_is_unavailable_with_the_reason(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model(oversized(shell))
    case = sevro_project.case()
    config = runtime(sevro_project, nativeTranscripts=True)
    result = run_codex(sevro_project, codex, server, case, "--runtime-config-file", config)
    assert result.exit_code == 0, result.stdout + result.stderr
    document = trial(sevro_project)
    found = observation(document, OBSERVATION)
    assert found["completeness"] == "unavailable", found
    data = found["data"]
    assert data["status"] == "unavailable" and data["artifact"] is None
    assert "MAX_NATIVE_TRANSCRIPT_TREE_BYTES" in data["reason"]
    assert bundle_bytes(sevro_project, document) is None


def test_a_failed_trial_keeps_what_was_written_as_truncated(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(shell("echo native-7f3a")), Reply(error="mock: model failed")])
    config = runtime(sevro_project, nativeTranscripts=True)
    case = sevro_project.case()
    result = run_codex(sevro_project, codex, server, case, "--runtime-config-file", config)
    assert result.exit_code == 2, result.stdout + result.stderr  # the host failed
    document = trial(sevro_project)
    found = observation(document, OBSERVATION)
    assert found["completeness"] == "partial", found
    assert found["data"]["status"] == "truncated" and found["data"]["reason"]
    retained = bundle_bytes(sevro_project, document)
    assert retained is not None
    files = verified(retained, found["data"], "codex", "sessions")
    assert any(b"native-7f3a" in content for content in files.values())
