"""The app-server conversation's strict reading, message by message (the parsing controls; the
real-CLI runs are in test_appserver_real_cli.py)."""

from __future__ import annotations

from typing import Any

import pytest

from sevro_hosts_codex.appserver import AppServerError, Chain, Conversation, decode

THREAD, ROOT, NEXT = "thread-1", "turn-1", "turn-2"


def conversation() -> Conversation:
    found = Conversation.__new__(Conversation)
    Conversation.__init__(found, connection=None)  # type: ignore[arg-type]
    found.thread_id = THREAD
    return found


def note(method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def started(turn: str, root: str = ROOT, thread: str = THREAD) -> dict[str, Any]:
    return note("turn/started", threadId=thread, turn={"id": turn, "rootTurnId": root})


def completed(turn: str, status: str = "completed") -> dict[str, Any]:
    error = None if status == "completed" else {"message": "boom"}
    return note(
        "turn/completed",
        threadId=THREAD,
        turn={"id": turn, "status": status, "items": [], "error": error},
    )


def item(turn: str, **raw: Any) -> dict[str, Any]:
    return note("item/completed", threadId=THREAD, turnId=turn, item=raw)


def goal(status: str) -> dict[str, Any]:
    return note("thread/goal/updated", threadId=THREAD, turnId=ROOT, goal={"status": status})


def play(messages: list[dict[str, Any]]) -> tuple[Conversation, Chain]:
    found, chain = conversation(), Chain(1, ROOT, THREAD)
    for message in messages:
        found.receive(message, chain)
    return found, chain


def test_a_goal_keeps_the_prompt_open_until_its_continuation_completes() -> None:
    found, chain = play(
        [
            started(ROOT),
            goal("active"),
            item(ROOT, id="m1", type="agentMessage", text="working"),
            completed(ROOT),
        ]
    )
    assert not chain.done  # an active goal: Codex continues on the same thread
    for message in (
        started(NEXT),
        item(
            NEXT,
            id="c1",
            type="commandExecution",
            command="ls",
            exitCode=0,
            aggregatedOutput="a\n",
            status="completed",
        ),
        goal("complete"),
        item(NEXT, id="m2", type="agentMessage", text="ready"),
        completed(NEXT),
    ):
        found.receive(message, chain)
    assert chain.done
    turn = chain.turn()
    assert turn.completed and turn.final_message == "ready" and turn.native_turns == 2
    assert [(i.ordinal, i.type) for i in turn.items] == [
        (1, "agent_message"),
        (2, "command_execution"),
        (3, "agent_message"),
    ]
    assert turn.items[1].data["aggregated_output"] == "a\n" and turn.usage.complete is False
    assert [(g.native_turn, g.status) for g in found.goals] == [(1, "active"), (2, "complete")]


def test_without_a_goal_the_first_completed_turn_ends_the_prompt() -> None:
    _, chain = play(
        [started(ROOT), item(ROOT, id="m", type="agentMessage", text="x"), completed(ROOT)]
    )
    assert chain.done and chain.turn().final_message == "x"


def test_the_final_message_comes_from_the_completing_turn_only() -> None:
    _, chain = play(
        [
            started(ROOT),
            goal("active"),
            item(ROOT, id="m", type="agentMessage", text="early"),
            completed(ROOT),
            started(NEXT),
            goal("complete"),
            completed(NEXT),
        ]
    )
    assert chain.done and chain.turn().final_message is None  # unavailable, never "early"


def test_a_failed_native_turn_is_a_failure_with_its_reason() -> None:
    _, chain = play([started(ROOT), completed(ROOT, "failed")])
    turn = chain.turn()
    assert chain.done and not turn.completed and turn.final_message is None
    assert turn.failure == "native turn 1 failed: boom"


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ([started(ROOT, thread="other")], "foreign thread other"),
        ([note("thread/started", thread={"id": "x", "parentThreadId": "y"})], "foreign thread x"),
        ([started(NEXT, root=NEXT)], "while another turn was expected"),
        ([started(ROOT), started(NEXT)], "while another turn was expected"),
        ([started(ROOT), completed(ROOT), started(NEXT, root=NEXT)], "not a turn of this prompt"),
        ([started(ROOT), item(NEXT, id="i", type="agentMessage", text="t")], "not the open one"),
        ([started(ROOT), completed(NEXT)], "not the open one"),
        ([started(ROOT), goal("done")], "unknown status 'done'"),
        ([started(ROOT), item(ROOT, id="i", type="agentMessage")], "without text"),
        ([started(ROOT), item(ROOT, id="i", type="commandExecution", command=1)], "command"),
        (
            [{"jsonrpc": "2.0", "id": 9, "method": "item/commandExecution/requestApproval"}],
            "sevro grants no requests",
        ),
        ([{"jsonrpc": "2.0", "id": 9, "result": {}}], "nobody asked for"),
    ],
)
def test_untrustworthy_messages_fail_the_prompt(messages: list[Any], fragment: str) -> None:
    with pytest.raises(AppServerError) as caught:
        play(messages)
    assert fragment in caught.value.message


def test_a_child_thread_announced_by_the_root_is_not_foreign() -> None:
    found, chain = play(
        [
            started(ROOT),
            note("thread/started", thread={"id": "child", "parentThreadId": THREAD}),
            item("child-turn", id="c", type="agentMessage", text="child says")
            | {"params": {"threadId": "child", "turnId": "t", "item": {"id": "c"}}},
            item(ROOT, id="m", type="agentMessage", text="ready"),
            completed(ROOT),
        ]
    )
    assert found.children == {"child"} and chain.turn().final_message == "ready"
    assert [i.id for i in chain.turn().items] == ["m"]


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        (b"not json", "not JSON"),
        (b"[1]", "not a JSON-RPC object"),
        (b'{"jsonrpc": "2.0"}', "neither a method nor an id"),
        (b'{"method": "x", "params": [1]}', "params are not an object"),
        (b'{"id": 1, "result": NaN}', "not JSON"),
    ],
)
def test_malformed_lines_are_refused(line: bytes, fragment: str) -> None:
    with pytest.raises(AppServerError) as caught:
        decode(line)
    assert fragment in caught.value.message


def spawn(kind: str, receivers: list[str]) -> dict[str, Any]:
    raw = {
        "id": "s",
        "type": "collabAgentToolCall",
        "tool": "spawnAgent",
        "receiverThreadIds": receivers,
        "status": "completed",
    }
    return note(kind, threadId=THREAD, turnId=ROOT, item=raw)


def child_news(thread: str) -> dict[str, Any]:
    return note("thread/status/changed", threadId=thread, status={"type": "idle"})


def test_a_child_that_appears_during_a_spawn_naming_it_is_bound() -> None:
    found, chain = play(
        [
            started(ROOT),
            spawn("item/started", []),
            child_news("kid"),
            spawn("item/completed", ["kid"]),
            child_news("kid"),
            completed(ROOT),
        ]
    )
    assert found.children == {"kid"} and not found.unbound and chain.done
    assert [i.type for i in chain.turn().items] == ["collab_tool_call"]


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ([started(ROOT), child_news("kid")], "foreign thread kid"),
        (
            [
                started(ROOT),
                spawn("item/started", []),
                child_news("kid"),
                spawn("item/completed", ["other"]),
            ],
            "spawn that did not name it",
        ),
    ],
)
def test_a_thread_no_spawn_names_is_foreign(messages: list[Any], fragment: str) -> None:
    with pytest.raises(AppServerError) as caught:
        play(messages)
    assert fragment in caught.value.message
