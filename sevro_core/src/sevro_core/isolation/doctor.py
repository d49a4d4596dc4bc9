"""The doctor's sandbox check: would sevro's own sandbox hold here, for run steps and shell checks?

The probe is real. It selects the backend a run would select, binds it to a scratch trial the
way the engine does (workspace, private HOME and TMPDIR, a protected root holding a secret, the
workspace root hidden) and runs a command through :meth:`Isolation.run`, the path scripted
``run`` steps and ``sevro.shell`` checks take. The command must be able to write its workspace
and HOME, and must fail to read the secret and to connect to a listener of the doctor's.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any

from sevro_core.errors import InvocationError
from sevro_core.hosts.agentcli import DoctorCheck
from sevro_core.isolation.protection import OPERATOR, ProtectedRoot
from sevro_core.isolation.sandbox import IsolationError, select_sandbox
from sevro_core.limits import SANDBOX_PROBE_TIMEOUT_SECONDS
from sevro_core.models import CancelToken
from sevro_core.plugin.protocols import NETWORK_NONE

_PROBE = (
    "echo probe > probe.txt || exit 11; "
    'echo probe > "$HOME/probe.txt" || exit 14; '
    'cat "$1" >/dev/null 2>&1 && exit 12; '
    'cat "$3" >/dev/null 2>&1 && exit 15; '
    '(exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && exit 13; '  # the doctor is listening
    "exit 0"
)
_PROBLEMS = {
    11: "a command could not write in its workspace",
    12: "a command could read a protected file",
    13: "a command could open a network connection",
    14: "a command could not write in its private HOME",
    15: "a command could read another trial's workspace",
}
_FIX = (
    "install bubblewrap (Debian/Ubuntu: apt install bubblewrap) and allow unprivileged user "
    "namespaces; see docs/security.md"
)


def sandbox_check(registry: Any, requested: str = "auto") -> DoctorCheck:
    """One ``sandbox`` line: the selected backend and what the probe proved, or why it failed."""
    if requested == "none":
        return DoctorCheck(
            "sandbox",
            False,
            "isolation disabled by --sandbox none: run steps and shell checks would run "
            "unsandboxed, with your files and network",
            "drop --sandbox none (a run records the opt-out in its evidence and identity)",
        )
    root = Path(tempfile.mkdtemp(prefix="sevro-doctor-")).resolve()
    listener = socket.socket()
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = str(listener.getsockname()[1])
        workspace, private, protected = root / "workspaces" / "w", root / "private", root / "p"
        peer = workspace.parent / "peer"
        for directory in (workspace.parent, workspace, peer, private, protected):
            directory.mkdir(mode=0o700)
        secret = protected / "secret"
        secret.write_text("doctor-secret\n")
        (peer / "notes").write_text("peer-notes\n")
        try:
            selection = select_sandbox(
                registry, requested, NETWORK_NONE, [ProtectedRoot(OPERATOR, protected)]
            )
        except InvocationError as exc:
            return DoctorCheck("sandbox", False, exc.one_line(), _FIX)
        if selection.problem is not None:
            return DoctorCheck("sandbox", False, selection.problem, _FIX)
        isolation = selection.bind(workspace=workspace, private_root=private, cancel=CancelToken())
        outcome = isolation.run(
            ["/bin/bash", "-c", _PROBE, "probe", str(secret), port, str(peer / "notes")],
            role="candidate",
            timeout_s=SANDBOX_PROBE_TIMEOUT_SECONDS,
            output_limit=4096,
        )
        if outcome.exit_code == 0 and (workspace / "probe.txt").is_file():
            return DoctorCheck(
                "sandbox",
                True,
                f"{selection.detail}: workspace and HOME writable; a protected file, the other "
                "workspaces and the network denied",
            )
        if outcome.timed_out:
            detail = f"the probe did not finish in {SANDBOX_PROBE_TIMEOUT_SECONDS:g} s"
        else:
            detail = _PROBLEMS.get(
                outcome.exit_code or -1, f"the probe exited with status {outcome.exit_code}"
            )
        return DoctorCheck("sandbox", False, f"{selection.detail}: {detail}", _FIX)
    except (IsolationError, OSError) as exc:
        return DoctorCheck("sandbox", False, f"the probe could not run: {exc}", _FIX)
    finally:
        listener.close()
        shutil.rmtree(root, ignore_errors=True)
