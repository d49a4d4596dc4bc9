"""The ``app-server`` entrypoint through the real Codex CLI against the mock model: one root
thread over stdio JSON-RPC, native goal continuation turns, and every way it must fail."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, ToolCall, reply
from sevro_hosts_codex.testing import require_codex
from tests.core.activation_controls import activations, fixture
from tests.hosts_codex.helpers import observation, run_codex, shell, trial

pytestmark = pytest.mark.slow
READY = {"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}}
APP = ("--codex-entrypoint", "app-server")
SKILLS = ".agents/skills"


@pytest.fixture
def codex() -> str:
    return require_codex()


def goal_runtime(tmp_path: Path, native_goal: bool = True) -> Path:
    path = tmp_path / "runtime.json"
    document = {"format": "sevro.runtime.v1", "hooks": {"nativeGoal": native_goal}}
    path.write_text(json.dumps(document))
    return path


def test_a_plain_trial_end_to_end(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    skill = f"{SKILLS}/greet/SKILL.md"
    server = mock_model([reply(shell(f"cat {skill}")), reply(Message("ready"))])
    case = sevro_project.case(fixture=fixture(SKILLS), checks=[READY])
    result = run_codex(sevro_project, codex, server, case, *APP)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.json()["task"]["verdict"] == "passed"
    document = trial(sevro_project)
    evidence = document["evidence"]
    assert evidence["usage"]["complete"] is False and evidence["usage"]["inputTokens"] is None
    commands = observation(document, "sevro.commands")["data"]["commands"]
    assert [c["exitCode"] for c in commands] == [0] and skill in commands[0]["command"]
    assert observation(document, "sevro.skills")["data"]["read"] == ["greet"]
    found = activations(document)
    assert found["completeness"] == "complete", found
    assert [a["skill"] for a in found["data"]["activations"]] == ["greet"]
    turns = observation(document, "sevro.codex.turns")["data"]["turns"]
    assert [t["nativeTurns"] for t in turns] == [1]
    goal = observation(document, "sevro.host.native-goal")
    assert goal["completeness"] == "complete" and goal["data"]["status"] == "none"
    assert goal["data"]["policy"] is False
    calls = observation(document, "sevro.codex.native-calls")
    assert calls["completeness"] == "complete" and calls["data"]["threadId"] == turns[0]["threadId"]
    assert [a["id"] for a in evidence["artifactRefs"]] == ["sevro.codex.events"]


def test_a_multi_turn_trial_stays_on_one_thread(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model(
        [reply(shell("printf x > made.txt")), reply(Message("first")), reply(Message("ready"))]
    )
    case = sevro_project.case(prompt="One.", followUpPrompt="Two.", checks=[READY])
    result = run_codex(sevro_project, codex, server, case, *APP)
    assert result.json()["task"]["verdict"] == "passed", result.stdout + result.stderr
    document = trial(sevro_project)
    turns = observation(document, "sevro.codex.turns")["data"]["turns"]
    assert [t["turn"] for t in turns] == [1, 2]
    assert turns[0]["threadId"] == turns[1]["threadId"]
    found = observation(document, "sevro.codex.continuation")
    assert found["completeness"] == "complete", found
    assert found["data"]["threadId"] == turns[0]["threadId"]
    assert found["data"]["preFollowUpWorktreeUnchanged"] is False  # turn 1 wrote made.txt
    # The second prompt reached the model in the same conversation as the first.
    last = json.dumps(server.requests[-1].json())
    assert "One." in last and "Two." in last and "first" in last
    refs = [a["id"] for a in document["evidence"]["artifactRefs"]]
    assert refs == ["sevro.codex.events", "sevro.codex.follow-up-events"]
    assert observation(document, "sevro.host.native-goal")["data"]["status"] == "none"


def test_a_native_goal_runs_its_continuation_turn_and_is_reported_completed(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    """hooks.nativeGoal alone selects app-server; Codex itself continues the active goal."""
    server = mock_model(
        [
            reply(ToolCall("create_goal", {"objective": "SECRET-OBJECTIVE"})),
            reply(Message("working")),
            reply(ToolCall("update_goal", {"status": "complete"})),
            reply(Message("ready")),
        ]
    )
    case = sevro_project.case(checks=[READY])
    runtime = goal_runtime(tmp_path)
    result = run_codex(sevro_project, codex, server, case, "--runtime-config-file", str(runtime))
    assert result.json()["task"]["verdict"] == "passed", result.stdout + result.stderr
    assert server.remaining == 0
    document = trial(sevro_project)
    goal = observation(document, "sevro.host.native-goal")
    assert goal["completeness"] == "complete", goal
    data = goal["data"]
    assert data["status"] == "completed" and data["policy"] is True
    assert data["nativeTurns"] == [2]
    assert data["updates"][0]["status"] == "active"
    assert data["updates"][-1] == {"turn": 1, "nativeTurn": 2, "status": "complete"}
    assert "SECRET-OBJECTIVE" not in json.dumps(goal)
    calls = observation(document, "sevro.codex.native-calls")["data"]["calls"]
    assert [c["name"] for c in calls] == ["create_goal", "update_goal"]
    # The final message is the completing root turn's, not the first native turn's.
    final = observation(document, "sevro.observation.final-message")["data"]
    assert final["sha256"] == hashlib.sha256(b"ready").hexdigest()
    (run,) = sevro_project.results.glob("*/run.json")
    assert '"entrypoint": "app-server"' in run.read_text()


def test_a_native_goal_policy_without_a_goal_reports_none(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    """The negative control: enabling the policy does not prove that a goal was created."""
    server = mock_model([reply(Message("ready"))])
    case = sevro_project.case(checks=[READY])
    runtime = goal_runtime(tmp_path)
    result = run_codex(
        sevro_project, codex, server, case, "--runtime-config-file", str(runtime), *APP
    )
    assert result.json()["task"]["verdict"] == "passed", result.stdout + result.stderr
    goal = observation(trial(sevro_project), "sevro.host.native-goal")
    assert goal["completeness"] == "complete"
    assert goal["data"]["status"] == "none" and goal["data"]["policy"] is True
    assert goal["data"]["updates"] == [] and goal["data"]["nativeTurns"] == [1]


def test_a_stalled_app_server_fails_in_bounded_time_with_the_reason(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(hang=True)])
    case = sevro_project.case(checks=[READY])
    started = time.monotonic()
    result = run_codex(sevro_project, codex, server, case, *APP, config={"stallTimeoutSeconds": 3})
    assert time.monotonic() - started < 60
    assert result.exit_code == 2, result.stdout + result.stderr
    document = trial(sevro_project)
    text = json.dumps(document)
    assert "stalled: no message for 3 s" in text and "process group killed" in text
    goal = observation(document, "sevro.host.native-goal")
    assert goal["completeness"] == "unavailable" and goal["data"]["status"] == "unavailable"
    assert activations(document)["completeness"] == "unavailable"


def test_a_slow_app_server_hits_the_turn_timeout(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(hang=True)])
    case = sevro_project.case(checks=[READY])
    started = time.monotonic()
    result = run_codex(sevro_project, codex, server, case, *APP, timeout=4)
    assert time.monotonic() - started < 60
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "turn 1 did not finish in time (process killed)" in json.dumps(trial(sevro_project))


def test_a_failed_model_turn_is_an_execution_failure(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(Message("x"), error="boom")])
    case = sevro_project.case(checks=[READY])
    result = run_codex(sevro_project, codex, server, case, *APP)
    assert result.exit_code == 2, result.stdout + result.stderr
    document = trial(sevro_project)
    assert "turn 1 failed: native turn 1 failed" in json.dumps(document)
    assert document["evidence"]["usage"]["complete"] is False


def test_exec_with_a_native_goal_policy_is_refused_before_anything_runs(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    server = mock_model([reply(Message("ready"))])
    case = sevro_project.case(checks=[READY])
    runtime = str(goal_runtime(tmp_path))
    result = run_codex(
        sevro_project,
        codex,
        server,
        case,
        "--runtime-config-file",
        runtime,
        "--codex-entrypoint",
        "exec",
    )
    assert result.exit_code == 64, result.stdout + result.stderr
    assert "conflicts with hooks.nativeGoal" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert server.requests == [] and not any(sevro_project.results.glob("*/run.json"))


def test_an_unknown_entrypoint_is_refused(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(Message("ready"))])
    case = sevro_project.case(checks=[READY])
    result = run_codex(sevro_project, codex, server, case, "--codex-entrypoint", "tui")
    assert result.exit_code == 64, result.stdout + result.stderr
    assert "--codex-entrypoint must be one of exec, app-server" in result.stderr
    assert server.requests == []


def test_a_spawned_child_thread_is_not_foreign_and_its_rollout_is_checked(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    from tests.hosts_codex.test_threads_real_cli import (
        CHILD_TASK,
        SPAWN_ID,
        Scripted,
        routed,
        wait_for_child,
    )

    spawn = reply(ToolCall("multi_agent_v1.spawn_agent", {"message": CHILD_TASK}, call_id=SPAWN_ID))
    parent: list[Scripted] = [spawn, wait_for_child, reply(Message("ready"))]
    server = routed(mock_model, parent, [reply(Message("child-done"))])
    result = run_codex(sevro_project, codex, server, sevro_project.case(checks=[READY]), *APP)
    assert result.json()["task"]["verdict"] == "passed", result.stdout + result.stderr
    found = observation(trial(sevro_project), "sevro.codex.native-calls")
    assert found["completeness"] == "complete", found
    assert [c["name"] for c in found["data"]["calls"]] == ["spawn_agent", "wait_agent"]
    (child,) = found["data"]["childSessions"]
    assert child["status"] == "available" and child["resultStatus"] == "completed"


def _kill_app_server_of(server: Any, done: threading.Event) -> None:
    """Once the model was asked, SIGKILL this test's own app-server by its pid: the one whose
    private CODEX_HOME's config.toml names this test's mock server (its port is unique)."""
    while not done.is_set() and not server.requests:
        time.sleep(0.05)
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        homes = [v[len(b"CODEX_HOME=") :] for v in environ if v.startswith(b"CODEX_HOME=")]
        if b"app-server" not in cmdline or not homes:
            continue
        config = Path(homes[0].decode()) / "config.toml"
        with contextlib.suppress(OSError):
            if server.base_url in config.read_text():
                os.kill(int(entry.name), signal.SIGKILL)


def test_a_killed_app_server_fails_in_bounded_time_with_the_reason(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(hang=True)])
    case = sevro_project.case(checks=[READY])
    done = threading.Event()
    killer = threading.Thread(target=_kill_app_server_of, args=(server, done))
    killer.start()
    started = time.monotonic()
    try:
        result = run_codex(sevro_project, codex, server, case, *APP)
    finally:
        done.set()
        killer.join()
    assert time.monotonic() - started < 60
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "codex app-server closed its output" in json.dumps(trial(sevro_project))


@pytest.mark.parametrize("entrypoint", [None, "exec", "app-server"])
def test_the_entrypoint_enters_the_identity_only_when_it_is_app_server(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], entrypoint: str | None
) -> None:
    server = mock_model([reply(Message("ready"))])
    chosen = ("--codex-entrypoint", entrypoint) if entrypoint else ()
    result = run_codex(sevro_project, codex, server, sevro_project.case(checks=[READY]), *chosen)
    assert result.exit_code == 0, result.stdout + result.stderr
    (run,) = sevro_project.results.glob("*/run.json")
    redacted = json.loads(run.read_text())["configuration"]["redacted"]
    assert ('"entrypoint": "app-server"' in json.dumps(redacted)) is (entrypoint == "app-server")
    assert ('"entrypoint":' in json.dumps(redacted)) is (entrypoint == "app-server")
    goal_offered = any(
        o["id"] == "sevro.host.native-goal"
        for o in trial(sevro_project)["evidence"]["observations"]
    )
    assert goal_offered is (entrypoint == "app-server")
