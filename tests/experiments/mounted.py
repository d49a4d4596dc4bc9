"""What the real-CLI mounting tests of every host share: one arm (a real bundle and a context
file), a real Git fixture to mount it in, and readers of what the host and the mock saw."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sevro_core.experiments.mounting import MountedSkillBundle
from sevro_core.experiments.sources import DirectorySource, SourceTree, read_source
from sevro_core.fixtures.git import Git
from sevro_core.models import HostResult
from sevro_core.testing import require_tool
from sevro_core.testing.mockmodel import MockModelServer

NAME = "zephyr-ledger"
DESCRIPTION = "Balances zephyr ledgers q7v4 before a release."
SKILL = f"---\nname: {NAME}\ndescription: {DESCRIPTION}\n---\nAdd the columns twice.\n"
CONTEXT = "House rule k9w2: answer in one word.\n"


def arm(tmp_path: Path) -> tuple[MountedSkillBundle, SourceTree]:
    """A real bundle (SKILL.md and a resource) and a context file, read as directory sources."""
    skill, context = tmp_path / "skills" / "ledger", tmp_path / "context"
    skill.mkdir(parents=True)
    context.mkdir()
    (skill / "SKILL.md").write_text(SKILL)
    (skill / "columns.md").write_text("Columns: debit, credit.\n")
    (context / "AGENTS.md").write_text(CONTEXT)
    return (
        MountedSkillBundle(NAME, read_source(DirectorySource(skill))),
        read_source(DirectorySource(context)),
    )


def git_workspace(tmp_path: Path) -> tuple[Git, Path]:
    git = Git(require_tool("git"))
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True)
    git.run("init", "-q", "-b", "main", str(workspace), cwd=workspace)
    (workspace / "README.md").write_text("# Project\n")
    git.run("add", "-A", cwd=workspace)
    git.run("commit", "-q", "-m", "Fixture", cwd=workspace)
    return git, workspace


def skills_of(result: HostResult) -> dict[str, Any]:
    (found,) = [o for o in result.observations if o.id == "sevro.skills"]
    assert isinstance(found.data, dict)
    return found.data


def requests_text(server: MockModelServer) -> str:
    return "\n".join(json.dumps(r.json()) for r in server.requests)
