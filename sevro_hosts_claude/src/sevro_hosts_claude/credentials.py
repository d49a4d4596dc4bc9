"""Where a Claude candidate's credential comes from when no flag names one (Sevro's precedence).

``--claude-credential-file`` (or sevro's ``--claude-api-key-env``) wins. Without either, the
first of these that exists is selected: ``ANTHROPIC_API_KEY``, then ``CLAUDE_CODE_OAUTH_TOKEN``
in sevro's environment; the login's saved ``.credentials.json`` (``$CLAUDE_CONFIG_DIR`` or
``~/.claude``); on macOS only, the login in the keychain. A selected file that is unreadable or
empty fails; there is no fallback to a later route. Only the route and the presence of the
credential are ever recorded; the value reaches Claude Code only through the trial's private
configuration directory, never a process environment (so the agent's tools never see it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from attrs import frozen

from sevro_core.api import (
    ConfigurationError,
    Credentials,
    DoctorCheck,
    HostFailure,
    read_credential_file,
    secret_strings,
    write_private,
)
from sevro_hosts_claude.limits import KEYCHAIN_TIMEOUT_SECONDS, MAX_KEYCHAIN_OUTPUT_BYTES

API_KEY_VARIABLE = "ANTHROPIC_API_KEY"
OAUTH_VARIABLE = "CLAUDE_CODE_OAUTH_TOKEN"
SAVED_FILE = ".credentials.json"
KEYCHAIN_SERVICE = "Claude Code-credentials"
"""The keychain item Claude Code keeps its macOS login in."""

FLAG, ENVIRONMENT, SAVED, KEYCHAIN = "flag", "environment", "saved-credentials", "keychain"


@frozen
class Discovery:
    """The selected route: ``environment`` (``variable`` names it), ``saved-credentials``
    (``file``) or ``keychain``."""

    route: str
    variable: str | None = None
    file: Path | None = None

    def to_json(self) -> dict[str, str | bool]:
        """The redacted form: the route and the variable it names, never a value or a path."""
        found: dict[str, str | bool] = {"route": self.route, "present": True}
        if self.variable is not None:
            found["variable"] = self.variable
        return found


def saved_file(environ: Mapping[str, str]) -> Path | None:
    """The login's ``.credentials.json``: in ``$CLAUDE_CONFIG_DIR`` when set, else ``~/.claude``
    (None without a home)."""
    config = environ.get("CLAUDE_CONFIG_DIR")
    if config:
        return Path(config) / SAVED_FILE
    home = environ.get("HOME")
    return Path(home) / ".claude" / SAVED_FILE if home else None


def discover(
    credentials: Credentials, environ: Mapping[str, str], platform: str = sys.platform
) -> Discovery | None:
    """The route a run without a credential flag uses (None with a flag, or with nothing)."""
    if credentials.file is not None or credentials.api_key_env is not None:
        return None
    for variable in (API_KEY_VARIABLE, OAUTH_VARIABLE):
        if environ.get(variable):
            return Discovery(ENVIRONMENT, variable=variable)
    saved = saved_file(environ)
    if saved is not None and os.path.lexists(saved):
        return Discovery(SAVED, file=saved)
    if platform == "darwin":
        return Discovery(KEYCHAIN)
    return None


def with_discovery(credentials: Credentials, found: Discovery | None) -> Credentials:
    """The credentials the shared machinery copies: a saved file as the credential file, the
    API-key variable as the key's variable (handed over through ``apiKeyHelper``)."""
    if found is None:
        return credentials
    if found.route == SAVED:
        return Credentials(found.file, None)
    if found.variable == API_KEY_VARIABLE:
        return Credentials(None, API_KEY_VARIABLE)
    return credentials


def check(found: Discovery) -> DoctorCheck:
    """Whether the discovered credential is usable, naming only its route."""
    if found.route == SAVED:
        assert found.file is not None
        try:
            read_credential_file(found.file, f"saved Claude Code credentials {found.file}")
        except ConfigurationError as exc:
            return DoctorCheck("auth", False, exc.message, "run `claude` login again")
        return DoctorCheck("auth", True, f"saved credentials {found.file} (copied per trial)")
    if found.route == ENVIRONMENT:
        return DoctorCheck("auth", True, f"${found.variable} from the environment (present)")
    try:
        keychain_login()
    except HostFailure as exc:
        fix = "log in with `claude`, or pass --claude-credential-file FILE"
        return DoctorCheck("auth", False, str(exc), fix)
    return DoctorCheck("auth", True, f"macOS keychain item {KEYCHAIN_SERVICE!r} (present)")


def oauth_document(token: str) -> bytes:
    """``CLAUDE_CODE_OAUTH_TOKEN`` as a ``.credentials.json`` login (Claude Code 2.1.332 sends
    its ``accessToken`` as the bearer token), so the token is in no process environment."""
    login = {"accessToken": token, "refreshToken": None, "expiresAt": None}
    return json.dumps({"claudeAiOauth": {**login, "scopes": ["user:inference"]}}).encode()


def keychain_login() -> bytes:
    """The login Claude Code saved in the macOS keychain (``security find-generic-password``),
    bounded in time and size; ``HostFailure`` when it is missing, empty or too large.
    Untested on Linux, where there is no keychain and this is never consulted."""
    argv = ["security", "find-generic-password", "-s", KEYCHAIN_SERVICE, "-w"]
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=KEYCHAIN_TIMEOUT_SECONDS, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HostFailure(f"the macOS keychain could not be read: {exc}") from None
    data = done.stdout
    if done.returncode != 0 or not data.strip():
        raise HostFailure(f"no Claude Code login in the macOS keychain ({KEYCHAIN_SERVICE!r})")
    if len(data) > MAX_KEYCHAIN_OUTPUT_BYTES:
        raise HostFailure(f"the keychain login is over {MAX_KEYCHAIN_OUTPUT_BYTES} bytes")
    return data.strip()


def stage(found: Discovery | None, target: Path, environ: Mapping[str, str]) -> list[str]:
    """Write the discovered OAuth token or keychain login as the trial's private
    ``.credentials.json`` (the saved file and the API key travel the shared way); the secret
    strings to keep out of retained text."""
    if found is None or found.route not in (ENVIRONMENT, KEYCHAIN):
        return []
    if found.route == KEYCHAIN:
        data = keychain_login()
        write_private(target, data)
        return secret_strings(data)
    if found.variable != OAUTH_VARIABLE:
        return []
    token = environ.get(OAUTH_VARIABLE, "")
    if not token:
        raise HostFailure(f"${OAUTH_VARIABLE} is no longer set")
    write_private(target, oauth_document(token))
    return [token]
