"""The Codex host against the real `codex` binary, pointed at the mock Responses server."""

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
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_codex.testing import require_codex
from tests.hosts_codex.helpers import (
    API_KEY,
    API_KEY_ENV,
    host_config,
    observation,
    retained_bytes,
    run_codex,
    shell,
    survivors,
    trial,
)

pytestmark = pytest.mark.slow

SKILL = "---\nname: greet\ndescription: Greets people.\n---\nSay hello warmly.\n"
OTHER = "---\nname: farewell\ndescription: Says goodbye.\n---\nWave.\n"
READY = {"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}}


@pytest.fixture
def codex() -> str:
    return require_codex()


def test_a_passing_task_with_usage_and_cost(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(Message("ready"))])
    case = sevro_project.case(checks=[READY])
    result = run_codex(sevro_project, codex, server, case)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.json()["task"]["verdict"] == "passed"
    evidence = trial(sevro_project)["evidence"]
    usage = evidence["usage"]
    assert usage == {
        "inputTokens": 100,
        "outputTokens": 10,
        "cachedInputTokens": 20,
        "reasoningTokens": 3,
        # (80 * 2 + 20 * 0.5 + 10 * 8) / 1e6
        "costUsd": 0.00025,
        "reportedCostUsd": None,  # Codex reports no cost of its own
        "complete": True,
    }
    assert [a["id"] for a in evidence["artifactRefs"]] == ["sevro.codex.events"]
    request = server.requests[0].json()
    assert request["model"] == "mock-model" and request["stream"] is True


PRICES_FILE = {
    "format": "sevro.prices.v1",
    "version": "test.1",
    "asOf": "2026-12-05",
    "models": {
        "mock-model": {"input": 1, "cachedInput": 0.5, "output": 4, "reasoning": 6, "source": "t"}
    },
}


@pytest.mark.parametrize(
    ("host_prices", "prices_file", "cost"),
    [
        ({}, True, 0.000136),  # --prices: (80 * 1 + 20 * 0.5 + 7 * 4 + 3 * 6) / 1e6
        (None, True, 0.00025),  # the host configuration's own prices win over --prices
        ({}, False, None),  # mock-model is not in the built-in table: unknown, never 0
    ],
)
def test_the_cost_comes_from_host_prices_then_the_prices_file_then_the_builtin_table(
    sevro_project: SevroProject,
    codex: str,
    mock_model: Callable[..., Any],
    host_prices: dict[str, Any] | None,
    prices_file: bool,
    cost: float | None,
) -> None:
    server = mock_model([reply(Message("ready"))])
    case = sevro_project.case(checks=[READY])
    config = {"prices": host_prices} if host_prices is not None else None
    extra = ["--prices", str(sevro_project.write_json("prices.json", PRICES_FILE))]
    result = run_codex(sevro_project, codex, server, case, *extra[: 2 * prices_file], config=config)
    assert result.exit_code == 0, result.stdout + result.stderr
    usage = trial(sevro_project)["evidence"]["usage"]
    assert usage["complete"] is True and usage["reasoningTokens"] == 3
    assert usage["costUsd"] == (pytest.approx(cost) if cost is not None else None)
    (run_json,) = sevro_project.results.glob("*/run.json")
    override = json.loads(run_json.read_text())["prices"]["override"]
    assert (override is not None) == prices_file
    report = sevro_project.sevro("report", run_json.parent, "--json")
    assert report.exit_code == 0, report.stderr
    (spent,) = report.json()["spend"]
    assert spent["role"] == "candidate" and spent["calls"] == 1
    assert spent["costUsd"] == (pytest.approx(cost) if cost is not None else None)


def test_a_failing_task_and_unknown_usage(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(Message("not ready"), usage=None)])
    case = sevro_project.case(checks=[READY])
    result = run_codex(sevro_project, codex, server, case)
    assert result.json()["task"]["verdict"] == "failed"
    usage = trial(sevro_project)["evidence"]["usage"]
    assert usage["inputTokens"] is None and usage["costUsd"] is None and not usage["complete"]


def test_commands_files_and_skill_reads(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model(
        [
            reply(shell("cat .agents/skills/greet/SKILL.md")),
            reply(shell("head -n 2 .agents/skills/farewell/SKILL.md")),
            reply(shell("mkdir -p out && printf 'hi\\n' > out/hello.txt && rm gone.txt")),
            reply(Message("ready")),
        ]
    )
    case = sevro_project.case(
        checks=[READY],
        fixture={
            "files": {
                ".agents/skills/greet/SKILL.md": SKILL,
                ".agents/skills/farewell/SKILL.md": OTHER,
                ".agents/skills/unused/SKILL.md": "---\nname: unused\ndescription: x\n---\n",
                "AGENTS.md": "Project rule 4f1c: be brief.\n",
                "gone.txt": "bye\n",
            }
        },
    )
    result = run_codex(sevro_project, codex, server, case)
    assert result.json()["task"]["verdict"] == "passed", result.stdout
    document = trial(sevro_project)
    skills = observation(document, "sevro.skills")["data"]
    assert [s["name"] for s in skills["offered"]] == ["farewell", "greet", "unused"]
    assert skills["read"] == ["greet"]
    assert [(r["skill"], r["status"], r.get("via")) for r in skills["reads"]] == [
        ("greet", "read", None),
        ("farewell", "partial", None),
        ("greet", "read", "hooks"),  # the same read, as the passive hook saw its output
    ]
    assert all(r["turn"] == 1 and r["ordinal"] >= 1 for r in skills["reads"])
    # Codex itself offered every mounted skill, and the workspace's AGENTS.md, to the model
    # (the workspace is Codex's project root: `project_root_markers = []`).
    first = json.dumps(server.requests[0].json()["input"])
    assert all(name in first for name in ("greet", "farewell", "unused"))
    assert "Project rule 4f1c" in first
    commands = observation(document, "sevro.commands")["data"]["commands"]
    assert [c["exitCode"] for c in commands] == [0, 0, 0]
    assert "out/hello.txt" in commands[2]["command"]
    changed = observation(document, "sevro.files-changed")["data"]["changes"]
    assert [(c["path"], c["change"]) for c in changed] == [
        ("gone.txt", "deleted"),
        ("out/hello.txt", "added"),
    ]
    calls = observation(document, "sevro.tool-calls")["data"]["calls"]
    assert [c["kind"] for c in calls] == ["command_execution"] * 3


def test_follow_up_resumes_the_same_thread(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model(
        [reply(shell("printf one > turn1.txt")), reply(Message("first")), reply(Message("ready"))]
    )
    case = sevro_project.case(
        prompt="First prompt.", followUpPrompt="Second prompt.", checks=[READY]
    )
    result = run_codex(sevro_project, codex, server, case)
    assert result.json()["task"]["verdict"] == "passed", result.stdout
    evidence = trial(sevro_project)["evidence"]
    assert evidence["turnsCompleted"] == 2
    assert [a["id"] for a in evidence["artifactRefs"]] == [
        "sevro.codex.events",
        "sevro.codex.follow-up-events",
    ]
    turns = observation(trial(sevro_project), "sevro.codex.turns")["data"]["turns"]
    assert turns[0]["threadId"] == turns[1]["threadId"]
    # The resumed request carries the first turn's history.
    last = json.dumps(server.requests[-1].json()["input"])
    assert "First prompt." in last and "Second prompt." in last and "first" in last
    assert evidence["usage"]["inputTokens"] == 300  # Codex's thread total: three responses


def test_a_failed_first_turn_prevents_the_second(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(Message("partial"), error="boom mid-turn"), reply(Message("x"))])
    case = sevro_project.case(prompt="One.", followUpPrompt="Two.", checks=[READY])
    result = run_codex(sevro_project, codex, server, case)
    out = result.json()
    assert out["execution"]["status"] == "failed" and out["task"]["verdict"] == "not_assessed"
    evidence = trial(sevro_project)["evidence"]
    assert "boom mid-turn" in evidence["execution"]["message"]
    assert evidence["turnsCompleted"] == 0
    assert [a["id"] for a in evidence["artifactRefs"]] == ["sevro.codex.events"]
    assert len(server.requests) == 1 and server.remaining == 1


def test_a_hanging_cli_times_out_and_its_group_dies(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(hang=True)])
    case = sevro_project.case(checks=[READY])
    started = time.monotonic()
    result = run_codex(sevro_project, codex, server, case, timeout=3)
    assert time.monotonic() - started < 60
    evidence = trial(sevro_project)["evidence"]
    assert evidence["execution"]["status"] == "failed"
    assert "did not finish within 3 s" in evidence["execution"]["message"]
    assert result.json()["task"]["verdict"] == "not_assessed"
    assert not _codex_processes(codex)


def test_a_stalled_cli_fails_naming_the_stall_and_its_stderr(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    """No event for stallTimeoutSeconds ends the turn long before the turn timeout."""
    server = mock_model([reply(hang=True)])
    case = sevro_project.case(checks=[READY])
    started = time.monotonic()
    result = run_codex(sevro_project, codex, server, case, config={"stallTimeoutSeconds": 6})
    assert time.monotonic() - started < 45  # the turn timeout is 60 s
    (events,) = sevro_project.results.rglob("*sevro.codex.events*")
    assert events.read_bytes(), "the CLI made progress before it stalled"
    execution = trial(sevro_project)["evidence"]["execution"]
    assert execution["status"] == "failed"
    message = execution["message"]
    assert message.startswith("turn 1: codex stalled: no event for 6 s (stallTimeoutSeconds")
    assert "; stderr: " in message and API_KEY not in message
    assert result.json()["task"]["verdict"] == "not_assessed"
    assert not _codex_processes(codex)


def test_a_slow_model_that_keeps_making_progress_is_not_stalled(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    """Each event resets the stall clock: 6 s of slow replies pass a 3.5 s stall bound (the
    clock also runs while the CLI starts, so the first reply comes at once)."""
    server = mock_model(
        [
            reply(shell("echo one")),
            reply(shell("echo two"), delay_s=2),
            reply(shell("echo three"), delay_s=2),
            reply(Message("ready"), delay_s=2),
        ]
    )
    case = sevro_project.case(checks=[READY])
    started = time.monotonic()
    result = run_codex(sevro_project, codex, server, case, config={"stallTimeoutSeconds": 3.5})
    assert time.monotonic() - started > 6
    assert result.json()["task"]["verdict"] == "passed", result.stdout


def test_nothing_a_trial_starts_outlives_it(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    """Codex runs as PID 1 of its own PID namespace: a command that detaches with setsid, and
    Codex's own sandbox helpers (started with --new-session; without the namespace about one
    trial in four left one running here), all end with the trial. The mechanism's negative
    control is tests/core/test_hostkit.py."""
    marker = f"sleep 86{os.getpid() % 10000}.5"
    workspaces = tmp_path / "workspaces"
    workspaces.mkdir()
    per_trial = [
        reply(shell(f"setsid -f {marker} >/dev/null 2>&1 </dev/null; echo detached")),
        reply(shell("(setsid sh -c 'sleep 1; echo late' &) ; echo forked")),
        reply(Message("ready")),
    ]
    server = mock_model(per_trial * 3)
    case = sevro_project.case(checks=[READY])
    result = run_codex(
        sevro_project,
        codex,
        server,
        case,
        "--workspace-root",
        str(workspaces),
        "--trials",
        "3",
        "--jobs",
        "1",
    )
    assert result.json()["task"]["verdict"] == "passed", result.stdout + result.stderr
    outputs = [
        item["output"]
        for item in server.requests[-1].json()["input"]
        if item.get("type") == "function_call_output"
    ]
    assert "detached" in outputs[0] and "forked" in outputs[1]
    assert not survivors(marker)
    assert not survivors(str(workspaces))  # no sandbox helper of this trial is left either


def test_cancellation_kills_codex(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(hang=True)])
    case = sevro_project.case(checks=[READY])
    config = host_config(sevro_project, server)
    args = [case, "--host", "codex", "--host-config", config, "--codex-bin", codex, "--json"]
    args += ["--codex-api-key-env", API_KEY_ENV, "--results-root", sevro_project.results]
    with start_sevro(["run", *args], cwd=sevro_project.root, env={API_KEY_ENV: API_KEY}) as process:
        process.wait_until(
            lambda: bool(server.requests), timeout=60, what="codex to reach the mock model"
        )
        process.send_signal(signal.SIGINT)
        done = process.finish(timeout=60)
    assert json.loads(done.stdout)["execution"]["status"] == "cancelled"
    assert not _codex_processes(codex)


def test_protected_roots_and_credentials_stay_out(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    project_secret = "PROJECT-SECRET-7f3a9c"
    home_secret = "HOME-SECRET-51d2e8"
    peer_secret = "PEER-SECRET-0b6c44"
    env_secret = "ENV-SECRET-9e1f27"
    (sevro_project.root / "secret.txt").write_text(project_secret)
    home = tmp_path / "operator-home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": home_secret}))
    workspaces = tmp_path / "workspaces"
    (workspaces / "sevro-case-peer").mkdir(parents=True)
    (workspaces / "sevro-case-peer" / "notes.txt").write_text(peer_secret)
    outside = tmp_path / "outside.txt"
    attempts = [
        f"cat {sevro_project.root}/secret.txt",
        f"cat {home}/.codex/auth.json",
        f"cat {workspaces}/sevro-case-peer/notes.txt",
        f"ls {workspaces}",
        "cat $CODEX_HOME/auth.json; cat ../sevro-private-*/codex-home/auth.json",
        f"echo pwned > {sevro_project.root}/pwned.txt",
        f"echo pwned > {outside}",
        "env; printenv",
    ]
    server = mock_model([reply(shell(c)) for c in attempts] + [reply(Message("ready"))])
    case = sevro_project.case(checks=[READY])
    result = run_codex(
        sevro_project,
        codex,
        server,
        case,
        "--workspace-root",
        str(workspaces),
        env={"HOME": str(home), "SEVRO_PLANTED_ENV_SECRET": env_secret},
    )
    assert result.json()["execution"]["status"] == "completed", result.stdout + result.stderr
    assert len(server.requests) == len(attempts) + 1 and not server.unexpected
    # What the model saw: every tool output went back to it in the next request.
    seen = b"".join(r.body for r in server.requests)
    for secret in (project_secret, home_secret, peer_secret, env_secret, API_KEY):
        assert secret.encode() not in seen, secret
    outputs = [
        item["output"]
        for item in server.requests[-1].json()["input"]
        if item.get("type") == "function_call_output"
    ]
    assert len(outputs) == len(attempts)
    assert "sevro-case-peer" not in outputs[3]  # other trials are not even listed
    assert "Permission denied" in outputs[0] or "No such file" in outputs[0]
    # The only place the API key went is the provider's Authorization header.
    assert server.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert not (sevro_project.root / "pwned.txt").exists()
    assert not outside.exists()
    retained = retained_bytes(sevro_project)
    for secret in (project_secret, home_secret, peer_secret, env_secret, API_KEY):
        assert secret.encode() not in retained, secret
    # The private home is gone and so is the workspace.
    assert not list(workspaces.glob("sevro-private-*"))
    assert [p.name for p in workspaces.iterdir()] == ["sevro-case-peer"]


def _codex_processes(codex: str) -> list[str]:
    """Native Codex processes still running an `exec` turn (none may outlive a trial)."""
    time.sleep(0.3)
    out = subprocess.run(
        ["ps", "-eo", "pid,args"], capture_output=True, text=True, check=False
    ).stdout
    return [line for line in out.splitlines() if "/bin/codex exec --json" in line]
