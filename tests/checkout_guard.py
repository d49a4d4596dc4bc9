"""Fails the test session when it wrote into the checkout (tests must use tmp_path).

At session start it records ``git status --porcelain --ignored`` of the rootdir plus a bounded
fingerprint (paths, sizes, mtimes) of every listed entry that is not a tool cache, so a test that
writes into an existing, ignored ``sevro-results/`` or an already modified file is caught too;
at the end it compares. Comparing the
session's own before and after means a subset run is checked as well as the whole suite (and
that a file edited by hand while the tests run is reported too).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

TOOL_CACHES = frozenset(
    {".venv", ".agent-clis", ".mypy_cache", ".ruff_cache", ".pytest_cache", "__pycache__"}
)
"""Ignored entries tools rewrite on their own (bytecode, lint and type caches, installs)."""
MAX_FINGERPRINT_ENTRIES = 100_000

_KEY = pytest.StashKey[tuple[Path, dict[str, object]]]()


def checkout_state(root: Path) -> dict[str, object] | None:
    """Status lines and fingerprints of ignored non-cache entries; None outside a Git work tree."""
    done = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain=v1", "-z", "--ignored"],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        return None
    state: dict[str, object] = {}
    for entry in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if not entry:
            continue
        code, path = entry[:2], entry[3:]
        parts = set(Path(path).parts)
        if code in ("!!", "??") and parts & TOOL_CACHES:
            continue
        state[f"{code} {path}"] = _fingerprint(root / path)
    return state


def _fingerprint(path: Path) -> list[tuple[str, int, int]]:
    found: list[tuple[str, int, int]] = []
    if path.is_symlink():
        info = path.lstat()
        return [(os.readlink(path), info.st_size, info.st_mtime_ns)]
    for current, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if d not in TOOL_CACHES]
        for name in [*dirs, *files]:
            full = Path(current, name)
            try:
                info = full.lstat()
            except OSError:
                continue
            found.append((str(full.relative_to(path)), info.st_size, info.st_mtime_ns))
            if len(found) >= MAX_FINGERPRINT_ENTRIES:
                return found
    if not found and path.exists() and not path.is_dir():
        info = path.lstat()
        found.append(("", info.st_size, info.st_mtime_ns))
    return found


def describe_changes(before: dict[str, object], after: dict[str, object]) -> list[str]:
    """One line per status entry that appeared, disappeared or changed."""
    lines = []
    for key in sorted(set(before) | set(after)):
        if key not in before:
            lines.append(f"new: {key}")
        elif key not in after:
            lines.append(f"gone: {key}")
        elif before[key] != after[key]:
            lines.append(f"changed: {key}")
    return lines


def pytest_sessionstart(session: pytest.Session) -> None:
    root = session.config.rootpath
    state = checkout_state(root)
    if state is not None:
        session.stash[_KEY] = (root, state)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _KEY not in session.stash:
        return
    root, before = session.stash[_KEY]
    after = checkout_state(root)
    changes = describe_changes(before, after or {})
    if not changes:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = "the tests wrote into the checkout (use tmp_path):\n  " + "\n  ".join(changes[:50])
    if reporter is not None:
        reporter.write_line(message, red=True)
    else:
        print(message)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
