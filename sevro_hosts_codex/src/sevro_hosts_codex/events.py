"""Strict parsing of one ``codex exec --json`` turn (JSONL on stdout).

A turn is trusted only when the stream has exactly one ``thread.started`` and one
``turn.started``, every line is a bounded JSON object of a known type, items are consistent, and
it ends with exactly one ``turn.completed``. Anything else raises ``StreamError`` with a short
diagnostic: an unreadable stream is an execution failure, never a pass. Usage absent from the
stream stays unknown (``None``), never zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import frozen

from sevro_core.api import StreamError, Usage, decode_event, stream_lines

__all__ = ["Item", "StreamError", "Turn", "parse_turn"]

EVENT_TYPES = frozenset(
    {
        "thread.started",
        "turn.started",
        "turn.completed",
        "turn.failed",
        "item.started",
        "item.updated",
        "item.completed",
        "error",
    }
)
ITEM_TYPES = frozenset(
    {
        "agent_message",
        "reasoning",
        "command_execution",
        "file_change",
        "mcp_tool_call",
        "collab_tool_call",
        "web_search",
        "todo_list",
        "error",
    }
)
_USAGE_FIELDS = {
    "input_tokens": "input_tokens",
    "cached_input_tokens": "cached_input_tokens",
    "output_tokens": "output_tokens",
    "reasoning_output_tokens": "reasoning_tokens",
}


@frozen
class Item:
    """A completed item, in completion order (``ordinal`` counts from 1 within the turn)."""

    ordinal: int
    id: str
    type: str
    data: Mapping[str, Any]


@frozen
class Turn:
    thread_id: str
    completed: bool
    items: tuple[Item, ...]
    final_message: str | None
    usage: Usage
    failure: str | None
    warnings: tuple[str, ...]
    native_turns: int = 1
    """Native turns behind this prompt (``app-server`` runs goal continuations itself)."""


def _usage(raw: Any) -> Usage:
    """Codex reports all-zero usage when the model sent none; a real turn always has input
    tokens, so zero input means unknown, never a measured zero."""
    if not isinstance(raw, dict) or raw.get("input_tokens") == 0:
        return Usage()
    values: dict[str, int | None] = {}
    for wire, name in _USAGE_FIELDS.items():
        value = raw.get(wire)
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        values[name] = value if ok else None
    complete = all(v is not None for v in values.values())
    return Usage(complete=complete, **values)


def _message(event: Mapping[str, Any]) -> str:
    error = event.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    return str(event.get("message", "no message"))


def parse_turn(stream: bytes) -> Turn:
    """Parse one turn's stream; raise ``StreamError`` for anything malformed or ambiguous."""
    thread_id: str | None = None
    turn_started = False
    terminal: str | None = None
    failure: str | None = None
    usage = Usage()
    open_items: dict[str, str] = {}
    done: dict[str, Item] = {}
    warnings: list[str] = []
    for number, line in stream_lines(stream):
        event = decode_event(line, number, EVENT_TYPES)
        kind = event["type"]
        if terminal is not None:
            raise StreamError(f"line {number}: {kind} after {terminal}")
        if kind == "thread.started":
            if thread_id is not None:
                raise StreamError(f"line {number}: a second thread.started")
            value = event.get("thread_id")
            if not isinstance(value, str) or not value or len(value) > 128:
                raise StreamError(f"line {number}: thread.started without a valid thread_id")
            thread_id = value
            continue
        if thread_id is None:
            raise StreamError(f"line {number}: {kind} before thread.started")
        if kind == "turn.started":
            if turn_started:
                raise StreamError(f"line {number}: a second turn.started")
            turn_started = True
        elif kind == "error":
            failure = failure or _message(event)
        elif kind in ("turn.completed", "turn.failed"):
            if not turn_started:
                raise StreamError(f"line {number}: {kind} before turn.started")
            terminal = kind
            if kind == "turn.completed":
                usage = _usage(event.get("usage"))
            else:
                failure = _message(event)
        else:
            _item_event(event, kind, number, open_items, done, warnings)
    if thread_id is None:
        raise StreamError("event stream has no thread.started")
    if terminal is None:
        raise StreamError("event stream ended before turn.completed or turn.failed")
    completed = terminal == "turn.completed"
    if completed and failure is not None:
        raise StreamError(f"turn.completed after an error event ({failure})")
    if completed and open_items:
        raise StreamError(f"turn.completed with unfinished items: {', '.join(sorted(open_items))}")
    items = tuple(sorted(done.values(), key=lambda i: i.ordinal))
    messages = [i for i in items if i.type == "agent_message"]
    final = str(messages[-1].data["text"]) if messages and completed else None
    return Turn(
        thread_id=thread_id,
        completed=completed,
        items=items,
        final_message=final,
        usage=usage,
        failure=failure,
        warnings=tuple(warnings),
    )


def _item_event(
    event: Mapping[str, Any],
    kind: str,
    number: int,
    open_items: dict[str, str],
    done: dict[str, Item],
    warnings: list[str],
) -> None:
    item = event.get("item")
    if not isinstance(item, dict):
        raise StreamError(f"line {number}: {kind} without an item object")
    item_id, item_type = item.get("id"), item.get("type")
    if not isinstance(item_id, str) or not item_id or not isinstance(item_type, str):
        raise StreamError(f"line {number}: {kind} item without a string id and type")
    if item_type not in ITEM_TYPES:
        raise StreamError(f"line {number}: unknown item type {item_type!r}")
    if item_id in done:
        raise StreamError(f"line {number}: item {item_id} appears after it completed")
    if item_id in open_items and open_items[item_id] != item_type:
        raise StreamError(f"line {number}: item {item_id} changed type")
    _check_item(item, item_type, number)
    if kind == "item.completed":
        open_items.pop(item_id, None)
        done[item_id] = Item(ordinal=len(done) + 1, id=item_id, type=item_type, data=item)
        if item_type == "error":
            warnings.append(str(item.get("message", "")))
    else:
        open_items[item_id] = item_type


def _check_item(item: Mapping[str, Any], item_type: str, number: int) -> None:
    if item_type in ("agent_message", "reasoning"):
        if not isinstance(item.get("text"), str):
            raise StreamError(f"line {number}: {item_type} without text")
    elif item_type == "error":
        if not isinstance(item.get("message"), str):
            raise StreamError(f"line {number}: error item without a message")
    elif item_type == "command_execution":
        code = item.get("exit_code")
        if not isinstance(item.get("command"), str) or not (code is None or isinstance(code, int)):
            raise StreamError(f"line {number}: command_execution without command and exit_code")
        if not isinstance(item.get("aggregated_output", ""), str):
            raise StreamError(f"line {number}: command_execution output is not a string")
    elif item_type == "file_change" and not isinstance(item.get("changes", []), list):
        raise StreamError(f"line {number}: file_change without a list of changes")
