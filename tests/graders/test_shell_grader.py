"""sevro.shell: configuration refusals, and grading inside a real bubblewrap sandbox."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import ConfigurationError, GradingError
from sevro_core.fixtures.workspace import PRIVATE_PREFIX, create_workspace
from sevro_core.isolation.sandbox import Isolation, select_sandbox
from sevro_core.models import CancelToken, TrialView
from sevro_core.states import CheckStatus
from sevro_core.testing import require_tool
from sevro_graders.shell_grader import MAX_SHELL_STDOUT_BYTES, ShellGrader, observation_id
from sevro_sandbox.bwrap import BubblewrapSandbox


class Registry:
    def __init__(self, *backends: Any) -> None:
        self.backends = {b.id: b for b in backends}

    def sandbox(self, object_id: str) -> Any:
        return self.backends.get(object_id)

    def sandboxes(self) -> dict[str, Any]:
        return self.backends

    def ids(self, kind: str) -> list[str]:
        return sorted(self.backends)


@pytest.fixture
def isolation(tmp_path: Path) -> Isolation:
    require_tool("bwrap")
    selection = select_sandbox(Registry(BubblewrapSandbox()), "bwrap", "none", ())
    root = tmp_path / "workspaces"
    root.mkdir()
    workspace = create_workspace(root)
    bin_dir = workspace / ".git" / "fixture-bin"
    bin_dir.mkdir(parents=True)
    tool = bin_dir / "fixture-tool"
    tool.write_text("#!/bin/sh\necho from the fixture\n")
    tool.chmod(0o755)
    return selection.bind(
        workspace=workspace,
        private_root=create_workspace(root, prefix=PRIVATE_PREFIX),
        cancel=CancelToken(),
        fixture_bin_dir=bin_dir,
    )


def view(isolation: Isolation | None, workspace: Path | None = None) -> TrialView:
    return TrialView(
        case_id="case",
        trial=1,
        final_message="done",
        final_message_complete=True,
        observations={},
        workspace=workspace or (isolation.workspace if isolation else Path("/nonexistent")),
        isolation=isolation,
    )


def grade(isolation: Isolation | None, check_id: str = "c", **config: Any) -> Any:
    return ShellGrader().compile(config).grade(check_id, view(isolation))


@pytest.mark.parametrize(
    ("configuration", "pointer", "message"),
    [
        ({}, "", "'run' is required"),
        ({"run": " \n\t"}, "/run", "does not match"),
        ({"run": "x" * 4097}, "/run", "longer than 4096"),
        ({"run": "x", "expectedExitCode": 256}, "/expectedExitCode", "256"),
        ({"run": "x", "expectedExitCode": -1}, "/expectedExitCode", "-1"),
        ({"run": "x", "timeoutMs": 0}, "/timeoutMs", "0"),
        ({"run": "x", "timeoutMs": 120001}, "/timeoutMs", "120001"),
        ({"run": "x", "flags": "i"}, "/flags", "flags needs expectRegex or notRegex"),
        ({"run": "x", "expectRegex": "("}, "/expectRegex", "regex"),
        ({"run": "x", "notRegex": "a", "flags": "q"}, "/flags", "flag"),
        ({"run": "x", "stdin": "y"}, "/stdin", "unknown key 'stdin'"),
        ({"run": 1}, "/run", "must be of type string"),
    ],
)
def test_bad_configuration_is_refused_with_a_pointer(
    configuration: dict[str, Any], pointer: str, message: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        ShellGrader().compile(configuration)
    assert caught.value.pointer == pointer
    assert message in caught.value.message


def test_plugin_facts() -> None:
    grader = ShellGrader()
    assert (grader.id, grader.version, grader.stage) == ("sevro.shell", "1.0.0", 20)
    assert grader.requires == {"sevro.sandbox"}


def test_exit_codes_decide_and_sh_runs_with_e(isolation: Isolation) -> None:
    passed = grade(isolation, run="test -d .git")
    assert passed.status is CheckStatus.PASSED and passed.detail is None
    assert grade(isolation, run="exit 3", expectedExitCode=3).status is CheckStatus.PASSED
    failed = grade(isolation, run="false; true")
    assert failed.status is CheckStatus.FAILED
    assert failed.detail == "exit code 1, expected 0"


def test_the_outcome_cites_a_bounded_observation(isolation: Isolation) -> None:
    plain = grade(isolation, "exists", run="echo ignored; echo also >&2")
    (obs,) = plain.observations
    assert obs.id == "sevro.observation.shell.exists" and plain.evidence_refs == (obs.id,)
    assert dict(obs.data) == {"exitCode": 0, "expectedExitCode": 0}, "stdout not asserted"
    asserted = grade(isolation, run="printf 'ok\\n'", expectExact="ok")
    data = dict(asserted.observations[0].data)
    assert data["stdoutSha256"] == hashlib.sha256(b"ok\n").hexdigest()
    assert data["stdoutByteLength"] == 3


def test_stdout_assertions(isolation: Isolation) -> None:
    def status(**config: Any) -> CheckStatus:
        return grade(isolation, **config).status  # type: ignore[no-any-return]

    assert status(run="printf 'ok\\n'", expectExact="ok") is CheckStatus.PASSED
    assert status(run="printf 'ok'", expectExact="ok") is CheckStatus.PASSED
    assert status(run="printf 'ok\\n\\n'", expectExact="ok") is CheckStatus.FAILED
    assert status(run="printf 'ok\\n\\n'", expectExact="ok\n") is CheckStatus.PASSED
    assert status(run="printf 'a\\nb\\n'", expectRegex="^b$") is CheckStatus.PASSED
    assert status(run="echo OK", expectRegex="^ok$", flags="i") is CheckStatus.PASSED
    assert status(run="echo fine", notRegex="error") is CheckStatus.PASSED
    failed = grade(isolation, run="echo an error", expectRegex="error", notRegex="error")
    assert failed.detail == "notRegex: regex assertion failed (matched)"
    assert status(run="echo x >&2", expectExact="") is CheckStatus.PASSED, "stderr is not stdout"
    mismatch = grade(isolation, run="exit 2", expectExact="")
    assert mismatch.detail == "exit code 2, expected 0", "the exit code is checked first"


def test_fixture_tools_are_on_path(isolation: Isolation) -> None:
    done = grade(isolation, run="fixture-tool", expectExact="from the fixture")
    assert done.status is CheckStatus.PASSED


def test_oversized_and_invalid_stdout_are_grading_errors(isolation: Isolation) -> None:
    with pytest.raises(GradingError, match=f"exceeds {MAX_SHELL_STDOUT_BYTES} bytes"):
        grade(isolation, run="yes", expectRegex="y")
    with pytest.raises(GradingError, match="not valid UTF-8"):
        grade(isolation, run="printf '\\377'", expectExact="?")
    # without a stdout assertion nothing is captured, so size and encoding do not matter
    assert grade(isolation, run="head -c 2000000 /dev/zero").status is CheckStatus.PASSED


def test_a_timeout_is_a_grading_error_and_kills_everything(isolation: Isolation) -> None:
    marker = f"sleep 36{os.getpid() % 1000}"
    started = time.monotonic()
    with pytest.raises(GradingError, match="timed out after 300 ms"):
        grade(isolation, run=f"{marker} & {marker}", timeoutMs=300)
    assert time.monotonic() - started < 10
    time.sleep(0.2)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=False)
    assert marker not in ps.stdout


def test_without_a_working_sandbox_it_never_runs(tmp_path: Path) -> None:
    with pytest.raises(GradingError, match="only inside the trial's sandbox"):
        grade(None, run="true")
    nothing = select_sandbox(Registry(), "auto", "none", ())
    unavailable = nothing.bind(
        workspace=create_workspace(tmp_path),
        private_root=create_workspace(tmp_path, prefix=PRIVATE_PREFIX),
        cancel=CancelToken(),
    )
    with pytest.raises(GradingError, match="isolation error: no sandbox backend works"):
        grade(unavailable, run="touch ran")
    assert not (unavailable.workspace / "ran").exists()


def test_observation_ids_stay_valid_for_any_check_id() -> None:
    assert observation_id("build.ok-1") == "sevro.observation.shell.build.ok-1"
    for odd in ("Build_OK", "a..b", "x-", "UPPER"):
        assert observation_id(odd) == (
            "sevro.observation.shell." + hashlib.sha256(odd.encode()).hexdigest()
        )
