"""Pieces every agent-CLI host needs: the binary, private files, secret scrubbing, stderr.

Kept in one place so every agent-CLI host treats credentials and diagnostics the same way.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.errors import ConfigurationError, InvocationError
from sevro_core.formats.jsonio import read_bounded
from sevro_core.limits import (
    MAX_HOST_CREDENTIAL_FILE_BYTES,
    MAX_HOST_STDERR_TAIL_CHARS,
    MAX_HOST_STDERR_TAIL_LINES,
)
from sevro_core.plugin.protocols import DoctorCheck as DoctorCheck  # noqa: PLC0414 (re-export)
from sevro_core.reporting.failures import escape_controls

REDACTED = "[redacted]"


class HostFailure(Exception):
    """Ends a trial early with a message; ``cancelled`` when the run was cancelled."""

    def __init__(self, message: str, *, cancelled: bool = False, records: tuple[Any, ...] = ()):
        super().__init__(message)
        self.message = message
        self.cancelled = cancelled
        self.records = records


def inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def read_credential_file(path: Path, flag: str) -> bytes:
    """A credential file, bounded and non-empty (``ConfigurationError`` naming ``flag``)."""
    try:
        data = read_bounded(path, MAX_HOST_CREDENTIAL_FILE_BYTES, what=flag)
    except InvocationError as exc:
        raise ConfigurationError(exc.one_line()) from None
    if not data.strip():
        raise ConfigurationError(f"{flag} is empty")
    return data


def write_private(path: Path, data: bytes) -> None:
    """Create ``path`` (0600, never through a symlink, never over an existing file)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def secret_strings(data: bytes) -> list[str]:
    """String values of a credential file, to keep them out of any retained text."""
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's stack
        text = data.decode("utf-8", "replace").strip()
        return [text] if len(text) >= 8 else []
    found: list[str] = []
    pending = [document]  # iterative: a deeply nested credential file must not crash start-up
    while pending:
        value = pending.pop()
        if isinstance(value, str) and len(value) >= 8:
            found.append(value)
        elif isinstance(value, dict):
            pending.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            pending.extend(reversed(value))
    return found


def scrub(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def stderr_tail(stderr: bytes, secrets: Sequence[str]) -> str:
    """The last lines of a CLI's stderr for a failure reason: scrubbed, escaped, bounded.

    Secrets are removed before anything is cut, so a bound can never leave half a secret behind;
    control characters are escaped so the reason stays one line a terminal shows as it is.
    """
    text = scrub(stderr.decode("utf-8", "replace"), list(secrets))
    lines = [line.strip() for line in text.splitlines() if line.strip()][
        -MAX_HOST_STDERR_TAIL_LINES:
    ]
    escaped = " | ".join(escape_controls(line) for line in lines)
    if len(escaped) > MAX_HOST_STDERR_TAIL_CHARS:
        escaped = "..." + escaped[-MAX_HOST_STDERR_TAIL_CHARS:]
    return escaped or "(empty)"


def pid_namespace_argv(unshare: str) -> list[str]:
    """A prefix that runs a CLI as PID 1 of a PID namespace of its own and changes nothing else.

    The CLI sees the host's filesystem, devices and network as it would natively, and a fresh
    ``/proc`` of its namespace (so sandboxes it starts itself still work). When it ends, or sevro
    kills its process group (``--kill-child`` takes the CLI down with ``unshare``), the kernel
    kills every process left in the namespace, including those that detached with ``setsid``
    into a session of their own, which a process-group kill cannot reach. Without root a user
    namespace mapping only the caller's own IDs is needed to create the PID namespace.
    """
    user = [] if os.geteuid() == 0 else ["--user", "--map-current-user"]
    return [unshare, *user, "--pid", "--fork", "--mount-proc", "--kill-child", "--"]


def seconds_setting(config: Mapping[str, Any], key: str, default: float, maximum: float) -> float:
    """A positive number of seconds from a host configuration (``ConfigurationError`` if not)."""
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= maximum:
        raise ConfigurationError(f"must be a number in (0, {maximum:g}]", f"/{key}")
    return float(value)


def require_credential(check: DoctorCheck, host: str) -> None:
    """Refuse a run before any trial when the doctor's credential check fails (exit 64)."""
    if not check.ok:
        fix = f"; {check.fix}" if check.fix else ""
        raise InvocationError(
            f"--host {host}: {check.detail}{fix} (see `sevro doctor --host {host}`)"
        )


_NATIVE_MAGIC = (b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")


class BinaryError(Exception):
    """The agent CLI cannot be found or does not answer; the message says how to fix it."""


@frozen
class NativeBinary:
    native: Path
    """The native executable (canonical)."""
    tree: Path
    """The directory the executable needs to read (its npm package, or its own directory)."""


def is_native_executable(path: Path) -> bool:
    """ELF or Mach-O, not a script or a Node launcher."""
    try:  # O_NONBLOCK and a regular-file check: an executable FIFO on PATH must not block
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, 4) in _NATIVE_MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)


def candidate_binary(configured: str | None, command: str, flag: str, package: str) -> Path:
    """``flag``'s file, else ``command`` on PATH, canonicalised; ``BinaryError`` with a fix."""
    if configured is not None:
        candidate = Path(configured)
        if not candidate.is_file():
            raise BinaryError(f"{flag} {configured} is not a file")
    else:
        found = shutil.which(command)
        if found is None:
            raise BinaryError(
                f"{command} is not on PATH; install it (npm install -g {package}) or pass {flag}"
            )
        candidate = Path(found)
    return candidate.resolve()


def binary_version(
    binary: NativeBinary,
    accepts: Callable[[str], bool],
    what: str,
    env: dict[str, str],
    timeout: float,
) -> str:
    """``<binary> --version`` when ``accepts`` its output; else ``BinaryError``."""
    try:
        done = subprocess.run(
            [str(binary.native), "--version"],
            capture_output=True,
            timeout=timeout,
            env={"PATH": os.defpath, "LANG": "C.UTF-8", **env},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BinaryError(f"{binary.native} --version failed: {exc}") from None
    text = done.stdout.decode("utf-8", "replace").strip()
    if done.returncode != 0 or not accepts(text):
        raise BinaryError(f"{binary.native} --version did not report a {what} version")
    return text[:200]


ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,127}$")
"""An environment variable name a credential may be taken from."""


@frozen
class Credentials:
    """Where a host's credential comes from: a file copied per trial, or a named variable."""

    file: Path | None
    api_key_env: str | None


def credential_settings(
    settings: Mapping[str, str], *, file_key: str, env_key: str, file_flag: str, env_flag: str
) -> Credentials:
    """Validate a host's credential flags (exclusive; the variable must be a plain name)."""
    api_key_env = settings.get(env_key)
    if api_key_env is not None and not ENV_NAME.match(api_key_env):
        raise ConfigurationError(f"{env_flag} must name an environment variable")
    file = settings.get(file_key)
    if file is not None and api_key_env is not None:
        raise ConfigurationError(f"{file_flag} and {env_flag} are exclusive")
    return Credentials(Path(file) if file is not None else None, api_key_env)


def auth_check(
    credentials: Credentials, *, file_detail: str, login_fix: str, none_fix: str
) -> DoctorCheck:
    """Whether the configured credential is there; only its presence is ever reported."""
    if credentials.file is not None:
        if credentials.file.is_file() and credentials.file.stat().st_size > 0:
            return DoctorCheck("auth", True, f"{file_detail} {credentials.file} (copied per trial)")
        return DoctorCheck("auth", False, f"{credentials.file} is missing or empty", login_fix)
    env = credentials.api_key_env
    if env is not None:
        if os.environ.get(env):
            return DoctorCheck("auth", True, f"API key from ${env} (present)")
        return DoctorCheck("auth", False, f"${env} is not set", f"export {env}=...")
    return DoctorCheck("auth", False, "no credential configured", none_fix)
