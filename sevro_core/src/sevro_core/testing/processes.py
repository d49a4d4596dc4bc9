"""Faking the processes sevro launches, so a host, fixture or grader is tested without them.

Every untrusted process sevro starts goes through one of two doors: a command run in the
trial's sandbox (:meth:`sevro_core.isolation.sandbox.Isolation.run`: the scripted host's
commands, shell checks) or a direct launch (:func:`sevro_core.isolation.processes.run_bounded`:
agent CLIs, git on fixtures, sandbox probes). :func:`patch_processes` puts a handler in front of
both, as tox's ``patch_execute`` does: the handler sees each :class:`ProcessCall` once and
returns a :class:`FakeProcess` (nothing is launched) or ``None`` (the real process runs).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from attrs import evolve, field, frozen

if TYPE_CHECKING:
    from sevro_core.models import CancelToken, ProcessOutcome


@frozen
class ProcessCall:
    """One process sevro was about to start."""

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]
    timeout_s: float
    stdin: bytes | None = None
    role: str | None = None
    """The sandbox role (``candidate``, ``checks``) for a sandboxed command; ``None`` for a
    direct launch (an agent CLI, git, a sandbox probe), whose ``argv`` is the real one."""

    @property
    def sandboxed(self) -> bool:
        return self.role is not None

    @property
    def command(self) -> str:
        """The argv as one space-joined string, for matching in handlers."""
        return " ".join(self.argv)


@frozen
class FakeProcess:
    """A scripted result. ``output`` is what the caller would read: stdout, with stderr merged
    in when the caller merges it (sandboxed commands do by default)."""

    exit_code: int | None = 0
    output: bytes = b""
    stderr: bytes = b""
    timed_out: bool = False
    cancelled: bool = False
    stalled: bool = False
    overflowed: bool = False

    def outcome(self, output_limit: int | None = None) -> ProcessOutcome:
        from sevro_core.models import ProcessOutcome

        limit = len(self.output) if output_limit is None else output_limit
        ended = self.timed_out or self.cancelled or self.stalled or self.overflowed
        return ProcessOutcome(
            exit_code=None if ended else self.exit_code,
            timed_out=self.timed_out,
            cancelled=self.cancelled,
            output=self.output[:limit],
            truncated=len(self.output) > limit,
            duration_ms=0.0,
            stderr=self.stderr,
            overflowed=self.overflowed,
            stalled=self.stalled,
        )


Handler = Callable[[ProcessCall], FakeProcess | None]


@frozen
class ProcessLog:
    """What the handler saw, in order: each call and whether it was faked."""

    entries: list[tuple[ProcessCall, bool]] = field(factory=list)

    @property
    def calls(self) -> list[ProcessCall]:
        return [call for call, _ in self.entries]

    @property
    def faked(self) -> list[ProcessCall]:
        return [call for call, faked in self.entries if faked]


def patch_processes(monkeypatch: pytest.MonkeyPatch, handler: Handler) -> ProcessLog:
    """Route every process sevro launches through ``handler`` until ``monkeypatch`` undoes it."""
    from sevro_core.isolation import processes
    from sevro_core.isolation.sandbox import Isolation, IsolationError

    log = ProcessLog()
    passing = threading.local()  # a sandboxed call the handler let through: asked once only
    real_isolated_run = Isolation.run

    def direct(
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        stdin: bytes | None,
        timeout_s: float,
        cancel: CancelToken,
    ) -> ProcessOutcome | None:
        if getattr(passing, "active", False):
            return None
        call = ProcessCall(tuple(argv), Path(cwd), dict(env), timeout_s, stdin)
        fake = handler(call)
        log.entries.append((call, fake is not None))
        return None if fake is None else fake.outcome()

    def isolated(
        self: Isolation,
        argv: Sequence[str],
        *,
        role: str,
        timeout_s: float,
        output_limit: int,
        merge_stderr: bool = True,
        capture_output: bool = True,
        kill_on_overflow: bool = False,
        environment: Mapping[str, str] | None = None,
    ) -> ProcessOutcome:
        if self.selection.problem is not None:  # faking processes does not fake a sandbox
            raise IsolationError(self.selection.problem)
        call = ProcessCall(
            tuple(argv), self.workspace, dict(environment or {}), timeout_s, None, role
        )
        fake = handler(call)
        log.entries.append((call, fake is not None))
        if fake is not None:
            outcome = fake.outcome(output_limit if capture_output else 0)
            return evolve(outcome, stderr=b"")  # a sandboxed command's stderr is never kept
        passing.active = True
        try:
            return real_isolated_run(
                self,
                argv,
                role=role,
                timeout_s=timeout_s,
                output_limit=output_limit,
                merge_stderr=merge_stderr,
                capture_output=capture_output,
                kill_on_overflow=kill_on_overflow,
                environment=environment,
            )
        finally:
            passing.active = False

    monkeypatch.setattr(processes, "substitute", direct)
    monkeypatch.setattr(Isolation, "run", isolated)
    return log


@pytest.fixture
def fake_processes(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Handler], ProcessLog]]:
    """``fake_processes(handler) -> ProcessLog``: fake launches for the rest of one test."""

    def install(handler: Handler) -> ProcessLog:
        return patch_processes(monkeypatch, handler)

    yield install
