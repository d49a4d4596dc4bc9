"""``sevro.runtime.v1`` through the real CLI and a real sandbox: tools, grants, identity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject, require_sandbox
from tests.e2e.helpers import assert_valid_evidence, load, trial_evidence
from tests.e2e.test_invocation_errors import assert_refused


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    require_sandbox()


def shell(check_id: str, run: str, **extra: Any) -> dict[str, Any]:
    return {"id": check_id, "grader": "sevro.shell", "configuration": {"run": run, **extra}}


def runtime(path: Path, **fields: Any) -> Path:
    path.write_text(json.dumps({"format": "sevro.runtime.v1", **fields}))
    return path


@pytest.fixture
def tool(tmp_path: Path) -> Path:
    """A tool installed in a prefix outside the standard PATH (and inside a hidden temp
    directory): ``<prefix>/bin/mytool`` reads ``<prefix>/share/greeting``."""
    prefix = tmp_path.resolve() / "tools"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "share").mkdir()
    (prefix / "share" / "greeting").write_text("hello from the prefix\n")
    script = prefix / "bin" / "mytool"
    script.write_text(f"#!/bin/sh\nexec cat {prefix}/share/greeting\n")
    script.chmod(0o755)
    return prefix


def checks(secret: Path) -> list[dict[str, Any]]:
    return [
        shell("tool", "mytool", expectRegex="^hello from the prefix$"),
        shell("candidate-ran-it", "grep -qx 'hello from the prefix' out.txt"),
        shell("outside-hidden", f"cat {secret}", expectedExitCode=1),
        shell(
            "runner-set",
            'test "$UV_OFFLINE" = 1 && test "$PYTHONDONTWRITEBYTECODE" = 1 '
            '&& test -n "$TMPPREFIX" && test "$MODE" = ci',
        ),
    ]


def test_a_declared_tool_runs_in_checks_and_commands_and_nothing_else_is_read(
    sevro_project: SevroProject, tool: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("not for the sandbox\n")
    case = sevro_project.case(checks=checks(secret))
    host = sevro_project.script(
        default=[[{"run": {"command": "mytool > out.txt || true"}}, {"reply": {"text": "ok"}}]]
    )
    without = sevro_project.run(case, "--host-config", host)
    assert without.exit_code == 1, (without.stdout, without.stderr)
    evidence = trial_evidence(without.json())
    status = {c["id"]: c["status"] for c in evidence["checks"]}
    assert status == {
        "tool": "failed",
        "candidate-ran-it": "failed",
        "outside-hidden": "passed",
        "runner-set": "failed",
    }
    observations = {o["id"]: o["data"] for o in evidence["observations"]}
    assert observations["sevro.observation.shell.tool"]["exitCode"] == 127

    config = runtime(
        tmp_path / "runtime.json",
        environment={"set": {"PATH": f"{tool}/bin:/usr/bin:/bin", "MODE": "ci"}},
    )
    done = sevro_project.run(case, "--host-config", host, "--runtime-config-file", config)
    assert done.exit_code == 0, (done.stdout, done.stderr)
    evidence = trial_evidence(done.json())
    assert [c["status"] for c in evidence["checks"]] == ["passed"] * 4
    run = assert_valid_evidence(done.json())
    policy = run["configuration"]["redacted"]["runtimePolicy"]
    assert policy["readRoots"] == [str(tool)]
    assert policy["environment"]["path"] == f"{tool}/bin:/usr/bin:/bin"
    assert policy["environment"]["names"] == ["MODE", "PATH"]


def test_an_inherited_path_finds_the_tool(
    sevro_project: SevroProject, tool: Path, tmp_path: Path
) -> None:
    case = sevro_project.case(checks=[shell("tool", "mytool", expectRegex="^hello")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    runtime(sevro_project.root / "sevro.json", environment={"inherit": ["PATH"]})
    done = sevro_project.run(case, "--host-config", host, env={"PATH": f"{tool}/bin:/usr/bin:/bin"})
    assert done.exit_code == 0, (done.stdout, done.stderr)
    run = assert_valid_evidence(done.json())
    assert run["configuration"]["redacted"]["runtimePolicy"]["readRoots"] == [str(tool)]


def identity(project: SevroProject, case: Path, host: Path, *extra: str | Path) -> dict[str, Any]:
    done = project.run(case, "--host-config", host, "--dry", *extra)
    assert done.exit_code == 0, (done.stdout, done.stderr)
    return load(done.json()["evidencePath"])


def test_the_policy_enters_the_identity_and_dry_runs_read_it(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    case = sevro_project.case(checks=[shell("t", "true")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    none = identity(sevro_project, case, host)
    assert "runtimePolicy" not in none["configuration"]["redacted"]
    first = identity(
        sevro_project,
        case,
        host,
        "--runtime-config-file",
        runtime(tmp_path / "a.json", environment={"set": {"MODE": "a"}}),
    )
    second = identity(
        sevro_project,
        case,
        host,
        "--runtime-config-file",
        runtime(tmp_path / "b.json", environment={"set": {"MODE": "b"}}),
    )
    digests = {r["evaluationIdentity"]["digest"] for r in (none, first, second)}
    assert len(digests) == 3
    assert first["configuration"]["redacted"]["runtimePolicy"]["environment"]["set"] == {
        "MODE": "a"
    }


def test_a_bad_sevro_json_is_refused_before_a_dry_run_unless_replaced(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    case = sevro_project.case(checks=[shell("t", "true")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    (sevro_project.root / "sevro.json").write_text(
        json.dumps({"format": "sevro.runtime.v1", "environment": {"set": {"HOME": "/x"}}})
    )
    done = sevro_project.run(case, "--host-config", host, "--dry")
    assert_refused(done, "sevro.json#/environment/set/HOME: HOME cannot be declared", sevro_project)
    replaced = sevro_project.run(
        case,
        "--host-config",
        host,
        "--dry",
        "--runtime-config-file",
        runtime(tmp_path / "ok.json"),
    )
    assert replaced.exit_code == 0, (replaced.stdout, replaced.stderr)


@pytest.mark.parametrize(
    ("fields", "extra", "fragment"),
    [
        ({"network": {"localHttp": False}}, ["--local-http"], "disagrees with network.localHttp"),
        ({"filesystem": {"readOnlyRoots": ["project"]}}, [], "holds the protected project-root"),
        ({"filesystem": {"readOnlyRoots": ["project/sub"]}}, [], "inside the protected"),
        ({"runtime": {"artifactDirectories": [{"name": "a", "path": "/x"}]}}, [], "relative"),
        (
            {"runtime": {"seedDirectories": [{"source": "project/sub", "target": "deps"}]}},
            [],
            "seed directory",
        ),
    ],
)
def test_conflicts_are_refused_before_anything_runs(
    sevro_project: SevroProject,
    tmp_path: Path,
    fields: dict[str, Any],
    extra: list[str],
    fragment: str,
) -> None:
    (sevro_project.root / "sub").mkdir()
    case = sevro_project.case(checks=[shell("t", "true")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    config = runtime(tmp_path / "runtime.json", **fields)
    done = sevro_project.run(case, "--host-config", host, "--runtime-config-file", config, *extra)
    assert_refused(done, fragment, sevro_project)


def test_a_relative_runtime_file_is_refused(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[shell("t", "true")])
    done = sevro_project.run(case, "--runtime-config-file", "runtime.json")
    assert_refused(done, "must be an absolute path", sevro_project)


def test_network_local_http_is_the_flag_s_equivalent(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[shell("t", "true")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    runtime(sevro_project.root / "sevro.json", network={"localHttp": True})
    run = identity(sevro_project, case, host)
    assert run["configuration"]["redacted"]["sandbox"]["network"] == "localHttp"
    assert run["configuration"]["redacted"]["runtimePolicy"]["localHttp"] is True
    with_flag = identity(sevro_project, case, host, "--local-http")
    assert with_flag["evaluationIdentity"] == run["evaluationIdentity"]


def test_a_home_prefix_is_granted_and_its_credential_location_stays_hidden(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    home = tmp_path.resolve() / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "lib").mkdir()
    (home / ".local" / "lib" / "data").write_text("tool data\n")
    keyrings = home / ".local" / "share" / "keyrings"  # a well-known credential location
    keyrings.mkdir(parents=True)
    (keyrings / "login.keyring").write_text("secret\n")
    (home / "notes.txt").write_text("the rest of the home\n")
    script = home / ".local" / "bin" / "mytool"
    script.write_text(f"#!/bin/sh\nexec cat {home}/.local/lib/data\n")
    script.chmod(0o755)
    case = sevro_project.case(
        checks=[
            shell("tool", "mytool", expectRegex="^tool data$"),
            shell("keyring-hidden", f"cat {keyrings}/login.keyring", expectedExitCode=1),
            shell("home-hidden", f"cat {home}/notes.txt", expectedExitCode=1),
        ]
    )
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    runtime(sevro_project.root / "sevro.json", environment={"inherit": ["PATH"]})
    done = sevro_project.run(
        case,
        "--host-config",
        host,
        env={"HOME": str(home), "PATH": f"{home}/.local/bin:/usr/bin:/bin"},
    )
    assert done.exit_code == 0, (done.stdout, done.stderr)
    evidence = trial_evidence(done.json())
    assert [c["status"] for c in evidence["checks"]] == ["passed"] * 3
    run = assert_valid_evidence(done.json())
    assert run["configuration"]["redacted"]["runtimePolicy"]["readRoots"] == [str(home / ".local")]


def test_the_scripted_host_refuses_hook_plugins_it_cannot_mount(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    """A host that mounts no plugins refuses ``hooks.plugins`` (exit 64, one line, nothing
    run); the same file without the key runs (positive control)."""
    case = sevro_project.case()
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    selected = runtime(tmp_path / "hooks.json", hooks={"plugins": ["guard"]})
    done = sevro_project.run(case, "--host-config", host, "--runtime-config-file", selected)
    assert done.exit_code == 64, done.stderr
    assert "hooks.plugins names 'guard'" in done.stderr and "mounts no plugins" in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert not sevro_project.results.exists()
    plain = runtime(tmp_path / "plain.json")
    done = sevro_project.run(case, "--host-config", host, "--runtime-config-file", plain)
    assert done.exit_code == 0, done.stderr


def test_a_native_goal_is_refused_for_a_host_that_has_none(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    """``hooks.nativeGoal`` is never ignored: a host without a native goal refuses the run
    (exit 64, nothing written); with it off the same host runs."""
    case = sevro_project.case()
    host = sevro_project.script(default=[[{"reply": {"text": "ready"}}]])
    config = runtime(tmp_path / "goal.json", hooks={"nativeGoal": True})
    done = sevro_project.run(case, "--host-config", host, "--runtime-config-file", config)
    assert_refused(
        done, "hooks.nativeGoal is selected, but host sevro.host.scripted", sevro_project
    )
    plugins = runtime(tmp_path / "plugins.json", hooks={"plugins": ["darrow-review"]})
    done = sevro_project.run(case, "--host-config", host, "--runtime-config-file", plugins)
    assert_refused(done, "hooks.plugins names 'darrow-review'", sevro_project)
    off = runtime(tmp_path / "off.json", hooks={"nativeGoal": False})
    done = sevro_project.run(case, "--host-config", host, "--runtime-config-file", off)
    assert done.exit_code == 0, (done.stdout, done.stderr)
