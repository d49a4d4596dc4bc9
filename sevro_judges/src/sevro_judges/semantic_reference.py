"""The evaluator's reference file a ``sevro.semantic`` check puts before the judge.

Judges run without tools, so an evaluator directory mounted for them would be useless: what a
judge needs from it (a gold answer, a rubric) goes into its prompt instead. ``reference`` names
``<evaluator name>/<path inside it>``; the name must be one the case declares (refused before
the run), the path is relative without ``..``. At grading the file is read without following any
link, bounded and as UTF-8; anything that keeps sevro from showing it whole (missing, a link,
too large, not UTF-8, or the evaluator directories changed since the case was loaded) is a
grading error: a check is never judged without the reference it declares.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re

from attrs import frozen

from sevro_core.api import (
    ConfigurationError,
    GradingError,
    TrialView,
    WorkspaceEscapeError,
    check_relative_path,
    read_confined,
)
from sevro_judges.limits import MAX_SEMANTIC_REFERENCE_BYTES

POINTER = "/reference"
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


@frozen
class Reference:
    """A checked ``reference``: the evaluator directory's name and the path inside it."""

    name: str
    path: str

    @property
    def source(self) -> str:
        return f"{self.name}/{self.path}"


@frozen
class ReferenceText:
    """The reference as the judge is shown it, with what the observation records."""

    source: str
    text: str
    sha256: str
    byte_length: int


def compile_reference(value: str) -> Reference:
    """Refuse, before the run, a reference that is not ``<name>/<relative path>``."""
    name, _, relative = value.partition("/")
    if not _NAME.fullmatch(name) or not relative:
        raise ConfigurationError(
            f"reference {value[:80]!r} is not '<evaluator name>/<path inside it>'", POINTER
        )
    problem = None
    if not relative.isprintable():
        problem = "holds a control character"
    elif "\\" in relative:
        problem = "holds a backslash"
    elif relative.startswith("/"):
        problem = "is absolute inside the evaluator directory"
    elif any(part in ("", ".", "..") for part in relative.split("/")):
        problem = "has an empty, '.' or '..' part"
    if problem is not None:
        raise ConfigurationError(f"reference {value[:80]!r} {problem}", POINTER)
    check_relative_path(relative, POINTER)  # and the fixture paths' length and depth bounds
    return Reference(name, relative)


def read_reference(view: TrialView, reference: Reference) -> ReferenceText:
    """The reference's text; ``GradingError`` when it cannot be shown whole and unchanged."""
    where = f"reference {reference.source!r}"
    directory = view.evaluator.get(reference.name)
    if directory is None:
        declared = ", ".join(sorted(view.evaluator)) or "none"
        raise GradingError(
            f"{where}: the case declares no evaluator directory {reference.name!r} "
            f"(declared: {declared})"
        )
    if view.evaluator_problem is not None:
        raise GradingError(f"{where} is not read: {view.evaluator_problem}")
    limit = MAX_SEMANTIC_REFERENCE_BYTES
    try:
        data, size = read_confined(directory, reference.path, limit + 1)
    except FileNotFoundError:
        raise GradingError(f"{where} does not exist") from None
    except WorkspaceEscapeError as exc:
        detail = "is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
        raise GradingError(f"{where} {detail} (no link is followed)") from None
    except IsADirectoryError:
        raise GradingError(f"{where} is not a regular file") from None
    except OSError as exc:
        reason = os.strerror(exc.errno or errno.EIO)
        raise GradingError(f"{where} cannot be read ({reason})") from None
    if size > limit or len(data) > limit:
        raise GradingError(f"{where} is larger than {limit} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GradingError(f"{where} is not UTF-8 text (at byte {exc.start})") from None
    return ReferenceText(reference.source, text, hashlib.sha256(data).hexdigest(), len(data))
