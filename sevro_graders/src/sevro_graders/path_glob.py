"""Workspace globs for ``sevro.path``: a bounded walk that never follows a symlink.

``*`` matches within one path segment (names starting with ``.`` too), ``?`` one character of a
segment, and a ``**`` segment any number of segments (``src/**`` is everything below ``src``).
The walk descends only into real directories whose path could still lead to a match, and stops
after ``MAX_PATH_GLOB_ENTRIES`` entries. The workspace's top-level ``.git`` is walked only by a
glob starting ``.git/``. When nothing matched, whatever the walk could not see
(an unreadable directory, a symlink a match could hide behind, the bound) leaves the answer
unknown: absence is only claimed for a tree seen whole.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from pathlib import Path

from attrs import frozen

from sevro_core.api import ConfigurationError, JsonValue, check_relative_path, limits

_UNSUPPORTED = "[]{}"


def segment_matches(pattern: str, name: str) -> bool:
    """``*`` and ``?`` wildcard matching of one segment in O(len(pattern) * len(name)).

    The greedy algorithm keeps one backtrack point, so no pattern and no name an agent chose
    can make it explode (a regex of many ``*`` backtracks polynomially on a long name).
    """
    p = n = 0
    star = -1
    resume = 0
    while n < len(name):
        if p < len(pattern) and pattern[p] in ("?", name[n]) and pattern[p] != "*":
            p += 1
            n += 1
        elif p < len(pattern) and pattern[p] == "*":
            star, resume = p, n
            p += 1
        elif star >= 0:
            p = star + 1
            resume += 1
            n = resume
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


@frozen
class Glob:
    """A workspace glob as its segments; matched segment by segment over a set of states."""

    source: str
    segments: tuple[str, ...]

    def _closure(self, states: set[int]) -> set[int]:
        last = len(self.segments) - 1
        out = set(states)
        for state in sorted(states):
            # a ``**`` may match no segment, except at the end (``src/**`` is below ``src``)
            index = state
            while index < last and self.segments[index] == "**":
                index += 1
                out.add(index)
        return out

    def _states(self, relative: str) -> set[int]:
        states = self._closure({0})
        for name in relative.split("/"):
            following: set[int] = set()
            for index in states:
                if index == len(self.segments):
                    continue
                segment = self.segments[index]
                if segment == "**":
                    following.update((index, index + 1))
                elif segment_matches(segment, name):
                    following.add(index + 1)
            states = self._closure(following)
            if not states:
                break
        return states

    def matches(self, relative: str) -> bool:
        return len(self.segments) in self._states(relative)

    def may_match_below(self, directory: str) -> bool:
        """Whether some path below ``directory`` could match."""
        return any(index < len(self.segments) for index in self._states(directory))


def compile_glob(config: dict[str, JsonValue], key: str = "glob") -> Glob:
    source = config[key]
    assert isinstance(source, str)
    segments = check_relative_path(source, f"/{key}")
    for char in _UNSUPPORTED:
        if char in source:
            raise ConfigurationError(
                f"glob {source!r} contains {char!r}: only *, ? and ** segments are supported",
                f"/{key}",
            )
    return Glob(source, segments)


@frozen
class GlobWalk:
    """The first match (with its lstat mode), or none and why the tree was not seen whole."""

    match: str | None
    mode: int
    seen: int
    unseen: str | None


def walk(root: Path, glob: Glob, accept: int | None = None) -> GlobWalk:
    """Find an entry matching ``glob`` (of file type ``accept`` when given, an ``S_IFMT`` value)."""
    bound = limits.MAX_PATH_GLOB_ENTRIES
    seen = 0
    unseen: str | None = None
    pending: deque[str] = deque([""])
    while pending:
        directory = pending.popleft()
        try:
            with os.scandir(root / directory if directory else root) as entries:
                listing = [
                    (entry.name, entry.stat(follow_symlinks=False).st_mode) for entry in entries
                ]
        except OSError as exc:
            unseen = (
                unseen or f"{directory or '.'!r} cannot be listed ({os.strerror(exc.errno or 0)})"
            )
            continue
        for name, mode in sorted(listing):
            if not directory and name == ".git" and not glob.source.startswith(".git/"):
                continue  # the fixture's repository, not the work: only a .git/ glob walks it
            seen += 1
            if seen > bound:
                return GlobWalk(None, 0, seen - 1, f"more than {bound} entries (not all seen)")
            relative = f"{directory}/{name}" if directory else name
            if glob.matches(relative) and (accept is None or stat.S_IFMT(mode) == accept):
                return GlobWalk(relative, mode, seen, None)
            if not glob.may_match_below(relative):
                continue
            if stat.S_ISDIR(mode):
                pending.append(relative)
            elif stat.S_ISLNK(mode):
                unseen = unseen or f"{relative!r} is a symlink (not followed)"
    return GlobWalk(None, 0, seen, unseen)
