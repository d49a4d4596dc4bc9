"""The strict ``pi --mode json`` parser, on trimmed real pi 0.73.1 captures (tests/hosts_pi/data,
recorded against the mock model) and synthetic damage to them: every detector has a stream it
must reject and a near-identical one it must accept."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve

from sevro_core.api import StreamError, Usage
from sevro_hosts_pi import events
from sevro_hosts_pi.events import ToolExecution, parse_turn
from tests.hosts_pi.test_observer import run_pi

DATA = Path(__file__).parent / "data"
SESSION = "01a2436d-2a26-7446-99bd-b14c394e7c68"
"""The session id of ``responses_bash.jsonl``."""

Event = dict[str, Any]


def capture(name: str) -> bytes:
    return (DATA / name).read_bytes()


def load(name: str) -> list[Event]:
    return [json.loads(line) for line in capture(name).splitlines()]


def dump(stream: list[Event]) -> bytes:
    """Events as pi prints them (``JSON.stringify``: compact, ``type`` first)."""
    return b"".join(
        json.dumps(e, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" for e in stream
    )


def edited(change: Callable[[list[Event]], None], name: str = "responses_bash.jsonl") -> bytes:
    stream = load(name)
    change(stream)
    return dump(stream)


def index(stream: list[Event], kind: str, nth: int = 0) -> int:
    return [i for i, e in enumerate(stream) if e["type"] == kind][nth]


def rejects(stream: bytes, match: str, **kwargs: Any) -> None:
    with pytest.raises(StreamError, match=match):
        parse_turn(stream, **kwargs)


# --- real captures --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["responses_bash.jsonl", "anthropic_bash.jsonl"])
def test_a_bash_round_trip_on_either_wire_api(name: str) -> None:
    turn = parse_turn(capture(name))
    assert turn.completed and turn.failure is None
    assert turn.final_message == "done: made.txt written"
    assert turn.requests == 2
    (call,) = turn.tools
    assert (call.name, call.arguments, call.result_text, call.is_error, call.ordinal) == (
        "bash",
        {"command": "echo hi > made.txt && ls"},
        "made.txt\n",
        False,
        0,
    )
    # pi reports fresh input; sevro counts fresh + cached (2 x (80 + 20)), no reasoning/cost
    assert turn.usage == Usage(input_tokens=200, output_tokens=20, cached_input_tokens=40)


def test_the_read_tool_and_a_custom_extension_tool() -> None:
    read = parse_turn(capture("read_tool.jsonl")).tools
    assert [(t.name, t.arguments.get("path")) for t in read] == [("read", "big.txt")]
    assert read[0].result_text is not None and "more lines in file" in read[0].result_text
    custom = parse_turn(capture("custom_tool.jsonl")).tools
    assert custom == (
        ToolExecution(
            call_id="call_1|item_1_0",
            name="probe_tool",
            arguments={"x": "abc"},
            result_text="probe:abc",
            is_error=False,
            ordinal=0,
        ),
    )


def test_parallel_tools_interleave_and_a_failed_tool_is_no_failed_turn() -> None:
    turn = parse_turn(capture("anthropic_parallel_tools.jsonl"))
    assert turn.completed and turn.final_message == "both done"
    assert [(t.call_id, t.result_text, t.is_error, t.ordinal) for t in turn.tools] == [
        ("toolu_mock_1_0", "a\n", False, 0),
        ("toolu_mock_1_1", "b\n", False, 1),
        (
            "toolu_mock_1_2",
            "ENOENT: no such file or directory, access '/tmp/h-events/two/ws/nope.txt'",
            True,
            2,
        ),
    ]

    def result_during_tools(stream: list[Event]) -> None:
        result = stream.pop(index(stream, "message_start", 2))
        stream.insert(index(stream, "tool_execution_end"), result)

    rejects(
        edited(result_during_tools, "anthropic_parallel_tools.jsonl"), "while a tool is running"
    )


def test_a_second_turn_must_continue_the_expected_session() -> None:
    stream = capture("second_turn.jsonl")
    expected = "01a2436d-7931-75fc-8fe6-242891794455"
    assert parse_turn(stream, session_id=expected).final_message == "turn two"
    rejects(stream, "not the expected session", session_id=SESSION)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("responses_http500.jsonl", "500 mock model: scripted"),
        ("anthropic_cut.jsonl", "Anthropic stream ended before message_stop"),
        ("anthropic_error.jsonl", "boom"),
    ],
)
def test_a_failed_model_request_fails_the_turn_although_pi_exits_0(name: str, reason: str) -> None:
    turn = parse_turn(capture(name))
    assert not turn.completed
    assert turn.failure is not None and reason in turn.failure
    assert turn.final_message is None  # the partial reply is never the answer


def test_an_error_message_alone_fails_the_turn() -> None:
    def error(stream: list[Event]) -> None:
        stream[index(stream, "message_end", 3)]["message"]["errorMessage"] = "quota"

    turn = parse_turn(edited(error))
    assert not turn.completed and turn.failure is not None and "quota" in turn.failure
    assert parse_turn(capture("responses_bash.jsonl")).completed


def test_usage_all_zero_stays_unknown() -> None:
    assert parse_turn(capture("responses_nousage.jsonl")).usage == Usage()
    assert parse_turn(capture("responses_nousage.jsonl")).completed


# --- framing --------------------------------------------------------------------------------


def test_a_stream_cut_mid_line_or_before_agent_end_is_truncated() -> None:
    whole = capture("responses_bash.jsonl")
    rejects(whole[:-1], "no newline")
    cut = b"".join(whole.splitlines(keepends=True)[:-1])  # everything but agent_end
    rejects(cut, "ended before agent_end")
    rejects(b"", "empty")
    assert parse_turn(whole).completed


def test_malformed_lines_are_named() -> None:
    def replace(line: bytes) -> bytes:
        lines = capture("responses_bash.jsonl").splitlines(keepends=True)
        lines[2] = line
        return b"".join(lines)

    rejects(replace(b"{not json\n"), "line 3 is not JSON")
    rejects(replace(b'["turn_start"]\n'), "line 3 is not an event object")
    rejects(replace(b'{"type":"turn_start","n":NaN}\n'), "line 3 is not JSON")
    rejects(replace(b'{"type":"turn_begin"}\n'), "line 3 has an unknown event type")
    rejects(replace(b"\n"), "line 3 is blank")
    rejects(replace(b'{"type":"turn_start"}\xff\n'), "line 3 is not JSON")
    assert parse_turn(replace(b'{"type":"turn_start"}\n')).completed


def test_update_lines_are_still_decoded_and_placed() -> None:
    def broken_update(stream: list[Event]) -> None:
        stream[index(stream, "message_update")] = {"type": "message_update", "x": 1}

    assert parse_turn(edited(broken_update)).completed  # its body is not walked
    lines = capture("responses_bash.jsonl").splitlines(keepends=True)
    update = index(load("responses_bash.jsonl"), "message_update")
    lines[update] = b'{"type":"message_update",' + b"oops\n"
    rejects(b"".join(lines), f"line {update + 1} is not JSON")

    def stray_update(stream: list[Event]) -> None:
        stream.insert(index(stream, "turn_start"), {"type": "message_update"})

    rejects(edited(stray_update), "message_update outside an assistant message")

    def stray_tool_update(stream: list[Event]) -> None:
        stream.insert(index(stream, "turn_start"), {"type": "tool_execution_update"})

    rejects(edited(stray_tool_update), "tool_execution_update of no running tool")


def test_update_bodies_are_not_needed() -> None:
    """A stream whose updates were stripped of their repeated partial bodies (the quadratic
    part) parses to the same turn: only their place in the stream is checked."""

    def strip(stream: list[Event]) -> None:
        for i, event in enumerate(stream):
            if event["type"] == "message_update":
                stream[i] = {"type": "message_update"}
            elif event["type"] == "tool_execution_update":
                stream[i] = {"type": "tool_execution_update", "toolCallId": event["toolCallId"]}

    name = "anthropic_parallel_tools.jsonl"
    assert parse_turn(edited(strip, name)) == parse_turn(capture(name))


def test_line_and_stream_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = capture("responses_bash.jsonl")
    longest = max(len(line) for line in stream.splitlines())
    monkeypatch.setattr(events, "MAX_PI_EVENT_LINE_BYTES", longest)
    monkeypatch.setattr(events, "MAX_PI_EVENT_STREAM_BYTES", len(stream))
    assert parse_turn(stream).completed
    monkeypatch.setattr(events, "MAX_PI_EVENT_LINE_BYTES", longest - 1)
    rejects(stream, "longer than")
    monkeypatch.setattr(events, "MAX_PI_EVENT_LINE_BYTES", longest)
    monkeypatch.setattr(events, "MAX_PI_EVENT_STREAM_BYTES", len(stream) - 1)
    rejects(stream, "larger than")


# --- the header and the agent run -----------------------------------------------------------


def test_the_session_header_comes_first_and_once() -> None:
    rejects(edited(lambda s: s.pop(0)), "line 1: agent_start before the session header")
    rejects(edited(lambda s: s.insert(2, dict(s[0]))), "line 3: a second session header")
    rejects(edited(lambda s: s[0].update(id="")), "session header without a valid id")
    rejects(edited(lambda s: s[0].update(version="3")), "without a positive version")
    rejects(edited(lambda s: s[0].pop("cwd")), "session header without a cwd")
    assert parse_turn(capture("responses_bash.jsonl"), session_id=SESSION).session_id == SESSION


def test_nothing_but_bookkeeping_follows_agent_end() -> None:
    def trailing(event: Event) -> Callable[[list[Event]], None]:
        return lambda s: s.append(event)

    rejects(edited(trailing({"type": "turn_start"})), "turn_start outside an agent run")
    last = load("responses_bash.jsonl")[index(load("responses_bash.jsonl"), "message_end", 3)]
    rejects(edited(trailing(last)), "message_end outside an agent run")
    rejects(edited(trailing({"type": "agent_start"})), "a second agent_start without a retry")
    rejects(edited(trailing({"type": "agent_end", "messages": []})), "outside an agent run")

    def compaction(stream: list[Event]) -> None:
        stream.append({"type": "compaction_start", "reason": "threshold"})
        stream.append({"type": "compaction_end", "reason": "threshold", "willRetry": False})
        stream.append({"type": "queue_update", "steering": [], "followUp": []})

    assert parse_turn(edited(compaction)).completed
    rejects(edited(lambda s: compaction(s) or s.pop(-2)), "ended during a compaction")

    custom = {"role": "custom", "customType": "probe", "content": "note", "display": True}

    def idle_message(stream: list[Event]) -> None:
        stream.append({"type": "message_start", "message": custom})
        stream.append({"type": "message_end", "message": custom})
        stream.append({"type": "thinking_level_changed", "level": "low"})

    assert parse_turn(edited(idle_message)).final_message == "done: made.txt written"
    rejects(edited(lambda s: idle_message(s) or s.pop(-2)), "ended during a compaction or custom")
    rejects(edited(lambda s: idle_message(s) or s.pop(-3)), "unpaired custom message_end")

    def idle_user_message(stream: list[Event]) -> None:
        idle_message(stream)
        stream[-3]["message"] = {**custom, "role": "user"}

    rejects(edited(idle_user_message), "message_start outside an agent run")


def _retried(stream: list[Event]) -> None:
    """The first request fails (500), pi retries: a second agent run that succeeds."""
    first = load("responses_http500.jsonl")
    stream[1:1] = [
        *first[1:],
        {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 1},
    ]


def test_real_retries_recovered_and_exhausted() -> None:
    """pi with retry on (captured): a 500, then ``auto_retry_start`` and a second agent run."""
    recovered = parse_turn(capture("anthropic_retry_recovered.jsonl"))
    assert recovered.completed and recovered.final_message == "recovered"
    assert recovered.requests == 2
    exhausted = parse_turn(capture("anthropic_retry_exhausted.jsonl"))
    assert not exhausted.completed and exhausted.requests == 3
    assert exhausted.failure is not None and "500" in exhausted.failure

    def no_retry(stream: list[Event]) -> None:
        stream.pop(index(stream, "auto_retry_start"))

    rejects(edited(no_retry, "anthropic_retry_recovered.jsonl"), "second agent_start without")


def test_a_retry_opens_one_more_run_and_its_success_decides() -> None:
    turn = parse_turn(edited(_retried))
    assert turn.completed and turn.final_message == "done: made.txt written"
    assert turn.requests == 3

    def retry_without_run(stream: list[Event]) -> None:
        stream.append({"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 1})

    rejects(edited(retry_without_run), "ended while pi was retrying")

    def retry_fails(stream: list[Event]) -> None:
        _retried(stream)
        stream[index(stream, "message_end", 5)]["message"]["stopReason"] = "aborted"

    turn = parse_turn(edited(retry_fails))
    assert not turn.completed and turn.failure is not None and "aborted" in turn.failure

    def compaction_retry(stream: list[Event]) -> None:
        stream[1:1] = [
            *load("responses_http500.jsonl")[1:],
            {"type": "compaction_start", "reason": "overflow"},
            {"type": "compaction_end", "reason": "overflow", "willRetry": True},
        ]

    assert parse_turn(edited(compaction_retry)).completed

    def compaction_no_retry(stream: list[Event]) -> None:
        compaction_retry(stream)
        stream[index(stream, "compaction_end")]["willRetry"] = False

    rejects(edited(compaction_no_retry), "a second agent_start without a retry")


def test_turns_and_messages_nest() -> None:
    rejects(edited(lambda s: s.pop(index(s, "turn_end"))), "turn_start inside a turn")
    rejects(edited(lambda s: s.pop(index(s, "turn_start"))), "message_start outside a turn")
    rejects(edited(lambda s: s.pop(index(s, "message_end", 1))), "inside an open assistant")
    rejects(edited(lambda s: s.pop(index(s, "message_end"))), "message_start inside an open user")

    def role_mismatch(stream: list[Event]) -> None:
        stream[index(stream, "message_end")]["message"]["role"] = "assistant"

    rejects(edited(role_mismatch), "message_end of an unstarted assistant message")

    def unknown_role(stream: list[Event]) -> None:
        stream[index(stream, "message_end")]["message"]["role"] = "robot"

    rejects(edited(unknown_role), "without a message of a known role")
    rejects(edited(lambda s: s.pop(index(s, "agent_start"))), "turn_start outside an agent run")
    rejects(edited(lambda s: s.pop(-2)), "agent_end with a turn, message or tool still open")


def test_assistant_messages_are_checked() -> None:
    def field(key: str, value: Any) -> Callable[[list[Event]], None]:
        def change(stream: list[Event]) -> None:
            stream[index(stream, "message_end", 3)]["message"][key] = value

        return change

    rejects(edited(field("stopReason", "done")), "stopReason 'done'")
    rejects(edited(field("content", "text")), "without a content list")
    rejects(edited(field("content", [{"type": "audio"}])), "content block of type 'audio'")
    rejects(edited(field("content", [{"type": "text"}])), "text block without text")
    rejects(edited(field("usage", {"input": -1})), "usage is not four token counts")
    rejects(edited(field("errorMessage", 5)), "errorMessage is not a string")
    assert parse_turn(edited(field("stopReason", "length"))).completed


# --- tools ----------------------------------------------------------------------------------


def test_every_tool_execution_answers_one_call_once() -> None:
    def restart(stream: list[Event]) -> None:
        at = index(stream, "tool_execution_end")
        stream.insert(at + 1, dict(stream[index(stream, "tool_execution_start")]))

    rejects(edited(restart), "started twice")

    def uncalled(stream: list[Event]) -> None:
        for kind in ("tool_execution_start", "tool_execution_update", "tool_execution_end"):
            for event in stream:
                if event["type"] == kind:
                    event["toolCallId"] = "call_9"

    rejects(edited(uncalled), "answers no call of the last reply")

    def renamed(stream: list[Event]) -> None:
        stream[index(stream, "tool_execution_start")]["toolName"] = "write"

    rejects(edited(renamed), "differs from its call")

    def end_renamed(stream: list[Event]) -> None:
        stream[index(stream, "tool_execution_end")]["toolName"] = "write"

    rejects(edited(end_renamed), "names 'write'")

    def unstarted(stream: list[Event]) -> None:
        at = index(stream, "tool_execution_start")
        del stream[at : index(stream, "tool_execution_end") + 1]

    rejects(edited(unstarted), "turn_end with open work call_1")

    def unended(stream: list[Event]) -> None:
        stream.pop(index(stream, "tool_execution_end"))

    rejects(edited(unended), "while a tool is running")

    def no_is_error(stream: list[Event]) -> None:
        stream[index(stream, "tool_execution_end")].pop("isError")

    rejects(edited(no_is_error), "without boolean isError")

    def bad_result(stream: list[Event]) -> None:
        stream[index(stream, "tool_execution_end")]["result"] = {"content": "x"}

    rejects(edited(bad_result), "content is no block list")
    assert parse_turn(capture("responses_bash.jsonl")).tools[0].result_text == "made.txt\n"


def test_a_call_id_used_twice_in_a_turn_is_ambiguous() -> None:
    def reuse(stream: list[Event]) -> None:
        end = stream[index(stream, "message_end", 3)]["message"]
        end["content"].append(
            {"type": "toolCall", "id": "call_1|item_1_0", "name": "bash", "arguments": {}}
        )
        end["stopReason"] = "toolUse"

    rejects(edited(reuse), "tool call call_1\\|item_1_0 appears twice")


def test_the_tool_execution_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = capture("responses_bash.jsonl")
    monkeypatch.setattr(events, "MAX_PI_TOOL_EXECUTIONS_PER_TURN", 1)
    assert len(parse_turn(stream).tools) == 1
    monkeypatch.setattr(events, "MAX_PI_TOOL_EXECUTIONS_PER_TURN", 0)
    rejects(stream, "more than 0 tool executions")


def test_a_result_without_content_is_unknown_text() -> None:
    def bare(stream: list[Event]) -> None:
        stream[index(stream, "tool_execution_end")]["result"] = {"details": {}}

    assert parse_turn(edited(bare)).tools[0].result_text is None


# --- the stdout filter, with the real pi -----------------------------------------------------

FILTER = Path(events.__file__).with_name("events_filter.mjs")
STUBS = {b'{"type":"message_update"}'}


def test_the_stdout_filter_stubs_updates_and_changes_no_turn(tmp_path: Path) -> None:
    """pi under ``node --import events_filter.mjs`` prints each update as a stub holding its
    place (the stream then grows linearly); the turn it parses to is the unfiltered one's."""
    _, plain, _ = run_pi(tmp_path / "plain", with_observer=False)
    _, filtered, _ = run_pi(tmp_path / "filtered", with_observer=False, preload=FILTER)

    def updates(stream: bytes) -> list[bytes]:
        return [line for line in stream.splitlines() if b'_update"' in line[:40]]

    assert len(updates(filtered)) == len(updates(plain)) >= 3
    assert updates(plain) != updates(filtered)
    tool_stub = re.compile(rb'\{"type":"tool_execution_update","toolCallId":"[^"]+"\}')
    assert all(line in STUBS or tool_stub.fullmatch(line) for line in updates(filtered))
    assert any(tool_stub.fullmatch(line) for line in updates(filtered))
    others = [line for line in filtered.splitlines() if line not in updates(filtered)]
    assert len(others) == len(plain.splitlines()) - len(updates(plain))
    assert evolve(parse_turn(filtered), session_id="") == evolve(parse_turn(plain), session_id="")
