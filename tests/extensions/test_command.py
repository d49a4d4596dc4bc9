"""--extension-command-file: a strict, bounded JSON argv array; every refusal is exit 64."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sevro_core.api import InvocationError
from sevro_extensions.command import load_command
from sevro_extensions.limits import MAX_EXTENSION_COMMAND_ARGS, MAX_EXTENSION_COMMAND_FILE_BYTES


@pytest.fixture
def exe(tmp_path: Path) -> Path:
    path = tmp_path / "ext"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o700)
    return path


def _file(tmp_path: Path, content: str | bytes, name: str = "command") -> Path:
    path = tmp_path / f"{name}.json"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def test_an_argv_array_loads(tmp_path: Path, exe: Path) -> None:
    path = _file(tmp_path, json.dumps([str(exe), "/abs/source.ts", "--flag", "a b; rm -rf /"]))
    assert load_command(path) == (str(exe), "/abs/source.ts", "--flag", "a b; rm -rf /")


def _refusals(tmp_path: Path, exe: Path) -> dict[str, tuple[Path | str, str]]:
    plain = tmp_path / "plain"
    plain.write_text("x")
    plain.chmod(0o600)
    link = tmp_path / "link"
    link.symlink_to(exe)
    big = [str(exe), "x" * MAX_EXTENSION_COMMAND_FILE_BYTES]
    many = [str(exe)] + ["a"] * MAX_EXTENSION_COMMAND_ARGS
    contents: dict[str, str | bytes] = {
        "string": '"/bin/sh -c x"',
        "empty": "[]",
        "number": json.dumps([str(exe), 3]),
        "empty-arg": json.dumps([str(exe), ""]),
        "nul": json.dumps([str(exe), "a\0b"]),
        "invalid-json": '["/bin/true",',
        "duplicate-key": '{"a": 1, "a": 2}',
        "not-utf8": b'["\xff"]',
        "too-big": json.dumps(big),
        "too-many": json.dumps(many),
        "relative-argv0": '["node", "/abs/x.js"]',
        "missing-argv0": json.dumps([str(tmp_path / "gone")]),
        "symlink-argv0": json.dumps([str(link)]),
        "not-executable": json.dumps([str(plain)]),
        "directory-argv0": json.dumps([str(tmp_path)]),
    }
    messages = {
        "string": "must be a non-empty JSON array",
        "empty": "must be a non-empty JSON array",
        "number": "#/1: must be a non-empty string",
        "empty-arg": "#/1: must be a non-empty string",
        "nul": "#/1: contains a NUL character",
        "invalid-json": "invalid JSON at line 1",
        "duplicate-key": "duplicate key 'a'",
        "not-utf8": "not valid UTF-8",
        "too-big": f"larger than {MAX_EXTENSION_COMMAND_FILE_BYTES} bytes",
        "too-many": f"has more than {MAX_EXTENSION_COMMAND_ARGS} arguments",
        "relative-argv0": "argv[0] 'node' must be an absolute path (it is never looked up",
        "missing-argv0": "cannot be used (No such file or directory)",
        "symlink-argv0": f"is a symlink; name the file it points to ({exe})",
        "not-executable": "is not an executable file",
        "directory-argv0": "is not an executable file",
    }
    refusals: dict[str, tuple[Path | str, str]] = {
        case: (_file(tmp_path, content, case), messages[case]) for case, content in contents.items()
    }
    refusals["relative-file"] = (
        "command.json",
        "the extension command file must be an absolute path",
    )
    refusals["missing"] = (tmp_path / "nope.json", "extension command file does not exist")
    refusals["directory"] = (
        tmp_path,
        "extension command file is not a regular file (a directory)",
    )
    return refusals


CASES = [
    "relative-file",
    "missing",
    "directory",
    "string",
    "empty",
    "number",
    "empty-arg",
    "nul",
    "invalid-json",
    "duplicate-key",
    "not-utf8",
    "too-big",
    "too-many",
    "relative-argv0",
    "missing-argv0",
    "symlink-argv0",
    "not-executable",
    "directory-argv0",
]


@pytest.mark.parametrize("case", CASES)
def test_a_bad_command_file_is_one_line_with_exit_64(tmp_path: Path, exe: Path, case: str) -> None:
    refusals = _refusals(tmp_path, exe)
    assert sorted(refusals) == sorted(CASES)
    path, message = refusals[case]
    with pytest.raises(InvocationError) as caught:
        load_command(path)
    assert caught.value.exit_code == 64
    assert message in str(caught.value), str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_checks_pass_a_file_that_differs_only_in_the_refused_detail(
    tmp_path: Path, exe: Path
) -> None:
    """Positive controls: the executable argv0 and a file just at the size bound load."""
    os.chmod(exe, 0o700)
    padding = MAX_EXTENSION_COMMAND_FILE_BYTES - len(json.dumps([str(exe), ""]))
    path = _file(tmp_path, json.dumps([str(exe), "x" * padding]))
    assert path.stat().st_size == MAX_EXTENSION_COMMAND_FILE_BYTES
    assert load_command(path)[0] == str(exe)
