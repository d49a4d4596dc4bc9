"""Shell checks and sandbox selection through the real CLI and a real bubblewrap."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProcess, SevroProject, require_tool, start_sevro
from tests.e2e.helpers import assert_valid_evidence, load, regex_check, trial_evidence
from tests.e2e.test_invocation_errors import assert_refused

NO_SANDBOX_PLUGINS = {"SEVRO_LOAD_PLUGINS": "sevro-core,sevro-graders"}


def shell(check_id: str, run: str, **extra: Any) -> dict[str, Any]:
    return {"id": check_id, "grader": "sevro.shell", "configuration": {"run": run, **extra}}


def processes() -> str:
    return subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=False).stdout


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    require_tool("bwrap")


def test_shell_checks_grade_the_workspace_the_host_left(sevro_project: SevroProject) -> None:
    case = sevro_project.case(
        fixture={"files": {"src/app.txt": "v1\n"}},
        checks=[
            regex_check("said-done", "^done$"),
            shell("bumped", "grep -qx v2 src/app.txt"),
            shell("listing", "ls src", expectExact="app.txt"),
            shell("version", "cat src/app.txt", expectRegex="^v\\d$", notRegex="v1"),
        ],
    )
    host = sevro_project.script(
        default=[[{"run": {"command": "echo v2 > src/app.txt"}}, {"reply": {"text": "done"}}]]
    )
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 0, (done.stdout, done.stderr)
    run = assert_valid_evidence(done.json())
    evidence = trial_evidence(done.json())
    assert [c["status"] for c in evidence["checks"]] == ["passed"] * 4
    observations = {o["id"]: o for o in evidence["observations"]}
    assert observations["sevro.observation.shell.bumped"]["data"] == {
        "exitCode": 0,
        "expectedExitCode": 0,
    }
    assert observations["sevro.observation.shell.listing"]["data"]["stdoutByteLength"] == 8
    sandbox = evidence["sandbox"]
    assert sandbox["backend"] == "sevro.sandbox.bwrap" and sandbox["isolated"] is True
    assert sandbox["requested"] == "auto" and sandbox["network"] == "none"
    configured = run["configuration"]["redacted"]["sandbox"]
    assert configured == {
        "backend": "sevro.sandbox.bwrap",
        "version": sandbox["version"],
        "network": "none",
        "policyDigest": sandbox["policyDigest"],
    }
    assert run["graders"]["active"][-1] == {
        "id": "sevro.shell",
        "source": "sevro-graders",
        "version": "1.0.0",
    }


def test_a_failing_check_exits_1_and_a_timeout_exits_3(sevro_project: SevroProject) -> None:
    host = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    failing = sevro_project.case(checks=[shell("missing", "test -e nothing-here")])
    done = sevro_project.run(failing, "--host-config", host)
    assert done.exit_code == 1, done.stderr
    check = trial_evidence(done.json())["checks"][0]
    assert check["status"] == "failed" and check["detail"] == "exit code 1, expected 0"
    slow = sevro_project.case("slow.json", checks=[shell("slow", "sleep 30", timeoutMs=200)])
    done = sevro_project.run(slow, "--host-config", host)
    assert done.exit_code == 3, done.stderr
    evidence = trial_evidence(done.json())
    assert evidence["grading"]["error"] == {
        "checkId": "slow",
        "message": "the shell check timed out after 200 ms",
    }
    assert_valid_evidence(done.json())


def test_without_a_working_backend_shell_checks_error_and_commands_fail(
    sevro_project: SevroProject,
) -> None:
    host = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    case = sevro_project.case(checks=[regex_check("r", "done"), shell("s", "true")])
    done = sevro_project.run(case, "--host-config", host, env=NO_SANDBOX_PLUGINS)
    assert done.exit_code == 3, done.stderr
    assert "no isolation available" in done.stderr
    evidence = trial_evidence(done.json())
    assert evidence["checks"][0]["status"] == "passed"
    error = evidence["grading"]["error"]
    assert error["checkId"] == "s"
    assert error["message"].startswith("sevro.shell needs a sandbox: no sandbox backend works")
    assert evidence["sandbox"]["backend"] is None and evidence["sandbox"]["isolated"] is False
    run = assert_valid_evidence(done.json())
    assert run["configuration"]["redacted"]["sandbox"]["backend"] is None
    output_only = sevro_project.case("output.json", checks=[regex_check("r", "done")])
    assert (
        sevro_project.run(output_only, "--host-config", host, env=NO_SANDBOX_PLUGINS).exit_code == 0
    )
    runner = sevro_project.script(
        "runner.json", default=[[{"run": {"command": "true"}}, {"reply": {"text": "done"}}]]
    )
    done = sevro_project.run(output_only, "--host-config", runner, env=NO_SANDBOX_PLUGINS)
    assert done.exit_code == 2
    message = trial_evidence(done.json())["execution"]["message"]
    assert message.startswith("run step could not be isolated: no sandbox backend works")


BROKEN_SANDBOX = textwrap.dedent("""
    from sevro_core.plugin.hookspecs import hookimpl
    from sevro_core.plugin.protocols import SandboxProbe


    class Broken:
        id = "acme.sandbox.broken"
        version = "1.0.0"
        capabilities = frozenset()
        requires = frozenset()

        def probe(self):
            return SandboxProbe(False, "acme cannot sandbox on this machine")

        def wrap(self, argv, policy):
            raise AssertionError("never called")


    @hookimpl
    def sevro_register_sandboxes(register):
        register(Broken())
""")


def test_a_named_backend_that_is_missing_or_broken_is_refused(
    sevro_project: SevroProject,
) -> None:
    host = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    case = sevro_project.case(checks=[shell("s", "true")])
    done = sevro_project.run(
        case, "--host-config", host, "--sandbox", "bwrap", env=NO_SANDBOX_PLUGINS
    )
    assert_refused(done, "--sandbox 'bwrap' is not installed", sevro_project)
    plugin = sevro_project.root / "broken.py"
    plugin.write_text(BROKEN_SANDBOX)
    done = sevro_project.run(
        case, "--host-config", host, "--plugin", plugin, "--sandbox", "acme.sandbox.broken"
    )
    assert_refused(done, "does not work here: acme cannot sandbox on this machine", sevro_project)


def test_sandbox_none_is_loud_recorded_and_changes_the_identity(
    sevro_project: SevroProject,
) -> None:
    host = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    case = sevro_project.case(checks=[shell("s", "true")])
    isolated = sevro_project.run(case, "--host-config", host)
    opted_out = sevro_project.run(case, "--host-config", host, "--sandbox", "none")
    assert isolated.exit_code == 0 and opted_out.exit_code == 0, opted_out.stderr
    assert "isolation disabled by --sandbox none" in opted_out.stderr
    assert "isolation disabled" not in isolated.stderr
    evidence = trial_evidence(opted_out.json())
    assert evidence["sandbox"]["requested"] == "none" and evidence["sandbox"]["isolated"] is False
    runs = [assert_valid_evidence(d.json()) for d in (isolated, opted_out)]
    assert runs[1]["configuration"]["redacted"]["sandbox"]["backend"] == "none"
    digests = {r["evaluationIdentity"]["digest"] for r in runs}
    assert len(digests) == 2
    named = sevro_project.run(case, "--host-config", host, "--sandbox", "bwrap")
    assert (
        assert_valid_evidence(named.json())["evaluationIdentity"]["digest"]
        == runs[0]["evaluationIdentity"]["digest"]
    ), "auto and the backend it picks evaluate the same way"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--protected-root", "/no/such/root"], "--protected-root does not exist"),
        (["--protected-root", "/"], "--protected-root must not be /"),
        (["--workspace-root", "/"], "--workspace-root must not be /"),
        (["--sandbox", " "], "--sandbox must not be empty"),
        (["--sandbox", "chroot"], "--sandbox 'chroot' is not installed"),
    ],
)
def test_bad_isolation_flags_are_refused(
    sevro_project: SevroProject, args: list[str], fragment: str
) -> None:
    host = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    assert_refused(
        sevro_project.run(sevro_project.case(), "--host-config", host, *args),
        fragment,
        sevro_project,
    )


def test_protected_roots_join_the_policy(sevro_project: SevroProject, tmp_path: Path) -> None:
    private = tmp_path / "private-notes"
    private.mkdir()
    (private / "answer.txt").write_text("42\n")
    readable = tmp_path / "readable"
    readable.mkdir()
    (readable / "answer.txt").write_text("42\n")
    host = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    case = sevro_project.case(
        checks=[
            shell("hidden", f"! cat {private}/answer.txt"),
            shell("visible", f"cat {readable}/answer.txt", expectExact="42"),
        ]
    )
    workspaces = tmp_path / "ws"
    workspaces.mkdir()
    # not the system temp directory, which would hide tmp_path: it holds every workspace
    common = ("--host-config", host, "--workspace-root", workspaces)
    plain = sevro_project.run(case, *common)
    protected = sevro_project.run(case, *common, "--protected-root", private)
    assert protected.exit_code == 0, protected.stdout
    assert plain.exit_code == 1, "without the flag the file is readable"
    policy = [trial_evidence(d.json())["sandbox"]["policyDigest"] for d in (plain, protected)]
    assert policy[0] != policy[1]


FIXTURE_WITH_TOOLS = textwrap.dedent("""
    import os
    from sevro_core.plugin.hookspecs import hookimpl
    from sevro_core.plugin.protocols import MaterialisedFixture


    class Tools:
        capabilities = frozenset({"acme.fixture.tools"})

        def __init__(self, tools):
            self.tools = tools

        def identity(self):
            return {"tools": self.tools}

        def materialise(self, workspace):
            bin_dir = workspace / ".git" / "fixture-bin"
            os.makedirs(bin_dir, 0o700)
            for name, body in self.tools.items():
                (bin_dir / name).write_text(body)
                os.chmod(bin_dir / name, 0o755)
            return MaterialisedFixture(bin_dir=bin_dir)


    class Provider:
        id = "acme.fixture.tools"
        version = "1.0.0"
        capabilities = frozenset({"acme.fixture.tools"})
        requires = frozenset()

        def accepts(self, declaration):
            return declaration.get("kind") == "acme-tools"

        def compile(self, declaration, context=None):
            return Tools(dict(declaration["tools"]))


    @hookimpl
    def sevro_register_fixtures(register):
        register(Provider())
""")


def test_fixture_tools_are_on_path_for_host_commands_and_checks(
    sevro_project: SevroProject,
) -> None:
    plugin = sevro_project.root / "tools.py"
    plugin.write_text(FIXTURE_WITH_TOOLS)
    case = sevro_project.case(
        fixture={"kind": "acme-tools", "tools": {"stamp": "#!/bin/sh\necho stamped > stamp\n"}},
        checks=[shell("stamped", "cat stamp", expectExact="stamped"), shell("tool", "stamp")],
    )
    host = sevro_project.script(
        default=[[{"run": {"command": "stamp"}}, {"reply": {"text": "done"}}]]
    )
    done = sevro_project.run(case, "--host-config", host, "--plugin", plugin)
    assert done.exit_code == 0, (done.stdout, done.stderr)


def test_local_http_is_recorded_and_loopback_serves(sevro_project: SevroProject) -> None:
    server = (
        "import http.server, threading, urllib.request\n"
        "s = http.server.HTTPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)\n"
        "threading.Thread(target=s.serve_forever, daemon=True).start()\n"
        "print(urllib.request.urlopen(f'http://127.0.0.1:{s.server_port}/ok.txt').read().decode())"
    )
    case = sevro_project.case(
        fixture={"files": {"ok.txt": "served\n", "serve.py": server}},
        checks=[shell("served", "python3 serve.py", expectRegex="^served$")],
    )
    host = sevro_project.script(default=[[{"reply": {"text": "done"}}]])
    done = sevro_project.run(case, "--host-config", host, "--local-http")
    assert done.exit_code == 0, (done.stdout, done.stderr)
    assert trial_evidence(done.json())["sandbox"]["network"] == "localHttp"
    run = assert_valid_evidence(done.json())
    assert run["configuration"]["redacted"]["sandbox"]["network"] == "localHttp"


def start_sleeping_run(project: SevroProject, marker: str, workspaces: Path) -> SevroProcess:
    case = project.case(checks=[regex_check("r", "ok")])
    host = project.script(
        default=[[{"run": {"command": f"exec {marker}"}}, {"reply": {"text": "ok"}}]]
    )
    workspaces.mkdir()
    args = [case, "--host-config", host, "--workspace-root", workspaces, "--json"]
    process = start_sevro(["run", *args, "--results-root", project.results], cwd=project.root)
    process.wait_until(
        lambda: marker in processes(), timeout=30, what="the sandboxed command to start"
    )
    return process


def test_sigterm_cancels_a_sandboxed_command(sevro_project: SevroProject, tmp_path: Path) -> None:
    marker = f"sleep 37{os.getpid() % 1000}"
    process = start_sleeping_run(sevro_project, marker, tmp_path / "ws")
    process.send_signal(signal.SIGTERM)
    done = process.finish(timeout=60)
    assert done.exit_code == 143, done.stderr
    result = done.json()
    assert result["cases"][0]["trials"][0]["execution"] == "cancelled"
    assert_valid_evidence(result)
    assert marker not in processes()
    assert list((tmp_path / "ws").iterdir()) == []


def test_killing_sevro_kills_the_sandbox(sevro_project: SevroProject, tmp_path: Path) -> None:
    marker = f"sleep 38{os.getpid() % 1000}"
    process = start_sleeping_run(sevro_project, marker, tmp_path / "ws")
    process.send_signal(signal.SIGKILL)  # sevro alone: the sandbox must die with it
    process.finish(timeout=30)
    deadline = time.monotonic() + 10
    while marker in processes():
        assert time.monotonic() < deadline, "the sandbox outlived sevro"
        time.sleep(0.05)
    leftover = [load(p) for p in sevro_project.results.rglob("trial-*.json")]
    assert leftover == [], "a killed run writes no trial evidence"


def test_plugins_lists_the_sandbox_backends(sevro_project: SevroProject) -> None:
    done = sevro_project.sevro("plugins", "--json")
    assert done.exit_code == 0, done.stderr
    registered = {
        r["id"]: (p["distribution"], r)
        for p in done.json()["plugins"]
        for r in p["registers"]
        if r["kind"] == "sandbox"
    }
    assert set(registered) == {"sevro.sandbox.bwrap", "sevro.sandbox.sandbox-exec"}
    distribution, bwrap = registered["sevro.sandbox.bwrap"]
    assert distribution == "sevro-sandbox"
    assert bwrap["capabilities"] == ["sevro.sandbox.local-http", "sevro.sandbox.pid-namespace"]
