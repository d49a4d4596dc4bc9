"""Which paths a sandboxed command must never read or write, and how they are canonicalised.

The engine always protects what an untrusted command could use to cheat or to steal: the
project, the evidence, the run state, the case sources, the case and host configuration files,
the user's home and credential directories, and every other trial's workspace. Operators add
more with ``--protected-root``. Roots are recorded as symbols (``project-root``, ``home/.ssh``)
so that the policy digest does not depend on where a machine keeps them; operator roots are
recorded by their canonical path, because the operator chose exactly those.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path

from attrs import frozen

from sevro_core.errors import InvocationError
from sevro_core.plugin.protocols import CredentialLocations

CREDENTIAL_LOCATIONS_FILE = "credential-locations.json"
"""Data file beside this module: well-known credential paths below a home (cloud CLIs, SSH, GPG,
package registries). Agent CLIs' own locations come from the hosts that drive them."""
_RELATIVE_ENTRY = re.compile(r"^\.?[A-Za-z0-9_-][A-Za-z0-9._-]*(?:/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$")
_VARIABLE = re.compile(r"^[A-Z][A-Z0-9_]*$")


def _well_known() -> CredentialLocations:
    text = resources.files(__package__ or "sevro_core.isolation").joinpath(
        CREDENTIAL_LOCATIONS_FILE
    )
    document = json.loads(text.read_text("utf-8"))
    return CredentialLocations(tuple(document["homeEntries"]), tuple(document["homeVariables"]))


WELL_KNOWN_CREDENTIALS = _well_known()
"""Credential files and directories below a home, protected even when the home itself is not."""


def credential_locations(hosts: Mapping[str, object]) -> CredentialLocations:
    """The well-known locations and every installed host's (by host id), each once, in order.

    Every installed host counts, not only the run's: a candidate of one host must not read the
    credentials another agent CLI keeps on the same machine. A malformed declaration is refused
    before anything runs (exit 64), naming the host.
    """
    entries = list(WELL_KNOWN_CREDENTIALS.home_entries)
    variables = list(WELL_KNOWN_CREDENTIALS.home_variables)
    for host_id, host in sorted(hosts.items()):
        declared = getattr(host, "credential_locations", None) or CredentialLocations()
        if not isinstance(declared, CredentialLocations):
            raise InvocationError(
                f"host {host_id}: credential_locations is not CredentialLocations"
            )
        for entry in declared.home_entries:
            if not isinstance(entry, str) or not _RELATIVE_ENTRY.match(entry) or ".." in entry:
                raise InvocationError(f"host {host_id}: {entry!r} is not a path inside a home")
        for name in declared.home_variables:
            if not isinstance(name, str) or not _VARIABLE.match(name):
                raise InvocationError(f"host {host_id}: {name!r} is not a variable name")
        entries.extend(declared.home_entries)
        variables.extend(declared.home_variables)
    return CredentialLocations(tuple(sorted(set(entries))), tuple(dict.fromkeys(variables)))


OPERATOR = "operator"
CONFIG_ROOT = "config-root"
"""``--config-root`` and every worktree of its Git repository: hidden from candidates and checks
(an agent must not read the operator's configuration repository in any checkout of it)."""
EVALUATOR_ROOT = "evaluator"
"""A case's evaluator directory: hidden from the candidate, exposed read-only to checks."""
PEER_WORKSPACES = "peer-workspaces"
PRIVATE_STATE = "private-state"
SYSTEM_TEMP = "system-temp"

SYSTEM_TEMP_DIRECTORIES = ("/tmp", "/var/tmp", "/usr/tmp")  # noqa: S108 (hidden, never used)
"""Where a sevro started with any ``TMPDIR`` may keep its workspaces by default (the candidates
Python's :func:`tempfile.gettempdir` tries)."""


@frozen
class ProtectedRoot:
    """A path to hide, and the symbol under which it enters the policy digest."""

    label: str
    path: Path

    @property
    def symbol(self) -> str:
        return str(self.path) if self.label == OPERATOR else self.label


def canonical(path: Path) -> Path:
    """The absolute path with every symlink resolved (the target is what must be hidden)."""
    return Path(os.path.realpath(path))


def _homes(environ: Mapping[str, str]) -> list[Path]:
    homes = []
    declared = environ.get("HOME")
    if declared and os.path.isabs(declared):
        homes.append(Path(declared))
    with contextlib.suppress(KeyError):  # an account without a passwd entry
        homes.append(Path(pwd.getpwuid(os.getuid()).pw_dir))
    return homes


def operator_homes() -> tuple[Path, ...]:
    """The canonical homes the engine protects (``$HOME`` and the account's), never ``/``."""
    return tuple(dict.fromkeys(h for h in map(canonical, _homes(os.environ)) if h != Path("/")))


def engine_roots(
    *,
    project_root: Path,
    results_root: Path,
    run_state_root: Path | None = None,
    case_source_roots: Sequence[Path] = (),
    input_files: Iterable[Path] = (),
    environ: Mapping[str, str] | None = None,
    credentials: CredentialLocations,
) -> tuple[ProtectedRoot, ...]:
    """Everything the engine protects for a run, before canonicalisation.

    ``input_files`` are case files and host configuration files: they hold the checks and the
    script, which a candidate must not read. The user's home is protected as ``$HOME`` and as
    the account's home; a home that is ``/`` cannot be hidden, but its credential paths still are
    (``credentials``: :func:`credential_locations` of the installed hosts).
    """
    env = os.environ if environ is None else environ
    roots = [
        ProtectedRoot("project-root", project_root),
        ProtectedRoot("results-root", results_root),
    ]
    if run_state_root is not None:
        roots.append(ProtectedRoot("run-state-root", run_state_root))
    roots.extend(ProtectedRoot("case-source-root", p) for p in case_source_roots)
    roots.extend(ProtectedRoot("input-file", p) for p in input_files)
    for home in _homes(env):
        if canonical(home) != Path("/"):
            roots.append(ProtectedRoot("home", home))
        roots.extend(ProtectedRoot(f"home/{rel}", home / rel) for rel in credentials.home_entries)
    for name in credentials.home_variables:
        value = env.get(name)
        if value and os.path.isabs(value):
            roots.append(ProtectedRoot(name.lower().replace("_", "-"), Path(value)))
    return tuple(roots)


def default_workspace_roots() -> tuple[Path, ...]:
    """Where sevro runs keep their workspaces unless told otherwise, as far as a run can know.

    The default root of this process (the temp directory its ``TMPDIR`` names) and the system
    temp directories, the default of a concurrent run started with another ``TMPDIR``. A
    concurrent run with a custom ``--workspace-root`` elsewhere cannot be known here;
    `docs/security.md` says so.
    """
    return (Path(tempfile.gettempdir()), *map(Path, SYSTEM_TEMP_DIRECTORIES))


def readable_holder(
    own_root: Path, temp_dirs: Sequence[Path], protected: Sequence[Path]
) -> Path | None:
    """The directory holding a custom workspace root inside a temp directory, kept readable.

    A run whose ``--workspace-root`` is ``/tmp/area/ws`` still reads ``/tmp/area``, where the
    operator keeps what its checks need, while the rest of the temp directories, where a
    concurrent run's workspaces would be, stays hidden. None when that directory is a temp
    directory itself, lies outside them, or is protected.
    """
    holder = own_root.parent
    if holder in temp_dirs or not any(holder.is_relative_to(t) for t in temp_dirs):
        return None
    if any(p not in temp_dirs and holder.is_relative_to(p) for p in protected):
        return None
    return holder


def existing_canonical(paths: Iterable[Path]) -> tuple[Path, ...]:
    """Canonical forms of the paths that exist now, without duplicates, never ``/``."""
    out: dict[Path, None] = {}
    for path in paths:
        resolved = canonical(path)
        if resolved != Path("/") and os.path.lexists(resolved):
            out.setdefault(resolved, None)
    return tuple(out)


_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"}


def git_worktrees(root: Path) -> tuple[Path, ...]:
    """The primary and linked worktrees of the Git repository holding ``root`` (real ``git
    worktree list --porcelain``), canonical and existing; none outside any repository.

    A Git that cannot answer otherwise (missing, timed out, refusing the repository) is
    refused (exit 64): protecting less than the operator chose must never pass silently."""
    import subprocess

    from sevro_core.limits import GIT_COMMAND_TIMEOUT_SECONDS, MAX_PROTECTED_ROOTS

    environ = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "worktree", "list", "--porcelain", "-z"],
            capture_output=True,
            env={**environ, **_GIT_ENV},
            timeout=GIT_COMMAND_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InvocationError(f"--config-root: git could not list its worktrees: {exc}") from None
    if done.returncode != 0:
        reason = " ".join(done.stderr.decode("utf-8", "replace").split())[:300]
        if "not a git repository" in reason:
            return ()
        raise InvocationError(f"--config-root: git worktree list failed: {reason}")
    fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
    paths = [Path(f.removeprefix("worktree ")) for f in fields if f.startswith("worktree ")]
    if len(paths) > MAX_PROTECTED_ROOTS:
        raise InvocationError(
            f"--config-root: its repository has more than {MAX_PROTECTED_ROOTS} worktrees"
        )
    return existing_canonical(p for p in paths if p.is_absolute())
