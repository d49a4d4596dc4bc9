"""Strict parsing of Claude Code stream-json, and is_error with exit 0 as a failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.limits import MAX_HOST_EVENT_LINE_BYTES
from sevro_core.models import ProcessOutcome
from sevro_hosts_claude.events import StreamError, parse_turn

SID = "0b7c9a52-0000-4000-8000-000000000001"
INIT = {"type": "system", "subtype": "init", "session_id": SID, "tools": ["Bash"], "skills": []}
USAGE = {
    "input_tokens": 80,
    "cache_creation_input_tokens": 5,
    "cache_read_input_tokens": 20,
    "output_tokens": 10,
    "output_tokens_details": {"thinking_tokens": 2},
}


def stream(*events: object) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def result(**fields: Any) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "done",
        "session_id": SID,
        "usage": USAGE,
        "total_cost_usd": 0.25,
        **fields,
    }


def tool_use(call_id: str) -> dict[str, Any]:
    content = [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "ls"}}]
    return {"type": "assistant", "session_id": SID, "message": {"content": content}}


def tool_result(call_id: str, text: str = "x") -> dict[str, Any]:
    content = [{"type": "tool_result", "tool_use_id": call_id, "content": text}]
    return {"type": "user", "session_id": SID, "message": {"content": content}}


def test_the_result_text_is_final_and_usage_sums_cache_tokens() -> None:
    turn = parse_turn(stream(INIT, tool_use("t1"), tool_result("t1", "ok"), result()))
    assert turn.completed and turn.final_message == "done" and turn.session_id == SID
    assert turn.usage.input_tokens == 105 and turn.usage.cached_input_tokens == 20
    assert turn.usage.reasoning_tokens == 2 and turn.usage.complete
    # Claude Code's own cost is kept as reported, beside the one sevro computes from prices.
    assert turn.usage.reported_cost_usd == 0.25 and turn.usage.cost_usd is None
    (call,) = turn.calls
    assert call.ordinal == 1 and call.result_text == "ok" and call.is_error is False


@pytest.mark.parametrize("usage", [None, {}, {"input_tokens": 0, "output_tokens": 0}])
def test_missing_usage_stays_unknown(usage: object) -> None:
    fields: dict[str, Any] = {"usage": usage} if usage is not None else {"usage": None}
    turn = parse_turn(stream(INIT, result(**fields, total_cost_usd=None)))
    assert turn.usage.input_tokens is None and turn.usage.cost_usd is None
    assert turn.usage.reported_cost_usd is None and not turn.usage.complete


def test_the_reported_cost_is_kept_when_usage_is_missing() -> None:
    turn = parse_turn(stream(INIT, result(usage=None, total_cost_usd=0.5)))
    assert turn.usage.reported_cost_usd == 0.5 and not turn.usage.complete


@pytest.mark.parametrize("cost", [None, -1, True, "0.25"])
def test_a_missing_or_bad_reported_cost_stays_unknown(cost: object) -> None:
    turn = parse_turn(stream(INIT, result(total_cost_usd=cost)))
    assert turn.usage.reported_cost_usd is None
    assert turn.usage.complete  # the tokens are complete without Claude Code's own cost


def test_usage_without_the_thinking_split_is_complete() -> None:
    usage = {k: v for k, v in USAGE.items() if k != "output_tokens_details"}
    turn = parse_turn(stream(INIT, result(usage=usage)))
    assert turn.usage.complete and turn.usage.reasoning_tokens is None


def test_usage_without_output_tokens_is_incomplete() -> None:
    usage = {k: v for k, v in USAGE.items() if k != "output_tokens"}
    turn = parse_turn(stream(INIT, result(usage=usage)))
    assert not turn.usage.complete and turn.usage.reported_cost_usd == 0.25


def test_is_error_is_a_failed_turn() -> None:
    turn = parse_turn(stream(INIT, result(is_error=True, result="API Error: 500")))
    assert not turn.completed and turn.final_message is None
    assert turn.failure == "success: API Error: 500"


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ((), "no system/init"),
        ((INIT,), "ended before its result"),
        ((tool_use("t1"), result()), "before system/init"),
        ((INIT, INIT, result()), "a second system/init"),
        ((INIT, result(), result()), "after the result"),
        ((INIT, {"type": "surprise"}, result()), "unknown event type"),
        ((INIT, tool_result("nope"), result()), "unknown tool_use"),
        ((INIT, tool_use("t1"), result()), "unanswered tool calls"),
        ((INIT, tool_use("t1"), tool_use("t1")), "appears twice"),
        ((INIT, {**result(), "session_id": "other"}), "another session"),
        ((INIT, {"type": "result", "subtype": "success"}), "boolean is_error"),
    ],
)
def test_malformed_streams_are_rejected(events: tuple[object, ...], message: str) -> None:
    with pytest.raises(StreamError, match=message):
        parse_turn(stream(*events))


def test_a_hook_heartbeat_is_accepted_and_ignored() -> None:
    """Claude Code prints ``tool_progress`` every 30 s while a hook (a native goal's Stop
    evaluator) runs; it neither fails the turn nor becomes a call. Another session's still
    does (the heartbeat is checked like every event)."""
    progress = {
        "type": "tool_progress",
        "tool_use_id": "hook-Stop-1-heartbeat-0",
        "tool_name": "Stop",
        "elapsed_time_seconds": 30,
        "heartbeat": True,
        "session_id": SID,
    }
    turn = parse_turn(stream(INIT, progress, result()))
    assert turn.completed and turn.calls == ()
    with pytest.raises(StreamError, match="another session"):
        parse_turn(stream(INIT, {**progress, "session_id": "other"}, result()))


def test_truncated_and_oversized_lines_are_rejected() -> None:
    with pytest.raises(StreamError, match="truncated"):
        parse_turn(stream(INIT, result())[:-1])
    with pytest.raises(StreamError, match="longer than"):
        parse_turn(b"{" + b" " * MAX_HOST_EVENT_LINE_BYTES + b"}\n")
    with pytest.raises(StreamError, match="not JSON"):
        parse_turn(stream(INIT) + b"{oops\n")


def test_is_error_with_exit_code_zero_fails_execution(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Claude Code 2.1.332 exits 1 with its error results; sevro must not rely on that."""
    from sevro_core.hosts import agentcli
    from sevro_core.models import CancelToken, HostRequest
    from sevro_core.plugin.protocols import HostOptions
    from sevro_hosts_claude import host as module
    from sevro_hosts_claude.testing import require_claude

    claude = require_claude()
    monkeypatch.setenv("SEVRO_TEST_EVENTS_KEY", "sk-events-test")
    settings = {"claude.bin": claude, "claude.apiKeyEnv": "SEVRO_TEST_EVENTS_KEY"}
    configured = module.ClaudeHost().configure(HostOptions(settings=settings))

    def fake_run(argv: list[str], **kwargs: Any) -> ProcessOutcome:
        session = argv[argv.index("--session-id") + 1]
        init = {**INIT, "session_id": session}
        data = stream(init, result(session_id=session, is_error=True, result="quota"))
        return ProcessOutcome(0, False, False, data, False, 1.0)

    monkeypatch.setattr(agentcli, "run_bounded", fake_run)
    workspace, private = tmp_path / "ws", tmp_path / "private"
    workspace.mkdir()
    private.mkdir()
    request = HostRequest(
        case_id="c",
        trial=1,
        prompts=("Go.",),
        workspace=workspace,
        condition="passive",
        cancel=CancelToken(),
        private_root=private,
    )
    outcome = configured.run(request)
    assert outcome.execution_failed and not outcome.complete and outcome.final_message is None
    assert outcome.error is not None and "(claude exited 0): success: quota" in outcome.error
