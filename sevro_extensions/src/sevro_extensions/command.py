"""The ``--extension-command-file``: the extension's argv as a JSON array, read strictly.

An argv array, not a command line, so nothing is ever run through a shell. ``argv[0]`` must be
an absolute path to an executable regular file (a symlink is refused: the source closure
digests the file itself). Every problem is an :class:`InvocationError` whose message is one
line, raised before anything runs (exit 64).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sevro_core.api import InvocationError, read_json_file
from sevro_extensions.limits import MAX_EXTENSION_COMMAND_ARGS, MAX_EXTENSION_COMMAND_FILE_BYTES

WHAT = "extension command file"


def load_command(path: str | Path) -> tuple[str, ...]:
    """The argv in ``path``; raise :class:`InvocationError` (exit 64) for anything else."""
    if not Path(path).is_absolute():
        raise InvocationError(f"the {WHAT} must be an absolute path", source=path)
    argv = read_json_file(path, MAX_EXTENSION_COMMAND_FILE_BYTES, what=WHAT)
    if not isinstance(argv, list) or not argv:
        raise InvocationError("must be a non-empty JSON array of strings (an argv)", source=path)
    if len(argv) > MAX_EXTENSION_COMMAND_ARGS:
        raise InvocationError(f"has more than {MAX_EXTENSION_COMMAND_ARGS} arguments", source=path)
    for index, item in enumerate(argv):
        if not isinstance(item, str) or not item:
            raise InvocationError("must be a non-empty string", source=path, pointer=f"/{index}")
        if "\0" in item:
            raise InvocationError("contains a NUL character", source=path, pointer=f"/{index}")
    _check_executable(argv[0], path)
    return tuple(argv)


def _check_executable(argv0: str, path: str | Path) -> None:
    """``argv[0]`` is an absolute path to an executable regular file, not a symlink."""
    if not os.path.isabs(argv0):
        raise InvocationError(
            f"argv[0] {argv0!r} must be an absolute path (it is never looked up on PATH)",
            source=path,
            pointer="/0",
        )
    try:
        info = os.lstat(argv0)
    except OSError as exc:
        raise InvocationError(
            f"argv[0] {argv0} cannot be used ({exc.strerror})", source=path, pointer="/0"
        ) from None
    if stat.S_ISLNK(info.st_mode):
        real = os.path.realpath(argv0)
        raise InvocationError(
            f"argv[0] {argv0} is a symlink; name the file it points to ({real})",
            source=path,
            pointer="/0",
        )
    if not stat.S_ISREG(info.st_mode) or not os.access(argv0, os.X_OK):
        raise InvocationError(
            f"argv[0] {argv0} is not an executable file", source=path, pointer="/0"
        )
