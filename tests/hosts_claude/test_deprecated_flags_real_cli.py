"""Sevro's deprecated ``--claude-uv-cache-dir`` and ``--toolchain-bin-dir`` through the real
Claude Code CLI against the mock Messages server: each keeps its behaviour with a warning, and
is refused beside a runtime file (the controls without the flags are in
test_runtime_real_cli.py: no runtime file keeps the fixed PATH, and no seed is there)."""

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
from tests.hosts_claude.test_runtime_real_cli import results
from tests.hosts_codex.helpers import observation, trial
from tests.hosts_codex.test_runtime_real_cli import GREETING, make_tool

pytestmark = pytest.mark.slow
CACHED = "cached wheel 9f3b"


@pytest.fixture
def claude() -> str:
    return require_claude()


@pytest.fixture
def model(mock_model: Callable[..., Any]) -> Callable[..., Any]:
    return lambda replies: mock_model(replies, protocols=PROTOCOLS)


def _cache(tmp_path: Path) -> Path:
    cache = tmp_path.resolve() / "uv-cache"
    cache.mkdir()
    (cache / "marker.txt").write_text(CACHED + "\n")
    return cache


def test_both_deprecated_flags_keep_working_with_a_warning(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tmp_path: Path
) -> None:
    tool, cache = make_tool(tmp_path), _cache(tmp_path)
    server = model(
        [
            reply(bash("mytool")),
            reply(bash('cat "$UV_CACHE_DIR/marker.txt" && echo new > "$UV_CACHE_DIR/new.txt"')),
            reply(Message("ready")),
        ]
    )
    flags = ["--toolchain-bin-dir", str(tool / "bin"), "--claude-uv-cache-dir", str(cache)]
    result = run_claude(sevro_project, claude, server, sevro_project.case(), *flags)
    assert result.exit_code == 0, result.stdout + result.stderr
    for flag in ("--toolchain-bin-dir", "--claude-uv-cache-dir"):
        assert f"sevro: warning: {flag} is deprecated" in result.stderr
    seen = results(server)
    assert GREETING in seen[0] and CACHED in seen[1]
    assert not (cache / "new.txt").exists(), "the cache is copied privately, never written"
    data = observation(trial(sevro_project), "sevro.host.runtime")["data"]
    assert data["environment"]["path"].startswith(f"{tool / 'bin'}:")
    run = json.loads(Path(json.loads(result.stdout)["evidencePath"]).read_text())
    policy = run["configuration"]["redacted"]["runtimePolicy"]
    assert [s["target"] for s in policy["seedDirectories"]] == ["uv-cache-dir"]


@pytest.mark.parametrize("flag", ["--toolchain-bin-dir", "--claude-uv-cache-dir"])
def test_a_deprecated_flag_beside_a_runtime_file_is_refused(
    sevro_project: SevroProject, claude: str, model: Callable[..., Any], tmp_path: Path, flag: str
) -> None:
    server = model([reply(Message("ready"))])
    runtime = tmp_path / "runtime.json"
    runtime.write_text('{"format": "sevro.runtime.v1"}')
    args = [flag, str(_cache(tmp_path)), "--runtime-config-file", str(runtime)]
    result = run_claude(sevro_project, claude, server, sevro_project.case(), *args)
    assert result.exit_code == 64, result.stderr
    assert f"{flag} is deprecated and cannot be combined with a runtime file" in result.stderr
    assert "Traceback" not in result.stderr and not server.requests
