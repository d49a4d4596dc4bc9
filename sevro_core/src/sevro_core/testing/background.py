"""A real ``sevro`` in the background, for tests that signal or watch a run while it goes.

:func:`start_sevro` starts it in a process group of its own; the test waits for a marker
(:meth:`SevroProcess.wait_until`, :meth:`SevroProcess.wait_for_line`), signals it, and
:meth:`SevroProcess.finish` collects its exit code and output within a bound: a run that does
not end in time is a hang, reported as a test failure after its whole group is killed.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sevro_core.testing.cliresult import CliResult

SEVRO = (sys.executable, "-m", "sevro_core")
"""How sevro is started unless a test says otherwise (``launcher``)."""
DEFAULT_WAIT_SECONDS = 60.0


class SevroProcess:
    """One background ``sevro``; use it as a context manager so a failing test leaves nothing."""

    def __init__(self, process: subprocess.Popen[bytes], argv: Sequence[str]) -> None:
        self.process = process
        self.argv = tuple(argv)
        self._read: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}
        self._scanned = {"stdout": 0, "stderr": 0}

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def poll(self) -> int | None:
        return self.process.poll()

    def send_signal(self, sig: int) -> None:
        """Signal sevro itself (``kill PID``)."""
        self.process.send_signal(sig)

    def signal_group(self, sig: int) -> None:
        """Signal sevro's whole group, as a terminal's Ctrl-C does."""
        os.killpg(self.process.pid, sig)

    def wait_until(
        self,
        condition: Callable[[], bool] | Path,
        *,
        timeout: float = DEFAULT_WAIT_SECONDS,
        what: str | None = None,
    ) -> None:
        """Wait until ``condition()`` holds (or the path exists); fail if sevro ends first."""
        check = condition.exists if isinstance(condition, Path) else condition
        label = what or (f"{condition} to exist" if isinstance(condition, Path) else "condition")
        deadline = time.monotonic() + timeout
        while not check():
            if self.process.poll() is not None:
                raise AssertionError(f"sevro ended before {label}: {self._ended()}")
            if time.monotonic() >= deadline:
                raise AssertionError(f"{label} not reached within {timeout:g} s")
            time.sleep(0.02)

    def wait_for_line(
        self, needle: str, *, stream: str = "stderr", timeout: float = DEFAULT_WAIT_SECONDS
    ) -> list[str]:
        """Read ``stream`` until a line containing ``needle``; return the lines read by this
        call, that one last. What was read is kept for :meth:`finish`; nothing past that line
        is read, so the pipe fills as it would otherwise."""
        pipe = self.process.stderr if stream == "stderr" else self.process.stdout
        if pipe is None:
            raise ValueError(f"{stream} is not a pipe")
        buffer, wanted = self._read[stream], needle.encode()
        deadline = time.monotonic() + timeout
        lines: list[str] = []
        with selectors.DefaultSelector() as selector:
            selector.register(pipe, selectors.EVENT_READ)
            while True:
                end = buffer.find(b"\n", self._scanned[stream])
                while end != -1:  # lines read by an earlier wait are not matched again
                    line = buffer[self._scanned[stream] : end]
                    self._scanned[stream] = end + 1
                    lines.append(line.decode("utf-8", "replace"))
                    if wanted in line:
                        return lines
                    end = buffer.find(b"\n", self._scanned[stream])
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"{needle!r} never appeared on {stream}")
                if not selector.select(timeout=min(remaining, 0.1)):
                    continue
                chunk = os.read(pipe.fileno(), 1)  # byte by byte: never read past the line
                if not chunk:
                    raise AssertionError(f"sevro ended before {needle!r}: {self._ended()}")
                buffer += chunk

    def finish(
        self, timeout: float = DEFAULT_WAIT_SECONDS, *, hang: str | None = None
    ) -> CliResult:
        """Wait for sevro to end; a hang kills its group and fails the test (with ``hang`` as
        the message, if given)."""
        from sevro_core.testing.cliresult import CliResult

        try:
            stdout, stderr = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            stdout, stderr = self.process.communicate()
            told = (bytes(self._read["stderr"]) + (stderr or b"")).decode(errors="replace")
            raise AssertionError(
                hang or f"sevro did not end within {timeout:g} s (killed); stderr: {told}"
            ) from None
        return CliResult(
            self.process.returncode,
            (bytes(self._read["stdout"]) + (stdout or b"")).decode("utf-8", "replace"),
            (bytes(self._read["stderr"]) + (stderr or b"")).decode("utf-8", "replace"),
        )

    def kill(self) -> None:
        """SIGKILL sevro's group (nothing it started in its group survives)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def _ended(self) -> str:
        result = self.finish(timeout=5)
        return f"exit {result.exit_code}; stderr: {result.stderr[-2000:]}"

    def __enter__(self) -> SevroProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.process.poll() is None:
            self.kill()
        self.process.communicate()


def start_sevro(
    args: Sequence[object],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    launcher: Sequence[str] = SEVRO,
    stdin: int | None = None,
    stderr: int | None = subprocess.PIPE,
) -> SevroProcess:
    """Start ``<launcher> ARGS`` (sevro, by default; each arg turned into a string) in its own
    process group with piped output. ``stdin``/``stderr`` may be a terminal's descriptor."""
    argv = [*launcher, *map(str, args)]
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr,
        start_new_session=True,
    )
    return SevroProcess(process, argv)
