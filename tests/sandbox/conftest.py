"""Fixtures for the sandbox backend tests: a real bubblewrap and a scratch policy layout."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from attrs import frozen

from sevro_core.isolation.processes import DEFAULT_PATH, run_bounded
from sevro_core.models import CancelToken, ProcessOutcome
from sevro_core.plugin.protocols import SandboxPolicy
from sevro_core.testing import require_tool
from sevro_sandbox.bwrap import BubblewrapSandbox


@frozen
class Layout:
    """A workspace root with this trial's workspace, private dirs, a protected dir and file."""

    root: Path

    @property
    def workspaces(self) -> Path:
        return self.root / "workspaces"

    @property
    def workspace(self) -> Path:
        return self.workspaces / "sevro-case-mine"

    @property
    def peer(self) -> Path:
        return self.workspaces / "sevro-case-peer"

    @property
    def home(self) -> Path:
        return self.root / "private" / "home"

    @property
    def tmpdir(self) -> Path:
        return self.root / "private" / "tmp"

    @property
    def protected(self) -> Path:
        return self.root / "protected"

    @property
    def protected_file(self) -> Path:
        return self.root / "credentials"

    @property
    def outside(self) -> Path:
        return self.root / "outside"

    def policy(self, **overrides: object) -> SandboxPolicy:
        fields: dict[str, object] = {
            "workspace": self.workspace,
            "home": self.home,
            "tmpdir": self.tmpdir,
            "protected_roots": (self.workspaces, self.protected, self.protected_file),
            "environment": {"PATH": DEFAULT_PATH, "HOME": str(self.home), "LANG": "C.UTF-8"},
        }
        fields.update(overrides)
        return SandboxPolicy(**fields)  # type: ignore[arg-type]


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    made = Layout(tmp_path.resolve())
    for directory in (
        made.workspace,
        made.peer,
        made.home,
        made.tmpdir,
        made.protected,
        made.outside,
    ):
        directory.mkdir(parents=True)
    (made.protected / "secret.txt").write_text("protected-secret\n")
    made.protected_file.write_text("file-secret\n")
    (made.peer / "peer.txt").write_text("peer-secret\n")
    (made.outside / "readable.txt").write_text("readable\n")
    return made


@pytest.fixture
def bwrap() -> BubblewrapSandbox:
    require_tool("bwrap")
    return BubblewrapSandbox()


def sandboxed(
    backend: BubblewrapSandbox,
    policy: SandboxPolicy,
    script: str,
    *args: str,
    timeout_s: float = 20,
) -> ProcessOutcome:
    """Run ``sh -c script`` under ``policy``, stdout and stderr merged."""
    argv: Sequence[str] = ["/bin/sh", "-c", script, "sh", *args]
    return run_bounded(
        backend.wrap(argv, policy),
        cwd=policy.workspace,
        env=policy.environment,
        timeout_s=timeout_s,
        cancel=CancelToken(),
        output_limit=1 << 16,
    )
