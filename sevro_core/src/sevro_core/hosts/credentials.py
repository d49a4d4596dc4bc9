"""An agent CLI's credential: which file or variable it comes from, copied privately per trial,
and every secret string in it kept out of retained text.

One place, so every agent-CLI host treats credentials the same way.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Self

from attrs import frozen

from sevro_core.errors import ConfigurationError, InvocationError
from sevro_core.formats.jsonio import read_bounded
from sevro_core.limits import MAX_HOST_CREDENTIAL_FILE_BYTES
from sevro_core.plugin.protocols import DoctorCheck

REDACTED = "[redacted]"

ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,127}$")
"""An environment variable name a credential may be taken from."""


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


def require_credential(check: DoctorCheck, host: str) -> None:
    """Refuse a run before any trial when the doctor's credential check fails (exit 64)."""
    if not check.ok:
        fix = f"; {check.fix}" if check.fix else ""
        raise InvocationError(
            f"--host {host}: {check.detail}{fix} (see `sevro doctor --host {host}`)"
        )


@frozen
class CredentialFlags:
    """A host's two exclusive credential settings and how `sevro doctor` talks about them."""

    file_key: str
    env_key: str
    file_flag: str
    env_flag: str
    file_detail: str
    """How the doctor names the file (``auth file``)."""
    login_fix: str
    """The fix when the file is missing or empty."""
    none_fix: str
    """The fix when no credential is configured."""

    @classmethod
    def for_host(cls, host: str, file_setting: str, *, login_fix: str, none_fix: str) -> Self:
        """The flags of ``host`` (``acme``): ``<host>.<file_setting>`` (``--<host>-auth-file``)
        for the file and ``<host>.apiKeyEnv`` (``--<host>-api-key-env``) for the variable."""
        return cls(
            file_key=f"{host}.{file_setting}",
            env_key=f"{host}.apiKeyEnv",
            file_flag=f"--{host}-{_kebab(file_setting)}",
            env_flag=f"--{host}-api-key-env",
            file_detail=_kebab(file_setting).replace("-", " "),
            login_fix=login_fix,
            none_fix=none_fix,
        )

    @property
    def file_setting(self) -> str:
        """The file's setting without the host's namespace (``authFile``)."""
        return self.file_key.split(".", 1)[-1]

    def parse(self, settings: Mapping[str, str]) -> Credentials:
        return credential_settings(
            settings,
            file_key=self.file_key,
            env_key=self.env_key,
            file_flag=self.file_flag,
            env_flag=self.env_flag,
        )

    def check(self, credentials: Credentials) -> DoctorCheck:
        """Whether a credential is configured and present: `sevro doctor` and run planning
        agree."""
        return auth_check(
            credentials,
            file_detail=self.file_detail,
            login_fix=self.login_fix,
            none_fix=self.none_fix,
        )


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"-\1", name).lower()
