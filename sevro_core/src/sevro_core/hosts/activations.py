"""Skill activation from passive tool hooks (the ``sevro.host.skill-activations`` observation).

The stream a CLI prints says which commands ran, not reliably what they returned to the model;
a passive ``PostToolUse`` hook sees each tool call's returned content. A host configures one in
the trial's private home: it writes each hook input to its own file in a sevro-owned directory
outside the workspace, prints nothing and exits 0, so it never blocks or changes a call.

A prepared skill (the ``SKILL.md`` sevro mounted, as it was when the trial started) is
*activated* when returned tool content shows the model every line of its body (blank lines
aside: tools trim them at the edges of their output): in one result
(``whole``: ``cat``, ``sed -n 1,200p``, a ``Read`` of the whole file, ``cat -n``) or in several
results that together cover every line (``composed``: ``sed -n a,bp`` pages, ``head`` then
``tail``, ``Read`` with ``offset``/``limit``).

Only a result whose call targeted that ``SKILL.md`` counts, so a copy of the body in another
file (a fixture that repeats it) never activates it: a ``Read`` whose ``file_path`` is the
prepared file, or a ``Bash`` command that reads it and nothing but prepared ``SKILL.md`` files,
every path resolved (from the record's working directory) by the rule ``sevro.file-reads`` uses
(:mod:`sevro_core.hosts.reads`). Within such a result, content is matched line by line, in runs
of consecutive body lines that occur once in the body (a lone ``---`` could be either
front-matter delimiter, so it shows neither); line-numbered output is read without its numbers.
After an activation the skill's coverage starts again, so a second full read is a second
activation.

Hook records are untrusted: each is bounded, and a missing, oversized (truncated), malformed or
linked record, more records than allowed, or fewer records than the stream's tool calls make the
observation ``unavailable`` (never "not read").
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from attrs import field, frozen, mutable

from sevro_core.formats.jsonio import JsonValue
from sevro_core.hosts.reads import WorkspaceFiles, command_reads, denumbered, workspace_path
from sevro_core.hosts.skills import MountedSkill
from sevro_core.limits import (
    MAX_ACTIVATION_MATCH_STEPS,
    MAX_HOOK_RECORD_BYTES,
    MAX_HOOK_RECORDS,
    MAX_SKILL_ACTIVATIONS,
)

HOOK_EVENTS = ("PostToolUse", "PostToolUseFailure")
_RECORD_NAME = re.compile(r"^[0-9]{1,24}-[0-9]{1,10}\.json$")
_MAX_TEXTS = 64
_MAX_DEPTH = 8


def hook_command(directory: Path) -> str:
    """The passive hook: its input (at most one byte over the record bound, so an oversized
    input is visibly truncated) into a new file named by time and process id; no output, and
    exit 0 whatever happens, so the tool call is never blocked or altered."""
    target = f"'{directory}'/$(date +%s%N)-$$.json"
    return f"head -c {MAX_HOOK_RECORD_BYTES + 1} > {target} 2>/dev/null; exit 0"


@frozen
class HookRecord:
    turn: int
    ordinal: int  # the record's place among the turn's hooked tool calls, from 1
    tool: str
    texts: tuple[str, ...]  # the returned content's strings
    target: str | None = None  # a ``Read``'s ``file_path`` or a ``Bash`` call's ``command``
    cwd: str | None = None  # the absolute working directory the hook input reports
    child: bool = False
    """The call ran in a child agent session (the hook input names an ``agent_id``): it is that
    child's, never an activation of the session under test (a host reports it apart)."""


class _Unavailable(Exception):
    pass


@mutable
class HookLog:
    """The records a trial's hook wrote, taken turn by turn after each turn ends."""

    directory: Path
    records: list[HookRecord] = field(factory=list)
    problem: str | None = None
    _seen: set[str] = field(factory=set)

    def fail(self, problem: str) -> None:
        """Mark the log unavailable (the first problem is kept)."""
        if self.problem is None:
            self.problem = problem

    def harvest(self, turn: int, expected: Mapping[str, int]) -> None:
        """Take the records written since the last harvest as turn ``turn``'s. ``expected``
        counts the turn's tool calls by tool name as the stream reported them: fewer records
        of a tool than that makes the log unavailable (a hook that did not run)."""
        if self.problem is not None:
            return
        try:
            names = sorted(set(os.listdir(self.directory)) - self._seen)
            if len(self._seen) + len(names) > MAX_HOOK_RECORDS:
                raise _Unavailable(f"more than {MAX_HOOK_RECORDS} hook records")
            new = []
            for ordinal, name in enumerate(names, start=1):
                self._seen.add(name)
                new.append(_record(self.directory, name, turn, ordinal))
            self.records += new
            for tool, count in sorted(expected.items()):
                got = sum(1 for r in new if r.tool == tool)
                if got < count:
                    raise _Unavailable(f"turn {turn}: {count} {tool} calls, {got} hook records")
        except _Unavailable as exc:
            self.problem = str(exc)
        except OSError as exc:
            self.problem = f"hook records unreadable: {exc.strerror or exc}"


def _record(directory: Path, name: str, turn: int, ordinal: int) -> HookRecord:
    if not _RECORD_NAME.match(name):
        raise _Unavailable(f"unexpected file {name[:64]!r} among the hook records")
    fd = os.open(directory / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _Unavailable(f"hook record {name} is not a regular file")
        data = b""
        while len(data) <= MAX_HOOK_RECORD_BYTES:
            chunk = os.read(fd, MAX_HOOK_RECORD_BYTES + 1 - len(data))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    if len(data) > MAX_HOOK_RECORD_BYTES:
        raise _Unavailable(f"hook record {name} truncated at {MAX_HOOK_RECORD_BYTES} bytes")
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _Unavailable(f"hook record {name} is not a JSON document") from None
    if not isinstance(document, dict) or document.get("hook_event_name") not in HOOK_EVENTS:
        raise _Unavailable(f"hook record {name} is not a tool hook's input")
    tool = document.get("tool_name")
    if not isinstance(tool, str):
        raise _Unavailable(f"hook record {name} names no tool")
    returned = document.get("tool_response", document.get("error"))
    texts = tuple(_strings(returned, 0))[:_MAX_TEXTS]
    arguments = document.get("tool_input")
    key = {"Read": "file_path", "Bash": "command"}.get(tool)
    target = arguments.get(key) if isinstance(arguments, dict) and key else None
    cwd = document.get("cwd")
    return HookRecord(
        turn,
        ordinal,
        tool[:256],
        texts,
        target if isinstance(target, str) else None,
        cwd if isinstance(cwd, str) else None,
        document.get("agent_id") is not None,
    )


def _strings(value: object, depth: int) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif depth < _MAX_DEPTH and isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item, depth + 1)
    elif depth < _MAX_DEPTH and isinstance(value, list):
        for item in value:
            yield from _strings(item, depth + 1)


# -- matching ---------------------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


@mutable
class _Matcher:
    """Which lines of one prepared body returned content showed, within the step budget."""

    body: list[str]
    index: dict[str, list[int]]
    steps: int = 0

    @classmethod
    def of(cls, body: str) -> _Matcher:
        lines = _lines(body)
        index: dict[str, list[int]] = {}
        for number, line in enumerate(lines):
            index.setdefault(line, []).append(number)
        return cls(lines, index)

    @property
    def required(self) -> set[int]:
        """The lines a read must show: every line with text (tools trim blank edges)."""
        return {number for number, line in enumerate(self.body) if line.strip()}

    def covered(self, text: str) -> set[int]:
        """Body lines shown in ``text``, as runs of consecutive body lines."""
        covered: set[int] = set()
        variants = [_lines(text)]
        plain = denumbered(text.rstrip("\n"))
        if plain is not None:
            variants.append(_lines(plain))
        for content in variants:
            for start, length in self._runs(content):
                covered.update(range(start, start + length))
        return covered

    def _runs(self, content: list[str]) -> Iterator[tuple[int, int]]:
        body = self.body
        for i, line in enumerate(content):
            for j in self.index.get(line, ()):
                if i > 0 and j > 0 and content[i - 1] == body[j - 1]:
                    continue  # inside a run already found
                length = 1
                while (
                    i + length < len(content)
                    and j + length < len(body)
                    and content[i + length] == body[j + length]
                ):
                    length += 1
                self._count(length)
                if self._unique(j, length):
                    yield j, length

    def _unique(self, start: int, length: int) -> bool:
        """Whether these lines occur only once in the body: a run that could be either of two
        places (a front matter's ``---``) shows neither."""
        lines = self.body[start : start + length]
        for other in self.index[lines[0]]:
            if other != start:
                self._count(length)
                if self.body[other : other + length] == lines:
                    return False
        return True

    def _count(self, steps: int) -> None:
        self.steps += steps
        if self.steps > MAX_ACTIVATION_MATCH_STEPS:
            raise _Unavailable(
                f"matching needed more than {MAX_ACTIVATION_MATCH_STEPS} comparisons"
            )


def targets(record: HookRecord, skills: Sequence[MountedSkill], workspace: Path) -> set[str]:
    """The names of the prepared ``skills`` whose ``SKILL.md`` the record's call read: only
    their content in its result can count, never a copy of it in another file's."""
    by_path = {s.path: s.name for s in skills}
    if record.target is None:
        return set()
    if record.tool == "Read":
        path = workspace_path(workspace, record.target)
        return {by_path[path]} if path in by_path else set()
    if record.tool != "Bash":
        return set()
    if record.cwd is None:
        cwd = None  # unknown: only absolute paths can name a prepared file
    elif (cwd := workspace_path(workspace, record.cwd)) is None:
        return set()  # relative paths from outside the workspace name no prepared file
    files = WorkspaceFiles(workspace, {s.path: s.body for s in skills})
    found = command_reads(record.target, "", None, files, cwd)
    paths = {read.path for read in found.reads}
    if found.unresolved or not paths or not paths <= set(by_path):
        return set()  # another file (or one sevro cannot name) may have shown the lines
    return {by_path[path] for path in paths}


def activations(
    skills: Sequence[MountedSkill], records: Sequence[HookRecord], workspace: Path
) -> list[dict[str, JsonValue]]:
    """Every activation of the prepared ``skills`` in ``records``, in record order."""
    matchers = {s.name: _Matcher.of(s.body) for s in skills if s.body and s.body.strip()}
    required = {name: matcher.required for name, matcher in matchers.items()}
    seen: dict[str, set[int]] = {name: set() for name in matchers}
    sources: dict[str, int] = {name: 0 for name in matchers}
    found: list[dict[str, JsonValue]] = []
    for record in records:
        if record.child:
            continue
        read = targets(record, skills, workspace)
        for name, matcher in matchers.items():
            if name not in read:
                continue
            shown: set[int] = set()
            for text in record.texts:
                shown |= matcher.covered(text) & required[name]
            if not shown:
                continue
            seen[name] |= shown
            sources[name] += 1
            if seen[name] == required[name]:
                whole = shown == required[name]
                kind = "whole" if whole else "composed"
                entry: dict[str, JsonValue] = {"skill": name, "turn": record.turn}
                found.append({**entry, "ordinal": record.ordinal, "tool": record.tool})
                found[-1]["kind"] = kind
                found[-1]["reads"] = 1 if whole else sources[name]
                seen[name], sources[name] = set(), 0
    return found


def activations_observation(
    skills: Sequence[MountedSkill], log: HookLog | None, workspace: Path
) -> tuple[str, dict[str, JsonValue]]:
    """(completeness, data) of ``sevro.host.skill-activations`` for the prepared ``skills``
    mounted in ``workspace`` (where the records' paths are resolved)."""
    prepared: list[JsonValue] = [s.to_json() for s in skills]
    if log is None:
        return "unavailable", {"reason": "no hook collection for this trial", "skills": prepared}
    problem = log.problem
    if problem is None and any(s.body is None for s in skills):
        problem = "a prepared skill's body could not be read as text"
    found: list[dict[str, JsonValue]] = []
    if problem is None:
        try:
            found = activations(skills, log.records, workspace)
        except _Unavailable as exc:
            problem = str(exc)
    if problem is not None:
        return "unavailable", {"reason": problem, "skills": prepared}
    names: list[JsonValue] = []
    for entry in found:
        if entry["skill"] not in names:
            names.append(entry["skill"])
    kept: list[JsonValue] = list(found[:MAX_SKILL_ACTIVATIONS])
    return "complete", {
        "collector": "hooks",
        "skills": prepared,
        "records": len(log.records),
        "activations": kept,
        "activated": names,
        "truncated": len(found) > MAX_SKILL_ACTIVATIONS,
    }
