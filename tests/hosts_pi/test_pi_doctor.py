"""`sevro doctor --host pi` on one screen, with a fix for each failure; the sandbox probe
holds for the trial's own sandbox and notices each way of weakening it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject, require_sandbox
from sevro_hosts_pi import binary as binaries
from sevro_hosts_pi.configuration import SandboxMounts, parse, sandbox_argv
from sevro_hosts_pi.doctor import node_check, route_check, sandbox_check, script_check
from sevro_hosts_pi.testing import require_pi

KEY = "sk-doctor-pi-5e1b"


@pytest.fixture
def pi() -> str:
    return require_pi()


@pytest.mark.slow
def test_doctor_reports_node_script_version_auth_route_and_a_working_sandbox(
    sevro_project: SevroProject, pi: str
) -> None:
    require_sandbox()
    result = sevro_project.sevro(
        "doctor",
        "--host",
        "pi",
        "--pi-bin",
        pi,
        "--pi-api-key-env",
        "SEVRO_DOC_KEY",
        env={"SEVRO_DOC_KEY": KEY},
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "sevro doctor: sevro.host.pi"
    names = [line.split()[1] for line in lines[1:]]
    assert names[:3] == ["binary:", "version:", "auth:"], names
    assert names[-5:] == ["node:", "script:", "sandbox-tools:", "sandbox:", "model-route:"]
    assert "0.73.1" in result.stdout and "dist/cli.js" in result.stdout
    assert "$SEVRO_DOC_KEY" in result.stdout and KEY not in result.stdout


def test_doctor_names_a_fix_for_each_failure(sevro_project: SevroProject) -> None:
    result = sevro_project.sevro("doctor", "--host", "pi", "--pi-bin", "/nonexistent/pi")
    assert result.exit_code == 1
    assert "FAIL binary" in result.stdout and "fix: npm install" in result.stdout


def test_pi_flags_need_the_pi_host(sevro_project: SevroProject) -> None:
    case = sevro_project.case()
    result = sevro_project.run(case, "--pi-bin", "/x/pi")
    assert result.exit_code == 64
    assert "--pi-bin (pi.bin) needs --host pi" in result.stderr


def test_node_and_script_checks(pi: str, tmp_path: Path) -> None:
    found = binaries.locate(pi)
    assert node_check(found).ok and script_check(found).ok
    # The controls: a node too old for pi, one that says no version, and a missing script.
    for name, text in (("old", "v18.19.0"), ("mute", "hello")):
        fake = tmp_path / name
        fake.write_text(f"#!/bin/sh\necho {text}\n")
        fake.chmod(0o700)
        check = node_check(binaries.locate(pi, str(fake)))
        assert not check.ok and check.fix and "20.6" in check.fix, check
    gone = binaries.PiBinary(
        native=found.native, tree=found.tree, script=found.tree / "nope.js", node=found.node
    )
    assert not script_check(gone).ok
    elsewhere = binaries.PiBinary(
        native=found.native, tree=tmp_path, script=found.script, node=found.node
    )
    check = script_check(elsewhere)
    assert not check.ok and "outside the mounted tree" in check.detail


def test_the_route_names_the_source_never_the_value(tmp_path: Path) -> None:
    by_env = route_check(parse(None, {"pi.apiKeyEnv": "SEVRO_ROUTE_KEY"}))
    assert by_env.ok and "$SEVRO_ROUTE_KEY" in by_env.detail and "bridge" in by_env.detail
    key_file = tmp_path / "key"
    key_file.write_text(KEY)
    by_file = route_check(parse(None, {"pi.credentialFile": str(key_file)}))
    assert str(key_file) in by_file.detail and KEY not in by_file.detail
    api = {"pi.api": "anthropic-messages", "pi.baseUrl": "http://127.0.0.1:9/up"}
    assert "anthropic-messages at http://127.0.0.1:9/up" in route_check(parse(None, api)).detail


def _weakened(change: Callable[[list[str], dict[str, Any]], list[str]]) -> Callable[..., Any]:
    """The trial's sandbox_argv with one change (for the probe's negative controls)."""

    def argv_of(bwrap: str, **kwargs: Any) -> list[str]:
        argv = sandbox_argv(bwrap, **kwargs)
        assert argv[-1] == "--"
        return change(argv, kwargs)

    return argv_of


def _before_command(argv: list[str], *extra: str) -> list[str]:
    return [*argv[:-1], *extra, "--"]


WEAKENINGS: dict[str, tuple[Callable[[list[str], dict[str, Any]], list[str]], str]] = {
    "network": (
        lambda argv, _: [a for a in argv if a != "--unshare-net"],
        "could open a network connection",
    ),
    "protected-root": (
        lambda argv, kw: _before_command(
            argv, "--ro-bind", *[str(kw["workspace"].parent / "protected")] * 2
        ),
        "could read a file outside the trial",
    ),
    "read-only-workspace": (
        lambda argv, kw: _before_command(argv, "--ro-bind", *[str(kw["workspace"])] * 2),
        "could not write in the workspace",
    ),
    "no-pi-tree": (
        lambda argv, kw: sandbox_argv(
            argv[0],
            workspace=kw["workspace"],
            layout=kw["layout"],
            bridge_dir=kw["bridge_dir"],
            mounts=SandboxMounts(read=[p for p in kw["mounts"].read if p.name != "node_modules"]),
        ),
        "pi could not run inside the sandbox",
    ),
}


@pytest.mark.slow
def test_the_sandbox_probe_holds_for_the_trial_sandbox(pi: str) -> None:
    require_sandbox()
    check = sandbox_check(binaries.locate(pi), parse(None, {}))
    assert check.ok, check
    assert "no network" in check.detail


@pytest.mark.slow
@pytest.mark.parametrize("weakening", sorted(WEAKENINGS))
def test_the_sandbox_probe_notices_a_weakened_sandbox(pi: str, weakening: str) -> None:
    require_sandbox()
    change, problem = WEAKENINGS[weakening]
    check = sandbox_check(binaries.locate(pi), parse(None, {}), _weakened(change))
    assert not check.ok and check.detail == _expected(problem), check
    assert check.fix and "docs/hosts/pi.md" in check.fix


def _expected(problem: str) -> str:
    from sevro_hosts_pi.doctor import _PROBLEMS

    (found,) = [text for text in _PROBLEMS.values() if problem in text]
    return found


@pytest.mark.parametrize(
    ("flags", "env", "reason"),
    [
        ((), {}, "no credential configured"),
        (("--pi-api-key-env", "SEVRO_UNSET_KEY"), {}, "$SEVRO_UNSET_KEY is not set"),
        (("--pi-api-key-env", "SEVRO_EMPTY_KEY"), {"SEVRO_EMPTY_KEY": ""}, "is not set"),
        (("--pi-credential-file", "/nonexistent/key"), {}, "is missing or empty"),
    ],
)
def test_a_run_without_a_usable_credential_is_refused_before_any_trial(
    sevro_project: SevroProject, pi: str, flags: tuple[str, ...], env: dict[str, str], reason: str
) -> None:
    """The doctor's auth check, at plan time: exit 64 with its reason, never a failed trial."""
    require_sandbox()
    case = sevro_project.case()
    args = ("--host", "pi", "--model", "m", "--pi-bin", pi, *flags)
    result = sevro_project.run(case, *args, env=env)
    assert result.exit_code == 64, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("sevro: error: --host pi: ") and reason in line, line
    assert "sevro doctor --host pi" in line
    assert not sevro_project.results.exists() or not any(sevro_project.results.iterdir())
    doctor = sevro_project.sevro("doctor", "--host", "pi", "--pi-bin", pi, *flags, env=env)
    assert doctor.exit_code == 1 and "FAIL auth" in doctor.stdout and reason in doctor.stdout
