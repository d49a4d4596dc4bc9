"""The runtime policy reaches the real Codex CLI's commands: declared PATH, variables and
read grants in sevro's permission profile, against the mock Responses server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_codex.testing import require_codex
from tests.hosts_codex.helpers import observation, run_codex, shell, trial

pytestmark = pytest.mark.slow

GREETING = "hello from the prefix 7c2e"
SECRET_VALUE = "inherited-value-5d1a"


@pytest.fixture
def codex() -> str:
    return require_codex()


@pytest.fixture
def tool(tmp_path: Path) -> Path:
    """``<prefix>/bin/mytool`` (outside /usr, in a hidden temp directory) reads
    ``<prefix>/share/greeting``: it works only when the prefix is granted."""
    return make_tool(tmp_path)


def make_tool(tmp_path: Path) -> Path:
    prefix = tmp_path.resolve() / "tools"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "share").mkdir()
    (prefix / "share" / "greeting").write_text(GREETING + "\n")
    script = prefix / "bin" / "mytool"
    script.write_text(f"#!/bin/sh\nexec cat {prefix}/share/greeting\n")
    script.chmod(0o755)
    return prefix


def runtime_file(tmp_path: Path, **environment: Any) -> Path:
    path = tmp_path / "runtime.json"
    path.write_text(json.dumps({"format": "sevro.runtime.v1", "environment": environment}))
    return path


def codes(document: dict[str, Any]) -> list[Any]:
    commands = observation(document, "sevro.commands")["data"]["commands"]
    return [c["exitCode"] for c in commands]


def tool_outputs(server: Any) -> str:
    """Every ``function_call_output`` the model was sent (what the tool results said)."""
    outputs = [
        str(item.get("output"))
        for request in server.requests
        for item in request.json().get("input", [])
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    return "\n".join(outputs)


def test_a_declared_tool_runs_and_its_output_reaches_the_model(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tool: Path
) -> None:
    outside = tool.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not granted\n")
    server = mock_model(
        [
            reply(shell("mytool")),
            reply(shell('printf "%s:%s:%s\\n" "$MODE" "$UV_OFFLINE" "$KEPT"')),
            reply(shell(f"cat {outside}/secret.txt")),
            reply(Message("ready")),
        ]
    )
    case = sevro_project.case()
    config = runtime_file(
        tool.parent, inherit=["PATH", "KEPT"], set={"MODE": "ci"}
    )  # PATH holds the tool's bin directory
    path = f"{tool}/bin:/usr/bin:/bin"
    result = run_codex(
        sevro_project,
        codex,
        server,
        case,
        "--runtime-config-file",
        str(config),
        env={"PATH": path, "KEPT": SECRET_VALUE},
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    document = trial(sevro_project)
    assert codes(document)[:2] == [0, 0]
    assert codes(document)[2] != 0  # outside every grant: not even visible
    seen = tool_outputs(server)
    assert GREETING in seen  # the tool's output is the tool result the model saw
    assert f"ci:1:{SECRET_VALUE}" in seen
    assert "not granted" not in seen
    runtime = observation(document, "sevro.host.runtime")
    assert runtime["source"] == "sevro.engine" and runtime["completeness"] == "complete"
    data = runtime["data"]
    assert data["readRoots"] == [str(tool)]
    assert data["environment"]["path"] == path
    assert data["environment"]["set"] == {"MODE": "ci"}
    assert data["environment"]["names"] == ["KEPT", "MODE", "PATH"]
    assert data["roles"] == ["candidate"]
    assert SECRET_VALUE not in json.dumps(runtime)  # an inherited value: only in the digest


def test_without_the_grant_the_tool_is_not_found(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tool: Path
) -> None:
    server = mock_model(
        [reply(shell("mytool")), reply(shell(f"{tool}/bin/mytool")), reply(Message("ready"))]
    )
    case = sevro_project.case()
    # No runtime file: sevro's fixed PATH, and the prefix is not granted.
    result = run_codex(
        sevro_project, codex, server, case, env={"PATH": f"{tool}/bin:/usr/bin:/bin"}
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    document = trial(sevro_project)
    assert codes(document)[0] == 127
    assert codes(document)[1] not in (0, None)
    assert GREETING not in tool_outputs(server)
    assert not [o for o in document["evidence"]["observations"] if o["id"] == "sevro.host.runtime"]


def test_a_declared_path_without_the_tool_directory_does_not_find_it(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tool: Path
) -> None:
    server = mock_model(
        [reply(shell("mytool")), reply(shell(f"{tool}/bin/mytool")), reply(Message("ready"))]
    )
    case = sevro_project.case()
    config = runtime_file(tool.parent, set={"PATH": "/usr/bin:/bin"})
    result = run_codex(sevro_project, codex, server, case, "--runtime-config-file", str(config))
    assert result.exit_code == 0, result.stdout + result.stderr
    document = trial(sevro_project)
    assert codes(document)[0] == 127
    assert codes(document)[1] not in (0, None)  # not granted: invisible to the command
    assert GREETING not in tool_outputs(server)
    assert observation(document, "sevro.host.runtime")["data"]["readRoots"] == []


def seeded_runtime(tmp_path: Path) -> tuple[Path, Path]:
    """A runtime file with a seed copied into the role's ``{{sevro.runtime}}/deps``."""
    seed = tmp_path.resolve() / "seed"
    seed.mkdir()
    (seed / "data.txt").write_text("seeded 41ad\n")
    path = tmp_path / "runtime.json"
    document = {
        "format": "sevro.runtime.v1",
        "environment": {"set": {"DEPS": "{{sevro.runtime}}/deps"}},
        "runtime": {"seedDirectories": [{"source": str(seed), "target": "deps"}]},
    }
    path.write_text(json.dumps(document))
    return path, seed


SEED_COMMAND = 'cat "$DEPS/data.txt" && echo mine > "$DEPS/new.txt" && cat "$DEPS/new.txt"'


def test_the_role_s_runtime_root_holds_a_writable_copy_of_the_seed(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    config, seed = seeded_runtime(tmp_path)
    server = mock_model([reply(shell(SEED_COMMAND)), reply(Message("ready"))])
    case = sevro_project.case()
    result = run_codex(sevro_project, codex, server, case, "--runtime-config-file", str(config))
    assert result.exit_code == 0, result.stdout + result.stderr
    assert codes(trial(sevro_project)) == [0]
    seen = tool_outputs(server)
    assert "seeded 41ad" in seen and "mine" in seen
    assert sorted(p.name for p in seed.iterdir()) == ["data.txt"]  # the copy changed, not it


def cached_runtime(tmp_path: Path) -> tuple[Path, Path]:
    """A runtime file giving the candidate one shared cache as ``{{sevro.runtime}}/cache``."""
    cache = tmp_path.resolve() / "cache"
    cache.mkdir()
    path = tmp_path / "runtime.json"
    document = {
        "format": "sevro.runtime.v1",
        "environment": {"set": {"CACHE": "{{sevro.runtime}}/cache"}},
        "runtime": {
            "sharedCacheDirectories": [
                {"source": str(cache), "target": "cache", "roles": ["candidate"]}
            ]
        },
    }
    path.write_text(json.dumps(document))
    return path, cache


def test_a_shared_cache_is_written_through_the_role_s_slot(
    sevro_project: SevroProject, codex: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    config, cache = cached_runtime(tmp_path)
    server = mock_model([reply(shell('echo kept > "$CACHE/entry"')), reply(Message("ready"))])
    case = sevro_project.case()
    result = run_codex(sevro_project, codex, server, case, "--runtime-config-file", str(config))
    assert result.exit_code == 0, result.stdout + result.stderr
    assert codes(trial(sevro_project)) == [0]
    assert (cache / "entry").read_text() == "kept\n"  # it outlives the trial
