"""Pairing Codex's streamed commands with the hook records that know their directory."""

from __future__ import annotations

from pathlib import Path

from sevro_core.hosts.activations import HookLog, HookRecord
from sevro_hosts_codex.workdirs import command_workdirs, model_command

WS = Path("/tmp/sevro-case-x")


def _log(*records: tuple[int, str, str | None]) -> HookLog:
    log = HookLog(Path("/nonexistent"))
    log.records = [
        HookRecord(turn, n, "Bash", (), target, cwd)
        for n, (turn, target, cwd) in enumerate(records, start=1)
    ]
    return log


def test_the_shell_wrapper_is_removed_and_nothing_else() -> None:
    assert model_command("/bin/bash -c 'cat a.md'") == "cat a.md"
    assert model_command("bash -lc 'cd x && cat b'") == "cd x && cat b"
    assert model_command("cat a.md") == "cat a.md"
    assert model_command("python -c 'print(1)'") == "python -c 'print(1)'"
    assert model_command("/bin/bash -c 'unterminated") == "/bin/bash -c 'unterminated"


def test_each_command_takes_its_own_records_directory() -> None:
    log = _log((1, "cat a", f"{WS}/sub"), (1, "cat b", str(WS)), (2, "cat a", str(WS)))
    ran = [(3, "/bin/bash -c 'cat b'"), (4, "/bin/bash -c 'cat a'")]
    assert command_workdirs(log, 1, ran, WS) == {3: ".", 4: "sub"}


def test_unknown_when_no_record_disagreeing_records_outside_or_unavailable() -> None:
    log = _log((1, "cat a", f"{WS}/one"), (1, "cat a", f"{WS}/two"), (1, "cat c", "/etc"))
    ran = [(1, "/bin/bash -c 'cat a'"), (2, "/bin/bash -c 'cat z'"), (3, "cat c")]
    assert command_workdirs(log, 1, ran, WS) == {1: None, 2: None, 3: None}
    same = _log((1, "cat a", f"{WS}/one"), (1, "cat a", f"{WS}/one"))
    both = [(1, "/bin/bash -c 'cat a'"), (2, "/bin/bash -c 'cat a'")]
    assert command_workdirs(same, 1, both, WS) == {1: "one", 2: "one"}
    same.fail("turn 1: 2 Bash calls, 1 hook records")
    assert command_workdirs(same, 1, both, WS) == {1: None, 2: None}
    assert command_workdirs(None, 1, both, WS) == {1: None, 2: None}
