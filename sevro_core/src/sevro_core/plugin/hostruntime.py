"""The operator's runtime configuration as a host applies it to the agent CLI it runs.

Commands sevro sandboxes itself get the runtime policy from the sandbox; an agent CLI runs the
agent's commands in its own sandbox, so the host has to apply the same declared variables, PATH
and read grants there. This value carries exactly that, with no temp path in it: every role
(the candidate and each judge) gets the same value and asks it for its environment given its
own private home and temp directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from attrs import field, frozen

from sevro_core.formats.jsonio import JsonValue


@frozen
class HostRuntime:
    """Declared variables (``PATH`` as filtered), read roots and the runner-set variables.

    ``record`` is the non-secret description of the policy (digest, names, ``set`` values,
    PATH, read roots) the engine reports per trial as ``sevro.host.runtime``.
    """

    variables: tuple[tuple[str, str], ...]
    read_roots: tuple[Path, ...]
    runner_set: tuple[tuple[str, str], ...] = ()
    record: Mapping[str, JsonValue] = field(factory=dict)

    @property
    def path(self) -> str | None:
        """The declared PATH (already filtered), or None when the file declares none."""
        return dict(self.variables).get("PATH")

    def environment(self, *, home: Path, tmpdir: Path) -> dict[str, str]:
        """What one role's commands get from the policy, ``PATH`` aside (see :attr:`path`).

        ``home`` is the role's private home; no value derives from it yet, but per-role values
        (a runtime directory below it) will, so every host asks with its own."""
        del home  # reserved for per-role values
        out = {name: value for name, value in self.variables if name != "PATH"}
        return {**out, **dict(self.runner_set), "TMPPREFIX": str(tmpdir / "zsh")}


__all__ = ["HostRuntime"]
