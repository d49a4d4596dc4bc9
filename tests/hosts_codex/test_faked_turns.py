"""The Codex host without Codex: the test kit fakes its turn process (``fake_processes``), so
argv, stdin, stream parsing and verdicts are tested in-process, with nothing launched."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from sevro_core.testing import (
    CliResult,
    FakeProcess,
    ProcessCall,
    ProcessLog,
    SevroProject,
    run_in_process,
)

KEY_ENV = "SEVRO_TEST_FAKE_CODEX_KEY"
USAGE = {"input_tokens": 3, "cached_input_tokens": 0, "output_tokens": 1}


def turn(text: str, *, completed: bool = True) -> bytes:
    """``codex exec --json`` output of one turn answering ``text``."""
    events: list[object] = [
        {"type": "thread.started", "thread_id": "t-1"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "a", "type": "agent_message", "text": text}},
    ]
    if completed:
        events.append({"type": "turn.completed", "usage": {**USAGE, "reasoning_output_tokens": 0}})
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def run(project: SevroProject) -> CliResult:
    check = {"id": "r", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}}
    case = project.case(checks=[check])
    provider = {"id": "mock", "baseUrl": "http://127.0.0.1:9/v1", "envKey": "SEVRO_MOCK_KEY"}
    config = project.write_json(
        "codex.json", {"format": "sevro.codex-host.v1", "modelProvider": provider}
    )
    # /bin/true is a native executable, so the host accepts it; it is never launched.
    args = ["run", case, "--host", "codex", "--host-config", config, "--codex-bin", "/bin/true"]
    args += ["--codex-api-key-env", KEY_ENV, "--json", "--results-root", project.results]
    return run_in_process(args, cwd=project.root, env={KEY_ENV: "sk-test"})


@pytest.mark.parametrize(
    ("stream", "verdict"),
    [
        (turn("ready"), "passed"),
        (turn("not ready"), "failed"),
        (turn("ready", completed=False), "not_assessed"),  # an unfinished turn is never a pass
    ],
)
def test_a_faked_codex_turn_is_parsed_and_graded(
    sevro_project: SevroProject,
    fake_processes: Callable[..., ProcessLog],
    stream: bytes,
    verdict: str,
) -> None:
    def handler(call: ProcessCall) -> FakeProcess | None:
        return FakeProcess(output=stream) if "exec" in call.argv else None  # probes run for real

    log = fake_processes(handler)
    done = run(sevro_project)
    assert done.json()["task"]["verdict"] == verdict, done.stdout + done.stderr
    (call,) = log.faked
    assert call.role is None, "the agent CLI is launched directly, not in sevro's sandbox"
    assert call.argv[-1] == "-" and call.stdin == b"Return ready."
