"""One call = one fresh process group: bounds, timeout, cancellation and SIGKILL, for real."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from sevro_core.api import CancelToken
from sevro_extensions.errors import ExtensionProcessError
from sevro_extensions.limits import MAX_EXTENSION_STDERR_BYTES
from sevro_extensions.negotiation import describe_params
from sevro_extensions.transport import call
from tests.extensions.conftest import MISBEHAVING, REFERENCE, SLOW, options, run

DESCRIBE = describe_params(["sevro.host.exec"], [])


def test_the_reference_extension_answers_describe(node: str, tmp_path: Path) -> None:
    answer = run([node, str(REFERENCE)], "describe", DESCRIBE, tmp_path)
    assert answer.result["extension"] == {"id": "sevro-test.reference", "version": "1.0.0"}
    assert answer.stderr == b""


def test_argv0_must_be_absolute(tmp_path: Path) -> None:
    with pytest.raises(ExtensionProcessError, match="absolute path"):
        call(["node", str(REFERENCE)], b"{}", options(tmp_path))


def test_an_argv0_that_cannot_start_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ExtensionProcessError, match=r"cannot start extension .*missing"):
        call([str(tmp_path / "missing"), str(REFERENCE)], b"{}", options(tmp_path))


def test_a_crash_is_an_error_naming_status_and_last_stderr_line(node: str, tmp_path: Path) -> None:
    with pytest.raises(ExtensionProcessError) as caught:
        run([node, str(MISBEHAVING), "crash"], "describe", DESCRIBE, tmp_path)
    assert str(caught.value) == (
        "extension exited with status 3 (stderr: something broke: bad state)"
    )
    assert caught.value.stderr == b"first line\nsomething broke: bad state\n"


def test_oversized_stdout_is_a_hard_error_and_the_process_dies(node: str, tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ExtensionProcessError, match="extension stdout passed 8388608 bytes"):
        # the extension stays alive after writing: only the overflow kill ends the call early
        run([node, str(MISBEHAVING), "oversized"], "describe", DESCRIBE, tmp_path, timeout_ms=60000)
    assert time.monotonic() - started < 30


def test_huge_stderr_is_truncated_and_only_diagnostic(node: str, tmp_path: Path) -> None:
    answer = run([node, str(MISBEHAVING), "huge-stderr"], "describe", DESCRIBE, tmp_path)
    assert answer.result["extension"]["id"] == "sevro-test.misbehaving"
    assert len(answer.stderr) == MAX_EXTENSION_STDERR_BYTES
    assert set(answer.stderr) == {ord("e")}


def _dead(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _gone(pid: int, within: float = 2.0) -> bool:
    """No such process, or a zombie nobody reaped yet (it can run no code), within ``within``
    seconds (SIGKILL is delivered asynchronously)."""
    deadline = time.monotonic() + within
    while not _dead(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _pids(directory: Path) -> tuple[int, int]:
    """The pids the script recorded (``child.pid`` is written last, each ends in a newline)."""
    last = directory / "child.pid"
    deadline = time.monotonic() + 20
    while not (last.exists() and last.read_text().endswith("\n")):
        assert time.monotonic() < deadline, "the script never recorded its pids"
        time.sleep(0.02)
    return int(last.read_text()), int((directory / "grandchild.pid").read_text())


def test_a_slow_extension_times_out_and_its_whole_group_is_sigkilled(tmp_path: Path) -> None:
    record = tmp_path / "record"
    record.mkdir()
    started = time.monotonic()
    with pytest.raises(ExtensionProcessError, match="did not answer within 3000 ms"):
        call([str(SLOW), str(record)], b"{}", options(tmp_path, timeout_ms=3000))
    assert 2.9 < time.monotonic() - started < 15
    child, grandchild = _pids(record)
    assert _gone(child)
    assert _gone(grandchild), "the grandchild outlived the call"
    assert not (record / "terminated").exists(), "SIGTERM was sent; the contract is SIGKILL"


def test_the_gone_check_sees_a_live_process(tmp_path: Path) -> None:
    """Negative control for ``_gone``: a process that is alive is not gone."""
    assert not _gone(os.getpid(), within=0.2)


def test_cancellation_kills_the_group(tmp_path: Path) -> None:
    record = tmp_path / "record"
    record.mkdir()
    cancel = CancelToken()

    def cancel_once_running() -> None:
        _pids(record)  # both processes exist: the cancellation must reach the whole group
        cancel.cancel("test")

    canceller = threading.Thread(target=cancel_once_running, daemon=True)
    canceller.start()
    with pytest.raises(ExtensionProcessError, match="extension call cancelled"):
        call([str(SLOW), str(record)], b"{}", options(tmp_path, cancel=cancel))
    canceller.join()
    child, grandchild = _pids(record)
    assert _gone(child) and _gone(grandchild)
    assert not (record / "terminated").exists()


def test_a_call_that_answers_still_leaves_nothing_behind(tmp_path: Path) -> None:
    """A script that answers and exits 0 but left a background process: the group dies."""
    script = tmp_path / "ext.sh"
    script.write_text(
        '#!/bin/sh\nsleep 300 &\necho $! > "$1/grandchild.pid"\necho $$ > "$1/child.pid"\n'
        "cat >/dev/null\nexit 0\n"
    )
    script.chmod(0o700)
    output = call([str(script), str(tmp_path)], b"{}", options(tmp_path))
    assert output.stdout == b""
    _child, grandchild = _pids(tmp_path)
    assert _gone(grandchild)


def test_the_argv_never_goes_through_a_shell(tmp_path: Path) -> None:
    """Shell syntax in an argument arrives as the literal argument."""
    script = tmp_path / "ext.sh"
    script.write_text('#!/bin/sh\nprintf %s "$1" > "$2"\ncat >/dev/null\n')
    script.chmod(0o700)
    seen = tmp_path / "seen"
    literal = "$(touch pwned); `touch pwned` | touch pwned"
    call([str(script), literal, str(seen)], b"{}", options(tmp_path))
    assert seen.read_text() == literal
    assert not (tmp_path / "pwned").exists()
