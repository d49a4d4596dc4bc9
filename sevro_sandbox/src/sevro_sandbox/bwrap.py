"""``sevro.sandbox.bwrap``: the Linux backend on bubblewrap.

The command sees the host's filesystem read-only (``--ro-bind / /``), a fresh minimal ``/dev``
(never the host's block devices), its own ``/proc`` with the reaper (PID 1) hidden, and new user,
PID, IPC, UTS, cgroup and network namespaces (loopback only, private to the sandbox). Every
capability is dropped, so nothing inside can unmount what hides a protected root. Protected
directories are covered by an empty tmpfs (mode 0111, remounted read-only), protected files by
``/dev/null`` on a ``nodev`` read-only bind (opening them fails); the workspace and the private
HOME and TMPDIR are bound writable on top, so they stay visible inside hidden parents. The
host's filesystem sockets are out of reach (:mod:`sevro_sandbox.sockets`): the runtime
directories are hidden like protected directories and every other bound socket like a protected
file. The sandbox dies with its parent, and everything it started dies with its PID namespace.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from attrs import evolve

from sevro_core.api import (
    DEFAULT_PATH,
    LOCAL_HTTP_CAPABILITY,
    PID_NAMESPACE_CAPABILITY,
    CancelToken,
    SandboxPolicy,
    SandboxProbe,
    limits,
    run_bounded,
)
from sevro_sandbox.mounts import Mount, plan_mounts, within
from sevro_sandbox.sockets import host_sockets, runtime_directories

BACKEND_ID = "sevro.sandbox.bwrap"
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"
NAMESPACES = (
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--unshare-net",
)
_VERSION = re.compile(r"^bubblewrap (\d+(?:\.\d+)+)\s*$")


def without_host_sockets(
    policy: SandboxPolicy, runtime_dirs: Sequence[Path] | None = None
) -> SandboxPolicy:
    """``policy`` with the runtime directories and every host filesystem socket protected.

    No runtime grant exists yet, so no host socket stays reachable, not even one inside the
    workspace (only the sandbox's own sockets, bound in its own network namespace, work).
    """
    dirs = tuple(runtime_directories()) if runtime_dirs is None else tuple(runtime_dirs)
    exposed = (*policy.writable_roots, *policy.read_only_roots)
    hidden_dirs = [p for p in (*dirs, *policy.protected_roots) if p not in exposed]
    # Sockets below a hidden directory that re-exposes nothing need no mount of their own.
    skip = [d for d in hidden_dirs if not any(within(e, d) for e in exposed)]
    sockets = host_sockets(skip_under=skip)
    roots = dict.fromkeys((*policy.protected_roots, *dirs, *sockets))
    return evolve(policy, protected_roots=tuple(roots))


def bwrap_argv(
    binary: str,
    argv: Sequence[str],
    policy: SandboxPolicy,
    runtime_dirs: Sequence[Path] | None = None,
) -> list[str]:
    """The complete bwrap command line for ``argv`` under ``policy``.

    ``runtime_dirs`` replaces :data:`sevro_sandbox.sockets.RUNTIME_DIRECTORIES` (tests).
    """
    policy = without_host_sockets(policy, runtime_dirs)
    out = [binary, "--die-with-parent", "--new-session", *NAMESPACES, "--cap-drop", "ALL"]
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    out += ["--perms", "0111", "--tmpfs", "/proc/1"]  # the reaper's environ and command line
    hidden_dirs = ["/proc/1"]
    for mount in plan_mounts(policy):
        path = str(mount.path)
        if mount.kind is Mount.HIDE_DIRECTORY:
            out += ["--perms", "0111", "--tmpfs", path]
            hidden_dirs.append(path)
        elif mount.kind is Mount.HIDE_FILE:
            out += ["--ro-bind", "/dev/null", path]
        elif mount.kind is Mount.READ_ONLY:
            out += ["--ro-bind", path, path]
        else:
            out += ["--bind", path, path]
    for path in hidden_dirs:
        out += ["--remount-ro", path]
    out += ["--chdir", str(policy.workspace), "--", *argv]
    return out


class BubblewrapSandbox:
    id = BACKEND_ID
    version = "1.0.0"
    capabilities = frozenset({LOCAL_HTTP_CAPABILITY, PID_NAMESPACE_CAPABILITY})
    requires: frozenset[str] = frozenset()

    def __init__(self, binary: str = "bwrap") -> None:
        self._name = binary

    def binary(self) -> str | None:
        found = shutil.which(self._name)
        return os.path.realpath(found) if found is not None else None

    def probe(self) -> SandboxProbe:
        binary = self.binary()
        if binary is None:
            return SandboxProbe(False, f"bwrap is not on PATH; {INSTALL_HINT}")
        version = _run([binary, "--version"], Path("/"))
        match = _VERSION.match(version[1]) if version[0] == 0 else None
        if match is None:
            return SandboxProbe(False, f"{binary} --version failed: {version[1].strip()[:200]}")
        with tempfile.TemporaryDirectory(prefix="sevro-probe-") as scratch:
            code, output = _self_test(binary, Path(os.path.realpath(scratch)))
        if code != 0:
            first = (output.strip().splitlines() or [f"exit status {code}"])[0]
            return SandboxProbe(
                False, f"{binary} cannot create a sandbox here: {first[:300]}", match.group(1)
            )
        return SandboxProbe(True, f"bubblewrap {match.group(1)} at {binary}", match.group(1))

    def wrap(self, argv: Sequence[str], policy: SandboxPolicy) -> list[str]:
        binary = self.binary()
        if binary is None:
            raise OSError(f"bwrap is not on PATH; {INSTALL_HINT}")
        return bwrap_argv(binary, argv, policy)


def _run(argv: list[str], cwd: Path) -> tuple[int | None, str]:
    outcome = run_bounded(
        argv,
        cwd=cwd,
        env={"PATH": DEFAULT_PATH, "LANG": "C.UTF-8"},
        timeout_s=limits.SANDBOX_PROBE_TIMEOUT_SECONDS,
        cancel=CancelToken(),
        output_limit=4096,
    )
    return outcome.exit_code, outcome.output.decode("utf-8", "replace")


def _self_test(binary: str, scratch: Path) -> tuple[int | None, str]:
    """Run the real policy once: the workspace is writable and a hidden file unreadable."""
    dirs = {name: scratch / name for name in ("workspace", "home", "tmp", "hidden")}
    for directory in dirs.values():
        directory.mkdir(mode=0o700)
    secret = dirs["hidden"] / "secret"
    secret.write_text("probe\n")
    policy = SandboxPolicy(
        workspace=dirs["workspace"],
        home=dirs["home"],
        tmpdir=dirs["tmp"],
        protected_roots=(dirs["hidden"],),
    )
    script = 'echo ok > probe && ! cat "$1" 2>/dev/null'
    return _run(bwrap_argv(binary, ["/bin/sh", "-c", script, "sh", str(secret)], policy), scratch)
