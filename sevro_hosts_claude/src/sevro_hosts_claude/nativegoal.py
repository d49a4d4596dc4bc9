"""Claude Code's native goal (``/goal``) under ``hooks.nativeGoal``, and sevro's Stop hook.

Claude Code 2.1.139 and later has a native goal: a prompt opening with ``/goal <condition>``
registers a session-scoped prompt Stop hook; after every turn a separate evaluator request to the
model decides whether the condition holds, and while it does not Claude Code starts another
turn itself. It refuses to set one while hooks are disabled. Claude Code writes the goal's life
to the session transcript as ``goal_status`` attachments: one when the goal is set
(``sentinel``, not met), then one per evaluator verdict (``met``, with its ``reason``).

With the policy on, the candidate's settings stay plugin-only (no project settings) and gain
sevro's own Stop hook, a runner-owned script in the trial's private configuration directory
that runs in a nested bubblewrap sandbox with no network, an empty environment and nothing
mounted but the system trees, itself and its record directory. It records each Stop (and
whether a Stop hook was already continuing the session) and exits 0, so it never blocks or
alters the native goal. Claude Code reports every hook's exit code in its stream
(``--include-hook-events``); both become ``sevro.host.hooks``. ``sevro.host.native-goal``
comes from the transcript alone: the policy never proves that a goal was created or completed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sevro_core.api import (
    HOST_HOOKS_OBSERVATION,
    NATIVE_GOAL_OBSERVATION,
    Completeness,
    JsonValue,
    Observation,
)
from sevro_hosts_claude.configuration import runtime_mounts
from sevro_hosts_claude.limits import (
    MAX_GOAL_REASON_CHARS,
    MAX_HOOK_EXECUTIONS,
    MAX_NATIVE_TRANSCRIPT_BYTES,
    MAX_STOP_RECORD_BYTES,
    STOP_HOOK_TIMEOUT_S,
)

GOAL_COMMAND = re.compile(r"^\s*/goal(?:\s|$)")
"""A prompt Claude Code dispatches to its ``/goal`` command (slash commands open a prompt)."""
MAX_GOAL_CONDITION_CHARS = 4000
"""Claude Code's own bound on a goal's condition (longer attachments are malformed)."""
STOP_SCRIPT = f"""\
# sevro's Stop hook: record the Stop hook input, block nothing, change nothing.
head -c {MAX_STOP_RECORD_BYTES + 1} > "$1/$(date +%s%N)-$$.json" || exit 1
exit 0
"""
_RECORD_NAME = re.compile(r"^[0-9]{1,24}-[0-9]{1,10}\.json$")


def opens_goal(prompt: str) -> bool:
    return GOAL_COMMAND.match(prompt) is not None


def stop_hook(bwrap: str, script: Path, records: Path) -> dict[str, Any]:
    """The Stop hook entry for the settings: the script in a nested sandbox with no network,
    no environment (so no credential variable) and no view of the private configuration."""
    argv = [bwrap, "--die-with-parent", "--unshare-all", "--clearenv", "--new-session"]
    argv += runtime_mounts()
    argv += ["--dev", "/dev", "--ro-bind", str(script), str(script)]
    argv += ["--bind", str(records), str(records), "--chdir", "/"]
    argv += ["--", "/bin/sh", str(script), str(records)]
    command = " ".join(shlex.quote(part) for part in argv)
    hook = {"type": "command", "command": command, "timeout": STOP_HOOK_TIMEOUT_S}
    return {"Stop": [{"matcher": "", "hooks": [hook]}]}


def script_digest() -> str:
    return "sha256:" + hashlib.sha256(STOP_SCRIPT.encode()).hexdigest()


# -- sevro.host.native-goal --------------------------------------------------------------------


class _Unavailable(Exception):
    pass


def goal_observation(
    host: str, config_dir: Path, session: str, ended: bool, scrub: Callable[[str], str]
) -> Observation:
    """``sevro.host.native-goal`` from the session's own transcript: each ``goal_status`` the
    main session recorded, the goal's state (``not-created``, ``created``, ``completed``) and
    the errors Claude Code's Stop hook summaries name (an evaluator that failed). Unavailable
    when the transcript is missing, ambiguous, linked, oversized or malformed, or the session
    did not end with a result (a goal's state is then not known)."""
    try:
        if not ended:
            raise _Unavailable("the session did not end with a result")
        records = list(_records(_transcript(config_dir, session), session))
        goals = [_goal(r["attachment"]) for r in records if r.get("type") == "attachment"]
        errors = [
            scrub(error)[:MAX_GOAL_REASON_CHARS]
            for r in records
            if r.get("type") == "system" and isinstance(r.get("hookErrors"), list)
            for error in r["hookErrors"]
            if isinstance(error, str)
        ]
    except _Unavailable as exc:
        data: dict[str, JsonValue] = {"method": "native_session", "failure": str(exc)}
        return Observation(NATIVE_GOAL_OBSERVATION, host, Completeness.UNAVAILABLE, data)
    last = goals[-1] if goals else None
    state = "not-created"
    if last is not None:
        state = "completed" if last["status"] == "complete" else "created"
    verdicts = [g for g in goals if g["status"] in ("active", "complete") and not g["set"]]
    data = {
        "method": "native_session",
        "sessionId": session,
        "state": state,
        "goalStatus": last["status"] if last is not None else None,
        "verdicts": len(verdicts),
        "notMet": sum(1 for g in verdicts if g["status"] == "active"),
        "lastReason": verdicts[-1]["reason"] if verdicts else None,
        "stopHookErrors": list(errors[:8]),
        "goals": list(goals[:64]),
    }
    return Observation(NATIVE_GOAL_OBSERVATION, host, Completeness.COMPLETE, data)


def _transcript(config_dir: Path, session: str) -> bytes:
    """The one ``projects/*/<session>.jsonl`` (bounded, no links)."""
    projects = config_dir / "projects"
    try:
        found = [
            entry / f"{session}.jsonl"
            for entry in projects.iterdir()
            if not entry.is_symlink() and (entry / f"{session}.jsonl").exists()
        ]
    except OSError as exc:
        raise _Unavailable(f"no native transcript directory ({exc.strerror})") from None
    if len(found) != 1:
        raise _Unavailable(f"{len(found)} native transcripts of session {session}")
    try:
        fd = os.open(found[0], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        raise _Unavailable("the native transcript is a link or unreadable") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise _Unavailable("the native transcript is not a regular file")
        data = handle.read(MAX_NATIVE_TRANSCRIPT_BYTES + 1)
    if len(data) > MAX_NATIVE_TRANSCRIPT_BYTES:
        raise _Unavailable(f"the native transcript exceeds {MAX_NATIVE_TRANSCRIPT_BYTES} bytes")
    return data


def _records(data: bytes, session: str) -> Iterator[dict[str, Any]]:
    """The main session's ``goal_status`` attachments and Stop hook summaries; a foreign
    session's record (or one that is not a JSON object) makes the transcript unusable."""
    seen = False
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise _Unavailable(f"transcript line {number} is not JSON") from None
        if not isinstance(event, dict):
            raise _Unavailable(f"transcript line {number} is not an object")
        owner = event.get("sessionId")
        if owner is not None and owner != session:
            raise _Unavailable(f"transcript line {number} belongs to another session")
        seen = seen or owner == session
        if event.get("isSidechain") is True:
            continue
        attachment = event.get("attachment")
        if event.get("type") == "system" and event.get("subtype") == "stop_hook_summary":
            yield event
        elif isinstance(attachment, dict) and attachment.get("type") == "goal_status":
            yield {**event, "attachment": {**attachment, "at": event.get("timestamp")}}
    if not seen:
        raise _Unavailable("the transcript holds no record of the session")


def _goal(attachment: dict[str, Any]) -> dict[str, JsonValue]:
    condition, met = attachment.get("condition"), attachment.get("met")
    if not isinstance(condition, str) or not 0 < len(condition) <= MAX_GOAL_CONDITION_CHARS:
        raise _Unavailable("a goal_status attachment without a valid condition")
    if not isinstance(met, bool):
        raise _Unavailable("a goal_status attachment without a boolean met")
    sentinel = attachment.get("sentinel") is True
    status = "active" if not met else ("cleared" if sentinel else "complete")
    if attachment.get("failed") is True:
        status = "blocked"
    reason, iterations, at = (attachment.get(k) for k in ("reason", "iterations", "at"))
    return {
        "status": status,
        "set": sentinel and not met,
        "characters": len(condition),
        "reason": reason[:MAX_GOAL_REASON_CHARS] if isinstance(reason, str) else None,
        "iterations": iterations if type(iterations) is int else None,
        "at": at[:64] if isinstance(at, str) else None,
    }


# -- sevro.host.hooks --------------------------------------------------------------------------


def hooks_observation(
    host: str, streams: Sequence[tuple[int, bytes]], records: Path, ran_turns: int
) -> Observation:
    """``sevro.host.hooks``: sevro's Stop hook (source, event, digest), each hook execution
    Claude Code reported (turn, hook event, exit code, outcome) and sevro's Stop records.
    Partial when a turn's stream is missing, the records are unreadable, or the Stop hook
    executions the stream reported and the records it wrote disagree."""
    executions: list[JsonValue] = []
    complete = len(streams) == ran_turns
    for turn, stream in streams:
        for event in _hook_responses(stream):
            code = event.get("exit_code")
            executions.append(
                {
                    "turn": turn,
                    "event": str(event.get("hook_event", ""))[:64],
                    "exitCode": code if type(code) is int else None,
                    "outcome": str(event.get("outcome", ""))[:64],
                }
            )
    stops, problem = _stop_records(records)
    reported = sum(1 for e in executions if isinstance(e, dict) and e["event"] == "Stop")
    complete = complete and problem is None and len(stops) == reported
    data: dict[str, JsonValue] = {
        "hooks": [{"source": "sevro", "event": "Stop", "digest": script_digest()}],
        "executions": executions[:MAX_HOOK_EXECUTIONS],
        "truncated": len(executions) > MAX_HOOK_EXECUTIONS,
        "stops": [{"stopHookActive": active} for active in stops],
        "problem": problem,
    }
    state = Completeness.COMPLETE if complete else Completeness.PARTIAL
    return Observation(HOST_HOOKS_OBSERVATION, host, state, data)


def _hook_responses(stream: bytes) -> Iterator[dict[str, Any]]:
    for line in stream.split(b"\n"):
        try:
            event = json.loads(line) if line.strip() else None
        except (UnicodeDecodeError, ValueError, RecursionError):
            continue  # the stream parser already refused a malformed turn
        if isinstance(event, dict) and event.get("subtype") == "hook_response":
            yield event


def _stop_records(directory: Path) -> tuple[list[bool | None], str | None]:
    """Whether a Stop hook was already active at each recorded Stop, in order."""
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        return [], f"Stop records unreadable: {exc.strerror}"
    if len(names) > MAX_HOOK_EXECUTIONS:
        return [], f"more than {MAX_HOOK_EXECUTIONS} Stop records"
    stops: list[bool | None] = []
    for name in names:
        path = directory / name
        if not _RECORD_NAME.match(name) or path.is_symlink() or not path.is_file():
            return stops, f"unexpected entry {name[:64]!r} among the Stop records"
        with path.open("rb") as handle:
            data = handle.read(MAX_STOP_RECORD_BYTES + 1)
        try:
            document = json.loads(data) if len(data) <= MAX_STOP_RECORD_BYTES else None
        except (UnicodeDecodeError, ValueError, RecursionError):
            document = None
        if not isinstance(document, dict) or document.get("hook_event_name") != "Stop":
            return stops, f"Stop record {name} is not a Stop hook's input"
        active = document.get("stop_hook_active")
        stops.append(active if isinstance(active, bool) else None)
    return stops, None
