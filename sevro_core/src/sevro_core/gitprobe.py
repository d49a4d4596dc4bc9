"""What a Git fixture observes: the base HEAD before the host, and what changed after it.

``baseline`` records the base commit in engine memory before the host's first turn.
``observe`` then reports

* ``sevro.observation.git-head`` ``{baseRevision, currentRevision, baseAncestor}``,
* ``sevro.observation.workspace``: the paths that differ from the base commit (bounded),
* the artifact ``sevro.git.diff``: ``git diff --binary`` from the base commit to the working
  tree (bounded).

After the host the repository is untrusted. Its configuration may name filter drivers,
textconv programs or an fsmonitor, so nothing here lets Git read the working tree: sevro walks
the tree itself (through directory descriptors, never following a symlink), hashes files as Git
blobs, writes the changed ones into a private object directory and lets Git compare two trees.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from attrs import frozen

from sevro_core.git import Git, GitError, parse_revision
from sevro_core.jsonio import JsonValue
from sevro_core.limits import (
    MAX_DIAGNOSTIC_CHARS,
    MAX_WORKSPACE_CHANGED_PATHS,
    MAX_WORKSPACE_DIFF_BYTES,
    MAX_WORKSPACE_FILES,
    MAX_WORKSPACE_HASHED_BYTES,
    MAX_WORKSPACE_LISTING_BYTES,
)
from sevro_core.models import Artifact, CancelToken, Observation
from sevro_core.protocols import FixtureReport
from sevro_core.states import Completeness
from sevro_core.workspace import WorkspaceEscapeError, open_parent

GIT_CAPABILITY = "sevro.fixture.git"
GIT_HEAD_OBSERVATION = "sevro.observation.git-head"
WORKSPACE_OBSERVATION = "sevro.observation.workspace"
DIFF_ARTIFACT = "sevro.git.diff"
GIT_FIXTURE_CAPABILITIES = frozenset(
    {
        "sevro.fixture.files",
        GIT_CAPABILITY,
        GIT_HEAD_OBSERVATION,
        WORKSPACE_OBSERVATION,
        DIFF_ARTIFACT,
    }
)
"""What every Git fixture provides to capability negotiation and ``requiredEvidence``."""

_CHUNK = 1 << 20
_FILE_MODES = (b"100644", b"100755", b"120000")
_SYMLINK = b"120000"
Entry = tuple[bytes, str]
"""A tree entry's mode and object id."""


class _OverBudget(Exception):
    """A fingerprint bound was reached; what was compared so far is still reported."""


@frozen
class GitProbe:
    """The :class:`~sevro_core.protocols.WorkspaceProbe` of generated and repository fixtures."""

    git: Git
    workspace: Path
    source: str

    def baseline(self, cancel: CancelToken) -> Mapping[str, JsonValue]:
        _require_git_dir(self.workspace)
        return {"baseRevision": head(self.git.bound(self.workspace), self.workspace, cancel)}

    def observe(self, baseline: Mapping[str, JsonValue], cancel: CancelToken) -> FixtureReport:
        base = baseline.get("baseRevision")
        assert base is None or isinstance(base, str)
        git = self.git.bound(self.workspace)
        head_observation = self._git_head(git, base, cancel)
        workspace_observation, diff = self._changes(git, base, cancel)
        return FixtureReport(
            observations=(head_observation, workspace_observation),
            artifacts=(diff,) if diff is not None else (),
        )

    def _git_head(self, git: Git, base: str | None, cancel: CancelToken) -> Observation:
        try:
            _require_git_dir(self.workspace)
            current = head(git, self.workspace, cancel)
            ancestor = base is None or (
                current is not None
                and (current == base or _is_ancestor(git, self.workspace, base, current, cancel))
            )
        except (GitError, OSError, UnicodeError) as exc:
            return self._unavailable(
                GIT_HEAD_OBSERVATION, base, f"git state unreadable: {exc}", currentRevision=None
            )
        data: dict[str, JsonValue] = {
            "baseRevision": base,
            "currentRevision": current,
            "baseAncestor": ancestor,
        }
        return Observation(GIT_HEAD_OBSERVATION, self.source, Completeness.COMPLETE, data)

    def _changes(
        self, git: Git, base: str | None, cancel: CancelToken
    ) -> tuple[Observation, Artifact | None]:
        scratch = Path(tempfile.mkdtemp(prefix="sevro-git-", dir=self.workspace.parent))
        try:
            _require_git_dir(self.workspace)
            return self._compare(git, base, scratch, cancel)
        except (GitError, OSError, UnicodeError, ValueError) as exc:
            return self._unavailable(
                WORKSPACE_OBSERVATION, base, f"workspace unreadable: {exc}"
            ), None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _compare(
        self, git: Git, base: str | None, scratch: Path, cancel: CancelToken
    ) -> tuple[Observation, Artifact]:
        ws = self.workspace
        complete = True
        base_entries: dict[bytes, Entry] = {}
        if base is not None:
            listing = git.run(
                "ls-tree", "-r", "-z", "--full-tree", base, cwd=ws, cancel=cancel,
                limit=MAX_WORKSPACE_LISTING_BYTES, truncate=True,
            )  # fmt: skip
            complete = complete and not listing.truncated
            base_entries = dict(_tree_entries(listing.stdout))
        listing = git.run(
            "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ws,
            cancel=cancel, limit=MAX_WORKSPACE_LISTING_BYTES, truncate=True,
        )  # fmt: skip
        # Git warns and goes on past a directory it cannot open (unreadable, beyond PATH_MAX):
        # files there are unlisted, so the account is partial.
        complete = complete and not listing.truncated and not listing.stderr.strip()
        names = {n for n in _records(listing.stdout) if _tree_path(n)}
        candidates = sorted(names | {n for n in base_entries if _tree_path(n)})
        if len(candidates) > MAX_WORKSPACE_FILES:
            complete, candidates = False, candidates[:MAX_WORKSPACE_FILES]
        algorithm = _object_format(git, ws, base, cancel)
        current, walked = _hash_tree(ws, candidates, algorithm, base_entries)
        complete = complete and walked
        changes = _compare_entries(base_entries, current, candidates)
        listed = changes[:MAX_WORKSPACE_CHANGED_PATHS]
        diff, diff_truncated = b"", False
        if changes:
            diff, diff_truncated = _diff(
                git, ws, base, current, changes, scratch, algorithm, cancel
            )
        data: dict[str, JsonValue] = {
            "baseRevision": base,
            "changedPaths": [
                {"path": path.decode("utf-8", "backslashreplace"), "change": change}
                for path, change in listed
            ],
            "changedPathCount": len(changes),
            "truncated": len(listed) < len(changes) or not complete,
            "diffTruncated": diff_truncated,
        }
        completeness = Completeness.COMPLETE if complete else Completeness.PARTIAL
        observation = Observation(WORKSPACE_OBSERVATION, self.source, completeness, data)
        return observation, Artifact(DIFF_ARTIFACT, diff)

    def _unavailable(
        self, observation_id: str, base: str | None, problem: str, **extra: JsonValue
    ) -> Observation:
        message = " ".join(problem.split())[:MAX_DIAGNOSTIC_CHARS]
        data: dict[str, JsonValue] = {"baseRevision": base, **extra, "error": message}
        return Observation(observation_id, self.source, Completeness.UNAVAILABLE, data)


def head(git: Git, workspace: Path, cancel: CancelToken | None = None) -> str | None:
    """The commit HEAD names, or None for an unborn branch (a history without commits)."""
    done = git.run(
        "rev-parse", "--verify", "-q", "HEAD^{commit}", cwd=workspace, cancel=cancel,
        allowed_exits=(0, 1),
    )  # fmt: skip
    if done.exit_code == 0:
        return parse_revision(done.stdout)
    ref = git.run("symbolic-ref", "-q", "HEAD", cwd=workspace, cancel=cancel, allowed_exits=(0, 1))
    name = ref.stdout.strip().decode("utf-8", "replace")
    if ref.exit_code == 0 and name.startswith("refs/heads/"):
        born = git.run(
            "rev-parse", "--verify", "-q", name, cwd=workspace, cancel=cancel, allowed_exits=(0, 1)
        )
        if born.exit_code == 1:
            return None
    raise GitError("HEAD does not name a commit")


def _is_ancestor(git: Git, workspace: Path, base: str, current: str, cancel: CancelToken) -> bool:
    done = git.run(
        "merge-base", "--is-ancestor", base, current, cwd=workspace, cancel=cancel,
        allowed_exits=(0, 1),
    )  # fmt: skip
    return done.exit_code == 0


def _require_git_dir(workspace: Path) -> None:
    """``.git`` must be a real directory: a symlink or gitfile could point at another repo."""
    for path in (workspace / ".git", workspace / ".git" / "objects"):
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise NotADirectoryError(f"{path} is not a directory")


def _object_format(git: Git, workspace: Path, base: str | None, cancel: CancelToken) -> str:
    if base is not None:
        return "sha1" if len(base) == 40 else "sha256"
    name = git.text("rev-parse", "--show-object-format", cwd=workspace, cancel=cancel)
    if name not in ("sha1", "sha256"):
        raise GitError(f"unknown object format {name!r}")
    return name


def _records(data: bytes) -> list[bytes]:
    """NUL-terminated records; whatever follows the last NUL (a cut-off record) is dropped."""
    return [r for r in data.split(b"\0")[:-1] if r]


def _tree_entries(data: bytes) -> Iterator[tuple[bytes, Entry]]:
    for record in _records(data):
        meta, _, path = record.partition(b"\t")
        mode, kind, oid = meta.split(b" ")
        if kind == b"blob" and mode in _FILE_MODES:
            yield path, (mode, oid.decode("ascii"))


def _tree_path(path: bytes) -> bool:
    """Only plain relative paths inside the work tree; the index and objects are untrusted.

    A crafted index can list ``../x`` or ``/etc/x``: such names, ``.git`` parts and nested
    repositories (``dir/``) are never looked up.
    """
    parts = path.split(b"/")
    return b"\0" not in path and all(
        part not in (b"", b".", b"..") and part.lower() != b".git" for part in parts
    )


def _hash_tree(
    workspace: Path, candidates: list[bytes], algorithm: str, base: Mapping[bytes, Entry]
) -> tuple[dict[bytes, Entry], bool]:
    """Hash every candidate that is a regular file or symlink, as Git would store it.

    A file the candidate made unreadable is unknown: it keeps its base entry (so it is neither
    reported nor diffed as changed) and the comparison is partial.
    """
    entries: dict[bytes, Entry] = {}
    budget = [MAX_WORKSPACE_HASHED_BYTES]
    complete = True
    try:
        for path in candidates:
            try:
                entry = _blob_entry(workspace, path, algorithm, budget)
            except PermissionError:
                complete = False
                entry = base.get(path)
            if entry is not None:
                entries[path] = entry
    except _OverBudget:
        return entries, False
    return entries, complete


def _blob_entry(workspace: Path, path: bytes, algorithm: str, budget: list[int]) -> Entry | None:
    try:
        parent, name = open_parent(workspace, os.fsdecode(path))
    except (FileNotFoundError, NotADirectoryError, WorkspaceEscapeError):
        return None  # gone, or beyond a symlink: not in the tree Git would see
    try:
        try:
            info = os.lstat(name, dir_fd=parent)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(info.st_mode):
            target = os.fsencode(os.readlink(name, dir_fd=parent))
            return _SYMLINK, _object_id(algorithm, len(target), [target])
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > budget[0]:
            raise _OverBudget
        budget[0] -= info.st_size
        mode = b"100755" if info.st_mode & stat.S_IXUSR else b"100644"
        return mode, _object_id(algorithm, info.st_size, _read(parent, name, info.st_size))
    finally:
        os.close(parent)


def _read(parent: int, name: str, size: int) -> Iterator[bytes]:
    """Exactly ``size`` bytes of a regular file, in chunks (a file that shrank is an error)."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    try:
        remaining = size
        while remaining > 0:
            chunk = os.read(fd, min(_CHUNK, remaining))
            if not chunk:
                raise OSError(f"{name!r} shrank while it was read")
            remaining -= len(chunk)
            yield chunk
    finally:
        os.close(fd)


def _object_id(algorithm: str, size: int, chunks: Iterable[bytes]) -> str:
    """Git's id of a blob of ``size`` bytes, hashed as the chunks stream by."""
    digest = hashlib.new(algorithm)
    digest.update(b"blob %d\0" % size)
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()


def _compare_entries(
    base: Mapping[bytes, Entry], current: Mapping[bytes, Entry], candidates: list[bytes]
) -> list[tuple[bytes, str]]:
    out = []
    for path in candidates:
        before, after = base.get(path), current.get(path)
        if before != after:
            change = "added" if before is None else "deleted" if after is None else "modified"
            out.append((path, change))
    return out


def _diff(
    git: Git,
    workspace: Path,
    base: str | None,
    current: Mapping[bytes, Entry],
    changes: list[tuple[bytes, str]],
    scratch: Path,
    algorithm: str,
    cancel: CancelToken,
) -> tuple[bytes, bool]:
    """Write changed blobs to a private object directory, build the tree, diff two trees."""
    objects = scratch / "objects"
    objects.mkdir(mode=0o700)
    for path, change in changes:
        if change != "deleted":
            _write_blob(workspace, path, current[path], objects, algorithm)
    private = git.with_env(
        GIT_INDEX_FILE=str(scratch / "index"),
        GIT_OBJECT_DIRECTORY=str(objects),
        GIT_ALTERNATE_OBJECT_DIRECTORIES=str(workspace / ".git" / "objects"),
    )
    info = b"".join(
        mode + b" " + oid.encode() + b"\t" + path + b"\0"
        for path, (mode, oid) in sorted(current.items())
    )
    private.run("update-index", "-z", "--index-info", cwd=workspace, stdin=info, cancel=cancel)
    tree = private.text("write-tree", cwd=workspace, cancel=cancel)
    start = base or private.text("mktree", cwd=workspace, cancel=cancel, stdin=b"")
    done = private.run(
        "diff", "--binary", "--full-index", "--no-color", "--no-ext-diff", "--no-textconv",
        "--no-renames", "--no-relative", "--src-prefix=a/", "--dst-prefix=b/", "-U3",
        start, tree, "--",
        cwd=workspace, cancel=cancel, limit=MAX_WORKSPACE_DIFF_BYTES, truncate=True,
    )  # fmt: skip
    return done.stdout, done.truncated


def _write_blob(workspace: Path, path: bytes, entry: Entry, objects: Path, algorithm: str) -> None:
    """Store one blob as a loose object: zlib of ``blob <size>\\0<content>``."""
    mode, oid = entry
    parent, name = open_parent(workspace, os.fsdecode(path))
    try:
        if mode == _SYMLINK:
            content = os.fsencode(os.readlink(name, dir_fd=parent))
        else:
            size = os.lstat(name, dir_fd=parent).st_size
            content = b"".join(_read(parent, name, size))
    finally:
        os.close(parent)
    data = b"blob %d\0" % len(content) + content
    if hashlib.new(algorithm, data).hexdigest() != oid:
        raise OSError(f"{os.fsdecode(path)!r} changed while it was compared")
    folder = objects / oid[:2]
    folder.mkdir(mode=0o700, exist_ok=True)
    target = folder / oid[2:]
    if not target.exists():
        target.write_bytes(zlib.compress(data))
