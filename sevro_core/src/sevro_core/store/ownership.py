"""Who owns a run: a process identity that survives pid reuse, and a liveness check.

An owner is ``(pid, host, start)`` where ``start`` identifies the process's start: on Linux the
boot id plus the start time in clock ticks from ``/proc/<pid>/stat``, elsewhere ``ps``'s
``lstart``. A pid that now belongs to a process with another start is a dead owner.
"""

from __future__ import annotations

import enum
import os
import socket
import subprocess
from pathlib import Path

from attrs import frozen


class Liveness(enum.StrEnum):
    ALIVE = "alive"
    DEAD = "dead"
    UNKNOWN = "unknown"


@frozen
class Owner:
    pid: int
    host: str
    start: str


def _linux_start(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    return f"{boot}:{fields[19]}"


def _ps_start(pid: int) -> str | None:
    try:
        done = subprocess.run(
            ["ps", "-p", str(pid), "-o", "lstart="],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = done.stdout.strip()
    return f"lstart:{text}" if done.returncode == 0 and text else None


def process_start(pid: int) -> str | None:
    """The start identity of ``pid``, or None when no such process exists (or is visible)."""
    if Path("/proc/self/stat").exists():
        return _linux_start(pid)
    return _ps_start(pid)


def current_owner() -> Owner:
    pid = os.getpid()
    start = process_start(pid)
    if start is None:  # pragma: no cover - every supported system answers for itself
        raise RuntimeError("cannot determine this process's start time")
    return Owner(pid=pid, host=socket.gethostname(), start=start)


def liveness(owner: Owner) -> Liveness:
    """Alive only when the same process (same start) still runs on this host."""
    if owner.host != socket.gethostname():
        return Liveness.UNKNOWN
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return Liveness.DEAD
    except PermissionError:
        pass  # exists, owned by someone else: compare start times
    # Another start (or another boot) means the pid was reused: the owner is gone.
    return Liveness.ALIVE if process_start(owner.pid) == owner.start else Liveness.DEAD
