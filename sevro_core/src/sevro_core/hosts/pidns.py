"""Running an agent CLI as PID 1 of a PID namespace of its own, so nothing it starts outlives
its turn (Linux, util-linux ``unshare``)."""

from __future__ import annotations

import os
import platform
import shutil
from pathlib import Path

from sevro_core.errors import ConfigurationError


def pid_namespace_argv(unshare: str) -> list[str]:
    """A prefix that runs a CLI as PID 1 of a PID namespace of its own and changes nothing else.

    The CLI sees the host's filesystem, devices and network as it would natively, and a fresh
    ``/proc`` of its namespace (so sandboxes it starts itself still work). When it ends, or sevro
    kills its process group (``--kill-child`` takes the CLI down with ``unshare``), the kernel
    kills every process left in the namespace, including those that detached with ``setsid``
    into a session of their own, which a process-group kill cannot reach. Without root a user
    namespace mapping only the caller's own IDs is needed to create the PID namespace.
    """
    user = [] if os.geteuid() == 0 else ["--user", "--map-current-user"]
    return [unshare, *user, "--pid", "--fork", "--mount-proc", "--kill-child", "--"]


def pid_namespace_prefix(display: str, host: str) -> tuple[str, ...]:
    """The PID-namespace prefix every turn runs under (Linux; util-linux ``unshare``)."""
    if platform.system() != "Linux":
        return ()
    unshare = shutil.which("unshare")
    if unshare is None:
        raise ConfigurationError(
            f"unshare (util-linux) is not on PATH: each {display} turn runs in a PID namespace "
            f"of its own so nothing it starts outlives the trial (run `sevro doctor --host "
            f"{host}`)"
        )
    return tuple(pid_namespace_argv(str(Path(unshare).resolve())))
