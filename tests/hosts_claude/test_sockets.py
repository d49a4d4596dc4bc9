"""Claude Code's sandbox sockets: a short temp directory, and a sandbox that failed to start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sevro_core.api import HostFailure
from sevro_hosts_claude.configuration import (
    SANDBOX_TMP,
    SOCKET_NAME_BYTES,
    TrialLayout,
    render_settings,
    sandbox_argv,
)
from sevro_hosts_claude.events import SANDBOX_FAILED, parse_turn
from sevro_hosts_claude.limits import MAX_SOCKET_PATH_BYTES

RECORDED = Path(__file__).parent / "data" / "sandbox-failed.events.jsonl"
"""Claude Code 2.1's stream of a turn whose Bash call hit "Failed to create bridge sockets"
(recorded under a 160-byte workspace root before the fix; paths shortened)."""
DEEP = Path("/w") / ("d" * 150)


def _argv(workspace: Path, root: Path) -> list[str]:
    return sandbox_argv(
        "bwrap",
        workspace=workspace,
        layout=TrialLayout.under(root),
        executable_tree=Path("/opt/claude"),
        extra_read=[],
        hidden=[],
    )


def test_the_sockets_fit_in_the_short_temp_directory() -> None:
    assert len(str(SANDBOX_TMP).encode()) + SOCKET_NAME_BYTES <= MAX_SOCKET_PATH_BYTES
    # ... and did not at the private root's own temp directory (the negative control).
    assert len(str(TrialLayout.under(DEEP).tmp).encode()) + SOCKET_NAME_BYTES > 107


def test_the_private_temp_directory_is_bound_at_the_short_path() -> None:
    argv = _argv(DEEP / "ws", DEEP / "private")
    at = argv.index(str(SANDBOX_TMP))
    assert argv[at - 2 : at + 1] == ["--bind", str(DEEP / "private" / "tmp"), str(SANDBOX_TMP)]
    assert argv.index("--tmpfs") < at < argv.index("--chdir")  # after /tmp and every mount
    settings = json.loads(render_settings(TrialLayout.under(DEEP), DEEP / "ws", api_key=False))
    assert str(SANDBOX_TMP) in settings["sandbox"]["filesystem"]["allowWrite"]


@pytest.mark.parametrize(
    "workspace, root",
    [(SANDBOX_TMP / "ws", Path("/w/private")), (Path("/w/ws"), SANDBOX_TMP.parent)],
)
def test_a_tree_overlapping_the_short_path_is_refused(workspace: Path, root: Path) -> None:
    with pytest.raises(HostFailure, match="choose another --workspace-root"):
        _argv(workspace, root)


def test_a_recorded_sandbox_failure_fails_the_turn() -> None:
    turn = parse_turn(RECORDED.read_bytes())
    assert not turn.completed and turn.final_message is None
    assert turn.failure is not None
    assert turn.failure.startswith("Claude Code's sandbox failed to start, so Bash call 1")
    assert "Failed to create bridge sockets" in turn.failure


def test_controls_the_same_stream_with_the_command_run_or_merely_echoed() -> None:
    recorded = RECORDED.read_text()
    failed = json.dumps(SANDBOX_FAILED)[1:-1]
    at = recorded.index(failed)
    end = recorded.index('"', at)
    ran = recorded[:at] + "ran-42" + recorded[end:]
    assert parse_turn(ran.encode()).completed  # a command that ran: the turn stands
    echoed = ran[:at] + recorded[at:end] + ran[at + len("ran-42") :]
    echoed = echoed.replace('"is_error":true', '"is_error":false')
    turn = parse_turn(echoed.encode())  # output that merely says so (exit 0) is not the error
    assert turn.completed and turn.failure is None
