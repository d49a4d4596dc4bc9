"""The Claude host's own `sevro doctor` checks: the sandbox tools, and whether the sandbox holds.

The sandbox check is real: it builds the same outer bubblewrap sandbox a trial gets and runs a
probe in it that must write in the workspace but must not see a file outside its mounts.
(Binary, version and credentials are checked by the agent-CLI skeleton.)
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sevro_core.api import (
    DEFAULT_PATH,
    DoctorCheck,
    NativeBinary,
    Probe,
    sandbox_probe,
    tools_check,
)
from sevro_hosts_claude.configuration import TrialLayout, sandbox_argv

_PROBE = 'echo probe > probe.txt || exit 11; cat "$1" >/dev/null 2>&1 && exit 12; exit 0'
_PROBLEMS = {
    11: "a sandboxed command could not write in the workspace",
    12: "a sandboxed command could read a file outside the trial",
}


def sandbox_tools_check() -> DoctorCheck:
    """Claude Code's Linux sandbox needs bubblewrap and socat on PATH."""
    return tools_check(
        "sandbox-tools",
        ("bwrap", "socat"),
        "apt-get install bubblewrap socat (Claude Code's Linux sandbox needs both)",
    )


def sandbox_check(binary: NativeBinary) -> DoctorCheck:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return DoctorCheck("sandbox", False, "bwrap not found", "apt-get install bubblewrap")
    return sandbox_probe("docs/hosts/claude.md", lambda root, _: _probe(bwrap, binary, root))


def _probe(bwrap: str, binary: NativeBinary, root: Path) -> Probe:
    workspace, private, protected = root / "workspace", root / "private", root / "protected"
    layout = TrialLayout.under(private)
    for directory in (workspace, private, protected, layout.home, layout.tmp):
        directory.mkdir(mode=0o700)
    (protected / "secret").write_text("doctor-secret\n")
    argv = sandbox_argv(
        bwrap,
        workspace=workspace,
        layout=layout,
        executable_tree=binary.tree,
        extra_read=[],
        hidden=[],
    )
    argv += ["/bin/bash", "-c", _PROBE, "probe", str(protected / "secret")]
    return Probe(
        argv=argv,
        workspace=workspace,
        env={"PATH": DEFAULT_PATH, "HOME": str(layout.home)},
        held="workspace writable; paths outside the trial hidden",
        problems=_PROBLEMS,
        fix="bubblewrap needs user namespaces; see the docs",
    )
