"""Strict parsing of one ``claude -p --output-format stream-json --verbose`` turn.

A turn is trusted only when every line is a bounded JSON object of a known type, the stream
opens with exactly one ``system``/``init`` naming the session, every event belongs to that
session, each tool result answers a tool call made earlier, and the stream ends with exactly one
``result``. A ``result`` with ``is_error: true`` (or a subtype other than ``success``) is a failed
turn even when the process exits 0, and so is a turn in which Claude Code's own sandbox failed
to start (a tool result opening with ``SANDBOX_FAILED``): nothing the agent asked for ran, so
the turn is never graded as if it had. Usage absent from the result stays unknown, never zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import frozen

from sevro_core.api import StreamError, Usage, decode_event, stream_lines
from sevro_hosts_claude.budget import BUDGET_SUBTYPE
from sevro_hosts_claude.limits import MAX_HOST_TOOL_CALLS_PER_TURN

__all__ = ["Child", "StreamError", "ToolUse", "Turn", "parse_turn"]

EVENT_TYPES = frozenset(
    {"system", "assistant", "user", "result", "rate_limit_event", "tool_progress"}
)
"""``tool_progress`` is a heartbeat Claude Code prints every 30 s while a tool or a hook (a
native goal's Stop hook evaluator) is still running; it carries nothing a turn is made of."""
SANDBOX_FAILED = "Sandbox is required but failed to initialize"
"""How Claude Code answers a Bash call when its sandbox could not start (e.g. its bridge sockets
could not be made); ``sandbox.failIfUnavailable`` means the command did not run at all."""


@frozen
class ToolUse:
    """A top-level tool call and its result, in call order (``ordinal`` counts from 1)."""

    ordinal: int
    id: str
    name: str
    input: Mapping[str, Any]
    result_text: str | None
    is_error: bool | None
    result_data: Any
    injected: tuple[str, ...] = ()
    """Synthetic user messages Claude Code added after this call (the ``Skill`` tool's result
    is only ``Launching skill: NAME``; the skill's body follows in such a message)."""


@frozen
class Child:
    """A child Agent session as the stream showed it: the events Claude Code marks with the
    ``parent_tool_use_id`` of the ``Agent`` call that started it (and the child's ``agent_id``).
    Its calls are the child's own, never the parent session's."""

    parent_id: str
    agent_ids: tuple[str, ...]
    calls: tuple[ToolUse, ...]


@frozen
class Turn:
    session_id: str
    model: str | None
    tools: tuple[str, ...]
    skills: tuple[str, ...]
    permission_mode: str | None
    completed: bool
    calls: tuple[ToolUse, ...]
    final_message: str | None
    usage: Usage
    failure: str | None
    num_turns: int | None
    permission_denials: int
    plugins: tuple[tuple[str, str], ...] = ()
    """``(name, path)`` of each plugin ``system/init`` lists (a built-in's path is ``builtin``)."""
    children: tuple[Child, ...] = ()
    """Child Agent sessions, in the order they started."""
    nested_problem: str | None = None
    """Why the child sessions' events do not form a consistent graph (None when they do)."""
    budget_exhausted: bool = False
    """The turn ended because ``--max-budget-usd`` was reached (``error_max_budget_usd``)."""


def _count(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return value if ok else None


def _usage(raw: Any, cost: Any, by_model: Any = None) -> Usage:
    """Input tokens are fresh + cache writes + cache reads; zero input means nothing was
    measured (a real model call always has input), so it stays unknown unless the process's own
    per-model figures say it (:func:`_process_usage`). Claude Code's own
    ``total_cost_usd`` is kept as the reported cost, beside the one sevro computes from its
    price table (``cost_usd`` stays unknown here). Thinking tokens are counted inside output,
    so complete usage needs input, cache reads and output; the thinking split may be unknown."""
    reported = (
        float(cost)
        if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0
        else None
    )
    if not isinstance(raw, dict):
        return Usage(reported_cost_usd=reported)
    fresh, written, read = (
        _count(raw.get(k))
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    output = _count(raw.get("output_tokens"))
    details = raw.get("output_tokens_details")
    thinking = _count(details.get("thinking_tokens")) if isinstance(details, dict) else None
    total = None if None in (fresh, written, read) else (fresh or 0) + (written or 0) + (read or 0)
    if not total:
        return _process_usage(by_model, reported)
    return Usage(
        input_tokens=total,
        output_tokens=output,
        cached_input_tokens=read,
        reasoning_tokens=thinking,
        complete=output is not None and read is not None,
        reported_cost_usd=reported,
    )


def _process_usage(by_model: Any, reported: float | None) -> Usage:
    """A result that stopped the turn (2.1.332's ``error_max_budget_usd``) reports zero
    ``usage`` though the model answered; ``model_usage_since_last_result`` still holds this
    process's tokens per model. Taken only for exactly one model (tokens of two models cannot
    be priced as the one asked for); anything else stays unknown."""
    unknown = Usage(reported_cost_usd=reported)
    if not isinstance(by_model, dict) or len(by_model) != 1:
        return unknown
    (counts,) = by_model.values()
    if not isinstance(counts, dict):
        return unknown
    fresh, written, read, output = (
        _count(counts.get(k))
        for k in ("inputTokens", "cacheCreationInputTokens", "cacheReadInputTokens", "outputTokens")
    )
    if fresh is None or written is None or read is None or not fresh + written + read:
        return unknown
    return Usage(
        input_tokens=fresh + written + read,
        output_tokens=output,
        cached_input_tokens=read,
        reasoning_tokens=_count(counts.get("thinkingTokens")),
        complete=output is not None,
        reported_cost_usd=reported,
    )


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return None


AGENT_TOOLS = frozenset({"Agent", "Task"})
"""The tool that starts a child session (``Task`` in ``system/init``, ``Agent`` on the wire)."""


class _State:
    def __init__(self) -> None:
        self.init: dict[str, Any] | None = None
        self.result: dict[str, Any] | None = None
        self.calls: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []
        self.children: dict[str, dict[str, Any]] = {}
        """Child sessions by the id of the ``Agent`` call that started them."""
        self.child_calls: dict[str, dict[str, Any]] = {}
        self.nested_problem: str | None = None

    def agent_call(self, call_id: str) -> bool:
        call = self.calls.get(call_id) or self.child_calls.get(call_id)
        return call is not None and call["name"] in AGENT_TOOLS

    def nested(self, event: Mapping[str, Any], number: int) -> dict[str, Any] | None:
        """The child session an event belongs to (None, noting why, when its parent is not
        an ``Agent`` call the stream showed)."""
        parent = event.get("parent_tool_use_id")
        if not isinstance(parent, str) or not self.agent_call(parent):
            self.nested_problem = self.nested_problem or (
                f"line {number}: a child event whose parent is no Agent call"
            )
            return None
        child = self.children.setdefault(parent, {"agents": [], "order": []})
        agent = event.get("agent_id")
        if isinstance(agent, str) and agent not in child["agents"]:
            child["agents"].append(agent[:128])
        return child


def parse_turn(stream: bytes) -> Turn:
    """Parse one turn's stream; raise ``StreamError`` for anything malformed or ambiguous."""
    state = _State()
    for number, line in stream_lines(stream):
        event = decode_event(line, number, EVENT_TYPES)
        kind = event["type"]
        if state.result is not None:
            raise StreamError(f"line {number}: {kind} after the result")
        if state.init is None:
            if kind != "system" or event.get("subtype") != "init":
                raise StreamError(f"line {number}: {kind} before system/init")
            _check_init(event, number)
            state.init = event
            continue
        session = event.get("session_id")
        if session is not None and session != state.init["session_id"]:
            raise StreamError(f"line {number}: event of another session {session!r}")
        if kind == "system" and event.get("subtype") == "init":
            raise StreamError(f"line {number}: a second system/init")
        if kind == "assistant":
            _assistant(event, number, state)
        elif kind == "user":
            _user(event, number, state)
        elif kind == "result":
            if not isinstance(event.get("is_error"), bool) or not isinstance(
                event.get("subtype"), str
            ):
                raise StreamError(f"line {number}: result without boolean is_error and subtype")
            state.result = event
    if state.init is None:
        raise StreamError("event stream has no system/init")
    if state.result is None:
        raise StreamError("event stream ended before its result")
    return _turn(state)


def _check_init(event: Mapping[str, Any], number: int) -> None:
    session = event.get("session_id")
    if not isinstance(session, str) or not session or len(session) > 128:
        raise StreamError(f"line {number}: system/init without a valid session_id")
    for key in ("tools", "skills"):
        value = event.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise StreamError(f"line {number}: system/init {key} is not a list of names")


def _blocks(event: Mapping[str, Any], number: int) -> list[Any]:
    message = event.get("message")
    if not isinstance(message, dict):
        raise StreamError(f"line {number}: {event['type']} without a message object")
    content = message.get("content")
    if isinstance(content, str):
        return []
    if not isinstance(content, list):
        raise StreamError(f"line {number}: {event['type']} message without content")
    return content


def _assistant(event: Mapping[str, Any], number: int, state: _State) -> None:
    child = state.nested(event, number) if event.get("parent_tool_use_id") is not None else None
    if event.get("parent_tool_use_id") is not None and child is None:
        return
    for block in _blocks(event, number):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise StreamError(f"line {number}: content block without a type")
        if block["type"] != "tool_use":
            continue
        call_id, name, arguments = block.get("id"), block.get("name"), block.get("input")
        if not isinstance(call_id, str) or not call_id or not isinstance(name, str):
            raise StreamError(f"line {number}: tool_use without a string id and name")
        if not isinstance(arguments, dict):
            raise StreamError(f"line {number}: tool_use {call_id} input is not an object")
        if call_id in state.calls or call_id in state.child_calls:
            raise StreamError(f"line {number}: tool_use {call_id} appears twice")
        if len(state.order) + len(state.child_calls) >= MAX_HOST_TOOL_CALLS_PER_TURN:
            raise StreamError(f"more than {MAX_HOST_TOOL_CALLS_PER_TURN} tool calls in a turn")
        if child is not None:
            state.child_calls[call_id] = {"name": name, "input": arguments}
            child["order"].append(call_id)
            continue
        state.calls[call_id] = {"name": name, "input": arguments}
        state.order.append(call_id)


def _child_results(event: Mapping[str, Any], number: int, state: _State) -> None:
    """A child session's tool results (its prompt and injected text are not kept)."""
    if state.nested(event, number) is None or event.get("isSynthetic") is True:
        return
    for block in _blocks(event, number):
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        call_id = block.get("tool_use_id")
        call = state.child_calls.get(call_id) if isinstance(call_id, str) else None
        text, is_error = _text(block.get("content", "")), block.get("is_error", False)
        if call is None or "result" in call or text is None or not isinstance(is_error, bool):
            state.nested_problem = state.nested_problem or (
                f"line {number}: a child tool_result that answers no child call once"
            )
            continue
        call["result"], call["is_error"] = text, is_error


def _user(event: Mapping[str, Any], number: int, state: _State) -> None:
    if event.get("parent_tool_use_id") is not None:
        _child_results(event, number, state)
        return
    if event.get("isSynthetic") is True:
        _blocks(event, number)  # the shape is checked like any other message's
        text = _text(event["message"].get("content"))
        if text and state.order:
            state.calls[state.order[-1]].setdefault("injected", []).append(text)
        return
    for block in _blocks(event, number):
        if not isinstance(block, dict) or block.get("type") != "tool_result":
            continue
        call_id = block.get("tool_use_id")
        call = state.calls.get(call_id) if isinstance(call_id, str) else None
        if call is None:
            raise StreamError(f"line {number}: tool_result for an unknown tool_use {call_id!r}")
        if "result" in call:
            raise StreamError(f"line {number}: a second tool_result for {call_id}")
        text = _text(block.get("content", ""))
        is_error = block.get("is_error", False)
        if text is None or not isinstance(is_error, bool):
            raise StreamError(f"line {number}: tool_result {call_id} without text content")
        call["result"] = text
        call["is_error"] = is_error
        call["data"] = event.get("tool_use_result")


def _turn(state: _State) -> Turn:
    init, result = state.init, state.result
    assert init is not None and result is not None
    completed = result["subtype"] == "success" and not result["is_error"]
    final = result.get("result")
    if completed and not isinstance(final, str):
        raise StreamError("a successful result without result text")
    unanswered = [i for i in state.order if "result" not in state.calls[i]]
    if completed and unanswered:
        raise StreamError(f"result with unanswered tool calls: {', '.join(unanswered)}")
    failure = None
    if not completed:
        detail = final if isinstance(final, str) and final else None
        errors = result.get("errors")
        if detail is None and isinstance(errors, list) and errors:
            detail = "; ".join(str(e) for e in errors[:4])
        failure = f"{result['subtype']}: {detail or 'no detail'}"
    calls = _calls(state)
    unsandboxed = _sandbox_failure(calls)
    if unsandboxed is not None:
        completed, failure = False, unsandboxed
    denials = result.get("permission_denials")
    model = init.get("model")
    mode = init.get("permissionMode")
    return Turn(
        session_id=init["session_id"],
        model=model if isinstance(model, str) else None,
        tools=tuple(init.get("tools", [])),
        skills=tuple(init.get("skills", [])),
        permission_mode=mode if isinstance(mode, str) else None,
        completed=completed,
        calls=calls,
        final_message=final if completed else None,
        usage=_usage(
            result.get("usage"),
            result.get("total_cost_usd"),
            result.get("model_usage_since_last_result"),
        ),
        failure=failure,
        num_turns=_count(result.get("num_turns")),
        permission_denials=len(denials) if isinstance(denials, list) else 0,
        plugins=_plugins(init.get("plugins")),
        children=_children(state),
        nested_problem=state.nested_problem,
        budget_exhausted=result["subtype"] == BUDGET_SUBTYPE,
    )


def _children(state: _State) -> tuple[Child, ...]:
    return tuple(
        Child(
            parent_id=parent,
            agent_ids=tuple(child["agents"]),
            calls=tuple(
                ToolUse(
                    ordinal=n,
                    id=i,
                    name=state.child_calls[i]["name"],
                    input=state.child_calls[i]["input"],
                    result_text=state.child_calls[i].get("result"),
                    is_error=state.child_calls[i].get("is_error"),
                    result_data=None,
                )
                for n, i in enumerate(child["order"], start=1)
            ),
        )
        for parent, child in state.children.items()
    )


def _plugins(listed: Any) -> tuple[tuple[str, str], ...]:
    """The plugins ``system/init`` names with a string name and path; anything else is left
    out, so a plugin is loaded only when Claude Code said so plainly."""
    if not isinstance(listed, list):
        return ()
    return tuple(
        (entry["name"], entry["path"])
        for entry in listed
        if isinstance(entry, dict)
        and isinstance(entry.get("name"), str)
        and isinstance(entry.get("path"), str)
    )


def _calls(state: _State) -> tuple[ToolUse, ...]:
    return tuple(
        ToolUse(
            ordinal=n,
            id=i,
            name=state.calls[i]["name"],
            input=state.calls[i]["input"],
            result_text=state.calls[i].get("result"),
            is_error=state.calls[i].get("is_error"),
            result_data=state.calls[i].get("data"),
            injected=tuple(state.calls[i].get("injected", ())),
        )
        for n, i in enumerate(state.order, start=1)
    )


def _sandbox_failure(calls: tuple[ToolUse, ...]) -> str | None:
    """Why the turn failed when Claude Code's sandbox refused to start for a tool call."""
    for call in calls:
        text = call.result_text or ""
        if call.is_error and text.startswith(SANDBOX_FAILED):
            return (
                f"Claude Code's sandbox failed to start, so {call.name} call {call.ordinal} "
                f"ran nothing: {text.splitlines()[0]}"
            )
    return None
