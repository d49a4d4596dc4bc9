"""One trial as the viewer shows it: read from its digest-checked file, untrusted text bounded
and made visible (controls as escapes), ready for an autoescaping template."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sevro_core.errors import InvocationError
from sevro_core.formats.jsonio import read_bounded
from sevro_core.limits import (
    MAX_FINAL_MESSAGE_BYTES,
    MAX_VIEWER_DIFF_BYTES,
    MAX_VIEWER_TEXT_CHARS,
)
from sevro_core.reporting.failures import escape_controls, trial_reason
from sevro_core.vocabulary import (
    ADVISORY_ROLE,
    COMMANDS_OBSERVATION,
    DIFF_ARTIFACT,
    FILES_CHANGED_OBSERVATION,
    FILES_DIFF_ARTIFACT,
    NATIVE_TRANSCRIPTS_OBSERVATION,
    SKILLS_OBSERVATION,
    TOOL_CALLS_OBSERVATION,
    TURNS_OBSERVATION,
    WORKSPACE_OBSERVATION,
)

_DIFF_IDS = (DIFF_ARTIFACT, FILES_DIFF_ARTIFACT)
_USAGE = ("inputTokens", "outputTokens", "costUsd", "complete")
_DURATIONS = ("fixtureMs", "candidateMs", "gradingMs", "totalMs")


def visible(text: object, limit: int = MAX_VIEWER_TEXT_CHARS) -> str:
    """Untrusted text for a ``<pre>``: lines kept, every other control character an escape,
    cut at ``limit`` characters with a marker saying how much was left out."""
    if not isinstance(text, str):
        return "" if text is None else str(text)
    cut = len(text) - limit
    shown = "\n".join(escape_controls(line) for line in text[:limit].split("\n"))
    return shown + (f"\n… ({cut} more characters not shown)" if cut > 0 else "")


@functools.cache
def confined_dir(run_dir: Path, head: str) -> Path | None:
    """A directory of the run resolved once (a 10 000-trial run has a few hundred), or None
    when it leaves the run; cleared before each page is built so a change is seen."""
    resolved = (run_dir / head).resolve() if head else run_dir
    return resolved if resolved == run_dir or run_dir in resolved.parents else None


def inside(run_dir: Path, relative: str) -> Path:
    """A file of the run directory; a path that leaves it is refused. The directory part is
    resolved (cached); the file itself is opened without following a symlink (read_bounded)."""
    head, _, name = relative.rpartition("/")
    parent = None
    if "\0" not in relative and not relative.startswith("/") and name not in ("", ".", ".."):
        parent = confined_dir(run_dir, head)
    if parent is None:
        raise InvocationError(f"evidence path {relative!r} leaves the run directory")
    return parent / name


def read_blob(
    run_dir: Path, ref: Mapping[str, Any], limit: int, verified: Mapping[str, bytes] | None = None
) -> tuple[str, bool]:
    """A retained blob's text (UTF-8, undecodable bytes replaced) and whether it was cut; a blob
    in ``verified`` (read and checked against its digest where the trial was verified) is not
    read again."""
    known = (verified or {}).get(ref["path"])
    if known is not None:
        return known[:limit].decode("utf-8", errors="replace"), len(known) > limit
    path = inside(run_dir, ref["path"])
    size = int(ref.get("byteLength") or 0)
    data = read_bounded(str(path), max(size, 0) + 1, what="retained evidence")[:limit]
    if size <= limit and hashlib.sha256(data).hexdigest() != ref.get("sha256"):
        raise InvocationError("retained evidence does not match its digest", source=str(path))
    return data.decode("utf-8", errors="replace"), size > limit


def _observation(evidence: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    for found in evidence.get("observations") or []:
        if isinstance(found, dict) and found.get("id") == name:
            data = found.get("data")
            return data if isinstance(data, dict) else {}
    return {}


def _actions(evidence: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Commands and tool calls in the order the agent made them (turn, then ordinal)."""
    actions: list[dict[str, Any]] = []
    for command in _observation(evidence, COMMANDS_OBSERVATION).get("commands") or []:
        actions.append(
            {
                "turn": command.get("turn"),
                "ordinal": command.get("ordinal"),
                "kind": "command",
                "text": visible(command.get("command")),
                "status": f"exit {command.get('exitCode')}",
            }
        )
    for call in _observation(evidence, TOOL_CALLS_OBSERVATION).get("calls") or []:
        name = call.get("tool") or call.get("skill") or ""
        actions.append(
            {
                "turn": call.get("turn"),
                "ordinal": call.get("ordinal"),
                "kind": visible(f"{call.get('kind')} {name}".strip(), 200),
                "text": visible(call.get("text")),
                "status": visible(call.get("status") or "", 80),
            }
        )
    actions.sort(key=lambda a: (a["turn"] or 0, a["ordinal"] or 0))
    return actions


def _diff(
    run_dir: Path, evidence: Mapping[str, Any], verified: Mapping[str, bytes]
) -> dict[str, Any] | None:
    """The trial's diff artifact as classified lines (added, removed, hunk, file, context)."""
    for ref in evidence.get("artifactRefs") or []:
        if ref.get("id") in _DIFF_IDS:
            text, cut = read_blob(run_dir, ref, MAX_VIEWER_DIFF_BYTES, verified)
            return {"id": ref["id"], "lines": diff_lines(text), "cut": cut}
    return None


def diff_lines(text: str) -> list[tuple[str, str]]:
    """Each line of a unified diff with the class that styles it."""
    lines = []
    for line in text.split("\n"):
        if line.startswith(("+++", "---", "diff ", "index ")):
            kind = "file"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        elif line.startswith("@@"):
            kind = "hunk"
        else:
            kind = "ctx"
        lines.append((kind, visible(line, MAX_VIEWER_TEXT_CHARS)))
    return lines


def _changes(evidence: Mapping[str, Any]) -> list[dict[str, str]]:
    listed = _observation(evidence, FILES_CHANGED_OBSERVATION).get("changes")
    if not listed:
        listed = _observation(evidence, WORKSPACE_OBSERVATION).get("changedPaths") or []
    return [
        {"path": visible(c.get("path"), 1024), "change": visible(c.get("change"), 40)}
        for c in listed
        if isinstance(c, dict)
    ]


def _messages(
    run_dir: Path, evidence: Mapping[str, Any], verified: Mapping[str, bytes]
) -> list[dict[str, Any]]:
    """The reply of each settled turn, or the final message when the case had one turn."""
    turns = _observation(evidence, TURNS_OBSERVATION).get("turns")
    if turns:
        return [
            {"turn": t.get("turn"), "text": visible(t.get("reply")), "cut": t.get("replyTruncated")}
            for t in turns
        ]
    raw = evidence.get("rawResult")
    if raw is None:
        return []
    text, cut = read_blob(run_dir, raw, MAX_FINAL_MESSAGE_BYTES, verified)
    return [{"turn": evidence.get("turnsCompleted") or 1, "text": visible(text), "cut": cut}]


def _checks(evidence: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "id": visible(c.get("id"), 400),
            "grader": visible(c.get("grader"), 200),
            "status": c.get("status"),
            "detail": visible(c.get("detail")),
            "partOf": visible(c.get("partOf"), 400) if c.get("partOf") else None,
        }
        for c in evidence.get("checks") or []
    ]


def _judge_reply(run_dir: Path, evidence: Mapping[str, Any], call: Mapping[str, Any]) -> Any:
    """The judge's reply as it was kept (its verdict and reasons), or None."""
    replies = [a for a in call.get("artifacts") or [] if str(a).endswith(".reply")]
    for ref in evidence.get("artifactRefs") or []:
        if ref.get("id") in replies:
            text, cut = read_blob(run_dir, ref, MAX_VIEWER_TEXT_CHARS)
            return visible(text) + ("\n… (cut)" if cut else "")
    return None


def _judges(run_dir: Path, evidence: Mapping[str, Any]) -> list[dict[str, Any]]:
    calls = (evidence.get("judges") or {}).get("calls") or []
    return [
        {
            "number": c.get("number"),
            "role": c.get("role"),
            "purpose": visible(c.get("purpose"), 400),
            "complete": c.get("complete"),
            "error": visible(c.get("error")) if c.get("error") else None,
            "durationMs": c.get("durationMs"),
            "reply": _judge_reply(run_dir, evidence, c),
        }
        for c in calls
    ]


def _advisory(evidence: Mapping[str, Any]) -> dict[str, Any] | None:
    review = evidence.get("advisoryReview")
    if not isinstance(review, dict):
        return None
    return {
        "status": review.get("status"),
        "summary": visible(review.get("summary")),
        "reason": visible(review.get("reason")),
        "findings": [
            {k: visible(f.get(k), 2000) for k in ("severity", "file", "title", "detail")}
            for f in review.get("findings") or []
        ],
    }


def _native_transcripts(evidence: Mapping[str, Any]) -> str | None:
    """One line on the retained native transcript bundle (None when the trial asked for none):
    its status, size and digest, or why it was not retained."""
    data = _observation(evidence, NATIVE_TRANSCRIPTS_OBSERVATION)
    if not data:
        return None
    status = data.get("status")
    if data.get("artifact") is None:
        return visible(f"{status}: {data.get('reason')}", 600)
    line = (
        f"{status}: {data.get('entries')} files, {data.get('rawBytes')} bytes "
        f"(bundle {data.get('encodedBytes')} bytes, sha256 {data.get('sha256')})"
    )
    return visible(line, 600)


def trial_view(
    run_dir: Path,
    ref: Mapping[str, Any],
    document: Mapping[str, Any],
    verified: Mapping[str, bytes] | None = None,
) -> dict[str, Any]:
    """Everything the page shows of one trial (its anchor is the key it is stored under);
    ``verified`` as for ``read_blob``."""
    verified = verified or {}
    evidence = document["evidence"]
    skills = _observation(evidence, SKILLS_OBSERVATION)
    artifacts = [a["path"] for a in evidence.get("artifactRefs") or []]
    raw = evidence.get("rawResult")
    return {
        "caseId": visible(document.get("caseId"), 400),
        "arm": visible(document.get("arm") or "", 200),
        "trial": document.get("trial"),
        "execution": (evidence.get("execution") or {}).get("status"),
        "grading": (evidence.get("grading") or {}).get("status"),
        "task": (evidence.get("task") or {}).get("verdict"),
        "reason": visible(trial_reason(evidence) or ""),
        "checks": _checks(evidence),
        "messages": _messages(run_dir, evidence, verified),
        "actions": _actions(evidence),
        "changes": _changes(evidence),
        "diff": _diff(run_dir, evidence, verified),
        "skillsRead": [visible(s, 200) for s in skills.get("read") or []],
        "skillsOffered": [visible(s.get("name"), 200) for s in skills.get("offered") or []],
        "skillReads": [
            visible(
                f"{r.get('skill')} (turn {r.get('turn')} #{r.get('ordinal')}: {r.get('status')})",
                400,
            )
            for r in skills.get("reads") or []
            if isinstance(r, dict)
        ],
        "skillsKnown": bool(skills),
        "usage": {key: (evidence.get("usage") or {}).get(key) for key in _USAGE},
        "durations": {key: (evidence.get("durations") or {}).get(key) for key in _DURATIONS},
        "judges": _judges(run_dir, evidence),
        ADVISORY_ROLE: _advisory(evidence),  # the trial's advisory review, by its role
        "nativeTranscripts": _native_transcripts(evidence),
        "paths": [visible(p, 1024) for p in [ref["path"], raw and raw["path"], *artifacts] if p],
        "startedAt": visible(evidence.get("startedAt"), 80),
    }
