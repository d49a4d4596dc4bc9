"""Strict parsing of one ``pi --mode json`` turn (one pi process, one prompt).

pi exits 0 even when the model call failed, so the stream is the only witness: a turn is
trusted only when every line is a bounded JSON object of a type pi 0.73.1 prints, line 1 is
the ``session`` header (naming the session the host expects), one agent run opens with
``agent_start`` and closes with ``agent_end``, messages and turns nest, every tool execution
answers a tool call of the assistant message before it and ends once, and nothing but pi's own
bookkeeping (retries, compaction) or an extension's idle ``custom`` message follows the last
``agent_end``. A retry (``auto_retry_start``)
or a compaction that retries (``compaction_end`` with ``willRetry``) may open one more agent
run; any other second ``agent_start`` is ambiguous. The last assistant message decides the
outcome: ``stopReason`` ``error``/``aborted`` or an ``errorMessage`` is a failed turn.
Usage is summed over the assistant messages; all-zero usage stays unknown, never zero.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from attrs import frozen

from sevro_core.api import JsonValue, StreamError, Usage, decode_event
from sevro_hosts_pi.limits import (
    MAX_PI_EVENT_LINE_BYTES,
    MAX_PI_EVENT_STREAM_BYTES,
    MAX_PI_TOOL_EXECUTIONS_PER_TURN,
)

__all__ = ["EVENT_TYPES", "StreamError", "ToolExecution", "Turn", "parse_turn"]

RUN_EVENTS = frozenset(
    {
        "turn_start",
        "turn_end",
        "message_start",
        "message_update",
        "message_end",
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
    }
)
"""Events only an open agent run may carry (pi-agent-core's ``AgentEvent``)."""
ANYWHERE_EVENTS = frozenset(
    {
        "queue_update",
        "compaction_start",
        "compaction_end",
        "auto_retry_start",
        "auto_retry_end",
        "thinking_level_changed",
        "session_info_changed",
    }
)
"""pi's own session bookkeeping (``AgentSessionEvent`` in dist/core/agent-session.d.ts), which
it may print after an ``agent_end`` too: auto-compaction and retries run once the agent run
ended, and an extension may change the thinking level or session name at any time."""
EVENT_TYPES = RUN_EVENTS | ANYWHERE_EVENTS | {"session", "agent_start", "agent_end"}
"""Every top-level ``type`` ``pi --mode json`` 0.73.1 prints (dist/modes/print-mode.js writes
the session header, then each event ``AgentSession.subscribe`` delivers)."""
UPDATE_EVENTS = frozenset({"message_update", "tool_execution_update"})
"""The events that repeat a growing partial message or result (the stream's quadratic part):
each is still decoded (it must be JSON within the line bound) and placed, but not walked."""
ROLES = frozenset(
    {"user", "assistant", "toolResult", "custom", "bashExecution", "compactionSummary"}
    | {"branchSummary"}
)
STOP_REASONS = frozenset({"stop", "length", "toolUse", "error", "aborted"})
FAILED_STOPS = frozenset({"error", "aborted"})
CONTENT_TYPES = frozenset({"text", "thinking", "toolCall", "image"})
USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite")


@frozen
class ToolExecution:
    """One tool pi executed, with the result it reported (``ordinal`` counts from 0)."""

    call_id: str
    name: str
    arguments: Mapping[str, JsonValue]
    result_text: str | None
    """The text parts of ``tool_execution_end.result.content`` joined by newlines (None when
    the result carried no content list)."""
    is_error: bool
    ordinal: int


@frozen
class Turn:
    """One pi invocation's outcome (satisfies ``sevro_core.api.ParsedTurn``)."""

    session_id: str
    completed: bool
    final_message: str | None
    """The text of the last assistant message (None when it had none or the turn failed: a
    failed request's partial text is never the turn's answer)."""
    failure: str | None
    usage: Usage
    tools: tuple[ToolExecution, ...]
    requests: int
    """Assistant messages, one per model request (a compaction's summary call is not one)."""


def _lines(stream: bytes) -> Iterator[tuple[int, bytes]]:
    if len(stream) > MAX_PI_EVENT_STREAM_BYTES:
        raise StreamError(f"pi event stream is larger than {MAX_PI_EVENT_STREAM_BYTES} bytes")
    if not stream:
        raise StreamError("pi event stream is empty")
    if not stream.endswith(b"\n"):
        raise StreamError("pi event stream is truncated (its last line has no newline)")
    for number, line in enumerate(stream[:-1].split(b"\n"), start=1):
        if not line.strip():
            raise StreamError(f"line {number} is blank")
        if len(line) > MAX_PI_EVENT_LINE_BYTES:
            raise StreamError(f"line {number} is longer than {MAX_PI_EVENT_LINE_BYTES} bytes")
        yield number, line


def _decode(line: bytes, number: int) -> dict[str, Any]:
    return decode_event(line, number, EVENT_TYPES, MAX_PI_EVENT_LINE_BYTES)


class _Run:
    """What is open inside the current agent run."""

    def __init__(self) -> None:
        self.turn = False
        self.message: str | None = None
        self.calls: dict[str, tuple[str, dict[str, Any]]] = {}
        """Tool calls of the turn's assistant message not yet started, by id."""
        self.executing: dict[str, dict[str, Any]] = {}


class _State:
    def __init__(self, expected_session: str | None) -> None:
        self.expected = expected_session
        self.session: str | None = None
        self.phase = "before"
        """before (no agent_start yet), running, ended, retrying (a new run may open)."""
        self.run = _Run()
        self.compacting = False
        self.loose_message = False
        """A custom message started outside an agent run has not ended yet."""
        self.started: set[str] = set()
        self.tools: list[dict[str, Any]] = []
        self.assistants: list[dict[str, Any]] = []


def parse_turn(stream: bytes, *, session_id: str | None = None) -> Turn:
    """Parse one turn's stream; raise ``StreamError`` naming the line for anything malformed,
    truncated or ambiguous. ``session_id``: the session this turn must continue."""
    state = _State(session_id)
    for number, line in _lines(stream):
        event = _decode(line, number)
        if event["type"] in UPDATE_EVENTS:
            _update(event, number, state)
        elif state.session is None:
            _header(event, number, state)
        elif event["type"] == "session":
            raise StreamError(f"line {number}: a second session header")
        elif event["type"] in ANYWHERE_EVENTS:
            _bookkeeping(event, number, state)
        elif event["type"] == "agent_start":
            _agent_start(number, state)
        elif state.phase != "running":
            _outside_run(event, number, state)
        elif event["type"] == "agent_end":
            _agent_end(event, number, state)
        else:
            _run_event(event, number, state)
    return _turn(state)


def _header(event: Mapping[str, Any], number: int, state: _State) -> None:
    if event["type"] != "session":
        raise StreamError(f"line {number}: {event['type']} before the session header")
    session, version = event.get("id"), event.get("version")
    if not isinstance(session, str) or not session or len(session) > 128:
        raise StreamError(f"line {number}: session header without a valid id")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise StreamError(f"line {number}: session header without a positive version")
    if not isinstance(event.get("cwd"), str):
        raise StreamError(f"line {number}: session header without a cwd")
    if state.expected is not None and session != state.expected:
        raise StreamError(
            f"line {number}: session {session!r} is not the expected session {state.expected!r}"
        )
    state.session = session


def _update(event: Mapping[str, Any], number: int, state: _State) -> None:
    """A ``message_update`` / ``tool_execution_update``: only where it belongs is checked."""
    if state.session is None:
        raise StreamError(f"line {number}: {event['type']} before the session header")
    if state.phase != "running":
        raise StreamError(f"line {number}: {event['type']} outside an agent run")
    if event["type"] == "message_update":
        if state.run.message != "assistant":
            raise StreamError(f"line {number}: message_update outside an assistant message")
    elif event.get("toolCallId") not in state.run.executing:
        raise StreamError(f"line {number}: tool_execution_update of no running tool")


def _bookkeeping(event: Mapping[str, Any], number: int, state: _State) -> None:
    kind = event["type"]
    if kind == "compaction_start":
        if state.compacting:
            raise StreamError(f"line {number}: compaction_start inside a compaction")
        state.compacting = True
    elif kind == "compaction_end":
        if not state.compacting:
            raise StreamError(f"line {number}: compaction_end without compaction_start")
        if not isinstance(event.get("willRetry"), bool):
            raise StreamError(f"line {number}: compaction_end without a boolean willRetry")
        state.compacting = False
        if event["willRetry"]:
            _reopen(kind, number, state)
    elif kind == "auto_retry_start":
        _reopen(kind, number, state)
    elif kind == "auto_retry_end" and not isinstance(event.get("success"), bool):
        raise StreamError(f"line {number}: auto_retry_end without a boolean success")


def _outside_run(event: Mapping[str, Any], number: int, state: _State) -> None:
    """Between agent runs pi prints only an extension's own message (``sendMessage`` while
    pi is idle: a ``custom`` message_start/message_end pair); it decides nothing."""
    kind, message = event["type"], event.get("message")
    role = message.get("role") if isinstance(message, dict) else None
    if kind not in ("message_start", "message_end") or role != "custom":
        raise StreamError(f"line {number}: {kind} outside an agent run")
    if (kind == "message_start") == state.loose_message:
        raise StreamError(f"line {number}: unpaired custom {kind} outside an agent run")
    state.loose_message = kind == "message_start"


def _reopen(kind: str, number: int, state: _State) -> None:
    if state.phase != "ended":
        raise StreamError(f"line {number}: {kind} that retries while no agent run has ended")
    state.phase = "retrying"


def _agent_start(number: int, state: _State) -> None:
    if state.phase == "running":
        raise StreamError(f"line {number}: agent_start inside an agent run")
    if state.phase == "ended":
        raise StreamError(f"line {number}: a second agent_start without a retry")
    if state.compacting or state.loose_message:
        raise StreamError(f"line {number}: agent_start during a compaction or custom message")
    state.phase = "running"
    state.run = _Run()


def _agent_end(event: Mapping[str, Any], number: int, state: _State) -> None:
    run = state.run
    if run.turn or run.message is not None or run.executing:
        raise StreamError(f"line {number}: agent_end with a turn, message or tool still open")
    if not isinstance(event.get("messages"), list):
        raise StreamError(f"line {number}: agent_end without a messages list")
    state.phase = "ended"


def _run_event(event: Mapping[str, Any], number: int, state: _State) -> None:
    kind, run = event["type"], state.run
    if kind == "turn_start":
        if run.turn:
            raise StreamError(f"line {number}: turn_start inside a turn")
        run.turn = True
    elif not run.turn:
        raise StreamError(f"line {number}: {kind} outside a turn")
    elif kind == "turn_end":
        if run.message is not None or run.executing or run.calls:
            unanswered = ", ".join(sorted(run.calls) + sorted(run.executing))
            raise StreamError(f"line {number}: turn_end with open work {unanswered}".rstrip())
        if not isinstance(event.get("message"), dict):
            raise StreamError(f"line {number}: turn_end without a message object")
        run.turn = False
    elif kind in ("message_start", "message_end"):
        _message(event, number, state)
    else:
        _tool(event, number, state)


def _message(event: Mapping[str, Any], number: int, state: _State) -> None:
    run, message = state.run, event.get("message")
    role = message.get("role") if isinstance(message, dict) else None
    if not isinstance(message, dict) or role not in ROLES:
        raise StreamError(f"line {number}: {event['type']} without a message of a known role")
    if run.executing:
        raise StreamError(f"line {number}: {event['type']} while a tool is running")
    if event["type"] == "message_start":
        if run.message is not None:
            raise StreamError(f"line {number}: message_start inside an open {run.message} message")
        run.message = role
        return
    if run.message != role:
        raise StreamError(f"line {number}: message_end of an unstarted {role} message")
    run.message = None
    if role == "assistant":
        _assistant(message, number, state)


def _assistant(message: Mapping[str, Any], number: int, state: _State) -> None:
    stop, content = message.get("stopReason"), message.get("content")
    if stop not in STOP_REASONS:
        raise StreamError(f"line {number}: assistant message with stopReason {stop!r}")
    error = message.get("errorMessage")
    if error is not None and not isinstance(error, str):
        raise StreamError(f"line {number}: assistant errorMessage is not a string")
    if not isinstance(content, list):
        raise StreamError(f"line {number}: assistant message without a content list")
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    texts: list[str] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind not in CONTENT_TYPES:
            raise StreamError(f"line {number}: assistant content block of type {kind!r}")
        if kind == "text":
            if not isinstance(block.get("text"), str):
                raise StreamError(f"line {number}: text block without text")
            texts.append(block["text"])
        elif kind == "toolCall":
            call_id, name, arguments = block.get("id"), block.get("name"), block.get("arguments")
            if not isinstance(call_id, str) or not call_id or not isinstance(name, str):
                raise StreamError(f"line {number}: toolCall without a string id and name")
            if not isinstance(arguments, dict):
                raise StreamError(f"line {number}: toolCall {call_id} arguments not an object")
            if call_id in calls or call_id in state.started:
                raise StreamError(f"line {number}: tool call {call_id} appears twice")
            calls[call_id] = (name, arguments)
    if state.run.calls:
        raise StreamError(f"line {number}: assistant message while calls are unanswered")
    if stop not in FAILED_STOPS:
        state.run.calls = calls
    state.assistants.append(
        {"stop": stop, "error": error, "texts": texts, "usage": _usage(message, number)}
    )


def _usage(message: Mapping[str, Any], number: int) -> tuple[int, ...]:
    usage = message.get("usage")
    values = tuple(usage.get(k) if isinstance(usage, dict) else None for k in USAGE_KEYS)
    for value in values:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise StreamError(f"line {number}: assistant usage is not four token counts")
    return values  # type: ignore[return-value]


def _tool(event: Mapping[str, Any], number: int, state: _State) -> None:
    run, kind = state.run, event["type"]
    call_id, name = event.get("toolCallId"), event.get("toolName")
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise StreamError(f"line {number}: {kind} without a string toolCallId and toolName")
    if run.message is not None:
        raise StreamError(f"line {number}: {kind} inside an open {run.message} message")
    if kind == "tool_execution_start":
        _tool_start(event, call_id, name, number, state)
        return
    record = run.executing.pop(call_id, None)
    if record is None:
        raise StreamError(f"line {number}: tool_execution_end of {call_id}, which is not running")
    if record["name"] != name:
        raise StreamError(f"line {number}: tool_execution_end of {call_id} names {name!r}")
    if not isinstance(event.get("isError"), bool):
        raise StreamError(f"line {number}: tool_execution_end {call_id} without boolean isError")
    record["is_error"] = event["isError"]
    record["result"] = _result_text(event.get("result"), call_id, number)


def _tool_start(
    event: Mapping[str, Any], call_id: str, name: str, number: int, state: _State
) -> None:
    run = state.run
    if call_id in state.started:
        raise StreamError(f"line {number}: tool {call_id} started twice")
    call = run.calls.pop(call_id, None)
    if call is None:
        raise StreamError(f"line {number}: tool {call_id} answers no call of the last reply")
    if call[0] != name or not isinstance(event.get("args"), dict):
        raise StreamError(f"line {number}: tool {call_id} differs from its call")
    if len(state.tools) >= MAX_PI_TOOL_EXECUTIONS_PER_TURN:
        raise StreamError(f"more than {MAX_PI_TOOL_EXECUTIONS_PER_TURN} tool executions in a turn")
    state.started.add(call_id)
    record = {"id": call_id, "name": name, "args": event["args"], "ordinal": len(state.tools)}
    state.tools.append(record)
    run.executing[call_id] = record


def _result_text(result: Any, call_id: str, number: int) -> str | None:
    if result is None:
        return None
    if not isinstance(result, dict):
        raise StreamError(f"line {number}: tool_execution_end {call_id} result is no object")
    content = result.get("content")
    if content is None:
        return None
    if not isinstance(content, list) or not all(
        isinstance(b, dict) and isinstance(b.get("type"), str) for b in content
    ):
        raise StreamError(f"line {number}: tool_execution_end {call_id} content is no block list")
    texts = [b.get("text") for b in content if b["type"] == "text"]
    if not all(isinstance(t, str) for t in texts):
        raise StreamError(f"line {number}: tool_execution_end {call_id} text block without text")
    return "\n".join(t for t in texts if isinstance(t, str))


def _turn(state: _State) -> Turn:
    if state.session is None:
        raise StreamError("pi event stream has no session header")
    endings = {
        "before": "ended before agent_start",
        "running": "ended before agent_end",
        "retrying": "ended while pi was retrying",
    }
    if state.phase in endings:
        raise StreamError(f"pi event stream {endings[state.phase]}")
    if state.compacting or state.loose_message:
        raise StreamError("pi event stream ended during a compaction or custom message")
    last = state.assistants[-1] if state.assistants else None
    failure = _failure(last)
    text = "\n".join(last["texts"]) if last is not None and last["texts"] else None
    if failure is not None:
        text = None
    return Turn(
        session_id=state.session,
        completed=failure is None,
        final_message=text,
        failure=failure,
        usage=_summed_usage(state.assistants),
        tools=tuple(
            ToolExecution(
                call_id=t["id"],
                name=t["name"],
                arguments=t["args"],
                result_text=t["result"],
                is_error=t["is_error"],
                ordinal=t["ordinal"],
            )
            for t in state.tools
        ),
        requests=len(state.assistants),
    )


def _failure(last: Mapping[str, Any] | None) -> str | None:
    if last is None:
        return "pi made no model request (no assistant message)"
    if last["stop"] in FAILED_STOPS or last["error"]:
        return f"model request failed ({last['stop']}): {last['error'] or 'no detail'}"
    return None


def _summed_usage(assistants: list[dict[str, Any]]) -> Usage:
    """Input is fresh + cache reads + cache writes (pi reports fresh input alone); pi reports
    no reasoning tokens and prices custom models at 0, so those stay unknown."""
    fresh, output, read, written = (sum(a["usage"][i] for a in assistants) for i in range(4))
    total = fresh + read + written
    if not total and not output:
        return Usage()
    return Usage(input_tokens=total, output_tokens=output, cached_input_tokens=read)
