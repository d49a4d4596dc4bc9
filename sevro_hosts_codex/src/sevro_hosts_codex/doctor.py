"""``sevro doctor --host codex``: binary, version, credentials and whether the sandbox holds here.

The sandbox check is real: it generates the same permission profile a trial gets and runs
``codex sandbox`` with it, expecting a workspace write to succeed and a read of a protected
file and a network connection to fail.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from sevro_core.errors import ConfigurationError
from sevro_core.hosts.agentcli import DoctorCheck, pid_namespace_argv
from sevro_core.isolation.processes import DEFAULT_PATH
from sevro_hosts_codex.binary import BinaryError, CodexBinary, locate, version
from sevro_hosts_codex.configuration import (
    PROFILE,
    TrialLayout,
    credential_check,
    parse,
    render_config_toml,
)

TESTED_VERSION = "codex-cli 0.171.0"
_PROBE = (
    "echo probe > probe.txt || exit 11; "
    'cat "$1" >/dev/null 2>&1 && exit 12; '
    '(exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && exit 13; '  # the doctor is listening
    "exit 0"
)


Check = DoctorCheck


def diagnose(settings: Mapping[str, str]) -> list[Check]:
    checks: list[Check] = []
    try:
        config = parse(None, settings)
    except ConfigurationError as exc:
        return [Check("settings", False, exc.message, "correct the Codex flags")]
    try:
        binary = locate(config.bin)
    except BinaryError as exc:
        return [
            Check(
                "binary",
                False,
                str(exc),
                "npm install -g @openai/codex (or pass --codex-bin /path/to/codex)",
            )
        ]
    checks.append(Check("binary", True, str(binary.native)))
    try:
        found = version(binary)
    except BinaryError as exc:
        checks.append(Check("version", False, str(exc), "reinstall @openai/codex"))
    else:
        same = found == TESTED_VERSION
        checks.append(
            Check(
                "version",
                True,
                found if same else f"{found} (sevro is tested with {TESTED_VERSION})",
            )
        )
    checks.append(credential_check(config))
    checks.append(_pid_namespace())
    checks.append(_sandbox(binary))
    return checks


def _pid_namespace() -> Check:
    """Each turn runs in a PID namespace of its own so nothing it starts survives the trial."""
    if platform.system() != "Linux":
        return Check(
            "pid-namespace", True, "not on this platform: only the process group is killed"
        )
    unshare = shutil.which("unshare")
    if unshare is None:
        return Check("pid-namespace", False, "unshare is not on PATH", "apt-get install util-linux")
    try:
        done = subprocess.run(
            [*pid_namespace_argv(unshare), "/bin/sh", "-c", "echo $$"],
            capture_output=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check(
            "pid-namespace", False, f"unshare could not run: {exc}", "see docs/hosts/codex.md"
        )
    if done.returncode != 0 or done.stdout.strip() != b"1":
        detail = " ".join(done.stderr.decode("utf-8", "replace").split())[-300:]
        return Check(
            "pid-namespace",
            False,
            detail or "no PID namespace",
            "Linux needs unprivileged user and PID namespaces; see docs/hosts/codex.md",
        )
    return Check("pid-namespace", True, f"each turn runs in its own PID namespace ({unshare})")


def _sandbox(binary: CodexBinary) -> Check:
    root = Path(tempfile.mkdtemp(prefix="sevro-doctor-")).resolve()
    listener = socket.socket()
    try:
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
        done = subprocess.run(
            argv,
            cwd=workspace,
            env={
                **env,
                "PATH": f"{layout.bin}:{DEFAULT_PATH}",
                "CODEX_HOME": str(layout.codex_home),
            },
            capture_output=True,
            timeout=60,
            check=False,
        )
        problems = {
            11: "a command could not write in the workspace",
            12: "a command could read a file outside its grants",
            13: "a command could open a network connection",
        }
        if done.returncode == 0 and (workspace / "probe.txt").is_file():
            return Check("sandbox", True, "workspace writable; other paths and network denied")
        detail = problems.get(
            done.returncode,
            " ".join(done.stderr.decode("utf-8", "replace").split())[-300:] or "probe failed",
        )
        return Check(
            "sandbox",
            False,
            detail,
            "Linux needs unprivileged user namespaces (bubblewrap); see docs/hosts/codex.md",
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("sandbox", False, f"probe could not run: {exc}", "see docs/hosts/codex.md")
    finally:
        listener.close()
        shutil.rmtree(root, ignore_errors=True)


def vars_of(layout: TrialLayout) -> tuple[Path, ...]:
    return (layout.codex_home, layout.home, layout.tmp, layout.bin)
