"""The order in which a policy's roots are mounted, shared by the backends that mount.

Parents come before children and, on the same path, hiding comes before exposing, so a
writable workspace inside a hidden directory of workspaces stays visible and a protected root
inside an exposed one stays hidden. A hidden root already inside another hidden root (and not
re-exposed in between) needs no mount of its own, unless it holds an exposed root: the
directories leading to a mount point would otherwise be created listable (bwrap makes them
0755), and hiding it keeps its listing hidden.
"""

from __future__ import annotations

import enum
import os
import stat
from pathlib import Path

from attrs import frozen

from sevro_core.api import SandboxPolicy


class Mount(enum.IntEnum):
    HIDE_DIRECTORY = 0
    HIDE_FILE = 1
    READ_ONLY = 2
    WRITABLE = 3


@frozen
class PlannedMount:
    kind: Mount
    path: Path


def _hide_kind(path: Path) -> Mount:
    return Mount.HIDE_DIRECTORY if stat.S_ISDIR(os.lstat(path).st_mode) else Mount.HIDE_FILE


def within(path: Path, root: Path) -> bool:
    """``path`` is ``root`` or below it (both canonical); string tests, as this runs per mount
    pair for every command and pathlib's ``is_relative_to`` costs a parse each time."""
    inner, outer = str(path), str(root)
    return inner == outer or inner.startswith(outer if outer.endswith("/") else outer + "/")


def _redundant(
    mount: PlannedMount, hidden: list[PlannedMount], exposed: list[PlannedMount]
) -> bool:
    """Already hidden by a hidden parent directory, with nothing re-exposed in or below it."""
    if mount.kind is Mount.HIDE_DIRECTORY and any(
        e.path != mount.path and within(e.path, mount.path) for e in exposed
    ):
        return False
    for parent in hidden:
        if parent.kind is not Mount.HIDE_DIRECTORY or parent.path == mount.path:
            continue
        if not within(mount.path, parent.path):
            continue
        if not any(
            e.path != parent.path and within(e.path, parent.path) and within(mount.path, e.path)
            for e in exposed
        ):
            return True
    return False


def plan_mounts(policy: SandboxPolicy) -> list[PlannedMount]:
    """Every mount the policy needs, in the order to apply them."""
    exposed = [PlannedMount(Mount.READ_ONLY, p) for p in policy.read_only_roots]
    exposed += [PlannedMount(Mount.WRITABLE, p) for p in policy.writable_roots]
    hidden = []
    for path in policy.protected_roots:
        try:
            hidden.append(PlannedMount(_hide_kind(path), path))
        except FileNotFoundError:
            continue  # gone since the policy was made: nothing left to hide
    kept = [mount for mount in hidden if not _redundant(mount, hidden, exposed)]
    return sorted(kept + exposed, key=lambda m: (len(m.path.parts), m.kind, str(m.path)))
