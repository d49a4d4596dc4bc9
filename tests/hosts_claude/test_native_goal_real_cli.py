"""``hooks.nativeGoal`` through the real Claude Code CLI against the mock Messages server.

Claude Code's ``/goal`` registers a session Stop hook whose evaluator is one more request to the
model (no tools, the condition in its prompt); the mock answers it with the evaluator's JSON
verdict. ``sevro.host.native-goal`` must come from the transcript, ``sevro.host.hooks`` from
sevro's own Stop hook and the stream's hook events.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_claude.testing import require_claude
from tests.e2e.test_invocation_errors import assert_refused
from tests.hosts_claude.helpers import API_KEY, PROTOCOLS, bash, host_config, run_claude
from tests.hosts_codex.helpers import observation, trial

pytestmark = pytest.mark.slow

CONDITION = "the file done.txt exists in the working directory"
GOAL = "sevro.host.native-goal"
HOOKS = "sevro.host.hooks"


@pytest.fixture
def claude() -> str:
    return require_claude()


@pytest.fixture
def model(mock_model: Callable[..., Any]) -> Callable[..., Any]:
    return lambda replies: mock_model(replies, protocols=PROTOCOLS)


def goal_runtime(tmp_path: Path, native_goal: bool = True) -> Path:
    path = tmp_path / "runtime.json"
    document = {"format": "sevro.runtime.v1", "hooks": {"nativeGoal": native_goal}}
    path.write_text(json.dumps(document))
    return path


def verdict(ok: bool, reason: str) -> Any:
    return reply(Message(json.dumps({"ok": ok, "reason": reason})))


def evaluator_requests(server: Any) -> list[Any]:
    """The requests Claude Code made for the goal's Stop hook evaluator (no tools offered)."""
    return [r for r in server.requests if r.tools == () and CONDITION in r.body.decode()]


def test_a_native_goal_keeps_the_session_working_until_the_evaluator_says_met(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tmp_path: Path
) -> None:
    server = model(
        [
            reply(Message("first attempt")),
            verdict(False, "done.txt is missing"),
            reply(bash("touch done.txt")),
            reply(Message("created done.txt")),
            verdict(True, "done.txt exists"),
        ]
    )
    case = sevro_project.case(prompt=f"/goal {CONDITION}")
    runtime = goal_runtime(tmp_path)
    result = run_claude(sevro_project, claude, server, case, "--runtime-config-file", str(runtime))
    assert result.exit_code == 0, result.stderr
    document = trial(sevro_project)
    goal = observation(document, GOAL)
    assert goal["completeness"] == "complete", goal
    data = goal["data"]
    assert (data["state"], data["goalStatus"]) == ("completed", "complete")
    assert (data["verdicts"], data["notMet"], data["lastReason"]) == (2, 1, "done.txt exists")
    assert [g["status"] for g in data["goals"]] == ["active", "active", "complete"]
    assert data["stopHookErrors"] == []
    assert data["goals"][0]["set"] is True and data["goals"][0]["characters"] == len(CONDITION)
    assert len(evaluator_requests(server)) == 2
    # API-key authentication reaches the evaluator's requests like the session's.
    assert {r.headers.get("x-api-key") for r in server.requests} == {API_KEY}
    assert server.remaining == 0
    hooks = observation(document, HOOKS)
    assert hooks["completeness"] == "complete", hooks
    stops = [e for e in hooks["data"]["executions"] if e["event"] == "Stop"]
    assert [(e["exitCode"], e["outcome"]) for e in stops] == [(0, "success"), (0, "success")]
    # The second Stop came while the goal's Stop hook was continuing the session.
    assert hooks["data"]["stops"] == [{"stopHookActive": False}, {"stopHookActive": True}]
    assert hooks["data"]["hooks"][0]["digest"].startswith("sha256:")
    run = json.loads(next(sevro_project.results.glob("*/run.json")).read_text())
    policy = run["configuration"]["redacted"]["runtimePolicy"]
    assert policy["hooks"] == {"nativeGoal": True}
    candidate = run["configuration"]["redacted"]["hostConfiguration"]["candidate"]
    assert candidate["nativeGoal"] == {"stopHook": hooks["data"]["hooks"][0]["digest"]}


def test_without_a_goal_in_the_prompt_the_observation_says_not_created(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tmp_path: Path
) -> None:
    server = model([reply(Message("ready"))])
    # With the policy the host offers both observations, so a case may require them.
    case = sevro_project.case(prompt=f"Make sure {CONDITION}.", requiredEvidence=[GOAL, HOOKS])
    runtime = goal_runtime(tmp_path)
    result = run_claude(sevro_project, claude, server, case, "--runtime-config-file", str(runtime))
    assert result.exit_code == 0, result.stderr
    document = trial(sevro_project)
    data = observation(document, GOAL)["data"]
    assert (data["state"], data["verdicts"], data["goals"]) == ("not-created", 0, [])
    assert evaluator_requests(server) == []
    hooks = observation(document, HOOKS)
    # sevro's own Stop hook still ran once, at the one stop, and exited 0.
    assert [(e["event"], e["exitCode"]) for e in hooks["data"]["executions"]] == [("Stop", 0)]
    assert hooks["data"]["stops"] == [{"stopHookActive": False}]


def test_without_the_policy_a_goal_prompt_is_refused_before_anything_runs(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tmp_path: Path
) -> None:
    server = model([reply(Message("ready"))])
    case = sevro_project.case(prompt=f"/goal {CONDITION}")
    result = run_claude(sevro_project, claude, server, case)
    assert_refused(result, "prompt 1 opens with /goal, Claude Code's native goal", sevro_project)
    assert '"hooks": {"nativeGoal": true}' in result.stderr
    off = goal_runtime(tmp_path, native_goal=False)
    result = run_claude(sevro_project, claude, server, case, "--runtime-config-file", str(off))
    assert_refused(result, "opens with /goal", sevro_project)
    follow_up = sevro_project.case(prompt="Start.", followUpPrompt=f"  /goal {CONDITION}")
    result = run_claude(sevro_project, claude, server, follow_up)
    assert_refused(result, "prompt 2 opens with /goal", sevro_project)
    # Only an opening /goal is Claude Code's command: elsewhere it is text and runs.
    mentioned = sevro_project.case(prompt=f"Explain what /goal {CONDITION} would do.")
    result = run_claude(sevro_project, claude, server, mentioned)
    assert result.exit_code == 0, result.stderr
    assert evaluator_requests(server) == [] and len(server.requests) == 1


def test_without_the_policy_no_goal_evidence_is_offered(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    server = model([reply(Message("ready"))])
    case = sevro_project.case(prompt="Return ready.")
    result = run_claude(sevro_project, claude, server, case)
    assert result.exit_code == 0, result.stderr
    ids = [o["id"] for o in trial(sevro_project)["evidence"]["observations"]]
    assert GOAL not in ids and HOOKS not in ids
    run = json.loads(next(sevro_project.results.glob("*/run.json")).read_text())
    assert "nativeGoal" not in run["configuration"]["redacted"]["hostConfiguration"]["candidate"]
    required = sevro_project.case("required.json", requiredEvidence=[GOAL])
    result = run_claude(sevro_project, claude, server, required)
    assert result.exit_code == 64, result.stderr
    assert f"required evidence {GOAL!r} is produced by neither host" in result.stderr


def test_project_settings_conflict_with_a_native_goal(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tmp_path: Path
) -> None:
    server = model([reply(Message("ready"))])
    case = sevro_project.case(prompt=f"/goal {CONDITION}")
    runtime = goal_runtime(tmp_path)
    result = run_claude(
        sevro_project,
        claude,
        server,
        case,
        "--runtime-config-file",
        str(runtime),
        "--claude-project-settings",
    )
    assert_refused(result, "--claude-project-settings conflicts with it", sevro_project)
    assert server.requests == []


def test_a_failing_evaluator_leaves_the_goal_created_not_completed(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tmp_path: Path
) -> None:
    server = model([reply(Message("first attempt")), reply(status=500)])
    case = sevro_project.case(prompt=f"/goal {CONDITION}")
    runtime = goal_runtime(tmp_path)
    started = time.monotonic()
    result = run_claude(sevro_project, claude, server, case, "--runtime-config-file", str(runtime))
    assert time.monotonic() - started < 120
    assert result.exit_code == 0, result.stderr
    data = observation(trial(sevro_project), GOAL)["data"]
    # The goal was set, but no evaluator verdict ever came: created, never completed.
    assert (data["state"], data["goalStatus"], data["verdicts"]) == ("created", "active", 0)
    assert data["lastReason"] is None
    # Claude Code's Stop hook summary names why: the evaluator's request failed.
    (error,) = data["stopHookErrors"]
    assert error.startswith("Hook evaluator API error") and "500" in error


def test_a_stalled_evaluator_ends_in_bounded_time_with_the_reason(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tmp_path: Path
) -> None:
    server = model([reply(Message("first attempt")), reply(hang=True)])
    case = sevro_project.case(prompt=f"/goal {CONDITION}")
    runtime = goal_runtime(tmp_path)
    started = time.monotonic()
    result = run_claude(
        sevro_project,
        claude,
        server,
        case,
        "--runtime-config-file",
        str(runtime),
        config={"stallTimeoutSeconds": 10},
    )
    assert time.monotonic() - started < 28  # before Claude Code's own 30 s hook timeout
    document = trial(sevro_project)
    assert result.exit_code != 0
    execution = document["evidence"]["execution"]
    assert execution["status"] == "failed"
    assert execution["message"].startswith("turn 1: claude stalled: no event for 10 s")
    goal = observation(document, GOAL)
    assert goal["completeness"] == "unavailable"
    assert goal["data"]["failure"] == "the session did not end with a result"


def test_an_evaluator_that_outlasts_claude_codes_hook_timeout_ends_the_goal_unmet(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tmp_path: Path
) -> None:
    """With sevro's stall bound above Claude Code's own 30 s prompt-hook timeout, Claude Code
    gives up on the evaluator and ends the session: the goal was created, never completed."""
    server = model([reply(Message("first attempt")), reply(hang=True)])
    case = sevro_project.case(prompt=f"/goal {CONDITION}")
    runtime = goal_runtime(tmp_path)
    started = time.monotonic()
    result = run_claude(
        sevro_project,
        claude,
        server,
        case,
        "--runtime-config-file",
        str(runtime),
        timeout=90,
        config={"stallTimeoutSeconds": 60},
    )
    assert time.monotonic() - started < 75
    assert result.exit_code == 0, result.stderr
    data = observation(trial(sevro_project), GOAL)["data"]
    assert (data["state"], data["goalStatus"], data["verdicts"]) == ("created", "active", 0)


def test_oauth_credentials_keep_working_with_a_native_goal(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tmp_path: Path
) -> None:
    """Sevro's native goal keeps subscription (OAuth) authentication: the credential file the
    host copies privately signs the session's and the evaluator's requests alike."""
    token = "sk-ant-oat01-sevro-test-0123456789"
    credentials = tmp_path / "credentials.json"
    expires = int((time.time() + 3600) * 1000)
    oauth = {"accessToken": token, "refreshToken": "sk-ant-ort01-x", "expiresAt": expires}
    oauth |= {"scopes": ["user:inference"], "subscriptionType": "max"}
    credentials.write_text(json.dumps({"claudeAiOauth": oauth}))
    server = model([reply(bash("touch done.txt")), reply(Message("done")), verdict(True, "ok")])
    case = sevro_project.case(prompt=f"/goal {CONDITION}")
    result = sevro_project.run(
        case,
        "--host",
        "claude",
        "--host-config",
        str(host_config(sevro_project, server)),
        "--model",
        "mock-model",
        "--claude-bin",
        claude,
        "--claude-credential-file",
        str(credentials),
        "--runtime-config-file",
        str(goal_runtime(tmp_path)),
        timeout=180,
    )
    assert result.exit_code == 0, result.stderr
    assert observation(trial(sevro_project), GOAL)["data"]["state"] == "completed"
    assert len(evaluator_requests(server)) == 1
    assert {r.headers.get("authorization") for r in server.requests} == {f"Bearer {token}"}
    assert all("x-api-key" not in r.headers for r in server.requests)


def test_a_goal_set_in_the_follow_up_is_read_from_the_resumed_session(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tmp_path: Path
) -> None:
    """The follow-up resumes the same session; its goal is in the same transcript."""
    server = model(
        [
            reply(Message("started")),
            reply(bash("touch done.txt")),
            reply(Message("done")),
            verdict(True, "done.txt exists"),
        ]
    )
    case = sevro_project.case(prompt="Start.", followUpPrompt=f"/goal {CONDITION}")
    runtime = goal_runtime(tmp_path)
    result = run_claude(sevro_project, claude, server, case, "--runtime-config-file", str(runtime))
    assert result.exit_code == 0, result.stderr
    document = trial(sevro_project)
    data = observation(document, GOAL)["data"]
    assert (data["state"], data["verdicts"], data["lastReason"]) == (
        "completed",
        1,
        "done.txt exists",
    )
    hooks = observation(document, HOOKS)
    assert hooks["completeness"] == "complete"
    stops = [
        (e["turn"], e["exitCode"]) for e in hooks["data"]["executions"] if e["event"] == "Stop"
    ]
    assert stops == [(1, 0), (2, 0)]
