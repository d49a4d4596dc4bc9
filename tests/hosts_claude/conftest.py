"""Fixtures of the Claude Code host's tests."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def short_root() -> Iterator[Path]:
    """A short directory of its own for ``--workspace-root``: Claude Code's sandbox makes its
    bridge sockets in the trial's temp directory, below the workspace root, and a socket's path
    holds at most 107 bytes: under pytest's ``tmp_path`` the sandbox fails to start and every
    Bash command returns that error instead of running."""
    root = Path(tempfile.mkdtemp(prefix="sv-", dir="/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)
