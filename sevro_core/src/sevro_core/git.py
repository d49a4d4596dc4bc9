"""Running Git for fixtures: a fixed environment, bounded output, and no configured commands.

Fixture history must be byte-identical on every machine, so Git never reads the operator's
global or system configuration, never runs a hook while sevro builds, and commits with a fixed
identity and date. After a host has run, the repository is untrusted: its ``.git/config`` may
name filter drivers, an fsmonitor or textconv programs. Every command sevro runs therefore
passes an explicit git directory, overrides the configuration keys that run programs, and uses
only plumbing that never executes a filter (see :mod:`sevro_core.gitprobe`).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from attrs import frozen

from sevro_core.limits import (
    GIT_COMMAND_TIMEOUT_SECONDS,
    MAX_DIAGNOSTIC_CHARS,
    MAX_GIT_OUTPUT_BYTES,
)
from sevro_core.models import CancelToken
from sevro_core.processes import DEFAULT_PATH, run_bounded

FIXTURE_NAME = "Sevro Fixture"
FIXTURE_EMAIL = "fixture@sevro.invalid"
FIXTURE_DATE = "2000-01-01T00:00:00+00:00"
FIXTURE_BRANCH = "main"
SCAFFOLDING_MESSAGE = "Add evaluation scaffolding"
REVISION_PATTERN = r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$"
"""A full object id: SHA-1 (40 hex) or SHA-256 (64 hex) repositories."""

ENVIRONMENT: Mapping[str, str] = {
    "PATH": DEFAULT_PATH,
    "LC_ALL": "C",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_LITERAL_PATHSPECS": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_GRAFT_FILE": os.devnull,
    "GIT_PAGER": "cat",
    "GIT_AUTHOR_NAME": FIXTURE_NAME,
    "GIT_AUTHOR_EMAIL": FIXTURE_EMAIL,
    "GIT_AUTHOR_DATE": FIXTURE_DATE,
    "GIT_COMMITTER_NAME": FIXTURE_NAME,
    "GIT_COMMITTER_EMAIL": FIXTURE_EMAIL,
    "GIT_COMMITTER_DATE": FIXTURE_DATE,
}
"""The whole environment of every Git command: nothing of the operator's leaks in."""

SAFE_OPTIONS: tuple[str, ...] = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "core.commitGraph=false",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
    "-c",
    "commit.gpgSign=false",
)
"""Configuration overrides for every command: no hooks, no helper programs, no background work."""


class GitError(Exception):
    """A Git command failed, timed out or said more than it may."""


@frozen
class GitOutput:
    exit_code: int
    stdout: bytes
    truncated: bool
    stderr: bytes = b""
    """Warnings of a command that succeeded (bounded): some mean part of the tree was skipped."""


@frozen
class Git:
    """One Git executable, run in sevro's fixed environment.

    ``prefix`` holds global options placed before every subcommand, such as the explicit
    ``--git-dir``/``--work-tree`` of a repository that must not be discovered from ``cwd``.
    """

    executable: str
    prefix: tuple[str, ...] = ()
    extra_env: tuple[tuple[str, str], ...] = ()

    def bound(self, workspace: Path) -> Git:
        """The same Git, pinned to ``workspace/.git`` (never a parent repository)."""
        return Git(
            self.executable,
            (f"--git-dir={workspace / '.git'}", f"--work-tree={workspace}"),
            self.extra_env,
        )

    def with_env(self, **env: str) -> Git:
        return Git(self.executable, self.prefix, (*self.extra_env, *env.items()))

    def run(
        self,
        *args: str,
        cwd: Path,
        stdin: bytes | None = None,
        limit: int = MAX_GIT_OUTPUT_BYTES,
        cancel: CancelToken | None = None,
        allowed_exits: Sequence[int] = (0,),
        truncate: bool = False,
    ) -> GitOutput:
        """Run ``git <args>``; output beyond ``limit`` is an error unless ``truncate``."""
        outcome = run_bounded(
            [self.executable, *SAFE_OPTIONS, *self.prefix, *args],
            cwd=cwd,
            env={**ENVIRONMENT, **dict(self.extra_env)},
            timeout_s=GIT_COMMAND_TIMEOUT_SECONDS,
            cancel=cancel or CancelToken(),
            output_limit=limit,
            stdin=stdin,
            stderr="capture",
            stderr_limit=MAX_DIAGNOSTIC_CHARS,
        )
        command = f"git {args[0]}" if args else "git"
        if outcome.cancelled:
            raise GitError(f"{command} was cancelled")
        if outcome.timed_out:
            raise GitError(f"{command} took longer than {GIT_COMMAND_TIMEOUT_SECONDS} s")
        assert outcome.exit_code is not None
        if outcome.exit_code not in allowed_exits:
            detail = " ".join(outcome.stderr.decode("utf-8", "replace").split())
            raise GitError(f"{command} exited {outcome.exit_code}: {detail or 'no message'}")
        if outcome.truncated and not truncate:
            raise GitError(f"{command} wrote more than {limit} bytes")
        return GitOutput(outcome.exit_code, outcome.output, outcome.truncated, outcome.stderr)

    def text(
        self, *args: str, cwd: Path, cancel: CancelToken | None = None, stdin: bytes | None = None
    ) -> str:
        """Run a command that must succeed; return its stdout as stripped text."""
        done = self.run(*args, cwd=cwd, cancel=cancel, stdin=stdin)
        return done.stdout.decode("utf-8", "replace").strip()

    def revision(self, cwd: Path, rev: str = "HEAD", cancel: CancelToken | None = None) -> str:
        """``rev-parse --verify <rev>^{commit}``: a full, validated commit id."""
        done = self.run("rev-parse", "--verify", f"{rev}^{{commit}}", cwd=cwd, cancel=cancel)
        return parse_revision(done.stdout)


def parse_revision(output: bytes) -> str:
    """A full object id printed by Git, or :class:`GitError`."""
    revision = output.decode("ascii", "replace").strip()
    if not _REVISION_RE.fullmatch(revision):
        raise GitError(f"git printed {revision[:80]!r}, not a commit id")
    return revision


_REVISION_RE = re.compile(REVISION_PATTERN)


def find_git() -> str | None:
    """The Git executable on the operator's PATH, canonicalised, or None."""
    found = shutil.which("git")
    return str(Path(found).resolve()) if found else None
