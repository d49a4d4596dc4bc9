"""The macOS backend: its profile text (sandbox-exec cannot run here) and its availability."""

from __future__ import annotations

import sys

import pytest

from sevro_core.plugin.protocols import NETWORK_LOCAL_HTTP
from sevro_sandbox.sandbox_exec import (
    SANDBOX_EXEC,
    SandboxExecSandbox,
    profile,
    quote,
    sandbox_exec_argv,
)
from tests.sandbox.conftest import Layout


def rules(text: str, action: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(f"({action}")]


def test_network_is_denied_unless_loopback_is_selected(layout: Layout) -> None:
    closed = profile(layout.policy())
    assert closed.startswith("(version 1)\n(allow default)\n")
    assert "(deny network*)" in closed and "network-outbound" not in closed
    local = profile(layout.policy(network=NETWORK_LOCAL_HTTP))
    assert "(deny network*)" in local
    assert '(allow network-outbound (remote ip "localhost:*"))' in local
    assert '(allow network-bind (local ip "localhost:*"))' in local
    assert all("localhost" in rule for rule in rules(local, "allow network"))


def test_writes_are_denied_outside_the_writable_roots(layout: Layout) -> None:
    (write,) = rules(profile(layout.policy()), "deny file-write*")
    assert write.startswith('(deny file-write* (require-all (subpath "/")')
    for root in (layout.workspace, layout.home, layout.tmpdir):
        assert f"(require-not (subpath {quote(root)}))" in write
    assert '(require-not (literal "/dev/null"))' in write


def test_protected_roots_deny_reading_and_writing_except_below_granted_roots(
    layout: Layout,
) -> None:
    text = profile(layout.policy())
    (data,) = rules(text, "deny file-read-data")
    (metadata,) = rules(text, "deny file-read-metadata")
    for rule in (data, metadata):
        assert f"(subpath {quote(layout.workspaces)})" in rule
        assert f"(subpath {quote(layout.protected)})" in rule
        assert f"(literal {quote(layout.protected_file)})" in rule
        assert f"(require-not (subpath {quote(layout.workspace)}))" in rule
    assert "file-write*" in data
    # realpath() must be able to walk to the workspace: ancestors keep their metadata only
    assert f"(require-not (literal {quote(layout.workspaces)}))" in metadata
    assert f"(require-not (literal {quote(layout.workspaces)}))" not in data


def test_paths_are_quoted_and_control_characters_refused(layout: Layout) -> None:
    assert quote('/a "b"\\c') == '"/a \\"b\\"\\\\c"'
    with pytest.raises(ValueError, match="control character"):
        quote("/a\nb")
    odd = layout.protected / 'we"ird'
    odd.mkdir()
    text = profile(layout.policy(protected_roots=(odd,)))
    assert '(subpath "' + str(odd).replace('"', '\\"') + '")' in text


def test_the_argv_passes_the_profile_inline(layout: Layout) -> None:
    argv = sandbox_exec_argv(["/bin/sh", "-c", "true"], layout.policy())
    assert argv[:2] == [SANDBOX_EXEC, "-p"] and argv[3:] == ["/bin/sh", "-c", "true"]
    assert argv[2] == profile(layout.policy())


@pytest.mark.skipif(sys.platform == "darwin", reason="checks the non-macOS answer")
def test_unavailable_off_macos(layout: Layout) -> None:
    backend = SandboxExecSandbox()
    probe = backend.probe()
    assert not probe.available and "macOS only" in probe.detail
    with pytest.raises(OSError, match="macOS only"):
        backend.wrap(["true"], layout.policy())


def test_no_rule_lets_a_unix_socket_through(layout: Layout) -> None:
    """Connecting to a Unix socket is ``network-outbound`` in Seatbelt: denied by
    ``(deny network*)``, and the only network rules allowed afterwards name loopback IP."""
    for network in ("none", NETWORK_LOCAL_HTTP):
        text = profile(layout.policy(network=network))
        lines = text.splitlines()
        deny = lines.index("(deny network*)")
        allowed = rules(text, "allow network")
        assert all(lines.index(rule) > deny for rule in allowed)
        assert all(' ip "localhost:*"))' in rule for rule in allowed), allowed
        assert "unix-socket" not in text and "(allow network*" not in text
        assert rules(text, "allow") == ["(allow default)", *allowed]
