"""The pi host's credential: a private file (``--pi-credential-file``) or a named variable
(``--pi-api-key-env``), read by sevro and handed only to the model bridge.

pi itself never holds it: its ``models.json`` carries a dummy key and the bridge outside the
sandbox replaces the credential header on every request. pi's bash tool inherits pi's whole
environment (and any file pi can read), so a key given to pi would be readable by the agent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from sevro_core.api import CredentialFlags, Credentials, HostFailure, read_credential_file

DUMMY_API_KEY = "sevro-bridge-injects-the-credential"
"""What pi's ``models.json`` names as its key: pi sends it, the bridge drops and replaces it."""

CREDENTIALS = CredentialFlags.for_host(
    "pi",
    "credentialFile",
    login_fix="write the provider's API key into the file",
    none_fix="pass --pi-api-key-env NAME (a variable holding the API key) or "
    "--pi-credential-file FILE",
)


def api_key(credentials: Credentials, environ: Mapping[str, str] = os.environ) -> str:
    """The key: the credential file's text (stripped) or the variable's value; ``HostFailure``
    when it is empty or unset."""
    if credentials.file is not None:
        data = read_credential_file(credentials.file, CREDENTIALS.file_flag)
        key = data.decode("utf-8", "replace").strip()
        if not key or "\n" in key or "\r" in key:
            raise HostFailure(f"{CREDENTIALS.file_flag}: the file must hold one API key line")
        return key
    name = credentials.api_key_env
    if name is None:
        raise HostFailure(f"no credential: {CREDENTIALS.none_fix}")
    key = environ.get(name, "")
    if not key:
        raise HostFailure(f"{CREDENTIALS.env_flag} {name} is not set")
    return key


def auth_header(api: str, key: str) -> tuple[str, str]:
    """The header the bridge sets for ``api``: ``x-api-key`` for Anthropic Messages, else an
    OpenAI-style bearer token."""
    if api == "anthropic-messages":
        return ("x-api-key", key)
    return ("authorization", f"Bearer {key}")
