"""``sevro.sandbox.sandbox-exec``: the macOS backend on ``/usr/bin/sandbox-exec``.

The profile follows Sevro's shape: ``(allow default)``, then denials. Network is denied
(``localHttp`` re-allows loopback IP only), and with it every Unix-domain socket: connecting to
one is ``network-outbound``, so the host's sockets are unreachable and no rule re-allows one;
writes are denied everywhere except the workspace, the private HOME and TMPDIR and a few
devices; protected roots deny reading and writing, except below the workspace and the other
granted roots. Ancestors of a granted root keep their metadata readable (``realpath`` must be
able to walk to the workspace) but not their listings. Every rule carries its own exceptions, so
the profile does not depend on rule order. The profile is passed inline (``-p``), so no profile
file outlives the command.

macOS has no PID namespace: the process group is killed after the command, but a process that
calls ``setsid`` can outlive it, and processes of the same user stay visible. `docs/security.md`
says so.
"""

from __future__ import annotations

import platform
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from sevro_core.api import (
    DEFAULT_PATH,
    LOCAL_HTTP_CAPABILITY,
    NETWORK_LOCAL_HTTP,
    CancelToken,
    SandboxPolicy,
    SandboxProbe,
    limits,
    run_bounded,
)
from sevro_sandbox.mounts import Mount, plan_mounts

BACKEND_ID = "sevro.sandbox.sandbox-exec"
SANDBOX_EXEC = "/usr/bin/sandbox-exec"
WRITABLE_DEVICES = ("/dev/null", "/dev/tty", "/dev/stdout", "/dev/stderr", "/dev/dtracehelper")


def quote(path: Path | str) -> str:
    """An SBPL string literal; control characters cannot be expressed safely and are refused."""
    text = str(path)
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise ValueError(f"path {text!r} holds a control character")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _ancestors(paths: Sequence[Path]) -> list[Path]:
    out: dict[Path, None] = {}
    for path in paths:
        for parent in path.parents:
            out.setdefault(parent, None)
    return sorted(out)


def _rule(action: str, filters: Sequence[str]) -> str:
    return f"({action} (require-all {' '.join(filters)}))"


def profile(policy: SandboxPolicy) -> str:
    """The SBPL profile for ``policy``: the same policy as the bubblewrap backend."""
    mounts = plan_mounts(policy)
    writable = [m.path for m in mounts if m.kind is Mount.WRITABLE]
    exposed = [m.path for m in mounts if m.kind in (Mount.WRITABLE, Mount.READ_ONLY)]
    hidden = [m for m in mounts if m.kind in (Mount.HIDE_DIRECTORY, Mount.HIDE_FILE)]
    lines = ["(version 1)", "(allow default)", "(deny network*)"]
    if policy.network == NETWORK_LOCAL_HTTP:
        lines += [
            '(allow network-bind (local ip "localhost:*"))',
            '(allow network-inbound (local ip "localhost:*"))',
            '(allow network-outbound (remote ip "localhost:*"))',
        ]
    keep_writable = [f"(require-not (subpath {quote(p)}))" for p in writable]
    keep_writable += [f"(require-not (literal {quote(d)}))" for d in WRITABLE_DEVICES]
    keep_writable.append('(require-not (regex #"^/dev/fd/"))')
    lines.append(_rule("deny file-write*", ['(subpath "/")', *keep_writable]))
    if hidden:
        target = "(require-any {})".format(
            " ".join(
                f"(subpath {quote(m.path)})"
                if m.kind is Mount.HIDE_DIRECTORY
                else f"(literal {quote(m.path)})"
                for m in hidden
            )
        )
        keep_exposed = [f"(require-not (subpath {quote(p)}))" for p in exposed]
        keep_ancestors = [f"(require-not (literal {quote(p)}))" for p in _ancestors(exposed)]
        lines.append(_rule("deny file-read-data file-write*", [target, *keep_exposed]))
        lines.append(
            _rule(
                "deny file-read-metadata file-read-xattr",
                [target, *keep_exposed, *keep_ancestors],
            )
        )
    return "\n".join(lines) + "\n"


def sandbox_exec_argv(argv: Sequence[str], policy: SandboxPolicy) -> list[str]:
    return [SANDBOX_EXEC, "-p", profile(policy), *argv]


class SandboxExecSandbox:
    id = BACKEND_ID
    version = "1.0.0"
    capabilities = frozenset({LOCAL_HTTP_CAPABILITY})
    requires: frozenset[str] = frozenset()

    def __init__(self, platform_name: str | None = None) -> None:
        self._platform = platform_name or sys.platform

    def probe(self) -> SandboxProbe:
        if self._platform != "darwin":
            return SandboxProbe(False, f"sandbox-exec is macOS only (this is {self._platform})")
        if not Path(SANDBOX_EXEC).exists():
            return SandboxProbe(False, f"{SANDBOX_EXEC} is missing")
        version = platform.mac_ver()[0] or None
        with tempfile.TemporaryDirectory(prefix="sevro-probe-") as scratch:
            root = Path(scratch).resolve()
            dirs = {name: root / name for name in ("workspace", "home", "tmp", "hidden")}
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
            outcome = run_bounded(
                sandbox_exec_argv(["/bin/sh", "-c", script, "sh", str(secret)], policy),
                cwd=dirs["workspace"],
                env={"PATH": DEFAULT_PATH},
                timeout_s=limits.SANDBOX_PROBE_TIMEOUT_SECONDS,
                cancel=CancelToken(),
                output_limit=4096,
            )
        if outcome.exit_code != 0:
            first = outcome.output.decode("utf-8", "replace").strip().splitlines()
            reason = first[0][:300] if first else f"exit status {outcome.exit_code}"
            return SandboxProbe(False, f"sandbox-exec cannot isolate here: {reason}", version)
        return SandboxProbe(True, f"sandbox-exec on macOS {version}", version)

    def wrap(self, argv: Sequence[str], policy: SandboxPolicy) -> list[str]:
        if self._platform != "darwin":
            raise OSError("sandbox-exec is macOS only")
        return sandbox_exec_argv(argv, policy)
