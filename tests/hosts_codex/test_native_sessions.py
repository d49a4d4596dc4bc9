"""Native session reading on real files in a private home: every way a rollout can be missing,
linked, oversized, ambiguous, malformed or unbound is reported, never silently dropped."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sevro_core.api import Completeness
from sevro_core.limits import MAX_CHANGE_SCAN_FILES
from sevro_hosts_codex import limits, sessions
from sevro_hosts_codex.continuation import ContinuationRecorder
from sevro_hosts_codex.nativecalls import native_calls

PARENT = "01a241e0-490a-7170-9aba-61219461195f"


def rollout(home: Path, thread: str, entries: list[dict[str, Any]], day: str = "04") -> Path:
    folder = home / "sessions" / "2026" / "12" / day
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-2026-12-04T16-25-47-{thread}.jsonl"
    lines = [
        json.dumps({"ordinal": i, "type": t, "payload": p})
        for i, (t, p) in enumerate((e["type"], e["payload"]) for e in entries)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def meta(thread: str, parent: str | None = None) -> dict[str, Any]:
    payload = {"id": thread, **({"parent_thread_id": parent} if parent else {})}
    return {"type": "session_meta", "payload": payload}


def spawn(call_id: str, child: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "spawn_agent",
                "namespace": "multi_agent_v1",
                "call_id": call_id,
                "arguments": "{}",
            },
        },
        {
            "type": "event_msg",
            "payload": {
                "type": "item_completed",
                "item": {
                    "type": "CollabAgentToolCall",
                    "id": call_id,
                    "tool": "spawn_agent",
                    "status": "completed",
                    "receiver_thread_ids": [child],
                },
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": call_id,
                "output": json.dumps({"agent_id": child}),
            },
        },
    ]


def child_entries(child: str, parent: str = PARENT, text: str = "done") -> list[dict[str, Any]]:
    return [
        meta(child, parent),
        {
            "type": "event_msg",
            "payload": {
                "type": "item_completed",
                "turn_id": "t1",
                "item": {"type": "AgentMessage", "content": [{"type": "Text", "text": text}]},
            },
        },
        {
            "type": "event_msg",
            "payload": {"type": "task_complete", "turn_id": "t1", "last_agent_message": text},
        },
    ]


def test_a_missing_tree_or_rollout_is_unavailable(tmp_path: Path) -> None:
    assert native_calls(tmp_path, PARENT)[0] is Completeness.UNAVAILABLE
    rollout(tmp_path, "other", [meta("other")])
    completeness, data = native_calls(tmp_path, PARENT)
    assert completeness is Completeness.UNAVAILABLE and data["sessionStatus"] == "unavailable"
    assert native_calls(tmp_path, None)[0] is Completeness.UNAVAILABLE


def test_a_readable_rollout_is_complete(tmp_path: Path) -> None:
    rollout(tmp_path, PARENT, [meta(PARENT)])
    completeness, data = native_calls(tmp_path, PARENT)
    assert completeness is Completeness.COMPLETE and data["sessionStatus"] == "available"


def test_links_duplicates_oversize_and_malformed_lines_are_partial(tmp_path: Path) -> None:
    path = rollout(tmp_path, PARENT, [meta(PARENT)])
    os.symlink(path, path.parent / "link")
    assert native_calls(tmp_path, PARENT)[1]["sessionStatus"] == "partial"
    (path.parent / "link").unlink()
    rollout(tmp_path, PARENT, [meta(PARENT)], day="05")
    assert native_calls(tmp_path, PARENT)[1]["sessionStatus"] == "ambiguous"
    assert native_calls(tmp_path, PARENT)[0] is Completeness.PARTIAL
    for extra in (tmp_path / "sessions" / "2026" / "12" / "05").iterdir():
        extra.unlink()
    with path.open("a") as out:
        out.write('{"ordinal": 0, "type": "x", "payload": {}}\n')  # ordinal not increasing
    assert native_calls(tmp_path, PARENT)[0] is Completeness.PARTIAL
    path.write_bytes(b"x" * (limits.MAX_CODEX_SESSION_BYTES + 1))
    completeness, data = native_calls(tmp_path, PARENT)
    assert completeness is Completeness.PARTIAL and data["sessionStatus"] == "partial"


def test_a_linked_sessions_tree_is_partial(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere"
    rollout(real, PARENT, [meta(PARENT)])
    (tmp_path / "home").mkdir()
    os.symlink(real / "sessions", tmp_path / "home" / "sessions")
    assert sessions.locate(tmp_path / "home", PARENT)[0] == "partial"
    assert sessions.locate(tmp_path, "../escape")[0] == "partial"


@pytest.mark.parametrize(
    ("child_rollout", "status", "result"),
    [
        (child_entries("c1"), "available", "completed"),
        (child_entries("c1", text=""), "available", "unavailable"),
        (child_entries("c1")[:2], "available", "unavailable"),
        (child_entries("c1", parent="someone-else"), "partial", None),
        (None, "unavailable", None),
    ],
)
def test_child_rollout_status(
    tmp_path: Path, child_rollout: list[dict[str, Any]] | None, status: str, result: str | None
) -> None:
    rollout(tmp_path, PARENT, [meta(PARENT), *spawn("s1", "c1")])
    if child_rollout is not None:
        rollout(tmp_path, "c1", child_rollout)
    completeness, data = native_calls(tmp_path, PARENT)
    (child,) = data["childSessions"]
    assert child["status"] == status and child.get("resultStatus") == result
    expected = Completeness.COMPLETE if status == "available" else Completeness.PARTIAL
    assert completeness is expected


def test_at_most_eight_children_are_checked(tmp_path: Path) -> None:
    count = limits.MAX_CODEX_CHILD_ROLLOUTS + 1
    entries = [meta(PARENT)]
    for n in range(count):
        entries += spawn(f"s{n}", f"c{n}")
        rollout(tmp_path, f"c{n}", child_entries(f"c{n}"))
    rollout(tmp_path, PARENT, entries)
    completeness, data = native_calls(tmp_path, PARENT)
    assert len(data["acceptedSpawns"]) == count
    assert len(data["childSessions"]) == limits.MAX_CODEX_CHILD_ROLLOUTS
    assert data["childrenTruncated"] is True and completeness is Completeness.PARTIAL
    rollout(tmp_path, PARENT, entries[: 1 + 3 * limits.MAX_CODEX_CHILD_ROLLOUTS])
    completeness, data = native_calls(tmp_path, PARENT)
    assert data["childrenTruncated"] is False and completeness is Completeness.COMPLETE


def test_a_spawn_without_acceptance_is_not_accepted(tmp_path: Path) -> None:
    request, started, _output = spawn("s1", "c1")
    rollout(tmp_path, PARENT, [meta(PARENT), request, started])
    _, data = native_calls(tmp_path, PARENT)
    assert data["acceptedSpawns"] == [] and data["childSessions"] == []
    assert [c["name"] for c in data["calls"]] == ["spawn_agent"]  # the attempt is still a call


def test_a_continuation_is_partial_without_its_session_or_fingerprint(tmp_path: Path) -> None:
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    recorder = ContinuationRecorder(workspace, home)
    recorder.first_prompt()
    recorder.turn_ended()
    recorder.resumed_prompt(2, PARENT)  # no session written: the ordinal is unknown
    completeness, data = recorder.observation()
    assert completeness is Completeness.PARTIAL
    assert data["nativeAfterOrdinal"] is None and data["preFollowUpWorktreeUnchanged"] is True
    rollout(home, PARENT, [meta(PARENT), meta("x")])
    recorder = ContinuationRecorder(workspace, home)
    recorder.first_prompt()
    for n in range(MAX_CHANGE_SCAN_FILES + 1):  # beyond the scan bounds: no fingerprint
        (workspace / f"f{n}").touch()
    recorder.turn_ended()
    recorder.resumed_prompt(2, PARENT)
    completeness, data = recorder.observation()
    assert completeness is Completeness.PARTIAL and data["nativeAfterOrdinal"] == 1
    (boundary,) = data["boundaries"]
    assert boundary["workspaceUnchanged"] is None
    assert boundary["unchangedSincePreviousPrompt"] is None


def test_more_calls_than_kept_are_truncated(tmp_path: Path) -> None:
    goal = {"type": "response_item", "payload": {"type": "function_call", "name": "get_goal"}}
    rollout(tmp_path, PARENT, [meta(PARENT), *[goal] * (limits.MAX_CODEX_NATIVE_CALLS + 1)])
    completeness, data = native_calls(tmp_path, PARENT)
    assert len(data["calls"]) == limits.MAX_CODEX_NATIVE_CALLS and data["truncated"] is True
    assert completeness is Completeness.PARTIAL
    rollout(tmp_path, PARENT, [meta(PARENT), *[goal] * limits.MAX_CODEX_NATIVE_CALLS])
    completeness, data = native_calls(tmp_path, PARENT)
    assert data["truncated"] is False and completeness is Completeness.COMPLETE
