"""Fixture setup: the declaration's bounds (exit 64) and real setup processes.

The processes are real ``/bin/sh`` commands: one that reports its environment, one that exits
nonzero, one that outlives a short injected timeout (and its background child with it), one
that commits with git under the fixture identity.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from sevro_core.api import DEFAULT_PATH, FIXTURE_EMAIL, FIXTURE_NAME, CancelToken, InvocationError
from sevro_core.testing import require_tool
from sevro_extensions.fixturesetup import (
    RESERVED_ENVIRONMENT,
    FixtureSetup,
    FixtureSetupError,
    check_fixture_setup,
    run_fixture_setup,
)
from sevro_extensions.limits import (
    MAX_FIXTURE_SETUP_ARGS,
    MAX_FIXTURE_SETUP_ARGV_BYTES,
    MAX_FIXTURE_SETUP_ENV_BYTES,
    MAX_FIXTURE_SETUP_ENV_NAMES,
)


def refused(declared: dict[str, Any], match: str) -> None:
    with pytest.raises(InvocationError, match=match) as raised:
        check_fixture_setup(declared)
    assert raised.value.exit_code == 64 and "\n" not in str(raised.value)
    assert str(raised.value).startswith("prepare fixtureSetup: ")


def test_a_setup_within_every_bound_is_accepted() -> None:
    declared = {
        "command": ["/bin/sh", "-c", "echo {{sevro.project}} {{sevro.workspace}}"],
        "environment": {"TOKEN": "s3cret", "A_B_9": "{{sevro.workspace}}/x"},
    }
    setup = check_fixture_setup(declared)
    assert setup.command[0] == "/bin/sh"
    assert dict(setup.environment) == declared["environment"]
    assert check_fixture_setup({"command": ["{{sevro.project}}/setup.sh"]}).command
    longest = ["/bin/true", *["a"] * (MAX_FIXTURE_SETUP_ARGS - 1)]
    assert check_fixture_setup({"command": longest}).command == tuple(longest)
    names = {f"V{i}": "" for i in range(MAX_FIXTURE_SETUP_ENV_NAMES)}
    assert check_fixture_setup({"command": ["/bin/true"], "environment": names}).environment


@pytest.mark.parametrize(
    ("declared", "match"),
    [
        ({"command": []}, "1 to 16 arguments"),
        ({"command": ["/bin/true", *["a"] * MAX_FIXTURE_SETUP_ARGS]}, "1 to 16 arguments"),
        ({"command": ["sh", "-c", "true"]}, "not an absolute path"),
        ({"command": ["./setup.sh"]}, "not an absolute path"),
        ({"command": ["/bin/echo", "a\0b"]}, r"command\[1\] contains NUL"),
        (
            {"command": ["/bin/echo", "x" * MAX_FIXTURE_SETUP_ARGV_BYTES]},
            f"longer than {MAX_FIXTURE_SETUP_ARGV_BYTES} bytes",
        ),
        ({"command": ["/bin/echo", "{{sevro.home}}"]}, "placeholder {{sevro.home}}"),
        ({"command": ["/bin/echo", "{{ sevro.project }}"]}, "placeholder"),
        ({"command": "/bin/true"}, "array of strings"),
        ({"command": ["/bin/true"], "environment": {"lower": "x"}}, "must match"),
        ({"command": ["/bin/true"], "environment": {"1A": "x"}}, "must match"),
        ({"command": ["/bin/true"], "environment": {"A": "x\0"}}, "contains NUL"),
        ({"command": ["/bin/true"], "environment": {"A": "{{sevro.case}}"}}, "placeholder"),
        ({"command": ["/bin/true"], "environment": {"A": 1}}, "must be a string"),
        (
            {
                "command": ["/bin/true"],
                "environment": {f"V{i}": "" for i in range(MAX_FIXTURE_SETUP_ENV_NAMES + 1)},
            },
            f"more than {MAX_FIXTURE_SETUP_ENV_NAMES} variables",
        ),
        (
            {"command": ["/bin/true"], "environment": {"BIG": "x" * MAX_FIXTURE_SETUP_ENV_BYTES}},
            f"larger than {MAX_FIXTURE_SETUP_ENV_BYTES} bytes",
        ),
        ({"command": ["/bin/true"], "shell": True}, "unknown field"),
    ],
)
def test_a_setup_beyond_a_bound_is_refused(declared: dict[str, Any], match: str) -> None:
    refused(declared, match)


@pytest.mark.parametrize("name", sorted(RESERVED_ENVIRONMENT))
def test_the_runner_owned_variables_cannot_be_set(name: str) -> None:
    refused({"command": ["/bin/true"], "environment": {name: "x"}}, f"may not set {name}")


def test_the_digest_covers_values_it_does_not_show() -> None:
    one = FixtureSetup(command=("/bin/true",), environment=(("TOKEN", "a"),))
    other = FixtureSetup(command=("/bin/true",), environment=(("TOKEN", "b"),))
    assert one.digest != other.digest and len(one.digest) == 64
    assert one.digest == FixtureSetup(command=("/bin/true",), environment=(("TOKEN", "a"),)).digest


# ---- real processes --------------------------------------------------------------------------


def _run(setup: FixtureSetup, workspace: Path, **kwargs: Any) -> None:
    run_fixture_setup(
        setup,
        workspace,
        project_root=kwargs.pop("project_root", workspace),
        fixture_bin_dir=kwargs.pop("fixture_bin_dir", None),
        cancel=kwargs.pop("cancel", CancelToken()),
        **kwargs,
    )


def _sh(script: str, **environment: str) -> FixtureSetup:
    return check_fixture_setup({"command": ["/bin/sh", "-c", script], "environment": environment})


def test_the_setup_runs_in_the_workspace_with_a_private_home_and_fixture_tools_first(
    tmp_path: Path,
) -> None:
    workspace, project, bin_dir = tmp_path / "ws", tmp_path / "project", tmp_path / "bin"
    for directory in (workspace, project, bin_dir):
        directory.mkdir()
    tool = bin_dir / "fixture-tool"
    tool.write_text("#!/bin/sh\necho from-fixture-bin\n")
    tool.chmod(0o755)
    script = (
        'pwd > report; echo "$HOME" >> report; echo "$TMPDIR" >> report; '
        'echo "$PATH" >> report; fixture-tool >> report; echo "$PROJECT" >> report; '
        'echo "$GIT_AUTHOR_EMAIL" >> report; echo "${OPERATOR_ONLY:-unset}" >> report; '
        'test -d "$HOME" && test -w "$HOME" && echo home-ok >> report; '
        'echo "$1" >> report'
    )
    setup = check_fixture_setup(
        {
            "command": ["/bin/sh", "-c", script, "sh", "{{sevro.workspace}}/arg"],
            "environment": {"PROJECT": "{{sevro.project}}"},
        }
    )
    os.environ["OPERATOR_ONLY"] = "leaked"
    try:
        _run(setup, workspace, project_root=project, fixture_bin_dir=bin_dir)
    finally:
        del os.environ["OPERATOR_ONLY"]
    lines = (workspace / "report").read_text().splitlines()
    cwd, home, tmp, path, tool_said, project_seen, email, operator, home_ok, arg = lines
    assert Path(cwd) == workspace
    assert home == tmp and Path(home).name.startswith("sevro-setup-")
    assert not Path(home).exists(), "the private home is removed afterwards"
    assert path == f"{bin_dir}:{DEFAULT_PATH}"
    assert tool_said == "from-fixture-bin"
    assert (project_seen, arg) == (str(project), f"{workspace}/arg")
    assert email == FIXTURE_EMAIL and operator == "unset" and home_ok == "home-ok"


def test_each_trial_gets_a_fresh_home(tmp_path: Path) -> None:
    setup = _sh(
        'ls -A "$HOME" > listing; echo "$HOME" > home; mkdir -p "$HOME/locked/inner"; '
        'touch "$HOME/locked/inner/f"; chmod 000 "$HOME/locked/inner" "$HOME/locked"'
    )
    for _ in range(2):
        _run(setup, tmp_path)
        assert (tmp_path / "listing").read_text() == ""
        home = Path((tmp_path / "home").read_text().strip())
        assert not home.exists(), "removed even where the setup locked it"


def test_the_setup_commits_with_the_fixture_identity_and_no_global_config(
    tmp_path: Path,
) -> None:
    git = require_tool("git")
    subprocess.run([git, "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "seed.txt").write_text("seed\n")
    _run(_sh(f"{git} add seed.txt && {git} commit -q -m setup"), tmp_path)
    author = subprocess.run(
        [git, "log", "-1", "--format=%an <%ae>"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": DEFAULT_PATH, "GIT_CONFIG_GLOBAL": os.devnull, "HOME": str(tmp_path)},
    ).stdout.strip()
    assert author == f"{FIXTURE_NAME} <{FIXTURE_EMAIL}>"


def test_a_nonzero_exit_fails_the_fixture(tmp_path: Path) -> None:
    with pytest.raises(FixtureSetupError, match=r"^fixture setup exited with status 3$"):
        _run(_sh("exit 3"), tmp_path)
    _run(_sh("exit 0"), tmp_path)


def test_a_setup_killed_by_a_signal_says_so(tmp_path: Path) -> None:
    with pytest.raises(FixtureSetupError, match="killed by signal 9"):
        _run(_sh("kill -9 $$"), tmp_path)


def test_a_slow_setup_is_killed_at_its_timeout_with_its_whole_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    setup = _sh(f"sleep 60 & echo $! > {pid_file}; sleep 60")
    started = time.monotonic()
    with pytest.raises(FixtureSetupError, match=r"did not finish within 0\.5 s; killed"):
        _run(setup, tmp_path, timeout_s=0.5)
    assert time.monotonic() - started < 10
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the background child died with the group"
    fast = _sh("true")
    _run(fast, tmp_path, timeout_s=0.5)


def test_a_background_child_does_not_outlive_a_successful_setup(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    _run(_sh(f"sleep 60 & echo $! > {pid_file}"), tmp_path)
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_cancelled_setup_is_a_failure(tmp_path: Path) -> None:
    token = CancelToken()
    token.cancel("test")
    with pytest.raises(FixtureSetupError, match="cancelled"):
        _run(_sh("sleep 30"), tmp_path, cancel=token)


def test_output_is_ignored_however_much_there_is(tmp_path: Path) -> None:
    _run(_sh("head -c 4000000 /dev/zero; head -c 4000000 /dev/zero >&2; echo done > ok"), tmp_path)
    assert (tmp_path / "ok").read_text() == "done\n"


def test_a_command_that_cannot_start_is_one_line(tmp_path: Path) -> None:
    missing = check_fixture_setup({"command": [str(tmp_path / "nope")]})
    with pytest.raises(FixtureSetupError, match=r"could not start .*nope: No such file"):
        _run(missing, tmp_path)
    not_executable = tmp_path / "plain"
    not_executable.write_text("#!/bin/sh\n")
    with pytest.raises(FixtureSetupError, match="Permission denied"):
        _run(check_fixture_setup({"command": [str(not_executable)]}), tmp_path)
