"""Where an arm's skills and context files come from, and proof that they did not change.

A source is ``none``, a working-tree directory, or ``git:<ref>:<path>`` read from Git objects
(never by checking out, so the operator's working tree is untouched and a dirty one does not
leak in). Sources are untrusted trees: reads are bounded, paths are canonicalised (UTF-8, NFC,
no ``.``/``..``), two names that are equal after NFC normalisation are refused, and symbolic
links and special files are refused rather than followed, so nothing outside the tree can be
read. The fingerprint is a sha256 over the canonical JSON of the sorted (path, mode, sha256)
entries: byte-identical content has the same fingerprint whether it came from a directory or a
Git ref, and :func:`verify` re-reads a source to prove it is still what was fingerprinted.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import unicodedata
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from attrs import frozen

from sevro_core.errors import InvocationError
from sevro_core.fixtures.git import Git, GitError, find_git
from sevro_core.formats.canonical import hash_json, sha256_hex
from sevro_core.formats.fileio import read_at_most
from sevro_core.limits import (
    MAX_SOURCE_BYTES,
    MAX_SOURCE_FILES,
    MAX_SOURCE_LISTING_BYTES,
    MAX_SOURCE_PATH_DEPTH,
    MAX_SOURCE_PATH_LENGTH,
)

REGULAR_MODE = "100644"
EXECUTABLE_MODE = "100755"
_GIT_PREFIX = "git:"
_SKIPPED_NAMES = frozenset({".git"})
"""A working tree's ``.git`` is Git's, not the source's (a Git tree cannot hold one either)."""
_REF_RE = re.compile(r"^[^\s\x00-\x1f\x7f:-][^\s\x00-\x1f\x7f:]*$")
"""A ref or revision (``main``, ``v1.2``, ``HEAD~1``): no option-like ``-``, no space or ``:``."""
_CAT_FILE_HEADER_ALLOWANCE = 160
"""Bytes ``cat-file --batch`` adds per object: its header line and trailing newline."""


class SourceChangedError(InvocationError):
    """A source no longer matches its fingerprint (a working tree edited mid-run)."""


@frozen
class NoSource:
    """``none``: the arm has nothing here (an empty tree)."""

    def describe(self) -> str:
        return "none"


@frozen
class DirectorySource:
    """A directory of the working tree, read as it is on disk."""

    path: Path
    without: frozenset[str] = frozenset()
    """Top-level names left out of the tree (a skill's own ``evals/``: its answer key)."""

    def describe(self) -> str:
        return str(self.path)


@frozen
class GitSource:
    """``git:<ref>:<path>``: a tree of a commit in the repository at ``repository``."""

    repository: Path
    ref: str
    path: str
    without: frozenset[str] = frozenset()
    """Top-level names of the tree left out, as :attr:`DirectorySource.without`."""

    def describe(self) -> str:
        return f"{_GIT_PREFIX}{self.ref}:{self.path}"


Source = NoSource | DirectorySource | GitSource


@frozen
class SourceFile:
    """One file of a source: canonical relative path, Git-style mode, digest, size and bytes."""

    path: str
    mode: str
    sha256: str
    size: int
    data: bytes


@frozen
class SourceTree:
    """A source as read once: its files sorted by path, and the fingerprint over them."""

    source: Source
    files: tuple[SourceFile, ...]
    revision: str | None = None
    """The commit a Git source was read from (None for other kinds)."""

    @property
    def fingerprint(self) -> str:
        return tree_digest(self.files)

    def file(self, path: str) -> SourceFile | None:
        return next((entry for entry in self.files if entry.path == path), None)


def tree_digest(files: tuple[SourceFile, ...]) -> str:
    """sha256 over the canonical JSON of the sorted (path, mode, sha256) entries."""
    entries = sorted((entry.path, entry.mode, entry.sha256) for entry in files)
    return hash_json([list(entry) for entry in entries])


def parse_source(spec: str, base: Path, *, default_path: str | None = None) -> Source:
    """``none``, ``git:<ref>:<path>`` (``git:<ref>`` when a default path is given) or a path.

    A directory is resolved against ``base``; a Git source names the repository holding
    ``base``. Nothing is read yet.
    """
    if spec == "none":
        return NoSource()
    if spec.startswith(_GIT_PREFIX):
        ref, colon, path = spec[len(_GIT_PREFIX) :].partition(":")
        if not colon:
            if default_path is None:
                raise InvocationError(f"source {spec!r} must be git:<ref>:<path>")
            path = default_path
        if not _REF_RE.fullmatch(ref):
            raise InvocationError(f"source {spec!r} names no valid Git ref")
        return GitSource(base, ref, _canonical_tree_path(path, spec))
    if not spec:
        raise InvocationError("a source must be none, a directory or git:<ref>:<path>")
    return DirectorySource(base / spec)


def read_source(source: Source, git: Git | None = None) -> SourceTree:
    """Read ``source`` whole (bounded); :class:`InvocationError` naming it when it cannot be."""
    if isinstance(source, NoSource):
        return SourceTree(source, ())
    if isinstance(source, DirectorySource):
        return SourceTree(source, _sorted(_read_directory(source)))
    return _read_git(source, git)


def verify(source: Source, fingerprint: str, git: Git | None = None) -> SourceTree:
    """Re-read ``source``; :class:`SourceChangedError` when it no longer has ``fingerprint``."""
    tree = read_source(source, git)
    if tree.fingerprint != fingerprint:
        raise SourceChangedError(
            f"source {source.describe()} changed since it was fingerprinted "
            f"(sha256 {fingerprint[:12]}, now {tree.fingerprint[:12]}); "
            "refusing to mix versions in one run"
        )
    return tree


def _sorted(files: list[SourceFile]) -> tuple[SourceFile, ...]:
    return tuple(sorted(files, key=lambda entry: entry.path))


class _Budget:
    """Counts files and bytes against the source bounds, and NFC collisions."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.files = 0
        self.bytes = 0
        self.paths: set[str] = set()
        self.directories: set[str] = set()

    def add(self, path: str, size: int) -> None:
        self.files += 1
        self.bytes += size
        if self.files > MAX_SOURCE_FILES:
            raise InvocationError(f"source {self.where} has more than {MAX_SOURCE_FILES} files")
        if self.bytes > MAX_SOURCE_BYTES:
            raise InvocationError(f"source {self.where} holds more than {MAX_SOURCE_BYTES} bytes")
        parents = ["/".join(path.split("/")[:depth]) for depth in range(1, path.count("/") + 1)]
        if path in self.paths or path in self.directories or self.paths.intersection(parents):
            raise InvocationError(
                f"source {self.where} holds two paths that are both {path!r} "
                "after Unicode NFC normalisation"
            )
        self.paths.add(path)
        self.directories.update(parents)


def _canonical_name(raw: bytes | str, where: str) -> str:
    """One path component as NFC text; refuses non-UTF-8, separators and dot names."""
    try:
        name = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        name.encode("utf-8")
    except UnicodeError:
        raise InvocationError(f"source {where} holds a path that is not UTF-8") from None
    name = unicodedata.normalize("NFC", name)
    if name in ("", ".", "..") or "/" in name or "\x00" in name:
        raise InvocationError(f"source {where} holds an unsafe path component {name!r}")
    return name


def _canonical_path(parts: list[str], where: str) -> str:
    path = "/".join(parts)
    if len(parts) > MAX_SOURCE_PATH_DEPTH or len(path.encode()) > MAX_SOURCE_PATH_LENGTH:
        raise InvocationError(f"source {where} holds a path deeper or longer than allowed")
    return path


def _canonical_tree_path(path: str, spec: str) -> str:
    """The path part of a Git source: relative, no ``..``; ``""`` or ``.`` is the root."""
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts:
        raise InvocationError(f"source {spec!r}: the path must stay inside the repository")
    parts = [_canonical_name(part, spec) for part in pure.parts if part != "."]
    return _canonical_path(parts, spec)


# --- working-tree directories -------------------------------------------------------------

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _read_directory(source: DirectorySource) -> list[SourceFile]:
    where = source.describe()
    try:
        root = os.open(source.path, _DIRECTORY_FLAGS)
    except FileNotFoundError:
        raise InvocationError(f"source {where} does not exist") from None
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            return [_read_single_file(source.path, where)]
        if exc.errno == errno.ELOOP:
            raise InvocationError(f"source {where} is a symbolic link (refused)") from None
        raise InvocationError(f"source {where} cannot be read: {exc.strerror}") from None
    try:
        return list(_walk(root, [], _Budget(where), where, _SKIPPED_NAMES | source.without))
    finally:
        os.close(root)


def _read_single_file(path: Path, where: str) -> SourceFile:
    """A source naming one regular file (a context file such as ``AGENTS.md``): a tree of one
    file under its own name. Its directory is opened without following a link either."""
    try:
        parent = os.open(path.parent, _DIRECTORY_FLAGS)
    except OSError as exc:
        raise InvocationError(f"source {where} cannot be read: {exc.strerror}") from None
    try:
        name = _canonical_name(os.fsencode(path.name), where)
        return _read_regular(path.name, parent, name, _Budget(where), where)
    finally:
        os.close(parent)


def _walk(
    directory: int,
    prefix: list[str],
    budget: _Budget,
    where: str,
    skipped: frozenset[str] = _SKIPPED_NAMES,
) -> Iterator[SourceFile]:
    """Files under the open ``directory``, opened relative to it so no link is ever followed;
    ``skipped`` top-level names are left out."""
    with os.scandir(directory) as listing:
        names = sorted(entry.name for entry in listing)
    for raw in names:
        if not prefix and raw in skipped:
            continue
        parts = [*prefix, _canonical_name(os.fsencode(raw), where)]
        shown = "/".join(parts)
        info = os.stat(raw, dir_fd=directory, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            raise InvocationError(f"source {where} holds a symbolic link {shown!r} (refused)")
        if stat.S_ISDIR(info.st_mode):
            child = os.open(raw, _DIRECTORY_FLAGS, dir_fd=directory)
            try:
                yield from _walk(child, parts, budget, where)
            finally:
                os.close(child)
            continue
        if not stat.S_ISREG(info.st_mode):
            raise InvocationError(f"source {where} holds a special file {shown!r} (refused)")
        path = _canonical_path(parts, where)
        yield _read_regular(raw, directory, path, budget, where)


def _read_regular(raw: str, directory: int, path: str, budget: _Budget, where: str) -> SourceFile:
    try:
        fd = os.open(raw, _FILE_FLAGS, dir_fd=directory)
    except OSError as exc:
        raise InvocationError(f"source {where}: {path!r} cannot be read: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvocationError(f"source {where} holds a special file {path!r} (refused)")
        data = read_at_most(fd, MAX_SOURCE_BYTES - budget.bytes + 1)
    finally:
        os.close(fd)
    budget.add(path, len(data))
    executable = bool(info.st_mode & stat.S_IXUSR)
    mode = EXECUTABLE_MODE if executable else REGULAR_MODE
    return SourceFile(path, mode, sha256_hex(data), len(data), data)


# --- Git refs -----------------------------------------------------------------------------


def _read_git(source: GitSource, git: Git | None) -> SourceTree:
    where = source.describe()
    if git is None:
        executable = find_git()
        if executable is None:
            raise InvocationError(f"source {where} needs git, which is not on PATH")
        git = Git(executable)
    try:
        git_dir = git.text("rev-parse", "--absolute-git-dir", cwd=source.repository)
    except (GitError, OSError) as exc:
        raise InvocationError(
            f"source {where}: {source.repository} is not in a Git repository ({exc})"
        ) from None
    repo = Git(git.executable, (f"--git-dir={git_dir}",), git.extra_env)
    try:
        commit = repo.revision(source.repository, source.ref)
    except GitError:
        raise InvocationError(f"source {where}: no commit named {source.ref!r}") from None
    # "<commit>:<path>" names the object at path; "^{tree}" after it would be read as path
    spec = f"{commit}:{source.path}" if source.path else f"{commit}^{{tree}}"
    try:
        tree = repo.text("rev-parse", "--verify", "--quiet", spec, cwd=source.repository)
        kind = repo.text("cat-file", "-t", tree, cwd=source.repository)
    except GitError:
        kind = "missing"
    if kind == "blob" and source.path:
        files = _git_single_file(repo, source.repository, commit, source.path, where)
        return SourceTree(source, tuple(files), commit)
    if kind != "tree":
        raise InvocationError(
            f"source {where}: {source.path or '.'!r} is neither a directory nor a file "
            f"at {source.ref}"
        )
    files = _git_files(repo, source.repository, tree, where, source.without)
    return SourceTree(source, _sorted(files), commit)


def _git_single_file(repo: Git, cwd: Path, commit: str, path: str, where: str) -> list[SourceFile]:
    """The one file a ``git:<ref>:<file>`` source names, under its own name."""
    try:
        listing = repo.run(
            "ls-tree", "-z", "-l", "--full-tree", commit, "--", path, cwd=cwd, limit=4096
        )
    except GitError as exc:
        raise InvocationError(f"source {where}: cannot list the file ({exc})") from None
    header, _, _ = listing.stdout.rstrip(b"\x00").partition(b"\t")
    mode, _kind, oid, size = header.decode("ascii", "replace").split()
    name = path.rsplit("/", 1)[-1]
    if mode not in (REGULAR_MODE, EXECUTABLE_MODE):
        raise InvocationError(f"source {where} is a special entry (mode {mode})")
    _Budget(where).add(name, int(size))
    return _git_blobs(repo, cwd, [(name, mode, oid, int(size))], where)


def _git_files(
    repo: Git, cwd: Path, tree: str, where: str, without: frozenset[str] = frozenset()
) -> list[SourceFile]:
    try:
        listing = repo.run(
            "ls-tree",
            "-r",
            "-z",
            "-l",
            "--full-tree",
            tree,
            cwd=cwd,
            limit=MAX_SOURCE_LISTING_BYTES,
        )
    except GitError as exc:
        raise InvocationError(f"source {where}: cannot list the tree ({exc})") from None
    budget = _Budget(where)
    wanted: list[tuple[str, str, str, int]] = []
    for record in listing.stdout.split(b"\x00"):
        if not record:
            continue
        header, _, raw_path = record.partition(b"\t")
        mode, kind, oid, size = header.decode("ascii", "replace").split()
        parts = [_canonical_name(part, where) for part in raw_path.split(b"/")]
        if parts[0] in without:
            continue
        path = _canonical_path(parts, where)
        if mode == "120000":
            raise InvocationError(f"source {where} holds a symbolic link {path!r} (refused)")
        if kind != "blob" or mode not in (REGULAR_MODE, EXECUTABLE_MODE):
            raise InvocationError(f"source {where} holds a special entry {path!r} (mode {mode})")
        budget.add(path, int(size))
        wanted.append((path, mode, oid, int(size)))
    return _git_blobs(repo, cwd, wanted, where)


def _git_blobs(
    repo: Git, cwd: Path, wanted: list[tuple[str, str, str, int]], where: str
) -> list[SourceFile]:
    """The blobs in one ``cat-file --batch``, checked against the sizes ``ls-tree`` promised."""
    if not wanted:
        return []
    request = "".join(f"{oid}\n" for _, _, oid, _ in wanted).encode("ascii")
    limit = sum(size + _CAT_FILE_HEADER_ALLOWANCE for *_, size in wanted)
    try:
        output = repo.run("cat-file", "--batch", cwd=cwd, stdin=request, limit=limit).stdout
    except GitError as exc:
        raise InvocationError(f"source {where}: cannot read the tree's files ({exc})") from None
    files: list[SourceFile] = []
    offset = 0
    for path, mode, oid, size in wanted:
        newline = output.find(b"\n", offset)
        header = output[offset:newline].decode("ascii", "replace").split()
        if newline < 0 or header != [oid, "blob", str(size)]:
            raise InvocationError(
                f"source {where}: git cat-file answered unexpectedly for {path!r}"
            )
        data = output[newline + 1 : newline + 1 + size]
        offset = newline + 1 + size + 1
        if len(data) != size:
            raise InvocationError(f"source {where}: {path!r} was cut short by git cat-file")
        files.append(SourceFile(path, mode, sha256_hex(data), size, data))
    return files
