"""``sevro doctor --host claude``: binary, version, credentials and whether the sandbox holds.

The sandbox check is real: it builds the same outer bubblewrap sandbox a trial gets and runs a
probe in it that must write in the workspace but must not see a file outside its mounts.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from sevro_core.errors import ConfigurationError
from sevro_core.hosts.agentcli import DoctorCheck
from sevro_core.isolation.processes import DEFAULT_PATH
from sevro_hosts_claude.binary import TESTED_VERSION, BinaryError, ClaudeBinary, locate, version
from sevro_hosts_claude.configuration import TrialLayout, credential_check, parse, sandbox_argv

_PROBE = 'echo probe > probe.txt || exit 11; cat "$1" >/dev/null 2>&1 && exit 12; exit 0'


Check = DoctorCheck


def diagnose(settings: Mapping[str, str]) -> list[Check]:
    try:
        config = parse(None, settings)
    except ConfigurationError as exc:
        return [Check("settings", False, exc.message, "correct the Claude flags")]
    try:
        binary = locate(config.bin)
    except BinaryError as exc:
        fix = "npm install -g @anthropic-ai/claude-code (or pass --claude-bin /path/to/claude)"
        return [Check("binary", False, str(exc), fix)]
    checks = [Check("binary", True, str(binary.native))]
    try:
        found = version(binary)
    except BinaryError as exc:
        checks.append(Check("version", False, str(exc), "reinstall @anthropic-ai/claude-code"))
    else:
        note = "" if found == TESTED_VERSION else f" (sevro is tested with {TESTED_VERSION})"
        checks.append(Check("version", True, found + note))
    checks.append(credential_check(config))
    checks.append(_tools())
    checks.append(_sandbox(binary))
    return checks


def _tools() -> Check:
    missing = [name for name in ("bwrap", "socat") if shutil.which(name) is None]
    if missing:
        return Check(
            "sandbox-tools",
            False,
            f"missing: {', '.join(missing)}",
            "apt-get install bubblewrap socat (Claude Code's Linux sandbox needs both)",
        )
    return Check("sandbox-tools", True, "bwrap and socat found")


def _sandbox(binary: ClaudeBinary) -> Check:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Check("sandbox", False, "bwrap not found", "apt-get install bubblewrap")
    root = Path(tempfile.mkdtemp(prefix="sevro-doctor-")).resolve()
    try:
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
        done = subprocess.run(
            argv,
            cwd=workspace,
            env={"PATH": DEFAULT_PATH, "HOME": str(layout.home)},
            capture_output=True,
            timeout=60,
            check=False,
        )
        if done.returncode == 0 and (workspace / "probe.txt").is_file():
            return Check("sandbox", True, "workspace writable; paths outside the trial hidden")
        problems = {
            11: "a sandboxed command could not write in the workspace",
            12: "a sandboxed command could read a file outside the trial",
        }
        detail = problems.get(
            done.returncode,
            " ".join(done.stderr.decode("utf-8", "replace").split())[-300:] or "probe failed",
        )
        return Check("sandbox", False, detail, "bubblewrap needs user namespaces; see the docs")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("sandbox", False, f"probe could not run: {exc}", "see docs/hosts/claude.md")
    finally:
        shutil.rmtree(root, ignore_errors=True)
