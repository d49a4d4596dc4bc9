"""Sandbox selection and the per-trial runner, with small stand-in backends.

The real backends are exercised in tests/sandbox and tests/e2e; these stand-ins only decide
whether a backend "works", so the selection rules can be tested on any machine.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.fixtures.workspace import PRIVATE_PREFIX, create_workspace
from sevro_core.isolation.protection import OPERATOR, ProtectedRoot
from sevro_core.isolation.sandbox import (
    IsolationError,
    SandboxSelection,
    select_sandbox,
)
from sevro_core.models import CancelToken
from sevro_core.plugin.protocols import (
    NETWORK_LOCAL_HTTP,
    NETWORK_NONE,
    SandboxPolicy,
    SandboxProbe,
)
from sevro_core.vocabulary import LOCAL_HTTP_CAPABILITY, SANDBOX_CAPABILITY


class Backend:
    """Runs the command as given (no isolation at all): enough to test the runner's logic."""

    version = "1.0.0"
    requires: frozenset[str] = frozenset()

    def __init__(self, backend_id: str, works: bool = True, local_http: bool = True) -> None:
        self.id = backend_id
        self.works = works
        self.capabilities = frozenset({LOCAL_HTTP_CAPABILITY} if local_http else set())
        self.policies: list[SandboxPolicy] = []

    def probe(self) -> SandboxProbe:
        return SandboxProbe(self.works, "fine" if self.works else "broken here", "9.9")

    def wrap(self, argv: Sequence[str], policy: SandboxPolicy) -> list[str]:
        self.policies.append(policy)
        return list(argv)


class FailingBackend(Backend):
    """Fails before the command starts, the way bwrap does when a mount fails (exit 1)."""

    def wrap(self, argv: Sequence[str], policy: SandboxPolicy) -> list[str]:
        return ["/bin/sh", "-c", "echo 'fake: cannot mount /x' >&2; exit 1"]


class Registry:
    def __init__(self, *backends: Backend) -> None:
        self.backends = {b.id: b for b in backends}

    def sandbox(self, object_id: str) -> Any:
        return self.backends.get(object_id)

    def sandboxes(self) -> dict[str, Any]:
        return self.backends

    def ids(self, kind: str) -> list[str]:
        return sorted(self.backends)


def bound(selection: SandboxSelection, tmp_path: Path) -> Any:
    root = tmp_path / "workspaces"
    root.mkdir(exist_ok=True)
    return selection.bind(
        workspace=create_workspace(root),
        private_root=create_workspace(root, prefix=PRIVATE_PREFIX),
        cancel=CancelToken(),
    )


def test_auto_takes_the_first_working_backend() -> None:
    registry = Registry(Backend("acme.sandbox.a", works=False), Backend("acme.sandbox.b"))
    chosen = select_sandbox(registry, "auto", NETWORK_NONE, ())
    assert chosen.backend is registry.backends["acme.sandbox.b"] and chosen.version == "9.9"
    assert chosen.capabilities == {SANDBOX_CAPABILITY} and chosen.problem is None


def test_auto_without_a_working_backend_provides_nothing_and_says_why() -> None:
    chosen = select_sandbox(Registry(Backend("acme.sandbox.a", works=False)), "auto", "none", ())
    assert chosen.backend is None and chosen.capabilities == frozenset()
    assert chosen.problem is not None
    assert "acme.sandbox.a: broken here" in chosen.problem and "--sandbox none" in chosen.problem
    assert chosen.configuration()["backend"] is None
    assert chosen.evidence()["isolated"] is False


def test_none_is_an_explicit_opt_out_that_still_provides_the_capability() -> None:
    chosen = select_sandbox(Registry(Backend("acme.sandbox.a")), "none", NETWORK_NONE, ())
    assert chosen.opted_out and not chosen.isolated and chosen.problem is None
    assert chosen.capabilities == {SANDBOX_CAPABILITY}
    assert chosen.configuration()["backend"] == "none"
    assert chosen.evidence()["backend"] is None and chosen.evidence()["requested"] == "none"


def test_a_named_backend_must_exist_and_work() -> None:
    registry = Registry(Backend("sevro.sandbox.good"), Backend("sevro.sandbox.bad", works=False))
    assert select_sandbox(registry, "good", NETWORK_NONE, ()).backend is not None
    with pytest.raises(InvocationError, match="does not work here: broken here"):
        select_sandbox(registry, "bad", NETWORK_NONE, ())
    with pytest.raises(InvocationError, match=r"not installed.*sevro\.sandbox\.good"):
        select_sandbox(registry, "missing", NETWORK_NONE, ())


def test_local_http_needs_a_backend_that_offers_it() -> None:
    registry = Registry(Backend("acme.sandbox.a", local_http=False))
    with pytest.raises(InvocationError, match="loopback"):
        select_sandbox(registry, "acme.sandbox.a", NETWORK_LOCAL_HTTP, ())
    assert select_sandbox(registry, "auto", NETWORK_LOCAL_HTTP, ()).problem is not None


def test_the_policy_digest_names_roots_by_symbol_not_by_path(tmp_path: Path) -> None:
    registry = Registry(Backend("acme.sandbox.a"))

    def digest(*roots: ProtectedRoot) -> str:
        return select_sandbox(registry, "auto", NETWORK_NONE, roots).policy_digest()

    here = digest(ProtectedRoot("project-root", tmp_path / "a"))
    assert here == digest(ProtectedRoot("project-root", tmp_path / "b"))
    assert here != digest(
        ProtectedRoot("project-root", tmp_path), ProtectedRoot(OPERATOR, tmp_path)
    )
    local = select_sandbox(registry, "auto", NETWORK_LOCAL_HTTP, ()).policy_digest()
    assert local != digest()


def test_commands_run_with_role_private_dirs_and_an_allow_listed_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEVRO_TEST_SECRET", "do-not-leak")
    backend = Backend("acme.sandbox.a")
    secret = tmp_path / "secret"
    secret.write_text("s")
    selection = select_sandbox(
        Registry(backend), "auto", NETWORK_NONE, (ProtectedRoot(OPERATOR, secret),)
    )
    isolation = bound(selection, tmp_path)
    out = isolation.run(
        ["/bin/sh", "-c", "env; echo err >&2"], role="candidate", timeout_s=10, output_limit=4096
    )
    lines = out.output.decode().splitlines()
    assert "err" in lines and "do-not-leak" not in out.output.decode()
    assert not any(line.startswith("sevro-sandbox-started") for line in lines)
    env = dict(line.split("=", 1) for line in lines if "=" in line)
    assert env["HOME"].endswith("/candidate/home") and env["TMPDIR"].endswith("/candidate/tmp")
    isolation.run(["true"], role="checks", timeout_s=10, output_limit=0)
    candidate, checks = backend.policies
    assert candidate.home != checks.home and checks.home.name == "home"
    assert secret.resolve() in candidate.protected_roots
    assert isolation.workspace.parent in candidate.protected_roots, "peer workspaces hidden"
    assert isolation.private_root in candidate.protected_roots


def test_stdout_only_keeps_stderr_out_of_the_output(tmp_path: Path) -> None:
    isolation = bound(select_sandbox(Registry(Backend("a.b")), "auto", NETWORK_NONE, ()), tmp_path)
    out = isolation.run(
        ["/bin/sh", "-c", "echo out; echo err >&2"],
        role="checks",
        timeout_s=10,
        output_limit=100,
        merge_stderr=False,
    )
    assert out.output == b"out\n" and out.stderr == b"", "stderr is never kept"


def test_a_sandbox_that_fails_to_start_is_an_isolation_error_not_an_exit_code(
    tmp_path: Path,
) -> None:
    selection = select_sandbox(Registry(FailingBackend("a.b")), "auto", NETWORK_NONE, ())
    isolation = bound(selection, tmp_path)
    for merge in (True, False):
        with pytest.raises(IsolationError, match=r"a\.b did not start the command: fake: cannot"):
            isolation.run(
                ["true"], role="checks", timeout_s=10, output_limit=100, merge_stderr=merge
            )


def test_no_isolation_means_no_command(tmp_path: Path) -> None:
    isolation = bound(select_sandbox(Registry(), "auto", NETWORK_NONE, ()), tmp_path)
    assert not isolation.available
    with pytest.raises(IsolationError, match="no sandbox backend works here"):
        isolation.run(["true"], role="checks", timeout_s=10, output_limit=0)


def test_callers_cannot_override_the_sandbox_variables(tmp_path: Path) -> None:
    isolation = bound(select_sandbox(Registry(Backend("a.b")), "auto", NETWORK_NONE, ()), tmp_path)
    with pytest.raises(IsolationError, match="HOME"):
        isolation.run(["true"], role="c", timeout_s=10, output_limit=0, environment={"HOME": "/"})


class FlakyBackend(Backend):
    """Fails to start the first sandbox only, as bwrap does when a socket it was to cover
    vanished between the scan and the mount."""

    def wrap(self, argv: Sequence[str], policy: SandboxPolicy) -> list[str]:
        self.policies.append(policy)
        if len(self.policies) == 1:
            return ["/bin/sh", "-c", "echo 'fake: cannot create file' >&2; exit 1"]
        return list(argv)


def test_a_sandbox_that_failed_to_start_is_built_once_more(tmp_path: Path) -> None:
    backend = FlakyBackend("a.b")
    isolation = bound(select_sandbox(Registry(backend), "auto", NETWORK_NONE, ()), tmp_path)
    out = isolation.run(["echo", "ran"], role="checks", timeout_s=10, output_limit=100)
    assert out.exit_code == 0 and out.output == b"ran\n"
    assert len(backend.policies) == 2


@pytest.fixture
def system_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process's default workspace root, moved to a scratch directory."""
    temp = tmp_path / "system-temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp.resolve()


def custom_root_isolation(root: Path, *roots: ProtectedRoot) -> Any:
    root.mkdir(parents=True)
    selection = select_sandbox(Registry(Backend("a.b")), "auto", NETWORK_NONE, roots)
    return selection.bind(
        workspace=create_workspace(root),
        private_root=create_workspace(root, prefix=PRIVATE_PREFIX),
        cancel=CancelToken(),
    )


def test_every_default_workspace_root_is_hidden_whatever_the_runs_own(
    tmp_path: Path, system_temp: Path
) -> None:
    isolation = custom_root_isolation(tmp_path / "elsewhere" / "workspaces")
    policy = isolation.policy("checks")
    for root in (isolation.workspace.parent, system_temp, Path("/tmp"), Path("/var/tmp")):
        if root.exists():
            assert root.resolve() in policy.protected_roots, root
    assert not any(p.is_relative_to(system_temp) for p in policy.read_only_roots)
    assert isolation.selection.policy()["hostSockets"] == []
    assert "system-temp" in isolation.selection.policy()["protected"]


def test_a_custom_root_inside_a_temp_directory_keeps_its_holder_readable(
    system_temp: Path,
) -> None:
    """``/tmp/area/ws`` keeps ``/tmp/area`` readable and the rest of ``/tmp`` hidden."""
    area = system_temp / "area"
    isolation = custom_root_isolation(area / "ws")
    policy = isolation.policy("checks")
    assert area in policy.read_only_roots
    assert system_temp in policy.protected_roots and area / "ws" in policy.protected_roots


@pytest.mark.parametrize("where", ["directly", "protected"])
def test_no_holder_is_readable_when_it_is_the_temp_directory_or_protected(
    system_temp: Path, where: str
) -> None:
    area = system_temp / "area"
    if where == "directly":
        isolation = custom_root_isolation(system_temp / "ws")
    else:
        isolation = custom_root_isolation(area / "ws", ProtectedRoot(OPERATOR, area))
    policy = isolation.policy("checks")
    assert not any(p.is_relative_to(system_temp) for p in policy.read_only_roots)
    assert system_temp in policy.protected_roots


def test_with_the_default_root_the_whole_temp_directory_stays_hidden(system_temp: Path) -> None:
    selection = select_sandbox(Registry(Backend("a.b")), "auto", NETWORK_NONE, ())
    isolation = selection.bind(
        workspace=create_workspace(system_temp),
        private_root=create_workspace(system_temp, prefix=PRIVATE_PREFIX),
        cancel=CancelToken(),
    )
    policy = isolation.policy("checks")
    assert system_temp in policy.protected_roots
    assert policy.read_only_roots == ()
