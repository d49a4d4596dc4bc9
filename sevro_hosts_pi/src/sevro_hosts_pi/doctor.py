"""The pi host's own `sevro doctor` checks: node, pi's script, the sandbox and the model route.

pi is a Node script, so the skeleton's ``binary`` line names node; these checks add what a
trial also needs: a node new enough for pi, pi's ``cli.js`` inside the tree sevro mounts, a
bubblewrap sandbox that holds (built with the trial's own ``sandbox_argv``: the workspace
writable, a file outside the trial unreadable, no network, node runnable inside), and the route
the model is reached by (the bridge and which credential source it uses, never the value).
(Binary, version and the credential's presence are checked by the agent-CLI skeleton.)
"""

from __future__ import annotations

import shutil
import socket
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from sevro_core.api import (
    DEFAULT_PATH,
    BinaryError,
    DoctorCheck,
    DoctorRequest,
    Probe,
    sandbox_probe,
    tools_check,
)
from sevro_hosts_pi.binary import PACKAGE, PiBinary, node_version
from sevro_hosts_pi.configuration import (
    PiConfig,
    SandboxMounts,
    TrialLayout,
    models_json,
    sandbox_argv,
    settings_json,
)

DOCS = "docs/hosts/pi.md"
PROBE_PORT = 47000
"""The bridge port written into the probe's ``models.json`` (nothing listens on it)."""

_PROBE = (
    "echo probe > probe.txt || exit 11; "
    'cat "$1" >/dev/null 2>&1 && exit 12; '
    '(exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && exit 13; '  # the doctor is listening
    '"$3" "$4" --version >/dev/null 2>&1 || exit 14; '
    "exit 0"
)
_PROBLEMS = {
    11: "a sandboxed command could not write in the workspace",
    12: "a sandboxed command could read a file outside the trial",
    13: "a sandboxed command could open a network connection outside the sandbox",
    14: "pi could not run inside the sandbox (node's prefix or pi's tree is not mounted)",
}

SandboxArgv = Callable[..., list[str]]
"""The trial's ``sandbox_argv`` (a test passes a weakened one to see the probe notice)."""


def doctor_checks(binary: PiBinary, request: DoctorRequest, config: PiConfig) -> list[DoctorCheck]:
    """The pi host's checks after binary, version and auth (and pid-namespace)."""
    del request  # pi runs its commands in its own process; --sandbox is refused by the skeleton
    return [
        node_check(binary),
        script_check(binary),
        tools_check("sandbox-tools", ("bwrap",), "apt-get install bubblewrap"),
        sandbox_check(binary, config),
        route_check(config),
    ]


def node_check(binary: PiBinary) -> DoctorCheck:
    """pi needs node >= 20.6; an older one fails only once a trial has started."""
    try:
        found = node_version(binary)
    except BinaryError as exc:
        return DoctorCheck("node", False, str(exc), "install Node.js >= 20.6 (or pass --pi-node)")
    return DoctorCheck("node", True, f"{found} ({binary.node})")


def script_check(binary: PiBinary) -> DoctorCheck:
    """pi's ``cli.js`` must lie inside the tree sevro mounts read-only, or it cannot start."""
    script, tree = binary.script, binary.tree
    fix = f"reinstall {PACKAGE} (or pass --pi-bin .../dist/cli.js)"
    if not script.is_file():
        return DoctorCheck("script", False, f"{script} is not a file", fix)
    if not script.is_relative_to(tree):
        return DoctorCheck("script", False, f"{script} lies outside the mounted tree {tree}", fix)
    return DoctorCheck("script", True, f"{script} (mounted read-only: {tree})")


def sandbox_check(
    binary: PiBinary, config: PiConfig, argv_of: SandboxArgv = sandbox_argv
) -> DoctorCheck:
    """A real probe in the sandbox a trial gets: the workspace writable, a file outside the
    trial unreadable, no network, pi itself runnable."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return DoctorCheck("sandbox", False, "bwrap not found", "apt-get install bubblewrap")
    return sandbox_probe(
        DOCS, lambda root, stack: _probe(bwrap, binary, config, root, stack, argv_of)
    )


def _probe(
    bwrap: str,
    binary: PiBinary,
    config: PiConfig,
    root: Path,
    resources: ExitStack,
    argv_of: SandboxArgv,
) -> Probe:
    listener = resources.enter_context(socket.socket())
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = str(listener.getsockname()[1])
    workspace, bridge, protected = root / "workspace", root / "bridge", root / "protected"
    layout = TrialLayout.under(root / "private")
    for directory in (workspace, bridge, protected, layout.root, *layout.directories):
        directory.mkdir(mode=0o700)
    layout.models_file.write_text(models_json(config, "doctor-model", PROBE_PORT))
    layout.settings_file.write_text(settings_json())
    (protected / "secret").write_text("doctor-secret\n")
    mounts = SandboxMounts(read=[binary.node_prefix, binary.tree])
    argv = argv_of(bwrap, workspace=workspace, layout=layout, bridge_dir=bridge, mounts=mounts)
    argv += ["/bin/bash", "-c", _PROBE, "probe", str(protected / "secret"), port]
    argv += [str(binary.node), str(binary.script)]
    return Probe(
        argv=argv,
        workspace=workspace,
        env={"PATH": DEFAULT_PATH, "HOME": str(layout.home), "PI_OFFLINE": "1"},
        held="workspace writable; paths outside the trial hidden; no network; pi runs",
        problems=_PROBLEMS,
        fix=f"bubblewrap needs unprivileged user and network namespaces; see {DOCS}",
    )


def route_check(config: PiConfig) -> DoctorCheck:
    """How pi reaches the model: only through sevro's bridge, which alone holds the credential
    (its source is named, never its value)."""
    credentials = config.credentials
    if credentials.file is not None:
        source = f"the file {credentials.file}"
    elif credentials.api_key_env is not None:
        source = f"${credentials.api_key_env}"
    else:
        source = "no configured credential"
    detail = (
        f"{config.api} at {config.base_url}, reached only through sevro's bridge (the sandbox "
        f"has no other network); the bridge adds the key from {source}, pi never holds it"
    )
    return DoctorCheck("model-route", True, detail)
