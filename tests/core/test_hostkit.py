"""Host helpers that touch files an operator names: never blocked by a special file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sevro_core.hostkit import is_native_executable, secret_strings


def test_an_executable_fifo_is_not_a_native_binary_and_never_blocks(tmp_path: Path) -> None:
    fifo = tmp_path / "codex"
    os.mkfifo(fifo)
    os.chmod(fifo, 0o755)
    assert is_native_executable(fifo) is False  # a blocking open() would hang here
    native = shutil.which("ls")
    assert native is not None and is_native_executable(Path(native))


def test_secret_strings_survive_any_nesting() -> None:
    assert secret_strings(b'{"a": ["12345678", {"b": "abcdefgh"}], "c": "short"}') == [
        "12345678",
        "abcdefgh",
    ]
    deep = b"[" * 100_000 + b"]" * 100_000  # past the parser's stack: scrubbed as text
    assert secret_strings(deep) == [deep.decode()]
    nested = b"[" * 900 + b'"abcdefghij"' + b"]" * 900  # parses; the walk must not recurse
    assert secret_strings(nested) == ["abcdefghij"]
