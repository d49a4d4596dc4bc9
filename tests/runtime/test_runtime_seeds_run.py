"""Seed directories and shared caches through the real CLI and a real sandbox: each role sees
its own private copy at ``{{sevro.runtime}}/<slot>``, a shared cache outlives its trial, and a
seed changed before its capture fails the command rather than passing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve

from sevro_core.isolation.runtime import load_runtime
from sevro_core.isolation.sandbox import Isolation, IsolationError
from sevro_core.testing import SevroProject, require_sandbox
from sevro_core.testing.sandboxes import trial_isolation
from tests.e2e.helpers import assert_valid_evidence, trial_evidence
from tests.runtime.test_runtime_loading import CREDENTIALS


@pytest.fixture(autouse=True)
def _sandbox() -> None:
    require_sandbox()


def shell(check_id: str, run: str) -> dict[str, Any]:
    return {"id": check_id, "grader": "sevro.shell", "configuration": {"run": run}}


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    """``deps`` (a seed: ``greeting`` and an executable ``bin/hello``) and ``cache`` (shared)
    beside the runtime file, in a temp directory the sandbox otherwise hides."""
    root = tmp_path.resolve()
    (root / "deps" / "bin").mkdir(parents=True)
    (root / "deps" / "greeting").write_text("seeded\n")
    hello = root / "deps" / "bin" / "hello"
    hello.write_text("#!/bin/sh\necho hello from the seed\n")
    hello.chmod(0o755)
    (root / "cache").mkdir()
    return root


def configure(root: Path, seed_roles: list[str] | None) -> Path:
    seed: dict[str, Any] = {"source": "deps", "target": "deps"}
    if seed_roles is not None:
        seed["roles"] = seed_roles
    path = root / "runtime.json"
    document = {
        "format": "sevro.runtime.v1",
        "environment": {
            "set": {"DEPS": "{{sevro.runtime}}/deps", "SHARED": "{{sevro.runtime}}/shared"}
        },
        "runtime": {
            "seedDirectories": [seed],
            "sharedCacheDirectories": [
                {"source": "cache", "target": "shared", "roles": ["candidate", "checks"]}
            ],
        },
    }
    path.write_text(json.dumps(document))
    return path


CANDIDATE = (
    '"$DEPS/bin/hello" > hello.txt && cat "$DEPS/greeting" > greeting.txt'
    ' && echo candidate-was-here >> "$DEPS/greeting"'
    " && (cat {source}/greeting > leaked.txt 2>/dev/null || true)"
    ' && echo "$DEPS" > where.txt && echo "trial $SEVRO_TRIAL" >> "$SHARED/log"'
)


def test_candidate_and_checks_get_their_own_copies_and_share_the_cache(
    sevro_project: SevroProject, sources: Path
) -> None:
    config = configure(sources, ["candidate", "checks"])
    (sources / "deps" / "bin").chmod(0o555)  # a read-only directory in every copy
    workspaces = sources / "area" / "workspaces"  # its holder (kept readable) holds no source
    workspaces.mkdir(parents=True)
    case = sevro_project.case(
        checks=[
            shell("candidate-ran-the-seed", "grep -qx 'hello from the seed' hello.txt"),
            shell("candidate-read-it", "grep -qx seeded greeting.txt"),
            shell("check-copy-untouched", 'test "$(cat "$DEPS/greeting")" = seeded'),
            shell("check-runs-the-seed", '"$DEPS/bin/hello" | grep -q seed'),
            shell("private-roots", 'test "$DEPS" != "$(cat where.txt)"'),
            shell("source-hidden", "test ! -s leaked.txt"),
            shell("cache-shared", 'grep -qx "trial 1" "$SHARED/log"'),
        ]
    )
    script = CANDIDATE.replace("{source}", str(sources / "deps"))
    host = sevro_project.script(default=[[{"run": {"command": script}}, {"reply": {"text": "ok"}}]])
    flags = ("--runtime-config-file", config, "--workspace-root", workspaces)
    done = sevro_project.run(case, "--host-config", host, *flags)
    assert done.exit_code == 0, (done.stdout, done.stderr)
    assert list(workspaces.iterdir()) == []  # role roots, copies included, went with the trial
    evidence = trial_evidence(done.json())
    assert {c["id"]: c["status"] for c in evidence["checks"]} == {
        "candidate-ran-the-seed": "passed",
        "candidate-read-it": "passed",
        "check-copy-untouched": "passed",
        "check-runs-the-seed": "passed",
        "private-roots": "passed",
        "source-hidden": "passed",
        "cache-shared": "passed",
    }
    assert (sources / "deps" / "greeting").read_text() == "seeded\n"  # the source untouched
    assert (sources / "cache" / "log").read_text() == "trial 1\n"
    run = assert_valid_evidence(done.json())
    policy = run["configuration"]["redacted"]["runtimePolicy"]
    assert policy["seedDirectories"][0]["roles"] == ["candidate", "checks"]
    assert policy["seedDirectories"][0]["entries"] == 3
    assert policy["environment"]["set"]["DEPS"] == "{{sevro.runtime}}/deps"

    # the next run's trial sees what this one left in the shared cache
    again = sevro_project.run(case, "--host-config", host, *flags)
    assert again.exit_code == 0, (again.stdout, again.stderr)
    assert (sources / "cache" / "log").read_text() == "trial 1\ntrial 1\n"


def test_a_check_without_the_checks_role_gets_no_copy(
    sevro_project: SevroProject, sources: Path
) -> None:
    config = configure(sources, None)  # the default roles: not checks
    case = sevro_project.case(
        checks=[
            shell("candidate-had-it", "grep -qx seeded greeting.txt"),
            shell("check-has-none", 'test ! -e "$DEPS" && test -d "$SHARED"'),
            shell("control-check-has-one", 'test -e "$DEPS"'),
        ]
    )
    host = sevro_project.script(
        default=[
            [
                {"run": {"command": 'cat "$DEPS/greeting" > greeting.txt'}},
                {"reply": {"text": "ok"}},
            ]
        ]
    )
    done = sevro_project.run(case, "--host-config", host, "--runtime-config-file", config)
    assert done.exit_code == 1, (done.stdout, done.stderr)
    status = {c["id"]: c["status"] for c in trial_evidence(done.json())["checks"]}
    assert status == {
        "candidate-had-it": "passed",
        "check-has-none": "passed",
        "control-check-has-one": "failed",
    }


def isolation_with(tmp_path: Path, config: Path) -> Isolation:
    policy = load_runtime(tmp_path, config, CREDENTIALS, {"PATH": "/usr/bin:/bin"})
    isolation = trial_isolation(tmp_path)
    return evolve(isolation, selection=evolve(isolation.selection, runtime=policy))


def run(isolation: Isolation, command: str, role: str = "candidate") -> str:
    outcome = isolation.run(["/bin/sh", "-c", command], role=role, timeout_s=30, output_limit=4096)
    assert outcome.exit_code == 0, outcome.output
    return outcome.output.decode()


def test_a_seed_changed_before_its_first_use_is_refused_not_run(
    tmp_path: Path, sources: Path
) -> None:
    isolation = isolation_with(tmp_path, configure(sources, ["candidate", "checks"]))
    (sources / "deps" / "greeting").write_text("tampered\n")
    with pytest.raises(IsolationError, match="changed after the runtime configuration was read"):
        isolation.run(
            ["/bin/sh", "-c", "touch ran"], role="candidate", timeout_s=30, output_limit=0
        )
    with pytest.raises(IsolationError, match="changed after"):
        isolation.run(["/bin/true"], role="checks", timeout_s=30, output_limit=0)
    assert not (isolation.workspace / "ran").exists()


def test_a_seed_captured_once_is_what_every_later_role_gets(tmp_path: Path, sources: Path) -> None:
    isolation = isolation_with(tmp_path, configure(sources, ["candidate", "checks"]))
    assert run(isolation, 'cat "$DEPS/greeting"') == "seeded\n"
    (sources / "deps" / "greeting").write_text("changed after capture\n")
    assert run(isolation, 'cat "$DEPS/greeting"', role="checks") == "seeded\n"
    assert run(isolation, 'echo ok > "$DEPS/new" && cat "$DEPS/new"') == "ok\n"
    assert run(isolation, 'test ! -e "$DEPS/new" && echo private', role="checks") == "private\n"


@pytest.mark.parametrize("roles", [["candidate"], ["checks"]])
def test_a_seed_changed_between_load_and_capture_fails_the_trial(
    sevro_project: SevroProject,
    sources: Path,
    monkeypatch: pytest.MonkeyPatch,
    roles: list[str],
) -> None:
    """The runtime file is read at planning; the source changes as the trial starts, before any
    command captured it: the command that needs it does not run and nothing passes."""
    from sevro_core.run import engine
    from sevro_core.testing.inprocess import run_in_process

    real = engine.create_workspace

    def tampering(*args: Any, **kwargs: Any) -> Path:
        (sources / "deps" / "greeting").write_text("tampered\n")
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "create_workspace", tampering)
    config = configure(sources, roles)
    case = sevro_project.case(checks=[shell("uses-the-seed", 'test -e "$DEPS" || true')])
    host = sevro_project.script(
        default=[[{"run": {"command": 'test -e "$DEPS" || true'}}, {"reply": {"text": "ok"}}]]
    )
    done = run_in_process(
        [
            *("run", case, "--host-config", host, "--runtime-config-file", config),
            *("--json", "--results-root", sevro_project.results),
        ],
        cwd=sevro_project.root,
    )
    assert done.exit_code != 0, (done.stdout, done.stderr)
    (trial,) = done.json()["cases"][0]["trials"]
    assert trial["task"] != "passed"
    evidence = trial_evidence(done.json())
    assert "changed after the runtime configuration was read" in json.dumps(evidence)
    if roles == ["candidate"]:  # the candidate's step could not run: the trial failed
        assert trial["execution"] == "failed"
        assert evidence["checks"] == []
    else:  # the candidate ran; the check that needed the seed is a grading error
        assert trial["execution"] == "completed"
        assert [c["status"] for c in evidence["checks"]] == ["unavailable"]
