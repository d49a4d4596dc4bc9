"""Real extension processes for the protocol tests: Node.js and sh, found like every tool."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from sevro_core.api import DEFAULT_PATH, CancelToken
from sevro_core.testing import require_tool
from sevro_extensions.client import Answer, call_method
from sevro_extensions.sources import source_closure
from sevro_extensions.transport import CallOptions

HERE = Path(__file__).resolve().parent
REFERENCE = HERE / "reference.js"
MISBEHAVING = HERE / "misbehaving.js"
SLOW = HERE / "slow.sh"


@pytest.fixture
def node() -> str:
    """The real node binary (argv[0] must be a regular file, so symlinks are resolved)."""
    return os.path.realpath(require_tool("node"))


def options(
    cwd: Path, *, timeout_ms: int = 20000, cancel: CancelToken | None = None
) -> CallOptions:
    return CallOptions(
        cwd=cwd,
        env={"PATH": DEFAULT_PATH},
        cancel=cancel or CancelToken(),
        timeout_ms=timeout_ms,
    )


def run(
    argv: Sequence[str],
    method: str,
    params: object,
    cwd: Path,
    *,
    timeout_ms: int = 20000,
    cancel: CancelToken | None = None,
) -> Answer:
    """One call of ``method``, with ``argv[1]`` as the closure's one source file."""
    closure = source_closure(argv[0], [argv[1]])
    return call_method(
        argv, closure, method, params, options(cwd, timeout_ms=timeout_ms, cancel=cancel)
    )
