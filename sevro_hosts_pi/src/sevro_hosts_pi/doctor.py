"""The pi host's own `sevro doctor` checks: node, pi's script, the sandbox and the model route.

pi is a Node script, so the skeleton's ``binary`` line names node; these checks add what a
trial also needs: a node new enough for pi, pi's ``cli.js`` inside the tree sevro mounts, a
bubblewrap sandbox that holds (built with the trial's own ``sandbox_argv``: the workspace
writable, a file outside the trial unreadable, no network, node runnable inside), and the route
the model is reached by (the bridge and which credential source it uses, never the value).
(Binary, version and the credential's presence are checked by the agent-CLI skeleton.)
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path

from sevro_core.api import (
    DEFAULT_PATH,
    DoctorCheck,
    DoctorRequest,
    Probe,
    sandbox_probe,
    tools_check,
)
from sevro_hosts_pi.binary import PiBinary
from sevro_hosts_pi.configuration import PiConfig, TrialLayout, sandbox_argv

MINIMUM_NODE = (20, 6)
"""pi 0.73.1's ``engines.node`` (``>=20.6.0``)."""
NODE_VERSION_TIMEOUT_S = 20
DOCS = "docs/hosts/pi.md"

_PROBE = (
    "echo probe > probe.txt || exit 11; "
    'cat "$1" >/dev/null 2>&1 && exit 12; '
    '(exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && exit 13; '  # the doctor is listening
    '"$3" -e "process.exit(0)" >/dev/null 2>&1 || exit 14; '
    "exit 0"
)
_PROBLEMS = {
    11: "a sandboxed command could not write in the workspace",
    12: "a sandboxed command could read a file outside the trial",
    13: "a sandboxed command could open a network connection outside the sandbox",
    14: "node could not run inside the sandbox (its prefix or pi's tree is not mounted)",
}

SandboxArgv = Callable[..., list[str]]
"""The trial's ``sandbox_argv`` (a test passes a weakened one to see the probe notice)."""


def doctor_checks(
    binary: PiBinary, request: DoctorRequest, config: PiConfig
) -> list[DoctorCheck]:
    """The pi host's checks after binary, version and auth (and pid-namespace)."""
    del request  # pi runs its commands in its own process; --sandbox is refused by the skeleton
    return [
        node_check(binary.node),
        script_check(binary),
        tools_check("sandbox-tools", ("bwrap",), "apt-get install bubblewrap"),
        sandbox_check(binary),
        route_check(config),
    ]


def node_check(node: Path) -> DoctorCheck:
    """pi needs node >= 20.6; an older node fails at import, long after the trial started."""
    fix = f"install Node.js >= {MINIMUM_NODE[0]}.{MINIMUM_NODE[1]} (or pass --pi-node)"
    try:
        done = subprocess.run(
            [str(node), "--version"],
            capture_output=True,
            text=True,
            timeout=NODE_VERSION_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return DoctorCheck("node", False, f"{node} did not answer --version: {exc}", fix)
    found = parse_node_version(done.stdout)
    if done.returncode != 0 or found is None:
        return DoctorCheck("node", False, f"{node} --version gave {done.stdout.strip()!r}", fix)
    text = ".".join(map(str, found))
    if found[:2] < MINIMUM_NODE:
        return DoctorCheck("node", False, f"v{text} is older than pi needs ({node})", fix)
    return DoctorCheck("node", True, f"v{text} ({node})")


def parse_node_version(text: str) -> tuple[int, int, int] | None:
    """``v20.20.2`` -> (20, 20, 2); anything else -> None."""
    match = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)", text.strip())
    if match is None:
        return None
    return int(match[1]), int(match[2]), int(match[3])


def script_check(binary: PiBinary) -> DoctorCheck:
    """pi's ``cli.js`` must lie inside the tree sevro mounts read-only, or it cannot start."""
    script, tree = binary.script, binary.tree
    fix = "reinstall @mariozechner/pi-coding-agent (or pass --pi-bin .../dist/cli.js)"
    if not script.is_file():
        return DoctorCheck("script", False, f"{script} is not a file", fix)
    if not script.is_relative_to(tree):
        return DoctorCheck("script", False, f"{script} lies outside the mounted tree {tree}", fix)
    return DoctorCheck("script", True, f"{script} (mounted tree {tree})")


def sandbox_check(binary: PiBinary, argv_of: SandboxArgv = sandbox_argv) -> DoctorCheck:
    """A real probe in the sandbox a trial gets."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return DoctorCheck("sandbox", False, "bwrap not found", "apt-get install bubblewrap")
    return sandbox_probe(
        DOCS, lambda root, stack: _probe(bwrap, binary, root, stack, argv_of)
    )


def _probe(
    bwrap: str, binary: PiBinary, root: Path, resources: ExitStack, argv_of: SandboxArgv
) -> Probe:
    listener = resources.enter_context(socket.socket())
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = str(listener.getsockname()[1])
    workspace, private, protected = root / "workspace", root / "private", root / "protected"
    for directory in (workspace, private, protected):
        directory.mkdir(mode=0o700)
    layout = TrialLayout.under(private)
    for directory in _layout_dirs(layout):
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    (protected / "secret").write_text("doctor-secret\n")
    argv = argv_of(bwrap, workspace=workspace, layout=layout, binary=binary, hidden=[])
    argv += ["/bin/bash", "-c", _PROBE, "probe", str(protected / "secret"), port]
    argv.append(str(binary.node))
    return Probe(
        argv=argv,
        workspace=workspace,
        env={"PATH": DEFAULT_PATH, "HOME": str(layout.home)},
        held="workspace writable; paths outside the trial hidden; no network; node runs",
        problems=_PROBLEMS,
        fix=f"bubblewrap needs unprivileged user and network namespaces; see {DOCS}",
    )


def _layout_dirs(layout: TrialLayout) -> Sequence[Path]:
    return [value for value in vars(layout).values() if isinstance(value, Path)]


def route_check(config: PiConfig) -> DoctorCheck:
    """How pi reaches the model: only through sevro's bridge, which alone holds the credential."""
    credentials = config.credentials
    if credentials.file is not None:
        source = f"the file {credentials.file}"
    elif credentials.env is not None:
        source = f"${credentials.env}"
    else:
        source = "no credential"
    upstream = config.base_url or "the provider's default endpoint"
    detail = (
        f"{config.api} to {upstream} through sevro's bridge only (no other network); "
        f"the bridge adds the credential from {source}, pi and its commands never see it"
    )
    return DoctorCheck("model-route", True, detail)
