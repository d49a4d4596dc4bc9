"""Command-line values no command could mean: refused before any command parses them.

Click turns ``--results-root ""`` into ``Path("")``, which is the current directory, and passes
``--model $'a\\nb'`` through to a host: both are accepted silently and fail later, or never.
Every command line is checked here first, so such values exit 64 with one line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from sevro_core.errors import InvocationError

TEXT_FLAGS = ("--model", "--effort")
"""Free-text values that go into a host's command line and the evaluation identity."""
MAX_TEXT_FLAG_CHARS = 200


def check_arguments(argv: Sequence[str]) -> None:
    """Raise :class:`InvocationError` for an empty argument or a bad text-flag value."""
    for index in range(len(argv)):
        flag, value = _flag_and_value(argv, index)
        if value is None:
            continue
        if not value.strip():
            what = flag if flag is not None else "an argument"
            raise InvocationError(f"{what} must not be empty")
        if flag in TEXT_FLAGS:
            _check_text(flag, value)


def _flag_and_value(argv: Sequence[str], index: int) -> tuple[str | None, str | None]:
    """``(flag, value)`` if ``argv[index]`` holds a value: ``--flag=value`` or the token after
    ``--flag``; ``(None, token)`` for any other token that is not an option itself."""
    token = argv[index]
    if token.startswith("--") and "=" in token:
        flag, value = token.split("=", 1)
        return flag, value
    if token.startswith("-") and token.strip("-"):
        return None, None  # an option name; its value is the next token
    previous = argv[index - 1] if index > 0 else ""
    if previous.startswith("--") and "=" not in previous and previous != "--":
        return previous, token
    return None, token


def _check_text(flag: str, value: str) -> None:
    if len(value) > MAX_TEXT_FLAG_CHARS:
        raise InvocationError(f"{flag} is longer than {MAX_TEXT_FLAG_CHARS} characters")
    if value != value.strip() or not value.isprintable():
        shown = repr(value[:60])
        raise InvocationError(
            f"{flag} must be one line of printable text without surrounding spaces, not {shown}"
        )


def check_writable_directory(path: Path, flag: str) -> None:
    """``path`` is a directory this process can create entries in (``access`` also reports a
    read-only file system, even to root); otherwise the first trial would fail with exit 70."""
    if not path.is_dir():
        raise InvocationError(f"{flag} is not a directory", source=path)
    if not os.access(path, os.W_OK | os.X_OK):
        raise InvocationError(f"{flag} is not writable", source=path)


def check_results_root(path: Path, flag: str = "--results-root") -> None:
    """The results root, or the nearest directory that exists above it, must be writable."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing == path and not path.is_dir():
        raise InvocationError(f"{flag} exists and is not a directory", source=path)
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "" if existing == path else f" ({existing} is not writable)"
        raise InvocationError(f"{flag} cannot be created or written{where}", source=path)
