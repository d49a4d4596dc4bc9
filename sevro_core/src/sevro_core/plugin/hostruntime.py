"""The operator's runtime configuration as a host applies it to the commands it runs.

Commands sevro sandboxes itself get the runtime policy from the sandbox; an agent CLI runs the
agent's commands in its own sandbox, so the host has to apply the same declared variables, PATH,
read grants and runtime root there. :class:`HostRuntime` carries the policy with no temp path in
it: every role (the candidate and each judge) gets the same value and asks it for its own
:class:`RoleRuntime` under its own private directory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from attrs import field, frozen

from sevro_core.formats.jsonio import JsonValue


@frozen
class RoleRuntime:
    """What one role's commands get from the runtime configuration.

    ``root`` is ``{{sevro.runtime}}`` (writable, holding ``home``, ``tmp`` and the role's
    slots); ``environment`` is every declared variable but ``PATH`` (the placeholder resolved)
    plus the runner-set ones; ``read_roots`` are the read grants; ``writable_roots`` are the
    root and the shared caches the role selects. A host applies all of them to its commands.
    """

    root: Path
    home: Path
    tmpdir: Path
    path: str | None = None
    environment: Mapping[str, str] = field(factory=dict)
    read_roots: tuple[Path, ...] = ()
    writable_roots: tuple[Path, ...] = ()


@frozen
class HostRuntime:
    """The runtime policy for hosts: its ``PATH``, read roots and non-secret ``record``.

    ``record`` is what ``configuration.redacted.runtimePolicy`` holds (digest, names, ``set``
    values, PATH, read roots, slots); the engine reports it per trial as ``sevro.host.runtime``.
    ``artifact_paths`` are the declared candidate artifact directories, relative to the
    candidate's home (checked: no ``..``, no credential location): a host whose agent sandbox
    keeps ``HOME`` read-only grants the candidate (never a judge) write access to exactly these.
    The state flag is the runtime file's top-level state opt-in: a host that can expose its
    native configuration and user skills does so for the candidate and returns them as
    ``HostResult.state``; a host that supplies none leaves every check a grading error.
    ``native_goal`` is ``hooks.nativeGoal``: the candidate may run its CLI's native goal; a host
    that cannot honour it refuses the run (exit 64) rather than ignoring it.
    """

    path: str | None
    read_roots: tuple[Path, ...]
    record: Mapping[str, JsonValue]
    prepare: Callable[[str, Path], RoleRuntime] = field(eq=False, repr=False)
    artifact_paths: tuple[str, ...] = ()
    hook_plugins: tuple[str, ...] = ()
    """``hooks.plugins``: the mounted plugins whose command hooks a candidate's host runs
    sandboxed (never a judge's). A host that cannot honour a name refuses it (exit 64)."""
    codex_state: bool = False
    native_goal: bool = False

    def role_runtime(self, role: str, root: Path) -> RoleRuntime:
        """Prepare ``root`` (a directory of the role's own, inside its private directory) as
        the role's runtime root and say what its commands get. Raises ``RuntimeUnavailable``
        (``sevro_core.api``) when a seed changed or a shared cache is gone."""
        return self.prepare(role, root)


__all__ = ["HostRuntime", "RoleRuntime"]
