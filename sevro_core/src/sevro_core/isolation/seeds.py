"""Seed directories and shared caches of a runtime configuration, and each role's runtime root.

A seed directory is a prepared public dependency tree (a UV cache, ``node_modules``) each role
gets its own private copy of, so nothing one role does to it reaches another. Its content and
modes are fingerprinted when the configuration is read; the first role that needs it captures
the whole bounded tree in memory, checks it against that fingerprint (a source changed in
between is a failure, never a silent difference), and every role then materialises separate
files from those captured bytes. A shared cache is the opposite trade: one persistent writable
directory every selected role aliases, mutable across trials and excluded from the identity.

A role's runtime root (``{{sevro.runtime}}``) holds ``home``, ``tmp`` and its slots; it lives in
the trial's private directory, so it is removed with it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import field, frozen

from sevro_core.errors import InvocationError
from sevro_core.isolation.protection import canonical
from sevro_core.limits import MAX_SEED_BYTES, MAX_SEED_ENTRIES
from sevro_core.plugin.hostruntime import RoleRuntime
from sevro_core.vocabulary import ADVISORY_ROLE, SEMANTIC_ROLE

RUNTIME_ROLES = ("candidate", "checks", "hooks", SEMANTIC_ROLE, ADVISORY_ROLE)
"""The execution roles a seed or shared cache can select."""
DEFAULT_SEED_ROLES = ("candidate", "hooks", SEMANTIC_ROLE, ADVISORY_ROLE)
"""A seed without ``roles``: never ``checks`` (a check that needs it must say so)."""
RESERVED_SLOTS = frozenset({"home", "tmp"})

_DIRECTORY, _FILE, _LINK = "directory", "file", "symlink"


class RuntimeUnavailable(Exception):
    """A role's runtime root cannot be prepared (a seed changed, a shared cache went away): the
    command it was for must not run, and what it would have graded is not a pass."""


@frozen
class _Entry:
    """One captured entry of a seed tree: its path below the root, kind, mode, and content
    (a file's bytes, a symlink's target)."""

    path: str
    kind: str
    mode: int
    data: bytes = b""

    def fingerprint(self) -> str:
        content = hashlib.sha256(self.data).hexdigest()
        return json.dumps([self.path, self.kind, self.mode, content])


class _Capture:
    """The verified bytes of one seed, taken once at first use and shared by every role and
    trial of the policy that declared it (collected with it)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: tuple[_Entry, ...] | None = None


@frozen
class SeedDirectory:
    """``runtime.seedDirectories[i]``: a canonical source tree copied privately per role."""

    source: Path
    target: str
    roles: tuple[str, ...]
    digest: str
    entries: int
    size: int
    pointer: str
    _capture: _Capture = field(factory=_Capture, eq=False, repr=False)

    def captured(self) -> tuple[_Entry, ...]:
        """The tree's bytes, read and verified against the load-time fingerprint once."""
        with self._capture.lock:
            if self._capture.entries is None:
                try:
                    entries = _walk(self.source)
                except (_TreeProblem, OSError) as exc:
                    raise RuntimeUnavailable(f"seed directory {self.source}: {exc}") from None
                if _digest(entries) != self.digest:
                    raise RuntimeUnavailable(
                        f"seed directory {self.source} changed after the runtime configuration "
                        "was read; its fingerprint no longer matches"
                    )
                self._capture.entries = entries
            return self._capture.entries

    def materialise(self, slot: Path) -> None:
        """Write a private copy of the captured tree at ``slot``."""
        os.mkdir(slot, 0o700)
        directories: list[tuple[Path, int]] = []
        for entry in self.captured():
            path = slot / entry.path
            if entry.kind == _DIRECTORY:
                os.mkdir(path, 0o700)
                directories.append((path, entry.mode))
            elif entry.kind == _LINK:
                os.symlink(os.fsdecode(entry.data), path)
            else:
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                descriptor = os.open(path, flags, 0o600)
                with os.fdopen(descriptor, "wb") as handle:
                    handle.write(entry.data)
                    os.fchmod(handle.fileno(), entry.mode)
        for path, mode in reversed(directories):  # children first: a read-only parent last
            os.chmod(path, mode)

    def configuration(self) -> dict[str, Any]:
        return {
            "source": str(self.source),
            "target": self.target,
            "roles": list(self.roles),
            "digest": self.digest,
            "entries": self.entries,
            "bytes": self.size,
        }


@frozen
class SharedCache:
    """``runtime.sharedCacheDirectories[i]``: one writable directory aliased by each selected
    role. The identity binds source, slot and roles, never the (mutable) contents."""

    source: Path
    target: str
    roles: tuple[str, ...]
    pointer: str

    def revalidated(self) -> Path:
        problem = cache_problem(self.source)
        if problem is not None or canonical(self.source) != self.source:
            raise RuntimeUnavailable(
                f"shared cache {self.source} {problem or 'is no longer its canonical path'}"
            )
        return self.source

    def configuration(self) -> dict[str, Any]:
        return {"source": str(self.source), "target": self.target, "roles": list(self.roles)}


def prepare_root(root: Path) -> tuple[Path, Path]:
    """Create (or reuse) a role's private root with its ``home`` and ``tmp``."""
    dirs = (root / "home", root / "tmp")
    for directory in (root, *dirs):
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            if directory.is_symlink() or not directory.is_dir():
                raise RuntimeUnavailable(f"{directory} is not a private directory") from None
    return dirs


def fill_slots(
    root: Path, role: str, seeds: Sequence[SeedDirectory], caches: Sequence[SharedCache]
) -> tuple[Path, ...]:
    """Materialise the role's seeds and link its shared caches in ``root`` (each once per
    root); return the shared-cache directories the role may write."""
    writable: list[Path] = []
    for seed in seeds:
        slot = root / seed.target
        if role in seed.roles and not os.path.lexists(slot):
            try:
                seed.materialise(slot)
            except OSError as exc:
                raise RuntimeUnavailable(f"seed slot {seed.target}: {exc}") from None
    for cache in caches:
        if role not in cache.roles:
            continue
        source = cache.revalidated()
        slot = root / cache.target
        if not os.path.lexists(slot):
            try:
                os.symlink(source, slot)
            except OSError as exc:
                raise RuntimeUnavailable(f"shared cache slot {cache.target}: {exc}") from None
        writable.append(source)
    return tuple(writable)


class _TreeProblem(Exception):
    pass


def fingerprint(source: Path) -> tuple[str, int, int]:
    """The digest, entry count and byte size of a seed tree; ``_TreeProblem`` if refused."""
    entries = _walk(source)
    return _digest(entries), len(entries), sum(len(e.data) for e in entries if e.kind == _FILE)


def _digest(entries: Sequence[_Entry]) -> str:
    hasher = hashlib.sha256()
    for entry in entries:
        hasher.update(entry.fingerprint().encode() + b"\n")
    return "sha256:" + hasher.hexdigest()


def _walk(root: Path) -> tuple[_Entry, ...]:
    """Every entry below ``root``, sorted, following no symlink, within the bounds."""
    entries: list[_Entry] = []
    pending = [""]
    total = 0
    while pending:
        relative = pending.pop()
        with os.scandir(root / relative) as listing:
            items = sorted(listing, key=lambda item: item.name)
        for item in items:
            if len(entries) >= MAX_SEED_ENTRIES:
                raise _TreeProblem(f"holds more than {MAX_SEED_ENTRIES} entries")
            path = f"{relative}/{item.name}" if relative else item.name
            info = item.stat(follow_symlinks=False)
            mode = stat.S_IMODE(info.st_mode)
            if stat.S_ISLNK(info.st_mode):
                target = os.readlink(item.path)
                _check_link(root, relative, path, target)
                entries.append(_Entry(path, _LINK, 0, os.fsencode(target)))
            elif stat.S_ISDIR(info.st_mode):
                entries.append(_Entry(path, _DIRECTORY, mode))
                pending.append(path)
            elif stat.S_ISREG(info.st_mode):
                data = _read(item.path, MAX_SEED_BYTES - total)
                total += len(data)
                entries.append(_Entry(path, _FILE, mode, data))
            else:
                raise _TreeProblem(f"holds {path}, which is not a file, directory or symlink")
    return tuple(sorted(entries, key=lambda entry: entry.path))


def _check_link(root: Path, relative: str, path: str, target: str) -> None:
    """A link must stay inside the tree as written (so the copy's link stays inside the copy),
    name something that exists, and not lead back to a directory that holds it."""
    lexical = os.path.normpath(os.path.join(relative, target))
    if os.path.isabs(target) or lexical == ".." or lexical.startswith("../"):
        raise _TreeProblem(f"holds {path}, a symlink that escapes the directory")
    resolved = Path(os.path.realpath(root / path))
    if not os.path.exists(resolved):
        raise _TreeProblem(f"holds {path}, a dangling symlink")
    if not resolved.is_relative_to(root):
        raise _TreeProblem(f"holds {path}, a symlink that escapes the directory")
    if resolved.is_dir() and (root / relative).is_relative_to(resolved):
        raise _TreeProblem(f"holds {path}, a symlink that makes a directory cycle")


def _read(path: str, allowance: int) -> bytes:
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(descriptor, "rb") as handle:
        data = handle.read(allowance + 1)
    if len(data) > allowance:
        raise _TreeProblem(f"holds more than {MAX_SEED_BYTES} bytes of files")
    return data


def cache_problem(source: Path) -> str | None:
    """Why ``source`` cannot be a shared cache (not an owned, writable directory), or None."""
    try:
        info = os.stat(source)
    except OSError:
        return "does not exist"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if info.st_uid != os.getuid():
        return "is not owned by the invoking user"
    if not os.access(source, os.R_OK | os.W_OK | os.X_OK):
        return "is not readable and writable"
    return None


Resolver = Callable[[str, str, str], Path]
"""``(declared, pointer, what)`` to a canonical existing directory, or an exit-64 refusal."""
Refusal = Callable[[str, str], InvocationError]


def parse_slots(
    runtime: Mapping[str, Any],
    resolve: Resolver,
    fail: Refusal,
    forbidden: Sequence[Path],
    grants: Sequence[Path],
) -> tuple[tuple[SeedDirectory, ...], tuple[SharedCache, ...]]:
    """``runtime.seedDirectories`` and ``sharedCacheDirectories``, every rule checked.

    ``forbidden`` are credential locations (no source may hold or lie in one), ``grants`` the
    read roots (a writable cache may not overlap one either way).
    """
    seen: set[str] = set()
    seeds: list[SeedDirectory] = []
    for index, entry in enumerate(runtime.get("seedDirectories", [])):
        pointer = f"/runtime/seedDirectories/{index}"
        source = resolve(entry["source"], f"{pointer}/source", "seed directory")
        _slot(entry["target"], seen, f"{pointer}/target", fail)
        _no_overlap(source, forbidden, "a credential location", f"{pointer}/source", fail)
        try:
            digest, count, size = fingerprint(source)
        except (_TreeProblem, OSError) as exc:
            raise fail(f"seed directory {entry['source']} {exc}", f"{pointer}/source") from None
        roles = tuple(entry.get("roles", DEFAULT_SEED_ROLES))
        seeds.append(SeedDirectory(source, entry["target"], roles, digest, count, size, pointer))
    caches: list[SharedCache] = []
    for index, entry in enumerate(runtime.get("sharedCacheDirectories", [])):
        pointer = f"/runtime/sharedCacheDirectories/{index}"
        source = resolve(entry["source"], f"{pointer}/source", "shared cache")
        _slot(entry["target"], seen, f"{pointer}/target", fail)
        problem = cache_problem(source)
        if problem is not None:
            raise fail(f"shared cache {entry['source']} {problem}", f"{pointer}/source")
        at = f"{pointer}/source"
        _no_overlap(source, forbidden, "a credential location", at, fail)
        _no_overlap(source, [s.source for s in seeds], "a seed directory", at, fail)
        _no_overlap(source, [c.source for c in caches], "another shared cache", at, fail)
        _no_overlap(source, grants, "a read-only root", at, fail)
        caches.append(SharedCache(source, entry["target"], tuple(entry["roles"]), pointer))
    return tuple(seeds), tuple(caches)


def _slot(target: str, seen: set[str], pointer: str, fail: Refusal) -> None:
    if target in RESERVED_SLOTS:
        raise fail(f"target {target} is reserved (home and tmp are the runner's)", pointer)
    if target in seen:
        raise fail(f"target {target} is already used by another seed or shared cache", pointer)
    seen.add(target)


def _no_overlap(
    source: Path, others: Sequence[Path], what: str, pointer: str, fail: Refusal
) -> None:
    for other in others:
        if source.is_relative_to(other) or other.is_relative_to(source):
            raise fail(f"{source} overlaps {what} ({other})", pointer)


__all__ = [
    "DEFAULT_SEED_ROLES",
    "RUNTIME_ROLES",
    "RoleRuntime",
    "RuntimeUnavailable",
    "SeedDirectory",
    "SharedCache",
]
