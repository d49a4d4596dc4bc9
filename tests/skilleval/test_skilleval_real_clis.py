"""The seed's body group, as written (changed-paths included), through the real Codex and
Claude Code CLIs against the mock model: both variants mount their own skills and context, the
second turn resumes the first turn's session, and the turn-scoped checks grade turn 2."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import CliResult, SevroProject, require_sandbox
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_claude.testing import require_claude
from sevro_hosts_codex.testing import require_codex
from tests.e2e.helpers import assert_valid_evidence
from tests.hosts_claude.helpers import PROTOCOLS, bash, run_claude
from tests.hosts_codex.helpers import run_codex, shell
from tests.skilleval import seed

pytestmark = pytest.mark.slow

GROUP = Path("groups/body-behavior.json")


def script(command: Callable[[str], Any], skills: str) -> list[Any]:
    """Per arm (baseline first, --jobs 1): read the target on turn 1, write on turn 2."""
    one_arm = [
        reply(command(f"cat {skills}/target/SKILL.md")),
        reply(Message("ready")),
        reply(command("""printf '{"status": "complete"}' > result.json""")),
        reply(Message("done")),
    ]
    return one_arm * 2


def assert_seed_body_group(done: CliResult) -> None:
    run = assert_valid_evidence(done.json())
    assert done.exit_code == 0, done.stdout + done.stderr
    (row,) = run["statistics"]["checkTransitions"]
    assert row["transitions"]["pass-to-pass"] == 1, row
    root = Path(done.json()["evidencePath"]).parent
    for trial in run["trials"]:
        evidence = json.loads((root / trial["path"]).read_text())["evidence"]
        found = {c["id"]: c["status"] for c in evidence["checks"]}
        expected = {
            "baseline": {"baseline-result": "passed"},
            "candidate": {
                "candidate-result": "passed",
                "candidate-status": "passed",
                "candidate-changes": "passed",
            },
        }[trial["arm"]]
        assert found == expected, (trial["arm"], evidence["checks"])
        assert evidence["turnsCompleted"] == 2


def test_codex_runs_the_seed_body_group(tmp_path: Path, mock_model: Callable[..., Any]) -> None:
    codex = require_codex()
    require_sandbox()
    project = SevroProject(seed.seed_repository(tmp_path / "repo").resolve())
    server = mock_model(script(shell, ".agents/skills"))
    done = run_codex(project, codex, server, GROUP, "--jobs", "1", "--trials", "1")
    assert_seed_body_group(done)


def test_claude_code_runs_the_seed_body_group(
    tmp_path: Path, mock_model: Callable[..., Any]
) -> None:
    claude = require_claude()
    require_sandbox()
    project = SevroProject(seed.seed_repository(tmp_path / "repo").resolve())
    server = mock_model(script(bash, ".claude/skills"), protocols=PROTOCOLS)
    done = run_claude(project, claude, server, GROUP, "--jobs", "1", "--trials", "1")
    assert_seed_body_group(done)


def _runtime_group(project: SevroProject) -> Path:
    """The seed's body group with the seed's runtime profile (its bundle written)."""
    seed.write_probe_bundle(project.root)
    group = {**seed.body_group(), **seed.RUNTIME}
    return seed.write_json(project.root / "groups" / "runtime.json", group).relative_to(
        project.root
    )


RUNTIME_REFUSED = "required evidence 'sevro.host.runtime-profile' is produced by neither host"


def test_codex_refuses_a_runtime_profile_before_anything_runs(
    tmp_path: Path, mock_model: Callable[..., Any]
) -> None:
    codex = require_codex()
    project = SevroProject(seed.seed_repository(tmp_path / "repo").resolve())
    server = mock_model([])
    done = run_codex(project, codex, server, _runtime_group(project), "--trials", "1")
    assert done.exit_code == 64, done.stderr
    assert f"{RUNTIME_REFUSED} sevro.host.codex" in done.stderr
    assert server.requests == []


def test_claude_code_refuses_a_runtime_profile_before_anything_runs(
    tmp_path: Path, mock_model: Callable[..., Any]
) -> None:
    claude = require_claude()
    project = SevroProject(seed.seed_repository(tmp_path / "repo").resolve())
    server = mock_model([], protocols=PROTOCOLS)
    done = run_claude(project, claude, server, _runtime_group(project), "--trials", "1")
    assert done.exit_code == 64, done.stderr
    assert f"{RUNTIME_REFUSED} sevro.host.claude" in done.stderr
    assert server.requests == []
