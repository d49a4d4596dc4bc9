"""`sevro doctor --host scripted` probes sevro's sandbox for real, as `run` steps would use it."""

from __future__ import annotations

import textwrap

from sevro_core.testing import SevroProject, require_sandbox

LEAKY_SANDBOX = textwrap.dedent("""
    from sevro_core.plugin.hookspecs import hookimpl
    from sevro_core.plugin.protocols import SandboxProbe


    class Leaky:
        '''Claims to work and isolates nothing: the doctor's probe must catch it.'''

        id = "acme.sandbox.leaky"
        version = "1.0.0"
        capabilities = frozenset()
        requires = frozenset()

        def probe(self):
            return SandboxProbe(True, "acme leaky sandbox")

        def wrap(self, argv, policy):
            return list(argv)


    @hookimpl
    def sevro_register_sandboxes(register):
        register(Leaky())
""")


def lines(stdout: str) -> list[str]:
    return stdout.splitlines()


def test_doctor_scripted_passes_with_a_working_sandbox(sevro_project: SevroProject) -> None:
    require_sandbox()
    done = sevro_project.sevro("doctor", "--host", "scripted")
    assert done.exit_code == 0, done.stdout + done.stderr
    assert lines(done.stdout)[0] == "sevro doctor: sevro.host.scripted"
    assert lines(done.stdout)[1].startswith("  ok   sandbox: bubblewrap ")
    assert "the network denied" in done.stdout


def test_doctor_scripted_fails_without_a_sandbox(sevro_project: SevroProject) -> None:
    done = sevro_project.sevro("doctor", "--host", "scripted", env={"PATH": "/nonexistent"})
    assert done.exit_code == 1, done.stdout + done.stderr
    assert lines(done.stdout)[1].startswith(
        "  FAIL sandbox: no sandbox backend works here (sevro.sandbox.bwrap: bwrap is not on PATH"
    )
    assert lines(done.stdout)[2].startswith("       fix: install bubblewrap")


def test_doctor_scripted_fails_when_isolation_is_opted_out(sevro_project: SevroProject) -> None:
    done = sevro_project.sevro("doctor", "--host", "scripted", "--sandbox", "none")
    assert done.exit_code == 1
    assert "FAIL sandbox: isolation disabled by --sandbox none" in done.stdout


def test_doctor_probe_catches_a_backend_that_isolates_nothing(
    sevro_project: SevroProject,
) -> None:
    plugin = sevro_project.root / "leaky.py"
    plugin.write_text(LEAKY_SANDBOX)
    done = sevro_project.sevro(
        "--plugin", plugin, "doctor", "--host", "scripted", "--sandbox", "acme.sandbox.leaky"
    )
    assert done.exit_code == 1, done.stdout + done.stderr
    assert lines(done.stdout)[1] == (
        "  FAIL sandbox: acme leaky sandbox: a command could read a protected file"
    )


def test_sandbox_flag_is_refused_for_hosts_with_their_own_sandbox(
    sevro_project: SevroProject,
) -> None:
    done = sevro_project.sevro("doctor", "--host", "codex", "--sandbox", "none")
    assert done.exit_code == 64
    assert done.stderr.strip() == (
        "sevro: error: --sandbox applies to hosts that run commands in sevro's sandbox"
    )
