"""Plugin command hooks (runtime ``hooks.plugins``) through ``sevro run`` and the real Codex CLI
against the mock model.

Positive: the selected plugin's ``PostToolUse`` handler runs after the agent's shell command,
in the trial's sandbox: it writes into the workspace, reads its own installed plugin, and
``sevro.host.hooks`` records its execution with exit code 0. Negative controls: the unselected
plugin's handler (same event) never runs; the handler cannot read the trial's ``auth.json``
beside the plugin cache, cannot reach the mock model's port (which the runner reaches), and gets
no credential in its environment; a stalled handler is killed after its timeout with everything
it started, and the run ends in bounded time. Bad declarations exit 64 before anything runs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, MockModelServer, reply
from sevro_hosts_codex.testing import require_codex
from tests.hosts_codex.helpers import (
    API_KEY,
    API_KEY_ENV,
    observation,
    run_codex,
    shell,
    survivors,
    trial,
)

pytestmark = pytest.mark.slow

PROBE = """#!/bin/sh
echo ran > hook-ran.txt
try() { if cat "$1" >/dev/null 2>&1; then echo "$2-readable"; else echo "$2-denied"; fi; }
home="$PLUGIN_ROOT/../../../../.."
r=$(try "$PLUGIN_ROOT/.codex-plugin/plugin.json" plugin)
a=$(try "$home/auth.json" auth)
c=$(try "$home/config.toml" home)
connect='import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2)'
if python3 -c "$connect" "$1" 2>/dev/null; then n=net-reached; else n=net-blocked; fi
if env | grep -q "{key}"; then k=key-present; else k=key-absent; fi
echo "$r $a $c $n $k" > hook-probe.txt
"""


@pytest.fixture
def codex(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    return require_codex()


def plugin(market: Path, name: str, hooks: Any, files: dict[str, str] | None = None) -> None:
    root = market / "plugins" / name
    (root / ".codex-plugin").mkdir(parents=True)
    manifest = {"name": name, "version": "0.1.0", "description": "d"}
    (root / ".codex-plugin" / "plugin.json").write_text(json.dumps(manifest))
    (root / "hooks").mkdir()
    (root / "hooks" / "hooks.json").write_text(json.dumps(hooks))
    for path, text in (files or {}).items():
        (root / path).write_text(text)


def post_tool_use(command: str, **extra: Any) -> dict[str, Any]:
    handler = {"type": "command", "command": command, **extra}
    return {"hooks": {"PostToolUse": [{"matcher": ".*", "hooks": [handler]}]}}


def marketplace(root: Path, plugins: dict[str, tuple[Any, dict[str, str]]]) -> Path:
    market = root / "market"
    (market / ".agents" / "plugins").mkdir(parents=True)
    entries = [
        {
            "name": n,
            "source": {"source": "local", "path": f"./plugins/{n}"},
            "policy": {"installation": "AVAILABLE", "authentication": "ON_INSTALL"},
            "category": "Coding",
        }
        for n in plugins
    ]
    document = {"name": "sevro-local", "plugins": entries}
    (market / ".agents" / "plugins" / "marketplace.json").write_text(json.dumps(document))
    for name, (hooks, files) in plugins.items():
        plugin(market, name, hooks, files)
    return market


def run(
    project: SevroProject,
    codex: str,
    server: MockModelServer,
    market: Path,
    selected: list[str],
    provider: dict[str, Any] | None = None,
) -> Any:
    runtime = project.write_json(
        "runtime.json", {"format": "sevro.runtime.v1", "hooks": {"plugins": selected}}
    )
    names = sorted(p.name for p in (market / "plugins").iterdir())
    setting: dict[str, Any] = {"marketplace": {"path": str(market), "plugins": names}}
    if provider is not None:
        setting["modelProvider"] = provider
    case = project.case()
    return run_codex(
        project, codex, server, case, "--runtime-config-file", str(runtime), config=setting
    )


def test_a_selected_plugin_hook_runs_sandboxed_and_an_unselected_one_does_not(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    server = mock_model(
        [
            reply(shell("echo hi")),
            reply(shell("cat hook-ran.txt hook-probe.txt; ls")),
            reply(Message("done")),
        ]
    )
    port = server.base_url.split(":")[-1].split("/")[0]
    guard = (post_tool_use(f'sh "$PLUGIN_ROOT/probe.sh" {port}'), {"probe.sh": PROBE})
    guard[1]["probe.sh"] = PROBE.replace("{key}", API_KEY)
    other = (post_tool_use("echo other > other-ran.txt"), {})
    market = marketplace(tmp_path, {"guard": guard, "other": other})
    # A provider naming no key variable: the key goes into the trial's own auth.json.
    provider = {"id": "mock", "baseUrl": server.base_url, "requestMaxRetries": 0}
    done = run(sevro_project, codex, server, market, ["guard"], provider)
    assert done.exit_code in (0, 1), done.stderr
    # What the agent's second command printed reached the model's third request.
    seen = json.dumps(server.requests[2].json()["input"])
    assert "ran" in seen and "plugin-readable" in seen, seen[-2000:]
    assert "auth-denied" in seen and "home-denied" in seen, seen[-2000:]
    assert "net-blocked" in seen and "key-absent" in seen, seen[-2000:]
    assert "other-ran.txt" not in seen  # the unselected plugin's handler never ran
    found = observation(trial(sevro_project), "sevro.host.hooks")
    assert found["completeness"] == "complete"
    plugins = {p["name"]: p for p in found["data"]["plugins"]}
    assert plugins["guard"]["selected"] is True and plugins["other"]["selected"] is False
    assert plugins["other"]["commandHandlers"] == 1
    assert plugins["guard"]["sourceDigest"] != plugins["guard"]["effectiveDigest"]
    runs = found["data"]["executions"]
    assert [(r["plugin"], r["event"], r["exitCode"]) for r in runs] == [
        ("guard", "PostToolUse", 0),
        ("guard", "PostToolUse", 0),
    ]
    assert API_KEY not in json.dumps(trial(sevro_project))


def test_every_supported_event_runs_its_handler(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    """Each event sevro declares is one Codex 0.171.0 accepts and fires in ``exec``; the
    manifest naming the default file again reads it once (one execution per event)."""
    server = mock_model([reply(shell("echo hi")), reply(Message("done"))])
    events = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
    handler = {"type": "command", "command": "cat >/dev/null; echo '{}'"}
    hooks = {"hooks": {e: [{"hooks": [handler]}] for e in events}}
    market = marketplace(tmp_path, {"every": (hooks, {})})
    manifest = market / "plugins" / "every" / ".codex-plugin" / "plugin.json"
    document = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**document, "hooks": "./hooks/hooks.json"}))
    done = run(sevro_project, codex, server, market, ["every"])
    assert done.exit_code in (0, 1), done.stderr
    found = observation(trial(sevro_project), "sevro.host.hooks")
    ran = sorted((r["event"], r["exitCode"]) for r in found["data"]["executions"])
    assert ran == sorted((e, 0) for e in events), ran
    assert found["data"]["plugins"][0]["commandHandlers"] == len(events)


def test_no_selection_runs_no_plugin_hook_and_records_none(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    """Negative control: the same plugin, not selected: installed without its hook."""
    server = mock_model(
        [reply(shell("echo hi")), reply(shell("ls; echo listed")), reply(Message("done"))]
    )
    market = marketplace(tmp_path, {"guard": (post_tool_use("echo ran > hook-ran.txt"), {})})
    done = run(sevro_project, codex, server, market, [])
    assert done.exit_code in (0, 1), done.stderr
    seen = json.dumps(server.requests[2].json()["input"])
    assert "listed" in seen and "hook-ran.txt" not in seen
    found = observation(trial(sevro_project), "sevro.host.hooks")
    assert found["completeness"] == "complete" and found["data"]["executions"] == []
    assert found["data"]["plugins"][0]["selected"] is False


def test_a_stalled_hook_is_killed_after_its_timeout(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    server = mock_model([reply(shell("echo hi")), reply(Message("done"))])
    stall = post_tool_use("sleep 317; echo late > late.txt", timeout=2)
    market = marketplace(tmp_path, {"staller": (stall, {})})
    started = time.monotonic()
    done = run(sevro_project, codex, server, market, ["staller"])
    assert time.monotonic() - started < 90
    assert done.exit_code in (0, 1), done.stderr
    found = observation(trial(sevro_project), "sevro.host.hooks")
    (execution,) = found["data"]["executions"]
    assert execution["timedOut"] is True and execution["exitCode"] == 137, execution
    assert 2000 <= execution["durationMs"] < 10_000
    assert survivors("sleep 317") == []


def bad(root: Path) -> dict[str, tuple[Any, list[str], str]]:
    """Declarations and selections refused (exit 64) before anything runs."""
    ok = post_tool_use("true")
    prompt = {"hooks": {"PostToolUse": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]}}
    exec_form = {"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": ["true"]}]}]}}
    asynchronous = post_tool_use("true", **{"async": True})
    event = {"hooks": {"Notification": [{"hooks": [{"type": "command", "command": "true"}]}]}}
    return {
        "handler type": (prompt, ["demo"], "handler type 'prompt' is not supported"),
        "exec form": (exec_form, ["demo"], "exec-form arguments"),
        "async": (asynchronous, ["demo"], "asynchronous"),
        "event": (event, ["demo"], "'Notification' is not supported"),
        "unmounted": (ok, ["absent"], "hooks.plugins names 'absent'"),
    }


def test_bad_hook_declarations_and_selections_exit_64_before_anything_runs(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    server = mock_model([])
    for label, (hooks, selected, reason) in bad(tmp_path).items():
        market = marketplace(tmp_path / label.replace(" ", "-"), {"demo": (hooks, {})})
        done = run(sevro_project, codex, server, market, selected)
        assert done.exit_code == 64, (label, done.stderr)
        assert reason in done.stderr, (label, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, label
    mcp = marketplace(tmp_path / "mcp", {"demo": (post_tool_use("true"), {".mcp.json": "{}"})})
    done = run(sevro_project, codex, server, mcp, ["demo"])
    assert done.exit_code == 64 and ".mcp.json" in done.stderr, done.stderr
    skill = tmp_path / "skill"
    market = marketplace(skill, {"demo": (post_tool_use("true"), {})})
    front = "---\nname: s\ndescription: d\nhooks:\n  Stop: []\n---\nbody\n"
    (market / "plugins" / "demo" / "skills" / "s").mkdir(parents=True)
    (market / "plugins" / "demo" / "skills" / "s" / "SKILL.md").write_text(front)
    done = run(sevro_project, codex, server, market, ["demo"])
    assert done.exit_code == 64 and "frontmatter" in done.stderr, done.stderr
    assert server.requests == [] and not sevro_project.results.exists()
