"""The runtime policy reaches the real Claude Code CLI's Bash tool: declared PATH, variables
and read grants mounted in the outer sandbox, against the mock Messages server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_claude.testing import require_claude
from tests.hosts_claude.helpers import PROTOCOLS, bash, run_claude
from tests.hosts_codex.helpers import observation, trial
from tests.hosts_codex.test_runtime_real_cli import (
    GREETING,
    SECRET_VALUE,
    SEED_COMMAND,
    cached_runtime,
    make_tool,
    runtime_file,
    seeded_runtime,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def claude() -> str:
    return require_claude()


@pytest.fixture
def model(mock_model: Callable[..., Any]) -> Callable[..., Any]:
    return lambda replies: mock_model(replies, protocols=PROTOCOLS)


@pytest.fixture
def tool(tmp_path: Path) -> Path:
    return make_tool(tmp_path)


def results(server: Any) -> list[str]:
    """The tool results the model was sent last, in order (what each Bash call returned)."""
    messages = server.requests[-1].json()["messages"]
    return [
        json.dumps(block.get("content"))
        for message in messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def test_a_declared_tool_runs_and_its_output_reaches_the_model(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tool: Path
) -> None:
    outside = tool.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not granted\n")
    server = model(
        [
            reply(bash("mytool")),
            reply(bash('printf "%s:%s:%s\\n" "$MODE" "$UV_OFFLINE" "$KEPT"')),
            reply(bash(f"cat {outside}/secret.txt")),
            reply(Message("ready")),
        ]
    )
    case = sevro_project.case()
    config = runtime_file(tool.parent, inherit=["PATH", "KEPT"], set={"MODE": "ci"})
    path = f"{tool}/bin:/usr/bin:/bin"
    result = run_claude(
        sevro_project,
        claude,
        server,
        case,
        "--runtime-config-file",
        str(config),
        env={"PATH": path, "KEPT": SECRET_VALUE},
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    seen = results(server)
    assert len(seen) == 3, seen
    assert GREETING in seen[0]  # the tool's output is the tool result the model saw
    assert f"ci:1:{SECRET_VALUE}" in seen[1]
    assert "not granted" not in seen[2]
    document = trial(sevro_project)
    commands = observation(document, "sevro.commands")["data"]["commands"]
    assert [c["exitCode"] for c in commands][:2] == [0, 0]
    assert commands[2]["exitCode"] != 0
    data = observation(document, "sevro.host.runtime")["data"]
    assert data["readRoots"] == [str(tool)] and data["environment"]["path"] == path
    assert SECRET_VALUE not in json.dumps(data)


def test_without_the_grant_the_tool_is_not_found(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tool: Path
) -> None:
    server = model(
        [reply(bash("mytool")), reply(bash(f"{tool}/bin/mytool")), reply(Message("ready"))]
    )
    case = sevro_project.case()
    config = runtime_file(tool.parent, set={"PATH": "/usr/bin:/bin"})
    result = run_claude(sevro_project, claude, server, case, "--runtime-config-file", str(config))
    assert result.exit_code == 0, result.stdout + result.stderr
    seen = results(server)
    assert len(seen) == 2, seen
    assert all(GREETING not in text for text in seen)
    commands = observation(trial(sevro_project), "sevro.commands")["data"]["commands"]
    assert commands[0]["exitCode"] == 127
    assert commands[1]["exitCode"] not in (0, None)  # not granted: not mounted at all


def test_no_runtime_file_keeps_the_fixed_path(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tool: Path
) -> None:
    server = model([reply(bash("mytool")), reply(Message("ready"))])
    case = sevro_project.case()
    env = {"PATH": f"{tool}/bin:/usr/bin:/bin"}
    result = run_claude(sevro_project, claude, server, case, env=env)
    assert result.exit_code == 0, result.stdout + result.stderr
    document = trial(sevro_project)
    commands = observation(document, "sevro.commands")["data"]["commands"]
    assert commands[0]["exitCode"] == 127
    assert GREETING not in results(server)[0]
    assert all(o["id"] != "sevro.host.runtime" for o in document["evidence"]["observations"])


def test_the_role_s_runtime_root_holds_a_writable_copy_of_the_seed(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tmp_path: Path
) -> None:
    config, seed = seeded_runtime(tmp_path)
    server = model([reply(bash(SEED_COMMAND)), reply(Message("ready"))])
    case = sevro_project.case()
    result = run_claude(sevro_project, claude, server, case, "--runtime-config-file", str(config))
    assert result.exit_code == 0, result.stdout + result.stderr
    (seen,) = results(server)
    assert "seeded 41ad" in seen and "mine" in seen, seen
    commands = observation(trial(sevro_project), "sevro.commands")["data"]["commands"]
    assert commands[0]["exitCode"] == 0
    assert sorted(p.name for p in seed.iterdir()) == ["data.txt"]  # the copy changed, not it


def test_a_shared_cache_is_written_through_the_role_s_slot(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tmp_path: Path
) -> None:
    config, cache = cached_runtime(tmp_path)
    server = model([reply(bash('echo kept > "$CACHE/entry"')), reply(Message("ready"))])
    case = sevro_project.case()
    result = run_claude(sevro_project, claude, server, case, "--runtime-config-file", str(config))
    assert result.exit_code == 0, result.stdout + result.stderr
    commands = observation(trial(sevro_project), "sevro.commands")["data"]["commands"]
    assert commands[0]["exitCode"] == 0, results(server)
    assert (cache / "entry").read_text() == "kept\n"  # it outlives the trial


def test_hook_plugins_are_refused_before_anything_runs(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any]
) -> None:
    """The Claude host cannot sandbox plugin hooks yet: ``hooks.plugins`` exits 64 with one
    line (with ``--claude-project-settings`` naming that conflict too); without the key the
    same run starts (positive control)."""
    server = model([reply(Message("ok"))])
    selected = {"format": "sevro.runtime.v1", "hooks": {"plugins": ["guard"]}}
    runtime = sevro_project.write_json("hooks.json", selected)
    case = sevro_project.case()
    for extra in ([], ["--claude-project-settings"]):
        done = run_claude(
            sevro_project, claude, server, case, "--runtime-config-file", str(runtime), *extra
        )
        assert done.exit_code == 64, done.stderr
        assert "hooks.plugins is not supported by the Claude host" in done.stderr
        assert ("conflicts with --claude-project-settings" in done.stderr) == bool(extra)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert server.requests == [] and not sevro_project.results.exists()
    plain = sevro_project.write_json("plain.json", {"format": "sevro.runtime.v1"})
    done = run_claude(sevro_project, claude, server, case, "--runtime-config-file", str(plain))
    assert done.exit_code in (0, 1), done.stderr
    assert len(server.requests) >= 1
