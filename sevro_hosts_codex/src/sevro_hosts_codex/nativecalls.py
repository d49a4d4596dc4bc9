"""``sevro.codex.native-calls``: allowlisted goal and agent calls from the bound native session.

Read from the root thread's rollout (see ``sessions``), never from the ``--json`` stream (it has
no ordinals and reports no spawn acceptance). It keeps only call names, namespaces and native
ordinals, never arguments, task messages or outputs. A call proves an invocation attempt, not
its success; an accepted spawn proves Codex started the child thread, not its work. For each
accepted spawn (at most ``MAX_CODEX_CHILD_ROLLOUTS``) the child's own rollout is checked: its
availability and whether one nonempty final assistant message matches the child's completion
event for the same turn (a returned turn, not correct work). Anything missing or malformed is
``unavailable``/``partial``, so an empty list never proves a control was unused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sevro_core.api import Completeness, JsonValue
from sevro_hosts_codex.limits import MAX_CODEX_CHILD_ROLLOUTS, MAX_CODEX_NATIVE_CALLS
from sevro_hosts_codex.sessions import FOUND, PARTIAL, Entry, Session, read_session

NATIVE_CALLS_OBSERVATION = "sevro.codex.native-calls"
GOAL_CONTROLS = frozenset({"create_goal", "get_goal", "update_goal"})
"""Codex's goal tools (0.171.0 offers them as plain functions)."""
AGENT_CONTROLS: Mapping[str, frozenset[str]] = {
    # Codex 0.171.0's sub-agent tools (`multi_agent_v1` namespace).
    "multi_agent_v1": frozenset(
        {"spawn_agent", "send_input", "wait_agent", "close_agent", "resume_agent"}
    ),
    # The names Sevro's contract allowlists (the later `collaboration` namespace).
    "collaboration": frozenset(
        {
            "spawn_agent",
            "list_agents",
            "wait_agent",
            "followup_task",
            "send_message",
            "interrupt_agent",
        }
    ),
}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_IDENTIFIER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$")
_EFFORT = re.compile(r"^(?:minimal|low|medium|high|xhigh|max|ultra)$")


def native_calls(codex_home: Path, thread_id: str | None) -> tuple[Completeness, JsonValue]:
    """The observation's completeness and data for the root ``thread_id``."""
    session = read_session(codex_home, thread_id) if thread_id else Session("unavailable")
    data: dict[str, JsonValue] = {
        "method": "native_session",
        "threadId": thread_id,
        "sessionStatus": _session_status(session),
        "calls": [],
        "toolCalls": [],
        "submittedExecCalls": 0,
        "acceptedSpawns": [],
        "childSessions": [],
        "childrenTruncated": False,
        "truncated": False,
    }
    if session.status != FOUND:
        return _missing(session.status), data
    calls, tools, truncated = _calls(session.entries)
    data.update(calls=calls, toolCalls=tools, truncated=truncated)
    data["submittedExecCalls"] = sum(1 for e in session.entries if _is_exec_submission(e))
    if not session.complete:
        return Completeness.PARTIAL, data
    spawns = accepted_spawns(session.entries)
    children = list(dict.fromkeys(str(s["threadId"]) for s in spawns))
    checked = [
        child_session(codex_home, thread_id or "", child)
        for child in children[:MAX_CODEX_CHILD_ROLLOUTS]
    ]
    over = len(children) > MAX_CODEX_CHILD_ROLLOUTS
    data.update(acceptedSpawns=list(spawns), childSessions=list(checked), childrenTruncated=over)
    whole = not truncated and not over and all(c["status"] == "available" for c in checked)
    return (Completeness.COMPLETE if whole else Completeness.PARTIAL), data


def _session_status(session: Session) -> str:
    if session.status != FOUND:
        return session.status
    return "available" if session.complete else PARTIAL


def _missing(status: str) -> Completeness:
    return Completeness.UNAVAILABLE if status == "unavailable" else Completeness.PARTIAL


def _function_call(entry: Entry) -> tuple[str, str] | None:
    """A direct native tool call's (namespace, name): ``functions`` for a plain function."""
    payload = entry.payload
    if entry.kind != "response_item":
        return None
    if payload.get("type") not in ("function_call", "custom_tool_call"):
        return None
    name, namespace = payload.get("name"), payload.get("namespace")
    name = name if isinstance(name, str) and _NAME.match(name) else "other"
    if namespace is None:
        namespace = "functions"
    elif not isinstance(namespace, str) or not _NAME.match(namespace):
        namespace = "other"
    return namespace, name


def _allowlisted(namespace: str, name: str) -> bool:
    if namespace == "functions":
        return name in GOAL_CONTROLS
    return name in AGENT_CONTROLS.get(namespace, frozenset())


def _calls(entries: Sequence[Entry]) -> tuple[list[JsonValue], list[JsonValue], bool]:
    """The allowlisted calls and every direct tool call, in native order, bounded."""
    calls: list[JsonValue] = []
    tools: list[JsonValue] = []
    truncated = False
    for entry in entries:
        found = _function_call(entry)
        if found is None:
            continue
        namespace, name = found
        record: dict[str, JsonValue] = {
            "ordinal": entry.ordinal,
            "namespace": namespace,
            "name": name,
        }
        if len(tools) < MAX_CODEX_NATIVE_CALLS:
            tools.append(record)
        else:
            truncated = True
        if _allowlisted(namespace, name):
            if len(calls) < MAX_CODEX_NATIVE_CALLS:
                calls.append({**record, "evidence": "invocation_attempt"})
            else:
                truncated = True
    return calls, tools, truncated


def _is_exec_submission(entry: Entry) -> bool:
    """A Code Mode submission (``custom_tool_call`` named ``exec``): counted, not inspected."""
    payload = entry.payload
    return (
        entry.kind == "response_item"
        and payload.get("type") == "custom_tool_call"
        and payload.get("name") == "exec"
    )


def _bounded(value: object, pattern: re.Pattern[str]) -> str | None:
    return value if isinstance(value, str) and pattern.match(value) else None


def accepted_spawns(entries: Sequence[Entry]) -> list[dict[str, JsonValue]]:
    """Spawns Codex accepted: one ``spawn_agent`` request with a unique call id, then one
    completed ``CollabAgentToolCall`` for it naming exactly one child thread, then one call
    output naming that child; anything duplicate, missing or out of order is not accepted."""
    requests = [e for e in entries if _function_call(e) in _SPAWNS]
    ids = [e.payload.get("call_id") for e in requests]
    accepted = []
    for request in requests:
        call_id = _bounded(request.payload.get("call_id"), _IDENTIFIER)
        if call_id is None or ids.count(call_id) != 1:
            continue
        found = _acceptance(entries, request, call_id)
        if found is not None:
            accepted.append(found)
    return accepted


_SPAWNS = {("multi_agent_v1", "spawn_agent"), ("collaboration", "spawn_agent")}


def _acceptance(
    entries: Sequence[Entry], request: Entry, call_id: str
) -> dict[str, JsonValue] | None:
    starts = [e for e in entries if _collab_item(e, call_id) is not None]
    outputs = [
        e
        for e in entries
        if e.kind == "response_item"
        and e.payload.get("type") == "function_call_output"
        and e.payload.get("call_id") == call_id
    ]
    if len(starts) != 1 or len(outputs) != 1:
        return None
    start, result = starts[0], outputs[0]
    item = _collab_item(start, call_id) or {}
    receivers = item.get("receiver_thread_ids")
    if not (isinstance(receivers, list) and len(receivers) == 1):
        return None
    thread = _bounded(receivers[0], _IDENTIFIER)
    if thread is None or not request.ordinal < start.ordinal < result.ordinal:
        return None
    if _output_agent(result.payload.get("output")) != thread:
        return None
    spawn: dict[str, JsonValue] = {
        "callId": call_id,
        "threadId": thread,
        "requestedOrdinal": request.ordinal,
        "startedOrdinal": start.ordinal,
        "acceptedOrdinal": result.ordinal,
    }
    for key, field, pattern in (
        ("model", "model", _IDENTIFIER),
        ("reasoningEffort", "reasoning_effort", _EFFORT),
    ):
        value = _bounded(item.get(field), pattern)
        if value is not None:
            spawn[key] = value
    return spawn


def _collab_item(entry: Entry, call_id: str) -> Mapping[str, Any] | None:
    """The completed ``CollabAgentToolCall`` item of spawn ``call_id`` in this entry, if any."""
    payload = entry.payload
    item = payload.get("item")
    if entry.kind != "event_msg" or payload.get("type") != "item_completed":
        return None
    if not isinstance(item, dict) or item.get("type") != "CollabAgentToolCall":
        return None
    if item.get("id") != call_id or item.get("tool") != "spawn_agent":
        return None
    return item if item.get("status") == "completed" else None


def _output_agent(output: object) -> str | None:
    try:
        value = json.loads(output) if isinstance(output, str) else None
    except ValueError:
        return None
    agent = value.get("agent_id") if isinstance(value, dict) else None
    return agent if isinstance(agent, str) else None


def child_session(codex_home: Path, parent: str, thread_id: str) -> dict[str, JsonValue]:
    """One child's rollout: ``available`` (bound to ``parent``, fully parsed) with its
    ``resultStatus``, else ``unavailable``, ``ambiguous`` or ``partial``."""
    if thread_id == parent:
        return {"threadId": thread_id, "status": PARTIAL}
    session = read_session(codex_home, thread_id)
    if session.status != FOUND:
        return {"threadId": thread_id, "status": session.status}
    if not session.complete or not _bound_to(session.entries, thread_id, parent):
        return {"threadId": thread_id, "status": PARTIAL}
    completed = child_result_completed(session.entries)
    return {
        "threadId": thread_id,
        "status": "available",
        "resultStatus": "completed" if completed else "unavailable",
    }


def _bound_to(entries: Sequence[Entry], thread_id: str, parent: str) -> bool:
    """The rollout opens with its own ``session_meta`` naming ``parent`` as its parent."""
    first = entries[0]
    meta = first.payload
    return (
        first.kind == "session_meta"
        and meta.get("id") == thread_id
        and meta.get("parent_thread_id") == parent
    )


def child_result_completed(entries: Sequence[Entry]) -> bool:
    """Whether the child's last turn returned: its last ``task_complete`` follows, in the same
    turn and with no abort, a nonempty final ``AgentMessage`` whose text is exactly the
    completion's ``last_agent_message`` (the message itself is never kept)."""
    completions = [e for e in entries if _event(e, "task_complete")]
    if not completions:
        return False
    done = completions[-1]
    turn = _bounded(done.payload.get("turn_id"), _IDENTIFIER)
    if turn is None or any(
        _event(e, "turn_aborted") and e.payload.get("turn_id") == turn for e in entries
    ):
        return False
    messages = [
        text
        for e in entries
        if e.ordinal < done.ordinal and (text := _final_text(e, turn)) is not None
    ]
    if not messages:
        return False
    return bool(messages[-1].strip()) and done.payload.get("last_agent_message") == messages[-1]


def _event(entry: Entry, kind: str) -> bool:
    return entry.kind == "event_msg" and entry.payload.get("type") == kind


def _final_text(entry: Entry, turn: str) -> str | None:
    """A completed assistant message's text in ``turn`` (None for anything else, including a
    message Codex marks as commentary rather than a final answer)."""
    payload = entry.payload
    item = payload.get("item")
    if not _event(entry, "item_completed") or payload.get("turn_id") != turn:
        return None
    if not isinstance(item, dict) or item.get("type") != "AgentMessage":
        return None
    if item.get("phase") not in (None, "final_answer"):
        return None
    content = item.get("content")
    if not isinstance(content, list) or not content:
        return None
    parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "Text"]
    if len(parts) != len(content) or not all(isinstance(p, str) for p in parts):
        return None
    return "".join(str(p) for p in parts)
