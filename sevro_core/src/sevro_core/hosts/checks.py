"""Doctor checks more than one agent-CLI host runs: the PID namespace, tools on PATH, and a
real sandbox probe in a scratch trial (the host builds the sandbox; this runs and judges it)."""

from __future__ import annotations

import platform
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path

from attrs import frozen

from sevro_core.hosts.pidns import pid_namespace_argv
from sevro_core.plugin.protocols import DoctorCheck


def pid_namespace_check(host: str) -> DoctorCheck:
    """Each turn runs in a PID namespace of its own so nothing it starts survives the trial."""
    if platform.system() != "Linux":
        return DoctorCheck(
            "pid-namespace", True, "not on this platform: only the process group is killed"
        )
    unshare = shutil.which("unshare")
    if unshare is None:
        return DoctorCheck(
            "pid-namespace", False, "unshare is not on PATH", "apt-get install util-linux"
        )
    docs = f"see docs/hosts/{host}.md"
    try:
        done = subprocess.run(
            [*pid_namespace_argv(unshare), "/bin/sh", "-c", "echo $$"],
            capture_output=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return DoctorCheck("pid-namespace", False, f"unshare could not run: {exc}", docs)
    if done.returncode != 0 or done.stdout.strip() != b"1":
        return DoctorCheck(
            "pid-namespace",
            False,
            _stderr_detail(done.stderr) or "no PID namespace",
            f"Linux needs unprivileged user and PID namespaces; {docs}",
        )
    return DoctorCheck(
        "pid-namespace", True, f"each turn runs in its own PID namespace ({unshare})"
    )


def tools_check(name: str, tools: Sequence[str], fix: str) -> DoctorCheck:
    """Every one of ``tools`` is on PATH."""
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        return DoctorCheck(name, False, f"missing: {', '.join(missing)}", fix)
    return DoctorCheck(name, True, f"{' and '.join(tools)} found")


@frozen
class Probe:
    """A command that must write ``probe.txt`` in ``workspace`` and exit 0 when the sandbox
    holds; any other exit code names the problem it proved."""

    argv: Sequence[str]
    workspace: Path
    env: Mapping[str, str]
    held: str
    """The detail when the sandbox held."""
    problems: Mapping[int, str]
    fix: str


def sandbox_probe(docs: str, build: Callable[[Path, ExitStack], Probe]) -> DoctorCheck:
    """Build a probe in a scratch directory (removed afterwards) and run it for real."""
    root = Path(tempfile.mkdtemp(prefix="sevro-doctor-")).resolve()
    try:
        with ExitStack() as resources:
            probe = build(root, resources)
            done = subprocess.run(
                list(probe.argv),
                cwd=probe.workspace,
                env=dict(probe.env),
                capture_output=True,
                timeout=60,
                check=False,
            )
        if done.returncode == 0 and (probe.workspace / "probe.txt").is_file():
            return DoctorCheck("sandbox", True, probe.held)
        detail = probe.problems.get(done.returncode, _stderr_detail(done.stderr) or "probe failed")
        return DoctorCheck("sandbox", False, detail, probe.fix)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return DoctorCheck("sandbox", False, f"probe could not run: {exc}", f"see {docs}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _stderr_detail(stderr: bytes) -> str:
    return " ".join(stderr.decode("utf-8", "replace").split())[-300:]
