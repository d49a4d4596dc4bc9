"""The advisory review step: a judge reads a blind view of one trial's change and comments.

The reviewer (a ``Reviewer`` plugin) writes the prompt and parses the reply; this step builds
what it reads from what the trial left: the Git fixture's diff with every withheld path's section
removed (``.git``, the places where agent CLIs find skills and instructions, and the operator's
``--advisory-exclude`` paths), the line counts of the workspace's text files (the only files a
finding may cite), the rendered prompts, the final message, the case's review questions and its
expected output. The review is kept in evidence and shown in reports; it never changes a state,
a verdict or an exit code, so every failure here is a ``failed`` review, never an exception.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from attrs import frozen

from sevro_core.fixtures.workspace import read_confined
from sevro_core.formats.jsonio import JsonValue
from sevro_core.judges.session import JudgeSession
from sevro_core.limits import (
    MAX_ADVISORY_CITABLE_FILES,
    MAX_ADVISORY_DIFF_BYTES,
    MAX_ADVISORY_FILE_BYTES,
    MAX_ADVISORY_SCAN_ENTRIES,
    MAX_DIAGNOSTIC_CHARS,
)
from sevro_core.plugin.protocols import (
    JudgedResult,
    Reviewer,
    ReviewSubject,
    SkillPlaces,
    skill_places_of,
)
from sevro_core.vocabulary import ADVISORY_ROLE

COMPLETED, FAILED, NOT_RUN = "completed", "failed", "not_run"
PURPOSE = "sevro.advisory:review"
ALWAYS_WITHHELD = (".git",)


@frozen
class AdvisoryInputs:
    """What one trial left for its review. ``diff`` is None when the fixture gave none."""

    git: bool
    """Whether the fixture is a Git repository; otherwise ``diff`` is sevro's own text diff
    of the fixture's files (:mod:`sevro_core.judges.textdiff`)."""
    case_id: str
    prompts: tuple[str, ...]
    final_message: str | None
    diff: bytes | None
    diff_truncated: bool
    workspace: Path
    withheld: tuple[str, ...]
    questions: tuple[str, ...] = ()
    expected_output: str | None = None


@frozen
class AdvisoryReview:
    """The trial evidence's ``advisoryReview``: advice only, never part of a verdict."""

    status: str
    reviewer: tuple[str, str] | None
    reason: str | None = None
    review: Mapping[str, JsonValue] | None = None
    judge_call: int | None = None

    def to_json(self) -> dict[str, JsonValue]:
        review = self.review or {}
        out: dict[str, JsonValue] = {
            "status": self.status,
            "reviewer": (
                None
                if self.reviewer is None
                else {"id": self.reviewer[0], "version": self.reviewer[1]}
            ),
            "findings": review.get("findings", []),
            "droppedFindings": review.get("droppedFindings", 0),
            "answers": review.get("answers", []),
            "summary": review.get("summary"),
            "judgeCall": self.judge_call,
        }
        if self.reason is not None:
            out["reason"] = self.reason
        return out


def not_run(reason: str, reviewer: Reviewer | None = None) -> AdvisoryReview:
    identity = None if reviewer is None else (reviewer.id, str(reviewer.version))
    return AdvisoryReview(NOT_RUN, identity, reason=reason)


def withheld_paths(
    hosts: Iterable[object], arm_places: SkillPlaces | None, excluded: Sequence[str]
) -> tuple[str, ...]:
    """Every path the blind view withholds: ``.git``; each installed host's (and the arm's)
    agent directory (the hidden top directory of its skills directory, such as ``.agents``, or
    the skills directory itself), instructions file and overrides; the operator's exclusions."""
    places = [p for p in (skill_places_of(h) for h in hosts) if p is not None]
    if arm_places is not None:
        places.append(arm_places)
    out = set(ALWAYS_WITHHELD) | {p.strip("/") for p in excluded if p.strip("/")}
    for place in places:
        top = place.skills_dir.split("/")[0]
        out.add(top if top.startswith(".") else place.skills_dir)
        out.update((place.instructions_file, *place.overrides))
    return tuple(sorted(out))


def is_withheld(path: str, withheld: Sequence[str]) -> bool:
    """``path`` is a withheld path or lies below one (compared case-insensitively: fail closed
    on file systems that fold case)."""
    folded = path.casefold()
    return any(folded == w.casefold() or folded.startswith(w.casefold() + "/") for w in withheld)


def review_trial(
    reviewer: Reviewer, session: JudgeSession, inputs: AdvisoryInputs
) -> AdvisoryReview:
    """Ask the advisory judge about one trial; any problem is a ``failed`` review."""
    identity = (reviewer.id, str(reviewer.version))
    if inputs.diff is None:
        what = "Git diff" if inputs.git else "change (its files could not be compared)"
        return AdvisoryReview(FAILED, identity, reason=f"the fixture's {what} is unavailable")
    try:
        subject = review_subject(inputs)
        prompt = reviewer.prompt(subject)
        reply = session.ask(ADVISORY_ROLE, prompt, purpose=PURPOSE)
        call = next(
            (c.number for c in session.calls if c.role == ADVISORY_ROLE and c.prompt == prompt),
            None,
        )
        if not reply.usable or reply.text is None:
            reason = reply.error or "the advisory judge gave no usable reply"
            return AdvisoryReview(FAILED, identity, reason=_bounded(reason), judge_call=call)
        review = _checked(reviewer.review(subject, reply.text))
    except Exception as exc:  # a reviewer's or judge's failure is a failed review, never more
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        return AdvisoryReview(FAILED, identity, reason=_bounded(str(message)))
    return AdvisoryReview(COMPLETED, identity, review=review, judge_call=call)


_SEVERITIES = ("critical", "major", "minor", "info")
_FINDING_KEYS = {"severity", "file", "lines", "title", "detail"}


def _checked(review: Mapping[str, JsonValue]) -> Mapping[str, JsonValue]:
    """A reviewer plugin's review in the evidence's shape, or ``ValueError`` (a failed review:
    a plugin's mistake must never make the trial's evidence unwritable)."""
    findings, answers = review.get("findings"), review.get("answers")
    dropped, summary = review.get("droppedFindings"), review.get("summary")
    if not isinstance(findings, list) or not isinstance(answers, list):
        raise ValueError("the reviewer returned no findings or answers list")
    for f in findings:
        if not (
            isinstance(f, dict)
            and set(f) == _FINDING_KEYS
            and f["severity"] in _SEVERITIES
            and all(isinstance(f[k], str) for k in ("file", "title", "detail"))
            and isinstance(f["lines"], list)
            and len(f["lines"]) == 2
            and all(type(n) is int and n >= 1 for n in f["lines"])
        ):
            raise ValueError("the reviewer returned a finding outside the evidence's shape")
    for a in answers:
        if not (isinstance(a, dict) and set(a) == {"question", "answer"}):
            raise ValueError("the reviewer returned an answer outside the evidence's shape")
        if not all(isinstance(v, str) for v in a.values()):
            raise ValueError("the reviewer returned an answer outside the evidence's shape")
    if type(dropped) is not int or dropped < 0 or not isinstance(summary, str | None):
        raise ValueError("the reviewer returned no dropped-findings count or summary")
    if len(findings) > 64:
        raise ValueError("the reviewer returned more than 64 findings")
    return review


def review_subject(inputs: AdvisoryInputs) -> ReviewSubject:
    """The blind view: the diff without withheld sections, and the files a finding may cite."""
    assert inputs.diff is not None
    diff, truncated = blind_diff(inputs.diff, inputs.withheld)
    return ReviewSubject(
        case_id=inputs.case_id,
        task=inputs.prompts,
        result=JudgedResult(
            final_message=inputs.final_message,
            diff=diff,
            diff_truncated=truncated or inputs.diff_truncated,
        ),
        line_counts=line_counts(inputs.workspace, inputs.withheld),
        questions=inputs.questions,
        expected_output=inputs.expected_output,
    )


_HEADER = re.compile(rb"^diff --git (.*)$")


def blind_diff(diff: bytes, withheld: Sequence[str]) -> tuple[str, bool]:
    """The diff with every section of a withheld path removed, bounded at a section's end.

    A section whose header cannot be read is removed too (fail closed). Returns the text and
    whether it was cut short."""
    kept: list[bytes] = []
    size, truncated = 0, False
    for section in _sections(diff):
        path = _section_path(section)
        if path is None or is_withheld(path, withheld):
            continue
        body = _without_binary(section)
        if size + len(body) > MAX_ADVISORY_DIFF_BYTES:
            truncated = True
            break
        kept.append(body)
        size += len(body)
    return b"".join(kept).decode("utf-8", "replace"), truncated


def _sections(diff: bytes) -> list[bytes]:
    """Split at each ``diff --git`` line; anything before the first one is dropped."""
    lines = diff.splitlines(keepends=True)
    sections: list[list[bytes]] = []
    for line in lines:
        if line.startswith(b"diff --git "):
            sections.append([line])
        elif sections:
            sections[-1].append(line)
    return [b"".join(s) for s in sections]


def _section_path(section: bytes) -> str | None:
    """The path of ``diff --git a/P b/P`` (renames are off, so both sides name one path)."""
    first = section.split(b"\n", 1)[0].rstrip(b"\r")
    match = _HEADER.match(first)
    if match is None:
        return None
    rest = match.group(1)
    sides: list[bytes | None]
    if rest.startswith(b'"'):
        sides = [_unquote(p) for p in re.findall(rb'"((?:[^"\\]|\\.)*)"', rest)]
    else:
        half = (len(rest) - 1) // 2
        sides = [rest[:half], rest[half + 1 :]]
    if len(sides) != 2:
        return None
    a, b = sides
    if a is None or b is None or not (a.startswith(b"a/") and b.startswith(b"b/")):
        return None
    if a[2:] != b[2:]:
        return None
    return a[2:].decode("utf-8", "surrogateescape")


_ESCAPES = {b"n": b"\n", b"t": b"\t", b'"': b'"', b"\\": b"\\", b"a": b"\a", b"b": b"\b"}
_ESCAPES.update({b"f": b"\f", b"r": b"\r", b"v": b"\v"})


def _unquote(quoted: bytes) -> bytes | None:
    """Git's C-style quoting: backslash escapes and three-digit octal bytes."""
    out = bytearray()
    i = 0
    while i < len(quoted):
        ch = quoted[i : i + 1]
        if ch != b"\\":
            out += ch
            i += 1
            continue
        nxt = quoted[i + 1 : i + 2]
        if nxt in _ESCAPES:
            out += _ESCAPES[nxt]
            i += 2
        elif re.fullmatch(rb"[0-7]{3}", quoted[i + 1 : i + 4]):
            out.append(int(quoted[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            return None
    return bytes(out)


def _without_binary(section: bytes) -> bytes:
    """A binary patch's encoded data says nothing to a reviewer: keep its header only."""
    marker = section.find(b"\nGIT binary patch\n")
    if marker < 0:
        return section
    return section[: marker + 1] + b"Binary files differ\n"


def line_counts(workspace: Path, withheld: Sequence[str]) -> dict[str, int]:
    """Lines of each UTF-8 text file in the workspace that is not withheld: the paths and
    lines a finding may cite. Bounded; never follows a symlink; unreadable files are skipped."""
    counts: dict[str, int] = {}
    visited = 0
    pending = [""]
    while pending and len(counts) < MAX_ADVISORY_CITABLE_FILES:
        prefix = pending.pop()
        try:
            entries = sorted(os.scandir(workspace / prefix), key=lambda e: e.name)
        except OSError:
            continue
        below = []
        for entry in entries:
            relative = f"{prefix}{entry.name}"
            visited += 1
            if visited > MAX_ADVISORY_SCAN_ENTRIES or len(counts) >= MAX_ADVISORY_CITABLE_FILES:
                return counts
            if is_withheld(relative, withheld):
                continue
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                below.append(f"{relative}/")
            elif stat.S_ISREG(mode):
                count = _count_lines(workspace, relative)
                if count is not None:
                    counts[relative] = count
        pending.extend(reversed(below))
    return counts


def _count_lines(workspace: Path, relative: str) -> int | None:
    try:
        data, size = read_confined(workspace, relative, MAX_ADVISORY_FILE_BYTES + 1)
    except OSError:
        return None
    if size > MAX_ADVISORY_FILE_BYTES or b"\0" in data:
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _bounded(text: str) -> str:
    return " ".join(text.split())[:MAX_DIAGNOSTIC_CHARS]
