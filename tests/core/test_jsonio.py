from __future__ import annotations

import os
import signal
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from sevro_core.errors import InvocationError
from sevro_core.formats.jsonio import parse_json_text, read_json_file, write_json_atomic


def parse(text: str | bytes) -> object:
    data = text.encode() if isinstance(text, str) else text
    return parse_json_text(data, source="f.json")


def test_parses_plain_json() -> None:
    assert parse('{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}


def test_numbers_at_the_edges_of_the_double_range_are_kept() -> None:
    text = "[9007199254740991, -9007199254740991, 1.7976931348623157e308, 5e-324, 1e-400, -0.0]"
    assert parse(text) == [2**53 - 1, -(2**53 - 1), 1.7976931348623157e308, 5e-324, 0.0, -0.0]


@pytest.mark.parametrize(
    ("text", "pointer", "fragment"),
    [
        ('{"a": 1, "a": 2}', "/a", "duplicate key 'a'"),
        ('{"x": {"b": [{"k": 1, "k": 1}]}}', "/x/b/0/k", "duplicate key 'k'"),
        ('{"a/b": {"c~d": 1, "c~d": 2}}', "/a~1b/c~0d", "duplicate key"),
        ('{"s": "\\ud800"}', "/s", "lone surrogate"),
        ('{"a": NaN}', "/a", "number NaN is not finite"),
        ('{"a": [-Infinity]}', "/a/0", "number -Infinity is not finite"),
        ('{"equals": 1e400}', "/equals", "number 1e400 overflows a double"),
        ('{"equals": -1e400}', "/equals", "number -1e400 overflows a double"),
        ('{"x": [1, {"y": 1E+999}]}', "/x/1/y", "number 1E+999 overflows"),
        ('{"n": 9007199254740992}', "/n", "outside the exact integer range"),
        ('{"n": -9007199254740992}', "/n", "outside the exact integer range"),
        ('{"n": ' + "9" * 5000 + "}", "/n", "outside the exact integer range"),
    ],
)
def test_refusals_name_the_pointer(text: str, pointer: str, fragment: str) -> None:
    with pytest.raises(InvocationError) as info:
        parse(text)
    assert info.value.pointer == pointer
    assert fragment in info.value.message
    assert info.value.one_line().startswith(f"f.json#{pointer}: ")


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"\xef\xbb\xbf{}", "byte-order mark"),
        (b'{"a": "\xff"}', "not valid UTF-8 at byte 7"),
        (b'{"a": 1', "line 1 column 8"),
        (b"[" * 70 + b"]" * 70, "nesting deeper than 64"),
        (b"[" * 5000 + b"]" * 5000, "nesting deeper than 64"),
    ],
)
def test_invalid_documents(data: bytes, fragment: str) -> None:
    with pytest.raises(InvocationError) as info:
        parse(data)
    assert fragment in info.value.message
    assert "\n" not in info.value.one_line()


def test_size_bound_is_checked_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text('"' + "x" * 100 + '"')
    with pytest.raises(InvocationError, match="larger than 50 bytes"):
        read_json_file(path, 50)
    assert read_json_file(path, 102) == "x" * 100


def test_symlinked_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "t.json"
    target.write_text("{}")
    link = tmp_path / "l.json"
    link.symlink_to(target)
    with pytest.raises(InvocationError, match="cannot open"):
        read_json_file(link, 100)


def test_directory_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(InvocationError, match="not a regular file"):
        read_json_file(tmp_path, 100)
    with pytest.raises(InvocationError, match="does not exist"):
        read_json_file(tmp_path / "nope.json", 100)


def test_atomic_write_is_private_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    write_json_atomic(path, {"b": 1, "a": "é"})
    write_json_atomic(path, {"b": 2})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert path.read_text() == '{\n  "b": 2\n}\n'
    assert os.listdir(tmp_path) == ["out.json"]


@pytest.fixture
def no_hang() -> Iterator[None]:
    """A regression that blocks in open() fails the test after 5 s instead of hanging it."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError("blocked on a special file")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(5)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.usefixtures("no_hang")
def test_special_files_are_refused_without_opening_them(tmp_path: Path) -> None:
    fifo = tmp_path / "case.json"
    os.mkfifo(fifo)
    with pytest.raises(InvocationError, match=r"case file is not a regular file \(a FIFO\)"):
        read_json_file(fifo, 100, what="case file")
    with pytest.raises(InvocationError, match=r"not a regular file \(a device\)"):
        read_json_file(Path("/dev/zero"), 100)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(tmp_path / "s.json"))
        with pytest.raises(InvocationError, match=r"not a regular file \(a socket\)"):
            read_json_file(tmp_path / "s.json", 100)


@pytest.mark.usefixtures("no_hang")
def test_a_fifo_swapped_in_after_the_check_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "host.json"
    path.write_text("{}")
    real_lstat = os.lstat

    def lstat_then_swap(target: object, *args: object, **kwargs: object) -> os.stat_result:
        info = real_lstat(target, *args, **kwargs)  # type: ignore[arg-type]
        path.unlink()
        os.mkfifo(path)
        return info

    monkeypatch.setattr(os, "lstat", lstat_then_swap)
    with pytest.raises(InvocationError, match="not a regular file"):
        read_json_file(path, 100)
