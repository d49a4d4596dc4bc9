"""sevro's Stop hook sandbox and the native-goal and hooks detectors, without the CLI.

The Stop hook runs for real in its nested bubblewrap sandbox (positive: it records its input;
negative: no network, no environment, no view of a planted credential). The transcript and
record readers get every refusal their docstrings name; the real-CLI tests cover the rest.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import require_tool
from sevro_hosts_claude import nativegoal
from sevro_hosts_claude.limits import MAX_NATIVE_TRANSCRIPT_BYTES

SID = "0b7c9a52-0000-4000-8000-000000000001"
HOST = "sevro.host.claude"


@pytest.fixture
def listener() -> Iterator[int]:
    """A loopback TCP listener: reachable from the host, never from the Stop hook."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                server.accept()[0].close()
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def hook_argv(tmp_path: Path, script_text: str) -> tuple[list[str], Path]:
    script, records = tmp_path / "private" / "stop.sh", tmp_path / "private" / "records"
    records.mkdir(parents=True)
    script.write_text(script_text)
    command = nativegoal.stop_hook(require_tool("bwrap"), script, records)["Stop"][0]["hooks"][0][
        "command"
    ]
    return ["/bin/sh", "-c", command], records


def test_the_stop_hook_records_its_input_and_exits_zero(tmp_path: Path) -> None:
    argv, records = hook_argv(tmp_path, nativegoal.STOP_SCRIPT)
    document = {"hook_event_name": "Stop", "stop_hook_active": True, "session_id": SID}
    done = subprocess.run(
        argv, input=json.dumps(document).encode(), capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr
    (record,) = records.iterdir()
    assert json.loads(record.read_text()) == document
    assert nativegoal._stop_records(records) == ([True], None)


def test_the_stop_hook_sees_no_network_environment_or_credential(
    tmp_path: Path, listener: int
) -> None:
    secret = tmp_path / "private" / "credentials.json"
    secret.parent.mkdir()
    secret.write_text("planted-secret")
    probe = (
        f'cat {secret} > "$1/cat.txt" 2>&1; echo "cat=$?" >> "$1/out.txt"\n'
        'env > "$1/env.txt"\n'
        'python3 -c \'import socket,sys\ntry: socket.create_connection(("127.0.0.1", '
        f"{listener}), timeout=2)\nexcept OSError: sys.exit(3)' 2>/dev/null; "
        'echo "net=$?" >> "$1/out.txt"\n'
    )
    argv, records = hook_argv(tmp_path, probe)
    done = subprocess.run(
        argv,
        input=b"{}",
        capture_output=True,
        env={**os.environ, "PLANTED_TOKEN": "sk-x"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # The probes ran and failed for the right reason: no such file, no route to the listener.
    assert (records / "out.txt").read_text().split() == ["cat=1", "net=3"]
    assert "planted-secret" not in (records / "cat.txt").read_text()
    assert "PLANTED_TOKEN" not in (records / "env.txt").read_text()
    # Positive controls: the same probes outside the hook's sandbox do reach both.
    socket.create_connection(("127.0.0.1", listener), timeout=2).close()
    assert secret.read_text() == "planted-secret"


def transcript(config: Path, *events: dict[str, Any], session: str = SID) -> Path:
    directory = config / "projects" / "-work-ws"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{session}.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def goal(met: bool, **fields: Any) -> dict[str, Any]:
    attachment = {"type": "goal_status", "met": met, "condition": "tests pass", **fields}
    return {"type": "attachment", "sessionId": SID, "attachment": attachment}


def observe(config: Path, ended: bool = True) -> Any:
    return nativegoal.goal_observation(HOST, config, SID, ended, lambda text: text)


def test_goal_states_come_from_the_main_sessions_attachments(tmp_path: Path) -> None:
    user = {"type": "user", "sessionId": SID}
    transcript(tmp_path, user, goal(False, sentinel=True), goal(False, reason="no"))
    data = observe(tmp_path).data
    assert (data["state"], data["verdicts"], data["notMet"]) == ("created", 1, 1)
    transcript(tmp_path, user, goal(False, sentinel=True), goal(True, reason="yes"))
    assert observe(tmp_path).data["state"] == "completed"
    # A child Agent's (sidechain) goal is not the session's; a cleared goal is not completed.
    side = {**goal(True), "isSidechain": True}
    transcript(tmp_path, user, goal(False, sentinel=True), side, goal(True, sentinel=True))
    data = observe(tmp_path).data
    assert (data["state"], data["goalStatus"], data["verdicts"]) == ("created", "cleared", 0)
    transcript(tmp_path, user)
    assert observe(tmp_path).data["state"] == "not-created"


@pytest.mark.parametrize(
    ("events", "failure"),
    [
        ([{"type": "user", "sessionId": "another"}], "another session"),
        ([{"type": "user"}], "no record of the session"),
        ([{"type": "user", "sessionId": SID}, goal(True, condition="")], "valid condition"),
        ([{"type": "user", "sessionId": SID}, goal("yes")], "boolean met"),  # type: ignore[arg-type]
    ],
)
def test_an_unusable_transcript_is_unavailable(
    tmp_path: Path, events: list[dict[str, Any]], failure: str
) -> None:
    transcript(tmp_path, *events)
    observed = observe(tmp_path)
    assert observed.completeness.value == "unavailable"
    assert failure in str(observed.data["failure"])


def test_a_missing_linked_malformed_or_oversized_transcript_is_unavailable(
    tmp_path: Path,
) -> None:
    assert "no native transcript" in str(observe(tmp_path).data["failure"])
    path = transcript(tmp_path, {"type": "user", "sessionId": SID})
    assert observe(tmp_path, ended=False).data["failure"] == "the session did not end with a result"
    real = tmp_path / "elsewhere.jsonl"
    path.rename(real)
    path.symlink_to(real)
    assert "a link" in str(observe(tmp_path).data["failure"])
    path.unlink()
    path.write_text("{not json\n")
    assert "not JSON" in str(observe(tmp_path).data["failure"])
    path.write_bytes(b" " * (MAX_NATIVE_TRANSCRIPT_BYTES + 1))
    assert "exceeds" in str(observe(tmp_path).data["failure"])


def hook_event(event: str, code: int) -> bytes:
    document = {"type": "system", "subtype": "hook_response", "hook_event": event}
    return json.dumps({**document, "exit_code": code, "outcome": "success"}).encode() + b"\n"


def test_hook_evidence_is_partial_when_stream_and_records_disagree(tmp_path: Path) -> None:
    records = tmp_path / "records"
    records.mkdir()
    (records / "1-1.json").write_text(json.dumps({"hook_event_name": "Stop"}))
    stream = hook_event("PostToolUse", 0) + hook_event("Stop", 0)
    agreed = nativegoal.hooks_observation(HOST, [(1, stream)], records, 1)
    assert agreed.completeness.value == "complete"
    assert [e["event"] for e in agreed.data["executions"]] == ["PostToolUse", "Stop"]
    # A Stop the stream reported but the hook did not record, a turn with no stream, and a
    # foreign file among the records each leave the evidence partial.
    twice = nativegoal.hooks_observation(HOST, [(1, stream + hook_event("Stop", 0))], records, 1)
    assert twice.completeness.value == "partial"
    assert nativegoal.hooks_observation(HOST, [(1, stream)], records, 2).completeness.value == (
        "partial"
    )
    (records / "planted").write_text("x")
    foreign = nativegoal.hooks_observation(HOST, [(1, stream)], records, 1)
    assert foreign.completeness.value == "partial" and "unexpected" in foreign.data["problem"]


def test_only_an_opening_goal_command_is_a_goal() -> None:
    assert nativegoal.opens_goal("/goal tests pass") and nativegoal.opens_goal("  /goal\nx")
    assert not nativegoal.opens_goal("run /goal tests pass")
    assert not nativegoal.opens_goal("/goals") and not nativegoal.opens_goal("/goalx y")
