"""The host's filesystem Unix sockets, which a sandboxed command must not reach.

A read-only bind mount does not stop ``connect()`` on a Unix socket, and a private network
namespace only scopes abstract sockets; a pathname socket such as ``/run/docker.sock`` stays
reachable through the filesystem. Two layers keep them out, both applied when each sandbox is
built:

* the directories where daemons keep their sockets (:data:`RUNTIME_DIRECTORIES`: ``/run`` with
  ``/var/run``, the X11/ICE socket directories) are covered by an empty tmpfs, which also hides
  every socket created there later;
* every other pathname socket the host's network namespace has bound (``/proc/net/unix``) gets
  ``/dev/null`` mounted over it, so ``connect()`` fails.

What is left is documented in `docs/security.md`: a socket created while the command runs in a
directory that is not hidden, and a socket bound in another network namespace (a container's)
on a path the host shares. Sockets the sandboxed command makes itself stay usable.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from sevro_core.api import limits

RUNTIME_DIRECTORIES = (
    "/run",
    "/var/run",
    "/tmp/.X11-unix",  # noqa: S108 (hidden, never used)
    "/tmp/.ICE-unix",  # noqa: S108 (hidden, never used)
    "/tmp/.XIM-unix",  # noqa: S108 (hidden, never used)
    "/tmp/.font-unix",  # noqa: S108 (hidden, never used)
)
"""Where the host's daemons and desktop keep their sockets; hidden whole in every sandbox."""

UNIX_SOCKET_TABLE = Path("/proc/net/unix")


@functools.lru_cache(maxsize=64)
def _canonical(candidate: str) -> str:
    """Where a runtime directory really is; the machine's layout, resolved once per process."""
    return os.path.realpath(candidate)


def runtime_directories(candidates: Iterable[str] = RUNTIME_DIRECTORIES) -> tuple[Path, ...]:
    """The candidates that exist as directories now, canonical (``/var/run`` is usually
    ``/run``)."""
    out: dict[Path, None] = {}
    for candidate in candidates:
        resolved = _canonical(candidate)
        if resolved != "/" and os.path.isdir(resolved):
            out.setdefault(Path(resolved), None)
    return tuple(out)


def _read_table(table: Path) -> bytes:
    with open(table, "rb") as handle:
        data = handle.read(limits.MAX_HOST_SOCKET_LISTING_BYTES + 1)
    if len(data) > limits.MAX_HOST_SOCKET_LISTING_BYTES:
        raise OSError(
            f"{table} is larger than {limits.MAX_HOST_SOCKET_LISTING_BYTES} bytes; "
            "the host's sockets cannot all be hidden"
        )
    return data


def bound_paths(table: bytes) -> list[str]:
    """The absolute pathnames in a ``/proc/net/unix`` listing (abstract and unnamed skipped)."""
    out = []
    for line in table.split(b"\n")[1:]:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith(b"/"):
            out.append(os.fsdecode(fields[7]))
    return out


def host_sockets(
    skip_under: Iterable[Path] = (), table: Path = UNIX_SOCKET_TABLE
) -> tuple[Path, ...]:
    """Canonical paths of the host's bound filesystem sockets that still exist as sockets.

    Sockets below ``skip_under`` (directories hidden anyway) are left out cheaply. A socket
    whose file was removed, or that was bound under another mount namespace's path, is not a
    file here and needs nothing.
    """
    hidden = tuple(str(p).rstrip("/") + "/" for p in skip_under)
    out: dict[Path, None] = {}
    for raw in bound_paths(_read_table(table)):
        if raw.startswith(hidden):
            continue
        path = os.path.realpath(raw)
        if path.startswith(hidden):
            continue
        try:
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                out.setdefault(Path(path), None)
        except OSError:
            continue
    return tuple(sorted(out))
