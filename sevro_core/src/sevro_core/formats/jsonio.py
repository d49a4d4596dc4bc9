"""Strict, bounded JSON reading and atomic, private JSON writing.

Input files are untrusted: sizes are bounded before parsing, duplicate keys, non-finite numbers
(``NaN``, ``Infinity``, and literals such as ``1e400`` that overflow a double), integers beyond
+/-(2**53 - 1) (not exact as doubles, refused by canonical JSON), lone surrogates and excessive
nesting are refused with a JSON pointer to the offending place.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sevro_core.errors import InvocationError, join_pointer
from sevro_core.formats.fileio import read_at_most, write_all
from sevro_core.limits import MAX_JSON_DEPTH

JsonValue = Any
"""A value made only of dict, list, str, int, float, bool and None."""


class _DuplicateKeyDict(dict[str, Any]):
    """Marks an object that had a duplicate key, so the walk can report its pointer."""

    duplicate: str = ""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    out = {}
    for key, value in pairs:
        if key in out:
            marked = _DuplicateKeyDict(out)
            marked.duplicate = key
            return marked
        out[key] = value
    return out


MAX_SAFE_INTEGER = 2**53 - 1
"""Beyond this an integer is not exact as a double, and RFC 8785 canonical JSON refuses it."""


class _RefusedNumber:
    """Stands in for a number JSON digests cannot carry, so the walk can report its pointer."""

    def __init__(self, text: str, problem: str) -> None:
        self.problem = f"number {text[:40]} {problem}"


def _refuse_constant(name: str) -> _RefusedNumber:
    return _RefusedNumber(name, "is not finite (not JSON)")


def _parse_float(text: str) -> float | _RefusedNumber:
    value = float(text)
    if math.isfinite(value):
        return value
    return _RefusedNumber(text, "overflows a double (not finite)")


def _parse_int(text: str) -> int | _RefusedNumber:
    # the length check first: Python refuses int() of very long digit strings
    if len(text.lstrip("-")) <= 16 and abs(value := int(text)) <= MAX_SAFE_INTEGER:
        return value
    return _RefusedNumber(text, f"is outside the exact integer range (+/-{MAX_SAFE_INTEGER})")


def _walk(value: Any, pointer: str, depth: int) -> Iterator[tuple[str, str]]:
    if depth > MAX_JSON_DEPTH:
        yield pointer, f"nesting deeper than {MAX_JSON_DEPTH} levels"
        return
    if isinstance(value, dict):
        if isinstance(value, _DuplicateKeyDict):
            yield join_pointer(pointer, value.duplicate), f"duplicate key {value.duplicate!r}"
            return
        for key, item in value.items():
            if not _valid_text(key):
                yield pointer, "object key is not valid Unicode (lone surrogate)"
                return
            yield from _walk(item, join_pointer(pointer, key), depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, join_pointer(pointer, index), depth + 1)
    elif isinstance(value, str) and not _valid_text(value):
        yield pointer, "string is not valid Unicode (lone surrogate)"
    elif isinstance(value, _RefusedNumber):
        yield pointer, value.problem


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A strictly decoded UTF-8 text holds a surrogate only where an escape like this spelled one."""


def _suspect(value: Any, text: str) -> bool:
    """Whether the full walk is needed: a duplicate key, a surrogate escape, deep nesting or a
    refused number.

    Most documents have none of these; checking containers only keeps large files cheap.
    """
    if _SURROGATE_ESCAPE.search(text):
        return True
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth >= MAX_JSON_DEPTH or isinstance(item, _DuplicateKeyDict):
            return True
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
            elif isinstance(child, _RefusedNumber):
                return True
    return False


def _valid_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_json_text(data: bytes, *, source: str | Path) -> JsonValue:
    """Parse strict UTF-8 JSON bytes or raise :class:`InvocationError` with a pointer."""
    if data.startswith(b"\xef\xbb\xbf"):
        raise InvocationError(
            "a byte-order mark is not allowed; save the file as plain UTF-8", source=source
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvocationError(f"not valid UTF-8 at byte {exc.start}", source=source) from None
    try:
        value = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_constant=_refuse_constant,
            parse_float=_parse_float,
            parse_int=_parse_int,
        )
    except json.JSONDecodeError as exc:
        raise InvocationError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", source=source
        ) from None
    except ValueError as exc:
        raise InvocationError(f"invalid JSON: {exc}", source=source) from None
    except RecursionError:
        raise InvocationError(
            f"nesting deeper than {MAX_JSON_DEPTH} levels", source=source
        ) from None
    if isinstance(value, dict | list) and not _suspect(value, text):
        return value
    for pointer, problem in _walk(value, "", 0):
        raise InvocationError(problem, source=source, pointer=pointer)
    return value


def read_bounded(path: Path | str, limit: int, *, what: str = "file") -> bytes:
    """Read a regular file of at most ``limit`` bytes without following a final symlink.

    Nothing but a regular file is opened: a FIFO, socket or device named as input is refused
    before ``open`` (which would block on a FIFO), and ``O_NONBLOCK`` plus a re-check of the
    opened descriptor cover a file swapped in between.
    """
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        raise InvocationError(f"{what} does not exist", source=path) from None
    except OSError as exc:
        raise InvocationError(f"cannot open {what}: {exc.strerror}", source=path) from None
    if not stat.S_ISREG(before.st_mode) and not stat.S_ISLNK(before.st_mode):
        raise InvocationError(
            f"{what} is not a regular file ({_kind(before.st_mode)})", source=path
        )
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise InvocationError(f"{what} does not exist", source=path) from None
    except OSError as exc:
        raise InvocationError(f"cannot open {what}: {exc.strerror}", source=path) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != (
            before.st_dev,
            before.st_ino,
        ):
            raise InvocationError(f"{what} is not a regular file", source=path)
        if info.st_size > limit:
            raise InvocationError(f"{what} is larger than {limit} bytes", source=path)
        data = read_at_most(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise InvocationError(f"{what} is larger than {limit} bytes", source=path)
    return data


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file"


def read_json_file(path: Path | str, limit: int, *, what: str = "file") -> JsonValue:
    """Read and strictly parse a bounded JSON file."""
    return parse_json_text(read_bounded(path, limit, what=what), source=path)


def dumps_pretty(value: JsonValue) -> str:
    """Serialise as sevro writes evidence: two-space indent, UTF-8, trailing newline."""
    return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_private_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` via an exclusive 0600 temp file and a rename.

    Readers never see a half-written file; with ``durable`` the data is on disk before the
    rename makes it visible, so a crash leaves either the old file or the whole new one.
    """
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        write_all(fd, data)
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, value: JsonValue, *, durable: bool = True) -> None:
    """Write ``value`` as pretty JSON atomically with mode 0600."""
    write_private_atomic(path, dumps_pretty(value).encode("utf-8"), durable=durable)
