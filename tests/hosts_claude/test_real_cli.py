"""The Claude host against the real `claude` binary, pointed at the mock Messages server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.background import start_sevro
from sevro_core.testing.mockmodel import Message, ToolCall, reply
from sevro_hosts_claude.testing import require_claude
from tests.hosts_claude.helpers import (
    API_KEY,
    API_KEY_ENV,
    PROTOCOLS,
    bash,
    claude_args,
    run_claude,
)
from tests.hosts_codex.helpers import observation, retained_bytes, survivors, trial

pytestmark = pytest.mark.slow

SKILL = "---\nname: greet\ndescription: Greets people.\n---\nSay hello warmly.\n"
OTHER = "---\nname: farewell\ndescription: Says goodbye.\n---\nWave.\n"
READY = {"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}}


@pytest.fixture
def claude() -> str:
    return require_claude()


@pytest.fixture
def model(mock_model: Callable[..., Any]) -> Callable[..., Any]:
    return lambda replies: mock_model(replies, protocols=PROTOCOLS)


def test_a_passing_task_with_usage_and_cost(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    server = model([reply(Message("ready"))])
    case = sevro_project.case(checks=[READY])
    result = run_claude(sevro_project, claude, server, case)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.json()["task"]["verdict"] == "passed", result.stdout
    evidence = trial(sevro_project)["evidence"]
    usage = evidence["usage"]
    assert usage["inputTokens"] == 100 and usage["cachedInputTokens"] == 20
    assert usage["outputTokens"] == 10 and usage["complete"] is True
    assert isinstance(usage["reportedCostUsd"], float)  # Claude Code's own total_cost_usd
    assert usage["costUsd"] is None  # mock-model has no price: unknown, never 0
    assert [a["id"] for a in evidence["artifactRefs"]] == ["sevro.claude.events"]
    request = server.requests[0]
    body = request.json()
    assert body["model"] == "mock-model" and body["stream"] is True
    assert sorted(t["name"] for t in body["tools"] if t["name"] != "DeferredToolPlaceholder") == [
        "Agent",
        "Bash",
        "Edit",
        "Read",
        "Skill",
    ]  # no Write unless --claude-allow-write (tests/hosts_claude/test_parity_real_cli.py)
    assert request.headers["x-api-key"] == API_KEY
    turns = observation(trial(sevro_project), "sevro.claude.turns")["data"]["turns"]
    assert turns[0]["permissionMode"] == "dontAsk"


def test_the_cost_is_computed_from_prices_beside_claude_codes_own(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    server = model([reply(Message("ready"))])
    case = sevro_project.case(checks=[READY])
    prices = sevro_project.write_json(
        "prices.json",
        {
            "format": "sevro.prices.v1",
            "version": "test.1",
            "asOf": "2026-12-05",
            "models": {
                "mock-model": {
                    "input": 1, "cachedInput": 0.5, "output": 4, "reasoning": 6, "source": "t"
                }
            },
        },
    )  # fmt: skip
    result = run_claude(sevro_project, claude, server, case, "--prices", str(prices))
    assert result.exit_code == 0, result.stdout + result.stderr
    usage = trial(sevro_project)["evidence"]["usage"]
    assert usage["inputTokens"] == 100 and usage["reasoningTokens"] == 0
    # (80 fresh * 1 + 20 cache reads * 0.5 + 10 output * 4) / 1e6
    assert usage["costUsd"] == pytest.approx(0.00013)
    assert isinstance(usage["reportedCostUsd"], float)  # Claude Code's own, kept beside


@pytest.mark.parametrize("judge_model", [True, False])
def test_a_semantic_judge_of_the_run_is_priced_from_the_same_table(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], judge_model: bool
) -> None:
    verdict = '{"checks":[{"id":"c1","verdict":"pass","reason":"ok"}]}'
    server = model([reply(Message("ready")), reply(Message(verdict))])
    case = sevro_project.case(
        checks=[{"id": "c1", "grader": "sevro.semantic", "configuration": {"proposition": "ok"}}]
    )
    price = {"input": 1, "cachedInput": 0.5, "output": 4, "reasoning": 4, "source": "t"}
    prices = sevro_project.write_json(
        "prices.json",
        {"format": "sevro.prices.v1", "version": "t", "asOf": "2026-12-05",
         "models": {"mock-model": price}},
    )  # fmt: skip
    args = ["--semantic-host", "claude", "--prices", str(prices)]
    args += ["--semantic-model", "mock-model"] if judge_model else []
    result = run_claude(sevro_project, claude, server, case, *args)
    assert result.exit_code == 0, result.stdout + result.stderr
    evidence = trial(sevro_project)["evidence"]
    judged = evidence["judges"]["usage"]["semantic"]
    assert isinstance(judged["reportedCostUsd"], float)
    assert evidence["usage"]["costUsd"] == pytest.approx(0.00013)  # (80 + 20 * 0.5 + 10 * 4) / 1e6
    (run_json,) = sevro_project.results.glob("*/run.json")
    report = sevro_project.sevro("report", run_json.parent, "--json")
    spent = {e["role"]: e for e in report.json()["spend"]}
    assert spent["candidate"]["costUsd"] == pytest.approx(0.00013)
    if judge_model:
        assert judged["costUsd"] == pytest.approx(0.00013)
        assert spent["semantic"]["costUsd"] == pytest.approx(0.00013)
        assert spent["all"]["costUsd"] == pytest.approx(0.00026)
    else:  # negative control: the judge's model is the CLI's default, which sevro never guesses
        assert judged["costUsd"] is None and spent["semantic"]["costUsd"] is None
        assert spent["all"]["costUsd"] is None  # never the candidate's cost alone


def test_a_failing_task_and_unknown_usage(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    server = model([reply(Message("not ready"), usage=None)])
    case = sevro_project.case(checks=[READY])
    result = run_claude(sevro_project, claude, server, case)
    assert result.json()["task"]["verdict"] == "failed", result.stdout
    usage = trial(sevro_project)["evidence"]["usage"]
    assert usage["inputTokens"] is None and usage["costUsd"] is None and not usage["complete"]


def test_commands_files_and_skill_activation(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tmp_path: Path
) -> None:
    server = model(
        [
            reply(ToolCall("Read", {"file_path": ".claude/skills/greet/SKILL.md"})),
            reply(ToolCall("Read", {"file_path": ".claude/skills/farewell/SKILL.md", "limit": 2})),
            reply(ToolCall("Read", {"file_path": "copy/unused/SKILL.md"})),
            reply(ToolCall("Skill", {"skill": "renamed"})),
            reply(bash("mkdir -p out && printf 'hi\\n' > out/hello.txt && rm gone.txt")),
            reply(ToolCall("Write", {"file_path": "written.txt", "content": "w\n"})),
            reply(Message("ready")),
        ]
    )
    unused = "---\nname: unused\ndescription: x\n---\nUnused.\n"
    case = sevro_project.case(
        checks=[READY],
        fixture={
            "files": {
                ".claude/skills/greet/SKILL.md": SKILL,
                ".claude/skills/farewell/SKILL.md": OTHER,
                ".claude/skills/unused/SKILL.md": unused,
                "copy/unused/SKILL.md": unused,
                "gone.txt": "bye\n",
            }
        },
    )
    result = run_claude(sevro_project, claude, server, case, "--claude-allow-write")
    assert result.json()["task"]["verdict"] == "passed", result.stdout
    document = trial(sevro_project)
    skills = observation(document, "sevro.skills")["data"]
    assert [s["name"] for s in skills["offered"]] == ["farewell", "greet", "unused"]
    assert skills["read"] == ["greet"]  # the partial read and the copy do not count
    assert [(r["skill"], r["status"]) for r in skills["reads"]] == [
        ("greet", "read"),
        ("farewell", "partial"),
    ]
    assert [r["ordinal"] for r in skills["reads"]] == [1, 2]
    commands = observation(document, "sevro.commands")["data"]["commands"]
    assert [c["exitCode"] for c in commands] == [0]
    assert "out/hello.txt" in commands[0]["command"]
    changed = observation(document, "sevro.files-changed")["data"]["changes"]
    assert [(c["path"], c["change"]) for c in changed] == [
        ("gone.txt", "deleted"),
        ("out/hello.txt", "added"),
        ("written.txt", "added"),
    ]
    calls = observation(document, "sevro.tool-calls")["data"]["calls"]
    assert [c["kind"] for c in calls] == [
        "tool_call",
        "tool_call",
        "tool_call",
        "tool_call",
        "command_execution",
        "file_change",
    ]
    assert calls[3]["skill"] == "renamed"


def test_a_skill_tool_call_is_an_activation(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    server = model([reply(ToolCall("Skill", {"skill": "greet"})), reply(Message("ready"))])
    case = sevro_project.case(
        checks=[READY], fixture={"files": {".claude/skills/greet/SKILL.md": SKILL}}
    )
    result = run_claude(sevro_project, claude, server, case)
    assert result.json()["task"]["verdict"] == "passed", result.stdout
    skills = observation(trial(sevro_project), "sevro.skills")["data"]
    assert skills["read"] == ["greet"]
    assert skills["reads"] == [{"skill": "greet", "turn": 1, "ordinal": 1, "status": "read"}]
    # Claude Code offered the project skill to the model.
    assert "greet" in json.dumps(server.requests[0].json())


def test_follow_up_resumes_the_same_session(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    server = model(
        [reply(bash("printf one > turn1.txt")), reply(Message("first")), reply(Message("ready"))]
    )
    case = sevro_project.case(
        prompt="First prompt.", followUpPrompt="Second prompt.", checks=[READY]
    )
    result = run_claude(sevro_project, claude, server, case)
    assert result.json()["task"]["verdict"] == "passed", result.stdout
    evidence = trial(sevro_project)["evidence"]
    assert evidence["turnsCompleted"] == 2
    assert [a["id"] for a in evidence["artifactRefs"]] == [
        "sevro.claude.events",
        "sevro.claude.follow-up-events",
    ]
    turns = observation(trial(sevro_project), "sevro.claude.turns")["data"]["turns"]
    assert turns[0]["sessionId"] == turns[1]["sessionId"]
    last = json.dumps(server.requests[-1].json()["messages"])
    assert "First prompt." in last and "Second prompt." in last and "first" in last
    assert evidence["usage"]["inputTokens"] == 300  # summed over the two invocations


def test_a_model_error_mid_turn_fails_and_prevents_the_second(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    # Claude Code 2.1.332 answers a stream cut off by an error event with a "resume where it
    # stops" request of its own; once the script is exhausted the mock answers HTTP 500 and the
    # turn ends in an error result.
    server = model([reply(Message("partial"), error="boom mid-turn") for _ in range(3)])
    case = sevro_project.case(prompt="One.", followUpPrompt="Two.", checks=[READY])
    result = run_claude(sevro_project, claude, server, case)
    out = result.json()
    assert out["execution"]["status"] == "failed" and out["task"]["verdict"] == "not_assessed"
    evidence = trial(sevro_project)["evidence"]
    assert evidence["execution"]["message"].startswith("turn 1 failed"), evidence["execution"]
    assert evidence["turnsCompleted"] == 0
    assert [a["id"] for a in evidence["artifactRefs"]] == ["sevro.claude.events"]
    assert not any(b"Two." in r.body for r in server.requests)
    assert server.unexpected  # the request after the last broken stream


def test_an_api_error_result_is_an_execution_failure(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    server = model([reply(status=400)])
    case = sevro_project.case(checks=[READY])
    result = run_claude(sevro_project, claude, server, case)
    out = result.json()
    assert out["execution"]["status"] == "failed", result.stdout
    message = trial(sevro_project)["evidence"]["execution"]["message"]
    assert "(claude exited 0)" in message or "(claude exited 1)" in message, message
    events = [
        json.loads(line)
        for line in next(sevro_project.results.rglob("*sevro.claude.events*"))
        .read_text()
        .splitlines()
    ]
    assert events[-1]["type"] == "result" and events[-1]["is_error"] is True


def test_a_failure_reason_quotes_the_clis_stderr(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    """What the CLI said on stderr is in the reason, where the user looks."""
    server = model([reply(status=400)])
    case = sevro_project.case(checks=[READY])
    result = run_claude(sevro_project, claude, server, case, "--effort", "bogus-effort-7")
    assert result.json()["execution"]["status"] == "failed", result.stdout
    message = trial(sevro_project)["evidence"]["execution"]["message"]
    stderr = message.split("; stderr: ", 1)[1]
    assert "Unknown --effort value 'bogus-effort-7'" in stderr, message
    assert API_KEY not in message


def test_a_hanging_cli_times_out_and_its_group_dies(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    server = model([reply(hang=True)])
    case = sevro_project.case(checks=[READY])
    started = time.monotonic()
    result = run_claude(sevro_project, claude, server, case, timeout=3)
    assert time.monotonic() - started < 60
    evidence = trial(sevro_project)["evidence"]
    assert evidence["execution"]["status"] == "failed"
    assert "did not finish within 3 s" in evidence["execution"]["message"]
    assert result.json()["task"]["verdict"] == "not_assessed"
    assert not _claude_processes(sevro_project)


def test_a_stalled_cli_fails_naming_the_stall_and_its_stderr(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    """No event for stallTimeoutSeconds ends the turn long before the turn timeout."""
    server = model([reply(hang=True)])
    case = sevro_project.case(checks=[READY])
    started = time.monotonic()
    result = run_claude(sevro_project, claude, server, case, config={"stallTimeoutSeconds": 8})
    assert time.monotonic() - started < 45  # the turn timeout is 60 s
    (events,) = sevro_project.results.rglob("*sevro.claude.events*")
    assert events.read_bytes(), "the CLI made progress before it stalled"
    execution = trial(sevro_project)["evidence"]["execution"]
    assert execution["status"] == "failed"
    message = execution["message"]
    assert message.startswith("turn 1: claude stalled: no event for 8 s (stallTimeoutSeconds")
    assert "; stderr: " in message and API_KEY not in message
    assert result.json()["task"]["verdict"] == "not_assessed"
    assert not _claude_processes(sevro_project)


def test_a_slow_model_that_keeps_making_progress_is_not_stalled(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    """Each event resets the stall clock: 12 s of slow replies pass an 8 s stall bound (the
    clock also runs while Claude Code starts, 3-5 s here, so the first reply comes at once)."""
    server = model(
        [
            reply(bash("echo one")),
            reply(bash("echo two"), delay_s=3),
            reply(bash("echo three"), delay_s=3),
            reply(bash("echo four"), delay_s=3),
            reply(Message("ready"), delay_s=3),
        ]
    )
    case = sevro_project.case(checks=[READY])
    started = time.monotonic()
    result = run_claude(sevro_project, claude, server, case, config={"stallTimeoutSeconds": 8})
    assert time.monotonic() - started > 12
    assert result.json()["task"]["verdict"] == "passed", result.stdout


def _tool_results(server: Any) -> list[dict[str, Any]]:
    """The tool results of the last request: what the model was shown of each tool call."""
    return [
        block
        for message in server.requests[-1].json()["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def _text(block: dict[str, Any]) -> str:
    content = block["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def test_nothing_a_trial_starts_outlives_it(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tmp_path: Path
) -> None:
    """Claude Code runs in the outer sandbox's PID namespace: a command that detaches with
    setsid ends with the trial (the mechanism's negative control: tests/core/test_hostkit.py)."""
    marker = f"sleep 87{os.getpid() % 10000}.5"
    workspaces = tmp_path / "workspaces"
    workspaces.mkdir()
    server = model(
        [
            reply(bash(f"setsid -f {marker} >/dev/null 2>&1 </dev/null; echo detached")),
            reply(bash("(setsid sh -c 'sleep 1; echo late' &) ; echo forked")),
            reply(Message("ready")),
        ]
    )
    case = sevro_project.case(checks=[READY])
    result = run_claude(sevro_project, claude, server, case, "--workspace-root", str(workspaces))
    assert result.json()["task"]["verdict"] == "passed", result.stdout + result.stderr
    outputs = [_text(result) for result in _tool_results(server)]
    assert "detached" in outputs[0] and "forked" in outputs[1], outputs
    assert not survivors(marker)
    assert not survivors(str(workspaces))


def test_cancellation_kills_claude(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    server = model([reply(hang=True)])
    case = sevro_project.case(checks=[READY])
    args = ["run", case, "--json", *claude_args(sevro_project, claude, server)]
    args += ["--results-root", sevro_project.results]
    with start_sevro(args, cwd=sevro_project.root, env={API_KEY_ENV: API_KEY}) as process:
        process.wait_until(
            lambda: bool(server.requests), timeout=60, what="claude to reach the mock model"
        )
        process.send_signal(signal.SIGINT)
        done = process.finish(timeout=60)
    assert json.loads(done.stdout)["execution"]["status"] == "cancelled"
    assert not _claude_processes(sevro_project)


def _claude_processes(project: SevroProject) -> list[str]:
    """Claude processes of this test's trials still running (none may outlive a trial)."""
    time.sleep(0.3)
    out = subprocess.run(
        ["ps", "-eo", "pid,args"], capture_output=True, text=True, check=False
    ).stdout
    return [line for line in out.splitlines() if "stream-json" in line and "mock-model" in line]


def test_protected_roots_and_credentials_stay_out(
    sevro_project: SevroProject,
    claude: str,
    model: Callable[..., Any],
    tmp_path: Path,
) -> None:
    project_secret = "PROJECT-SECRET-7f3a9c"
    home_secret = "HOME-SECRET-51d2e8"
    peer_secret = "PEER-SECRET-0b6c44"
    env_secret = "ENV-SECRET-9e1f27"
    skill_secret = "USER-SKILL-SECRET-3c1d"
    (sevro_project.root / "secret.txt").write_text(project_secret)
    home = tmp_path / "operator-home"
    (home / ".claude" / "skills" / "greet").mkdir(parents=True)
    (home / ".claude" / ".credentials.json").write_text(json.dumps({"token": home_secret}))
    user_skill = f"---\nname: greet\ndescription: {skill_secret}\n---\n{skill_secret}\n"
    (home / ".claude" / "skills" / "greet" / "SKILL.md").write_text(user_skill)
    workspaces = tmp_path / "workspaces"
    (workspaces / "sevro-case-peer").mkdir(parents=True)
    (workspaces / "sevro-case-peer" / "notes.txt").write_text(peer_secret)
    outside = tmp_path / "outside.txt"
    config = "$CLAUDE_CONFIG_DIR"
    attempts = [
        bash(f"cat {sevro_project.root}/secret.txt"),
        bash(f"cat {home}/.claude/.credentials.json"),
        bash(f"cat {workspaces}/sevro-case-peer/notes.txt"),
        bash(f"ls {workspaces}"),
        bash(f"cat {config}/api-key; cat ../sevro-private-*/claude-config/api-key"),
        bash(f"echo pwned > {sevro_project.root}/pwned.txt"),
        bash(f"echo pwned > {outside}"),
        bash("env; printenv; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'"),
        ToolCall("Read", {"file_path": f"{sevro_project.root}/secret.txt"}),
        ToolCall("Read", {"file_path": f"{workspaces}/sevro-case-peer/notes.txt"}),
        ToolCall("Write", {"file_path": str(outside), "content": "pwned"}),
        ToolCall(
            "Edit",
            {"file_path": f"{sevro_project.root}/secret.txt", "old_string": "P", "new_string": "X"},
        ),
    ]
    server = model([reply(a) for a in attempts] + [reply(Message("ready"))])
    case = sevro_project.case(checks=[READY])
    result = run_claude(
        sevro_project,
        claude,
        server,
        case,
        "--workspace-root",
        str(workspaces),
        "--claude-allow-write",  # the Write attempt goes through the tool, not a denial
        env={"HOME": str(home), "SEVRO_PLANTED_ENV_SECRET": env_secret},
    )
    assert result.json()["execution"]["status"] == "completed", result.stdout + result.stderr
    assert len(server.requests) == len(attempts) + 1 and not server.unexpected
    # What the model saw: every tool result went back to it in the next request.
    seen = b"".join(r.body for r in server.requests)
    for secret in (project_secret, home_secret, peer_secret, env_secret, skill_secret):
        assert secret.encode() not in seen, secret
    # The API key reached the model only in headers, never in a message.
    assert API_KEY.encode() not in seen
    assert server.requests[0].headers["x-api-key"] == API_KEY
    messages = server.requests[-1].json()["messages"]
    results = [
        block
        for message in messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert len(results) == len(attempts)
    texts = [_text(result) for result in results]
    assert not any("Sandbox is required" in text for text in texts), texts  # the commands ran
    assert "No such file" in texts[0] or "Permission denied" in texts[0], texts[0]
    assert "sevro-case-peer" not in json.dumps(results[3])  # other trials are not even listed
    assert not (sevro_project.root / "pwned.txt").exists()
    assert not outside.exists()
    assert (sevro_project.root / "secret.txt").read_text() == project_secret
    retained = retained_bytes(sevro_project)
    for secret in (project_secret, home_secret, peer_secret, env_secret, API_KEY, skill_secret):
        assert secret.encode() not in retained, secret
    assert not list(workspaces.glob("sevro-private-*"))
    assert [p.name for p in workspaces.iterdir()] == ["sevro-case-peer"]
