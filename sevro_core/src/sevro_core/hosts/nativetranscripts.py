"""The candidate's native transcript tree, kept as one artifact (runtime key ``nativeTranscripts``).

An agent CLI keeps its own record of every session (sub-agent sessions included) in a subtree
of its private home, which the host names (``AgentCliHost.native_transcript_tree``). Those
files are what an extension or an external benchmark analyses, and they vanish with the trial's
private directory. With the key selected, the host bundles that one subtree, never its siblings
(credentials, settings, hook records), after the last turn.

The bundle (``sevro.native-transcripts.bundle``) is one RFC 8785 canonical JSON document,
``sevro.native-transcripts.v1``: ``{format, native, tree, entries: [{path, bytes, sha256,
base64}]}`` with entries sorted by path, each path ``<native>/<tree>/<relative path>``. The same
tree gives the same bytes, so its sha256 identifies it. The walk follows nothing: a symbolic link,
a special file, a hard-linked file, a file that changes while read, or more than the bounds
(:data:`MAX_NATIVE_TRANSCRIPT_ENTRIES`, :data:`MAX_NATIVE_TRANSCRIPT_TREE_BYTES`,
:data:`MAX_NATIVE_TRANSCRIPT_BUNDLE_BYTES`) leaves the observation ``unavailable`` with the
reason and retains no bundle: a partial tree is never passed off as the whole one. A tree taken
after a failed or cancelled trial is retained as ``truncated`` (what the CLI wrote until then).
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

from attrs import frozen

from sevro_core.formats.canonical import canonical_json
from sevro_core.formats.jsonio import JsonValue
from sevro_core.limits import (
    MAX_NATIVE_TRANSCRIPT_BUNDLE_BYTES,
    MAX_NATIVE_TRANSCRIPT_ENTRIES,
    MAX_NATIVE_TRANSCRIPT_TREE_BYTES,
)
from sevro_core.models import Artifact
from sevro_core.states import Completeness
from sevro_core.vocabulary import NATIVE_TRANSCRIPTS_ARTIFACT

BUNDLE_FORMAT = "sevro.native-transcripts.v1"
COMPLETE, TRUNCATED, UNAVAILABLE = "complete", "truncated", "unavailable"


@frozen
class NativeTree:
    """Where a host's native transcripts live: ``home/tree``, bundled as ``native/tree/...``."""

    native: str
    home: Path
    tree: str


@frozen
class Captured:
    """The observation's completeness and data, and the bundle (None unless retained)."""

    completeness: Completeness
    data: dict[str, JsonValue]
    artifact: Artifact | None


class _Refused(Exception):
    """The tree cannot be bundled whole; the message is the observation's reason."""


def capture(
    where: NativeTree, *, whole: bool, scrub: Callable[[bytes], bytes] | None = None
) -> Captured:
    """Bundle ``where``'s tree; ``whole`` says the trial ended normally (else ``truncated``).
    ``scrub`` replaces known secret values in each file before it is bundled."""
    base: dict[str, JsonValue] = {
        "format": BUNDLE_FORMAT,
        "native": where.native,
        "tree": where.tree,
        "artifact": None,
        "entries": None,
        "rawBytes": None,
        "encodedBytes": None,
        "sha256": None,
        "redacted": None,
    }
    try:
        files = _walk(where.home / where.tree, f"{where.native}/{where.tree}")
        entries, raw, scrubbed = _entries(files, scrub)
        content = canonical_json(
            {
                "format": BUNDLE_FORMAT,
                "native": where.native,
                "tree": where.tree,
                "entries": entries,
            }
        )
        if len(content) > MAX_NATIVE_TRANSCRIPT_BUNDLE_BYTES:
            raise _Refused(
                f"the encoded bundle is {len(content)} bytes, more than "
                f"{MAX_NATIVE_TRANSCRIPT_BUNDLE_BYTES} (MAX_NATIVE_TRANSCRIPT_BUNDLE_BYTES)"
            )
    except _Refused as exc:
        data = {**base, "status": UNAVAILABLE, "reason": str(exc)}
        return Captured(Completeness.UNAVAILABLE, data, None)
    status = COMPLETE if whole else TRUNCATED
    data = {
        **base,
        "status": status,
        "reason": None if whole else "the trial did not complete: the tree is what was written",
        "artifact": NATIVE_TRANSCRIPTS_ARTIFACT,
        "entries": len(entries),
        "rawBytes": raw,
        "encodedBytes": len(content),
        "sha256": hashlib.sha256(content).hexdigest(),
        "redacted": scrubbed,
    }
    completeness = Completeness.COMPLETE if whole else Completeness.PARTIAL
    return Captured(completeness, data, Artifact(NATIVE_TRANSCRIPTS_ARTIFACT, content))


def _walk(root: Path, prefix: str) -> list[tuple[str, Path, os.stat_result]]:
    """Every regular file below ``root`` as (bundle path, path, lstat), refusing what is not a
    plain tree within the bounds."""
    try:
        info = os.lstat(root)
    except FileNotFoundError:
        raise _Refused(f"the CLI wrote no {prefix} tree") from None
    except OSError as exc:
        raise _Refused(f"{prefix} cannot be read: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        raise _Refused(f"{prefix} is a symbolic link: not followed, not retained")
    if not stat.S_ISDIR(info.st_mode):
        raise _Refused(f"{prefix} is not a directory")
    found: list[tuple[str, Path, os.stat_result]] = []
    pending, count, total = [(root, prefix)], 0, 0
    while pending:
        directory, name = pending.pop()
        try:
            with os.scandir(directory) as listing:
                children = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            raise _Refused(f"{name} cannot be listed: {exc.strerror}") from None
        for child in children:
            count += 1
            if count > MAX_NATIVE_TRANSCRIPT_ENTRIES:
                raise _Refused(
                    f"the tree holds more than {MAX_NATIVE_TRANSCRIPT_ENTRIES} entries "
                    "(MAX_NATIVE_TRANSCRIPT_ENTRIES)"
                )
            path, bundled = Path(child.path), f"{name}/{child.name}"
            try:
                mode = os.lstat(path)
            except OSError as exc:
                raise _Refused(f"{bundled} cannot be read: {exc.strerror}") from None
            if stat.S_ISDIR(mode.st_mode):
                pending.append((path, bundled))
                continue
            if not stat.S_ISREG(mode.st_mode):
                kind = "a symbolic link" if stat.S_ISLNK(mode.st_mode) else "a special file"
                raise _Refused(f"{bundled} is {kind}: not followed, not retained")
            if mode.st_nlink != 1:
                raise _Refused(f"{bundled} is hard-linked ({mode.st_nlink} links): not retained")
            total += mode.st_size
            if total > MAX_NATIVE_TRANSCRIPT_TREE_BYTES:
                raise _Refused(
                    f"the tree's files hold more than {MAX_NATIVE_TRANSCRIPT_TREE_BYTES} bytes "
                    "(MAX_NATIVE_TRANSCRIPT_TREE_BYTES)"
                )
            found.append((bundled, path, mode))
    return sorted(found, key=lambda f: f[0])


def _entries(
    files: list[tuple[str, Path, os.stat_result]], scrub: Callable[[bytes], bytes] | None
) -> tuple[list[JsonValue], int, bool]:
    """Each file's bundle entry (bytes read once, through a descriptor that follows no link and
    must be the file listed), the raw total, and whether scrubbing changed any."""
    entries: list[JsonValue] = []
    raw, scrubbed = 0, False
    for bundled, path, listed in files:
        data = _read(bundled, path, listed)
        if scrub is not None:
            cleaned = scrub(data)
            scrubbed = scrubbed or cleaned != data
            data = cleaned
        raw += len(data)
        entries.append(
            {
                "path": bundled,
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
                "base64": base64.b64encode(data).decode("ascii"),
            }
        )
    return entries, raw, scrubbed


def _read(bundled: str, path: Path, listed: os.stat_result) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise _Refused(f"{bundled} cannot be opened: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        opened = os.fstat(handle.fileno())
        same = (opened.st_dev, opened.st_ino) == (listed.st_dev, listed.st_ino)
        if not same or not stat.S_ISREG(opened.st_mode) or opened.st_nlink != 1:
            raise _Refused(f"{bundled} changed while it was read: not retained")
        data = handle.read(listed.st_size + 1)
    if len(data) != listed.st_size:
        raise _Refused(f"{bundled} changed size while it was read: not retained")
    return data


__all__ = ["BUNDLE_FORMAT", "Captured", "NativeTree", "capture"]
