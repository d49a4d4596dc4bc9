"""Looking at one path of a trial's workspace without following symlinks or reading unbounded.

The workspace graders (``sevro.path``, ``sevro.file-text``, ``sevro.json-file``) judge what the
host left behind, and the host is untrusted: it may plant symlinks pointing out of the tree,
directories where a file is expected, FIFOs, unreadable directories or huge files. Each of those
is a definite :class:`Entry` here, never a crash and never a read outside the workspace. What
cannot be told without following a link or reading past a bound is ``unknown`` (the check is then
``unavailable``, never passed).
"""

from __future__ import annotations

import enum
import errno
import hashlib
import os
import re
import stat

from attrs import frozen

from sevro_core.api import (
    ENGINE_OBSERVATION_PREFIX,
    CheckOutcome,
    CheckStatus,
    Completeness,
    JsonValue,
    Observation,
    TrialView,
    WorkspaceEscapeError,
    check_relative_path,
    read_confined,
)

_ID_SEGMENTS = re.compile(r"[a-z0-9]+(?:[.-][a-z0-9]+)*")


class Kind(enum.Enum):
    """What sits at a workspace path, as ``lstat`` sees it."""

    FILE = "file"
    DIRECTORY = "directory"
    SYMLINK = "symlink"
    OTHER = "other"
    """A FIFO, socket or device."""
    MISSING = "missing"


@frozen
class Entry:
    """The kind at a path, or ``kind=None`` and why it cannot be told (then ``unknown``)."""

    kind: Kind | None
    unknown: str | None = None


def workspace_path(config: dict[str, JsonValue], key: str = "path") -> str:
    """The configuration's relative workspace path, refused at load when it could escape."""
    path = config[key]
    assert isinstance(path, str)
    check_relative_path(path, f"/{key}")
    return path


def inspect(view: TrialView, relative: str) -> Entry:
    """What is at ``relative`` in the trial's workspace; no component's symlink is followed."""
    root = view.workspace
    try:
        if not stat.S_ISDIR(os.lstat(root).st_mode):
            return Entry(None, "the workspace is not a directory")
    except OSError:
        return Entry(None, "the workspace is unavailable")
    parts = relative.split("/")
    current = root
    for index, part in enumerate(parts):
        current = current / part
        shown = "/".join(parts[: index + 1])
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return Entry(Kind.MISSING)
        except NotADirectoryError:
            return Entry(Kind.MISSING)
        except OSError as exc:
            return Entry(None, f"{shown!r} cannot be inspected ({os.strerror(exc.errno or 0)})")
        mode = info.st_mode
        last = index == len(parts) - 1
        if stat.S_ISLNK(mode):
            if last:
                return Entry(Kind.SYMLINK)
            return Entry(None, f"{shown!r} is a symlink (not followed)")
        if last:
            if stat.S_ISREG(mode):
                return Entry(Kind.FILE)
            if stat.S_ISDIR(mode):
                return Entry(Kind.DIRECTORY)
            return Entry(Kind.OTHER)
        if not stat.S_ISDIR(mode):
            return Entry(Kind.MISSING)
    raise AssertionError("unreachable")  # pragma: no cover


def describe(kind: Kind, path: str) -> str:
    """A short failure detail for a path that is not the regular file a check needs."""
    if kind is Kind.MISSING:
        return f"{path!r} does not exist"
    if kind is Kind.SYMLINK:
        return f"{path!r} is a symlink (not followed)"
    if kind is Kind.DIRECTORY:
        return f"{path!r} is a directory, not a file"
    return f"{path!r} is not a regular file"


@frozen
class FileBytes:
    """A regular file read whole (its size within the bound)."""

    data: bytes


@frozen
class NoFile:
    """Why no bytes: ``status`` is ``failed`` (a definite state) or ``unavailable``."""

    status: CheckStatus
    detail: str
    kind: Kind | None


def read_file(view: TrialView, relative: str, limit: int) -> FileBytes | NoFile:
    """Read the regular file at ``relative`` whole, or say why not.

    Not a regular file (missing, a symlink, a directory, a FIFO) is a definite ``failed``; a file
    over ``limit`` bytes, or one that cannot be read, is ``unavailable``: sevro did not see it all.
    """
    entry = inspect(view, relative)
    if entry.kind is None:
        return NoFile(CheckStatus.UNAVAILABLE, entry.unknown or "unknown", None)
    if entry.kind is not Kind.FILE:
        return NoFile(CheckStatus.FAILED, describe(entry.kind, relative), entry.kind)
    try:
        data, size = read_confined(view.workspace, relative, limit + 1)
    except WorkspaceEscapeError as exc:
        return NoFile(CheckStatus.UNAVAILABLE, f"{relative!r}: {exc.strerror}", Kind.FILE)
    except OSError as exc:
        reason = os.strerror(exc.errno or errno.EIO)
        return NoFile(CheckStatus.UNAVAILABLE, f"{relative!r} cannot be read ({reason})", Kind.FILE)
    if size > limit or len(data) > limit:
        return NoFile(
            CheckStatus.UNAVAILABLE,
            f"{relative!r} is larger than {limit} bytes (not read)",
            Kind.FILE,
        )
    return FileBytes(data)


def file_observation(
    prefix: str, check_id: str, grader: str, relative: str, found: FileBytes | NoFile | Entry
) -> Observation:
    """``sevro.observation.<prefix>.<checkId>``: the path, what was there, and the bytes' digest."""
    data: dict[str, JsonValue] = {"path": relative}
    completeness = Completeness.COMPLETE
    if isinstance(found, FileBytes):
        data["kind"] = Kind.FILE.value
        data["byteLength"] = len(found.data)
        data["sha256"] = hashlib.sha256(found.data).hexdigest()
    else:
        kind = found.kind
        if kind is None:
            completeness = Completeness.UNAVAILABLE
        else:
            data["kind"] = kind.value
        if isinstance(found, NoFile) and found.status is CheckStatus.UNAVAILABLE:
            completeness = Completeness.PARTIAL if kind is not None else Completeness.UNAVAILABLE
    segment = observation_segment(check_id)
    return Observation(f"{ENGINE_OBSERVATION_PREFIX}{prefix}.{segment}", grader, completeness, data)


def observation_segment(check_id: str) -> str:
    """The check id, or its sha256 when it is not a valid id segment (as ``sevro.shell`` does)."""
    if _ID_SEGMENTS.fullmatch(check_id):
        return check_id
    return hashlib.sha256(check_id.encode()).hexdigest()


def outcome(
    check_id: str,
    grader: str,
    status: CheckStatus,
    detail: str | None,
    observation: Observation,
) -> CheckOutcome:
    """A check outcome whose evidence is the grader's own observation of the workspace."""
    return CheckOutcome(
        id=check_id,
        grader=grader,
        status=status,
        detail=detail,
        evidence_refs=(observation.id,),
        observations=(observation,),
    )
