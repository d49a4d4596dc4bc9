"""The Codex host's own `sevro doctor` check: whether Codex's sandbox holds here.

The check is real: it generates the same permission profile a trial gets and runs
``codex sandbox`` with it, expecting a workspace write to succeed and a read of a protected
file and a network connection to fail. (Binary, version, credentials and the PID namespace are
checked by the agent-CLI skeleton.)
"""

from __future__ import annotations

import os
import socket
from contextlib import ExitStack
from pathlib import Path

from sevro_core.api import DEFAULT_PATH, DoctorCheck, NativeBinary, Probe, sandbox_probe
from sevro_hosts_codex.configuration import PROFILE, TrialLayout, parse, render_config_toml

_PROBE = (
    "echo probe > probe.txt || exit 11; "
    'cat "$1" >/dev/null 2>&1 && exit 12; '
    '(exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && exit 13; '  # the doctor is listening
    "exit 0"
)
_PROBLEMS = {
    11: "a command could not write in the workspace",
    12: "a command could read a file outside its grants",
    13: "a command could open a network connection",
}


def sandbox_check(binary: NativeBinary) -> DoctorCheck:
    return sandbox_probe("docs/hosts/codex.md", lambda root, stack: _probe(binary, root, stack))


def _probe(binary: NativeBinary, root: Path, resources: ExitStack) -> Probe:
    listener = resources.enter_context(socket.socket())
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = str(listener.getsockname()[1])
    workspace, protected = root / "workspace", root / "protected"
    layout = TrialLayout(root / "codex-home", root / "home", root / "tmp", root / "bin")
    for directory in (workspace, protected, *vars_of(layout)):
        directory.mkdir(mode=0o700)
    (protected / "secret").write_text("doctor-secret\n")
    os.symlink(binary.native, layout.bin / "codex-linux-sandbox")
    env = {"PATH": DEFAULT_PATH, "HOME": str(layout.home), "TMPDIR": str(layout.tmp)}
    text = render_config_toml(
        parse(None, {}),
        model=None,
        effort=None,
        layout=layout,
        executable_tree=binary.tree,
        denied=[],
        command_env=env,
    )
    (layout.codex_home / "config.toml").write_text(text)
    argv = [str(binary.native), "sandbox", "-P", PROFILE, "-C", str(workspace), "--"]
    argv += ["/bin/bash", "-c", _PROBE, "probe", str(protected / "secret"), port]
    return Probe(
        argv=argv,
        workspace=workspace,
        env={**env, "PATH": f"{layout.bin}:{DEFAULT_PATH}", "CODEX_HOME": str(layout.codex_home)},
        held="workspace writable; other paths and network denied",
        problems=_PROBLEMS,
        fix="Linux needs unprivileged user namespaces (bubblewrap); see docs/hosts/codex.md",
    )


def vars_of(layout: TrialLayout) -> tuple[Path, ...]:
    return (layout.codex_home, layout.home, layout.tmp, layout.bin)
