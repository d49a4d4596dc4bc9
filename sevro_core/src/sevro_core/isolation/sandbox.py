"""The sandbox in effect for a run, and the runner that puts commands inside it.

The planner selects one backend per run (``--sandbox auto|<name>|none``) by probing it for real.
Hosts and graders never call a backend themselves: they get an :class:`Isolation` bound to their
trial, which builds the policy (workspace writable, private HOME and TMPDIR, protected roots and
every peer workspace hidden, credential-free environment) and runs the command through
:func:`sevro_core.isolation.processes.run_bounded`. A command that cannot be isolated is
refused with :class:`IsolationError`; it never runs unprotected unless the operator said
``--sandbox none``.
"""

from __future__ import annotations

import functools
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import evolve, field, frozen

from sevro_core.errors import InvocationError
from sevro_core.formats.canonical import hash_json
from sevro_core.isolation.processes import DEFAULT_PATH, run_bounded
from sevro_core.isolation.protection import (
    PEER_WORKSPACES,
    PRIVATE_STATE,
    SYSTEM_TEMP,
    ProtectedRoot,
    canonical,
    default_workspace_roots,
    existing_canonical,
    readable_holder,
)
from sevro_core.isolation.runtime import RuntimePolicy
from sevro_core.isolation.seeds import RoleRuntime, RuntimeUnavailable, prepare_root
from sevro_core.limits import MAX_SANDBOX_DIAGNOSTIC_BYTES
from sevro_core.models import CancelToken, ProcessOutcome
from sevro_core.plugin.protocols import (
    NETWORK_LOCAL_HTTP,
    NETWORK_NONE,
    PluginLookup,
    Sandbox,
    SandboxPolicy,
)
from sevro_core.vocabulary import LOCAL_HTTP_CAPABILITY, SANDBOX_CAPABILITY

POLICY_FORMAT = "sevro.sandbox-policy.v1"
AUTO, NONE = "auto", "none"

BASE_ENVIRONMENT = {
    "LANG": "C.UTF-8",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}
RESERVED_VARIABLES = frozenset({"PATH", "HOME", "TMPDIR", *BASE_ENVIRONMENT})
"""The allow-list: nothing of sevro's own environment reaches a sandboxed command."""

# Runs inside the sandbox before the command: proves the sandbox started, so a backend's own
# failure (bwrap exits 1 when a mount fails) is never mistaken for the command's exit status.
_LAUNCHER = 'printf "%s\\n" "$1" >&2 || exit 125; shift; exec "$@"'


CHECKS_ROLE = "checks"
"""The role of evaluator-owned commands (shell checks, verifiers): the only one that sees the
:class:`CheckResources`."""


@frozen
class CheckResources:
    """What checks get beside the workspace, and the candidate never: the evaluator directories
    and the files handed to checks, mounted read-only, and the variables naming them
    (``SEVRO_EVALUATOR_<NAME>``, ``SEVRO_FINAL_OUTPUT``, ...; docs/evaluator-resources.md)."""

    read_only: tuple[Path, ...] = ()
    environment: Mapping[str, str] = field(factory=dict)
    problem: str | None = None
    """Why no check may run (an evaluator directory changed since it was fingerprinted): every
    command of role ``checks`` is then refused, so its check is a grading error."""


class IsolationError(Exception):
    """The command could not be run inside the sandbox; nothing it did is a result."""


class _NotStarted(Exception):
    """The sandbox was built but the command never started in it."""


@frozen
class SandboxSelection:
    """The sandbox chosen for a run: a working backend, an explicit opt-out, or nothing."""

    requested: str
    backend: Sandbox | None
    version: str | None
    detail: str
    network: str = NETWORK_NONE
    roots: tuple[ProtectedRoot, ...] = ()
    runtime: RuntimePolicy | None = None
    """The operator's runtime configuration: variables and read grants for every command."""

    @property
    def opted_out(self) -> bool:
        return self.requested == NONE

    @property
    def isolated(self) -> bool:
        return self.backend is not None

    @property
    def capabilities(self) -> frozenset[str]:
        working = self.isolated or self.opted_out
        return frozenset({SANDBOX_CAPABILITY}) if working else frozenset()

    @property
    def problem(self) -> str | None:
        """Why commands cannot run at all, or None when they can."""
        if self.isolated or self.opted_out:
            return None
        return self.detail

    def policy(self) -> dict[str, Any]:
        """The policy in symbols: what is writable, hidden and reachable, never a temp path."""
        names = {"PATH", "HOME", "TMPDIR", *BASE_ENVIRONMENT}
        if self.runtime is not None:
            names |= set(self.runtime.environment(Path("tmp")))
        environment = sorted(names)
        if self.backend is None:
            return {"format": POLICY_FORMAT, "isolated": False, "environment": environment}
        protected = {root.symbol for root in self.roots}
        protected |= {PEER_WORKSPACES, PRIVATE_STATE, SYSTEM_TEMP}
        return {
            "format": POLICY_FORMAT,
            "isolated": True,
            "backend": self.backend.id,
            "writable": ["workspace", "home", "tmpdir", *(["runtime"] if self.runtime else [])],
            "otherFiles": "read-only",
            "protected": sorted(protected),
            "network": self.network,
            "hostSockets": [],  # filesystem sockets of the host reachable inside: none yet
            "environment": environment,
            "capabilities": sorted(self.backend.capabilities),
            **({"readRoots": [str(p) for p in self.runtime.read_roots]} if self.runtime else {}),
        }

    def policy_digest(self) -> str:
        return hash_json(self.policy())

    def configuration(self) -> dict[str, Any]:
        """What enters the redacted configuration, hence ``configurationDigest`` and identity.

        ``backend`` is the backend id, ``"none"`` for the explicit opt-out, or null when no
        backend works; how it was requested (``auto`` or by name) does not change the identity.
        """
        if self.backend is not None:
            backend: str | None = self.backend.id
        else:
            backend = NONE if self.opted_out else None
        return {
            "backend": backend,
            "version": self.version,
            "network": self.network,
            "policyDigest": self.policy_digest(),
        }

    def evidence(self) -> dict[str, Any]:
        """What a trial's evidence says about the sandbox it ran under."""
        return {
            "requested": self.requested,
            "backend": self.backend.id if self.backend is not None else None,
            "version": self.version,
            "isolated": self.isolated,
            "network": self.network,
            "policyDigest": self.policy_digest(),
            "detail": self.detail[:MAX_SANDBOX_DIAGNOSTIC_BYTES],
        }

    def bind(
        self,
        *,
        workspace: Path,
        private_root: Path,
        cancel: CancelToken,
        fixture_bin_dir: Path | None = None,
    ) -> Isolation:
        return Isolation(
            selection=self,
            workspace=workspace,
            private_root=private_root,
            cancel=cancel,
            fixture_bin_dir=fixture_bin_dir,
        )


def resolve_backend_id(registry: PluginLookup, name: str) -> str:
    """``bwrap`` and ``sevro.sandbox.bwrap`` both name the bubblewrap backend."""
    for candidate in (name, f"sevro.sandbox.{name}"):
        if registry.sandbox(candidate) is not None:
            return candidate
    raise InvocationError(
        f"--sandbox {name!r} is not installed; choose auto, none or one of: "
        f"{', '.join(registry.ids('sandbox')) or 'no backend is installed'}"
    )


def select_sandbox(
    registry: PluginLookup,
    requested: str,
    network: str,
    roots: Sequence[ProtectedRoot],
    runtime: RuntimePolicy | None = None,
) -> SandboxSelection:
    """Probe and choose; an explicitly named backend that does not work is an exit-64 refusal."""
    return evolve(_select(registry, requested, network, roots), runtime=runtime)


def _select(
    registry: PluginLookup, requested: str, network: str, roots: Sequence[ProtectedRoot]
) -> SandboxSelection:
    if requested == NONE:
        return SandboxSelection(
            requested, None, None, "disabled by --sandbox none", network, tuple(roots)
        )
    if requested != AUTO:
        backend = registry.sandboxes()[resolve_backend_id(registry, requested)]
        probe = backend.probe()
        if not probe.available:
            raise InvocationError(f"--sandbox {requested} does not work here: {probe.detail}")
        if network == NETWORK_LOCAL_HTTP and LOCAL_HTTP_CAPABILITY not in backend.capabilities:
            raise InvocationError(f"--sandbox {requested} cannot offer loopback-only networking")
        return SandboxSelection(
            requested, backend, probe.version, probe.detail, network, tuple(roots)
        )
    problems = []
    for backend_id, backend in sorted(registry.sandboxes().items()):
        if network == NETWORK_LOCAL_HTTP and LOCAL_HTTP_CAPABILITY not in backend.capabilities:
            problems.append(f"{backend_id}: no loopback-only networking")
            continue
        probe = backend.probe()
        if probe.available:
            return SandboxSelection(
                requested, backend, probe.version, probe.detail, network, tuple(roots)
            )
        problems.append(f"{backend_id}: {probe.detail}")
    detail = (
        "no sandbox backend works here ("
        + ("; ".join(problems) or "none is installed")
        + "); install one (Linux: bubblewrap) or pass --sandbox none to opt out"
    )
    return SandboxSelection(requested, None, None, detail, network, tuple(roots))


def announce(selection: SandboxSelection) -> None:
    """Say loudly, once the run is accepted, that commands will run without isolation."""
    import structlog  # not at import time: every plugin load imports this module

    log = structlog.get_logger("sevro.sandbox")
    if selection.opted_out:
        log.warning(
            "isolation disabled by --sandbox none: shell checks and host commands run "
            "unsandboxed, with the operator's files and network; this is recorded in the "
            "evidence and the evaluation identity"
        )
    elif selection.problem is not None:
        log.warning(
            "no isolation available: shell checks will be grading errors and host commands "
            "will fail",
            detail=selection.problem,
        )


_ROOT_NAMES = {"hooks": "hook-runtime"}
"""A role's private directory when its name is not the role's: an agent-CLI host keeps its
passive hook records in ``<private root>/hooks``."""


@frozen
class Isolation:
    """One trial's sandbox: runs commands for a role (``candidate``, ``checks``) inside it.

    Each role gets its own private HOME and TMPDIR under the trial's private directory, so what
    the candidate leaves in its home cannot influence a check.
    """

    selection: SandboxSelection
    workspace: Path
    private_root: Path
    cancel: CancelToken
    fixture_bin_dir: Path | None = None
    check_resources: CheckResources = CheckResources()
    """Granted to role ``checks`` only; the engine sets them once the candidate finished."""

    @property
    def available(self) -> bool:
        return self.selection.problem is None

    def role_runtime(self, role: str) -> RoleRuntime:
        """The role's private root under the trial's private directory (its own ``home`` and
        ``tmp``, and with a runtime policy its seed copies and shared-cache links)."""
        root = self.private_root / _ROOT_NAMES.get(role, role)
        runtime = self.selection.runtime
        try:
            if runtime is not None:
                return runtime.role_runtime(role, root)
            home, tmpdir = prepare_root(root)
        except RuntimeUnavailable as exc:
            raise IsolationError(str(exc)) from None
        except OSError as exc:
            raise IsolationError(
                f"the runtime root of role {role} could not be made: {exc}"
            ) from None
        return RoleRuntime(root=root, home=home, tmpdir=tmpdir)

    def home(self, role: str) -> Path:
        """The role's private HOME (made when absent): the one its commands get."""
        return self.role_runtime(role).home

    def environment(self, prepared: RoleRuntime, extra: Mapping[str, str]) -> dict[str, str]:
        clash = sorted(set(extra) & RESERVED_VARIABLES)
        if clash:
            raise IsolationError(f"the sandbox sets {', '.join(clash)} itself")
        path = prepared.path or DEFAULT_PATH
        if self.fixture_bin_dir is not None:
            path = f"{self.fixture_bin_dir}:{path}"  # fixture binaries keep precedence
        return {
            **prepared.environment,
            **extra,
            **BASE_ENVIRONMENT,
            "PATH": path,
            "HOME": str(prepared.home),
            "TMPDIR": str(prepared.tmpdir),
        }

    def command_line(
        self,
        argv: Sequence[str],
        *,
        role: str,
        read_only: Sequence[Path] = (),
        environment: Mapping[str, str] | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        """The sandboxed command line for ``argv`` and the environment to start it with, for
        a process the host's agent CLI starts itself (a plugin hook); ``read_only`` adds
        grants (inside a hidden root too). Raises ``IsolationError`` without a sandbox."""
        problem = self.selection.problem
        backend = self.selection.backend
        if problem is not None or backend is None:
            raise IsolationError(problem or "no sandbox backend is selected")
        policy = self.policy(role, environment)
        extra = existing_canonical(read_only)
        policy = evolve(policy, read_only_roots=(*policy.read_only_roots, *extra))
        try:
            return backend.wrap(list(argv), policy), dict(policy.environment)
        except (OSError, ValueError) as exc:
            raise IsolationError(f"the sandbox could not be prepared: {exc}") from None

    def policy(self, role: str, extra: Mapping[str, str] | None = None) -> SandboxPolicy:
        """The concrete policy for one command, with roots canonicalised as they are now."""
        granted = self.check_resources if role == CHECKS_ROLE else CheckResources()
        if granted.problem is not None:
            raise IsolationError(granted.problem)
        prepared = self.role_runtime(role)
        extra = {**(extra or {}), **granted.environment}
        hidden = [root.path for root in self.selection.roots]
        # Every other trial's workspace, including those created later, is hidden by hiding
        # the whole workspace root, and the roots a concurrent run uses by default (the temp
        # directories); this trial's own workspace is mounted back on top.
        own_root = canonical(self.workspace.parent)
        if own_root == Path("/"):
            raise IsolationError("the workspace root is /, which cannot be hidden")
        defaults = existing_canonical(default_workspace_roots())
        temp_dirs = [p for p in defaults if p != own_root]
        hidden += [*temp_dirs, own_root, self.private_root]
        protected = existing_canonical(hidden)
        read_only = [*prepared.read_roots, *granted.read_only]
        if self.fixture_bin_dir is not None and not self.fixture_bin_dir.is_relative_to(
            self.workspace
        ):
            read_only.append(self.fixture_bin_dir)
        custom = own_root not in defaults
        holder = readable_holder(own_root, temp_dirs, protected) if custom else None
        if holder is not None:
            read_only.append(holder)
        return SandboxPolicy(
            workspace=self.workspace,
            home=prepared.home,
            tmpdir=prepared.tmpdir,
            protected_roots=protected,
            read_only_roots=existing_canonical(read_only),
            network=self.selection.network,
            environment=self.environment(prepared, extra),
            extra_writable=prepared.writable_roots,
        )

    def run(
        self,
        argv: Sequence[str],
        *,
        role: str,
        timeout_s: float,
        output_limit: int,
        merge_stderr: bool = True,
        capture_output: bool = True,
        kill_on_overflow: bool = False,
        environment: Mapping[str, str] | None = None,
    ) -> ProcessOutcome:
        """Run ``argv`` in the workspace under the sandbox; raise ``IsolationError`` if it can't.

        With ``merge_stderr`` the output holds stdout and stderr; otherwise only stdout, and
        stderr is discarded (its first bytes only explain a sandbox that failed to start).
        """
        problem = self.selection.problem
        if problem is not None:
            raise IsolationError(problem)
        attempt = functools.partial(
            self._run_once,
            argv,
            role=role,
            timeout_s=timeout_s,
            output_limit=output_limit,
            merge_stderr=merge_stderr,
            capture_output=capture_output,
            kill_on_overflow=kill_on_overflow,
            environment=environment,
        )
        try:
            return attempt()
        except _NotStarted:
            # The command never ran. A backend that mounts what exists when the sandbox is
            # built (a host socket) fails if that vanishes in between: build it once more.
            pass
        try:
            return attempt()
        except _NotStarted as failure:
            raise IsolationError(str(failure)) from None

    def _run_once(
        self,
        argv: Sequence[str],
        *,
        role: str,
        timeout_s: float,
        output_limit: int,
        merge_stderr: bool,
        capture_output: bool,
        kill_on_overflow: bool,
        environment: Mapping[str, str] | None,
    ) -> ProcessOutcome:
        policy = self.policy(role, environment)
        marker = f"sevro-sandbox-started-{secrets.token_hex(8)}\n".encode()
        inner = ["/bin/sh", "-c", _LAUNCHER, "sevro-launch", marker.decode().strip(), *argv]
        backend = self.selection.backend
        merged = merge_stderr and capture_output
        try:
            wrapped = backend.wrap(inner, policy) if backend is not None else inner
            outcome = run_bounded(
                wrapped,
                cwd=self.workspace,
                env=policy.environment,
                timeout_s=timeout_s,
                cancel=self.cancel,
                output_limit=output_limit + (len(marker) if merged else 0),
                stderr="merge" if merged else "capture",
                stderr_limit=0 if merged else MAX_SANDBOX_DIAGNOSTIC_BYTES + len(marker),
                capture_output=capture_output,
                kill_on_overflow=kill_on_overflow,
            )
        except (OSError, ValueError) as exc:
            raise IsolationError(f"the sandbox could not be started: {exc}") from None
        stream = outcome.output if merged else outcome.stderr
        if stream.startswith(marker):
            if merged:
                return evolve(outcome, output=stream[len(marker) :])
            return evolve(outcome, stderr=b"")  # the command's stderr is never kept
        if outcome.timed_out or outcome.cancelled:
            return evolve(outcome, stderr=b"")
        name = backend.id if backend is not None else "the launcher"
        reason = stream.decode("utf-8", "replace").strip().splitlines()
        raise _NotStarted(
            f"{name} did not start the command"
            + (f": {reason[0][:300]}" if reason else f" (exit status {outcome.exit_code})")
        )
