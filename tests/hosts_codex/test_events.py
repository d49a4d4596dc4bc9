"""Strict parsing of `codex exec --json` streams: anything doubtful is a StreamError."""

from __future__ import annotations

import json

import pytest

from sevro_core.limits import MAX_HOST_EVENT_LINE_BYTES
from sevro_hosts_codex.events import StreamError, parse_turn

START = [{"type": "thread.started", "thread_id": "t-1"}, {"type": "turn.started"}]
USAGE = {
    "input_tokens": 10,
    "cached_input_tokens": 2,
    "output_tokens": 5,
    "reasoning_output_tokens": 1,
}


def stream(*events: object) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def message(item_id: str, text: str) -> dict[str, object]:
    return {
        "type": "item.completed",
        "item": {"id": item_id, "type": "agent_message", "text": text},
    }


def test_last_agent_message_of_the_completed_turn_is_final() -> None:
    turn = parse_turn(
        stream(
            *START,
            message("a", "first"),
            message("b", "last"),
            {"type": "turn.completed", "usage": USAGE},
        )
    )
    assert turn.completed and turn.final_message == "last" and turn.thread_id == "t-1"
    assert turn.usage.input_tokens == 10 and turn.usage.reasoning_tokens == 1
    assert turn.usage.complete


@pytest.mark.parametrize("usage", [None, {}, {"input_tokens": 0, "output_tokens": 0}])
def test_missing_usage_stays_unknown(usage: object) -> None:
    completed: dict[str, object] = {"type": "turn.completed"}
    if usage is not None:
        completed["usage"] = usage
    turn = parse_turn(stream(*START, message("a", "x"), completed))
    assert turn.usage.input_tokens is None and not turn.usage.complete


def test_a_failed_turn_has_no_final_message() -> None:
    turn = parse_turn(
        stream(*START, message("a", "x"), {"type": "turn.failed", "error": {"message": "boom"}})
    )
    assert not turn.completed and turn.final_message is None and turn.failure == "boom"


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"", "no thread.started"),
        (stream(*START), "ended before turn.completed"),
        (stream(*START)[:-1], "truncated"),
        (b"not json\n", "not JSON"),
        (b"[1]\n", "event object"),
        (stream({"type": "surprise"}), "unknown event type"),
        (stream(START[1]), "before thread.started"),
        (stream(START[0], START[0]), "second thread.started"),
        (stream(*START, START[1]), "second turn.started"),
        (stream(*START, {"type": "turn.completed"}, message("a", "x")), "after turn.completed"),
        (stream(*START, message("a", "x"), message("a", "y")), "after it completed"),
        (
            stream(*START, {"type": "item.completed", "item": {"id": "a", "type": "novel"}}),
            "unknown item type",
        ),
        (
            stream(*START, {"type": "error", "message": "x"}, {"type": "turn.completed"}),
            "after an error",
        ),
        (
            stream(
                *START,
                {
                    "type": "item.started",
                    "item": {
                        "id": "c",
                        "type": "command_execution",
                        "command": "ls",
                        "exit_code": None,
                    },
                },
                {"type": "turn.completed"},
            ),
            "unfinished items",
        ),
        (b'{"type": "thread.started", "thread_id": NaN}\n', "not JSON"),
    ],
)
def test_doubtful_streams_are_errors(data: bytes, fragment: str) -> None:
    with pytest.raises(StreamError, match=fragment):
        parse_turn(data)


def test_an_oversized_line_is_an_error() -> None:
    line = json.dumps({"type": "thread.started", "thread_id": "x" * MAX_HOST_EVENT_LINE_BYTES})
    with pytest.raises(StreamError, match="longer than"):
        parse_turn(line.encode() + b"\n")
