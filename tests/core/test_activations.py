"""The skill-activation collector's own rules: hook records are untrusted (bounded, regular
files, JSON tool-hook inputs, at least one per tool call the stream reported), and prepared
bodies are matched in returned content whole or composed, never from a part."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sevro_core.api import HookLog, MountedSkill, activations_observation, hook_command, limits
from tests.core.activation_controls import BODY, OTHER

SKILL = MountedSkill("greet", ".agents/skills/greet/SKILL.md", "0" * 64, len(BODY), BODY)
WORKSPACE = Path("/nonexistent/sevro-workspace")
CAT = f"cat {SKILL.path}"


def _write(
    directory: Path,
    n: int,
    response: object,
    tool: str = "Bash",
    target: str = CAT,
    cwd: str = str(WORKSPACE),
) -> None:
    key = "file_path" if tool == "Read" else "command"
    record = {
        "hook_event_name": "PostToolUse",
        "cwd": cwd,
        "tool_name": tool,
        "tool_input": {key: target},
        "tool_response": response,
    }
    (directory / f"{n:020d}-1.json").write_text(json.dumps(record))


def _observe(log: HookLog | None) -> tuple[str, dict[str, Any]]:
    return activations_observation([SKILL], log, WORKSPACE)


def _log(tmp_path: Path, responses: list[object], expected: int | None = None) -> HookLog:
    tmp_path.mkdir(exist_ok=True)
    for n, response in enumerate(responses, start=1):
        _write(tmp_path, n, response)
    log = HookLog(tmp_path)
    log.harvest(1, {"Bash": len(responses) if expected is None else expected})
    return log


def _lines(first: int, last: int) -> str:
    return "".join(line + "\n" for line in BODY.split("\n")[first - 1 : last])


def test_whole_and_composed_reads_activate_with_turn_and_ordinal(tmp_path: Path) -> None:
    numbered = "".join(f"{n:6d}\t{line}\n" for n, line in enumerate(BODY.split("\n")[:-1], 1))
    responses: list[object] = [
        BODY,
        {"stdout": numbered, "stderr": ""},
        _lines(1, 5),
        _lines(6, 14),
    ]
    state, data = _observe(_log(tmp_path, responses))
    assert state == "complete", data
    found = [(a["turn"], a["ordinal"], a["kind"], a["reads"]) for a in data["activations"]]
    assert found == [(1, 1, "whole", 1), (1, 2, "whole", 1), (1, 4, "composed", 2)]
    assert data["activated"] == ["greet"] and data["records"] == 4


def test_parts_never_activate(tmp_path: Path) -> None:
    responses: list[object] = [_lines(1, 4), _lines(2, 13), OTHER, "---\n", BODY[:-30]]
    state, data = _observe(_log(tmp_path, responses))
    assert (state, data["activations"], data["activated"]) == ("complete", [], [])


def test_a_lone_front_matter_delimiter_shows_neither_place(tmp_path: Path) -> None:
    # lines 2-14 and a "---" elsewhere: line 1 is never shown as itself
    state, data = _observe(_log(tmp_path, [_lines(2, 14), "x\n---\n"]))
    assert (state, data["activated"]) == ("complete", [])


def test_reads_across_turns_compose_and_keep_their_turn(tmp_path: Path) -> None:
    log = HookLog(tmp_path)
    _write(tmp_path, 1, _lines(1, 7))
    log.harvest(1, {"Bash": 1})
    _write(tmp_path, 2, _lines(8, 14))
    log.harvest(2, {"Bash": 1})
    state, data = _observe(log)
    assert state == "complete"
    assert [(a["turn"], a["ordinal"]) for a in data["activations"]] == [(2, 1)]


def test_missing_truncated_malformed_or_linked_records_are_unavailable(tmp_path: Path) -> None:
    cases: dict[str, HookLog] = {}
    cases["no directory"] = HookLog(tmp_path / "absent")
    cases["no directory"].harvest(1, {})
    cases["too few"] = _log(tmp_path / "few", [BODY], expected=2)
    big = tmp_path / "big"
    big.mkdir()
    (big / "1-1.json").write_bytes(b"{" + b" " * limits.MAX_HOOK_RECORD_BYTES + b"}")
    cases["truncated"] = HookLog(big)
    cases["truncated"].harvest(1, {})
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "1-1.json").write_text('{"hook_event_name": "PostToolUse", "tool_name": ')
    cases["malformed"] = HookLog(bad)
    cases["malformed"].harvest(1, {})
    deep = tmp_path / "deep"
    deep.mkdir()
    (deep / "1-1.json").write_text("[" * 100_000 + "]" * 100_000)
    cases["nested too deep"] = HookLog(deep)
    cases["nested too deep"].harvest(1, {})
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(tmp_path / "few" / f"{1:020d}-1.json", linked / "1-1.json")
    cases["linked"] = HookLog(linked)
    cases["linked"].harvest(1, {})
    stray = _log(tmp_path / "stray", [BODY])
    (tmp_path / "stray" / "notes.txt").write_text(BODY)
    stray.harvest(2, {})
    cases["stray file"] = stray
    for name, log in cases.items():
        state, data = _observe(log)
        assert state == "unavailable", name
        assert "activations" not in data and data["reason"], name  # never "not read"
    state, data = _observe(None)
    assert state == "unavailable" and "activations" not in data


def test_the_hook_is_passive_and_bounded(tmp_path: Path) -> None:
    import subprocess

    command = hook_command(tmp_path)
    payload = b'{"tool_name": "Bash"}'
    done = subprocess.run(
        ["/bin/sh", "-c", command], input=payload, capture_output=True, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    (record,) = tmp_path.iterdir()
    assert record.read_bytes() == payload
    gone = subprocess.run(
        ["/bin/sh", "-c", hook_command(tmp_path / "absent")],
        input=payload,
        capture_output=True,
        check=False,
    )
    assert (gone.returncode, gone.stdout) == (0, b"")  # a failed write still never blocks


def _sourced(tmp_path: Path, calls: list[tuple[str, str, str, object]]) -> list[tuple[int, str]]:
    """Activations (ordinal, kind) of ``(tool, target, cwd, response)`` records."""
    tmp_path.mkdir()
    for n, (tool, target, cwd, response) in enumerate(calls, start=1):
        _write(tmp_path, n, response, tool, target, cwd)
    log = HookLog(tmp_path)
    log.harvest(1, {})
    state, data = _observe(log)
    assert state == "complete", data
    return [(a["ordinal"], a["kind"]) for a in data["activations"]]


def test_only_content_from_the_prepared_file_counts(tmp_path: Path) -> None:
    ws, skill = str(WORKSPACE), SKILL.path
    elsewhere = "/nonexistent/elsewhere"
    copies: list[tuple[str, str, str, object]] = [
        ("Bash", "cat copy.md", ws, BODY),  # a fixture file that copies the body
        ("Bash", "sed -n '1,7p' copy.md", ws, _lines(1, 7)),
        ("Bash", f"cat copy.md; head -n 1 {skill}", ws, BODY),  # names the skill, reads more
        ("Bash", "cat $SKILL", ws, BODY),  # a path sevro cannot resolve
        ("Bash", f"echo {skill}", ws, BODY),  # names the path, reads nothing
        ("Bash", "cat SKILL.md", elsewhere, BODY),  # relative to a directory outside
        ("Read", f"{ws}/copy.md", ws, {"file": {"content": BODY}}),
        ("Grep", skill, ws, BODY),  # another tool
    ]
    assert _sourced(tmp_path / "copies", copies) == []
    real: list[tuple[str, str, str, object]] = [
        ("Bash", f"sed -n '1,7p' {skill}", ws, _lines(1, 7)),
        ("Bash", "cat copy.md", ws, BODY),  # never completes the composed read
        ("Bash", f"sed -n '8,14p' {ws}/{skill}", ws, _lines(8, 14)),
        ("Read", f"{ws}/{skill}", elsewhere, {"file": {"content": BODY}}),
        ("Bash", "cat SKILL.md", f"{ws}/.agents/skills/greet", BODY),
        ("Read", skill, ws, {"file": {"content": BODY}}),  # relative to the workspace
    ]
    found = _sourced(tmp_path / "real", real)
    assert found == [(3, "composed"), (4, "whole"), (5, "whole"), (6, "whole")]


def test_a_record_without_a_directory_resolves_only_absolute_paths(tmp_path: Path) -> None:
    """A hook input with no ``cwd`` does not say where a relative path points: it is not taken
    to be the workspace (negative), while an absolute path still names the file (positive)."""
    tmp_path.mkdir(exist_ok=True)
    for n, target in enumerate((CAT, f"cat {WORKSPACE}/{SKILL.path}"), start=1):
        record = {
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": target},
            "tool_response": BODY,
        }
        (tmp_path / f"{n:020d}-1.json").write_text(json.dumps(record))
    log = HookLog(tmp_path)
    log.harvest(1, {"Bash": 2})
    state, data = _observe(log)
    assert state == "complete", data
    assert [(a["ordinal"], a["kind"]) for a in data["activations"]] == [(2, "whole")]


def test_a_child_agent_sessions_record_is_never_an_activation(tmp_path: Path) -> None:
    """A hook input naming an ``agent_id`` is a child session's call (Claude Code's ``Agent``):
    the child's, reported apart by its host; the same record without it activates."""
    _write(tmp_path, 1, BODY)
    child = tmp_path / f"{2:020d}-1.json"
    _write(tmp_path, 2, BODY)
    record = json.loads(child.read_text())
    child.write_text(json.dumps({**record, "agent_id": "ab457e423e28a1370"}))
    log = HookLog(tmp_path)
    log.harvest(1, {"Bash": 1})
    state, data = _observe(log)
    assert state == "complete" and data["records"] == 2
    assert [(a["ordinal"], a["kind"]) for a in data["activations"]] == [(1, "whole")]
