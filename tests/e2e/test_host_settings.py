"""Host settings come from the registry: every host's flags, `--host-setting KEY=VALUE`, doctor."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from sevro_core.testing import SevroProject
from tests.e2e.helpers import regex_check, trial_evidence

ECHO_HOST = textwrap.dedent("""
    import json

    from sevro_core.models import HostResult, Route
    from sevro_core.plugin.hookspecs import hookimpl
    from sevro_core.plugin.protocols import DoctorCheck, HostSetting


    class Bound:
        route = Route("acme.host.echo", "m", "e")
        capabilities = frozenset()

        def __init__(self, settings):
            self.settings = settings

        def redacted_configuration(self):
            return {}

        def check_case(self, case):
            pass

        def run(self, request):
            return HostResult(final_message=json.dumps(self.settings, sort_keys=True),
                              complete=True)


    class Echo:
        '''Replies with the settings it was given; its doctor checks the greeting is set.'''

        id = "acme.host.echo"
        version = "1.0.0"
        capabilities = frozenset()
        requires = frozenset()
        settings = (
            HostSetting("acme.greeting", "--acme-greeting", "What to say.", "string"),
            HostSetting("acme.home", "--acme-home", "Where acme lives.", "path"),
        )

        def configure(self, options):
            return Bound(dict(options.settings))

        def doctor(self, request):
            greeting = request.settings.get("acme.greeting")
            if greeting is None:
                return [DoctorCheck("greeting", False, "no greeting set", "pass --acme-greeting")]
            return [DoctorCheck("greeting", True, f"greeting is {greeting}")]


    @hookimpl
    def sevro_register_hosts(register):
        register(Echo())
""")

SILENT_HOST = ECHO_HOST.replace(
    "    def doctor(self, request):\n", "    def doctor(self, request):\n        return []\n"
)
assert SILENT_HOST != ECHO_HOST


def echo_plugin(project: SevroProject, source: str = ECHO_HOST) -> Path:
    plugin = project.root / "echo_host.py"
    plugin.write_text(source)
    return plugin


def assert_refused(done: object, message: str) -> None:
    assert done.exit_code == 64, (done.stdout, done.stderr)  # type: ignore[attr-defined]
    assert done.stderr.strip() == f"sevro: error: {message}"  # type: ignore[attr-defined]


def test_run_help_lists_every_host_flag_under_host_settings(sevro_project: SevroProject) -> None:
    plugin = echo_plugin(sevro_project)
    done = sevro_project.sevro("--plugin", plugin, "run", "--help")
    assert done.exit_code == 0, done.stderr
    host_section = done.stdout.split("Host settings:", 1)[1]
    for flag in ("--host-setting", "--codex-bin", "--claude-api-key-env", "--acme-greeting"):
        assert flag in host_section
    assert "--acme-greeting" not in sevro_project.sevro("run", "--help").stdout


@pytest.mark.parametrize("form", ["flags", "host-setting"])
def test_settings_reach_the_host_by_key(sevro_project: SevroProject, form: str) -> None:
    plugin = echo_plugin(sevro_project)
    home = sevro_project.root / "acme"
    expected = json.dumps({"acme.greeting": "hello", "acme.home": str(home)}, sort_keys=True)
    case = sevro_project.case(checks=[regex_check("echo", f"^{re.escape(expected)}$")])
    given = (
        ["--acme-greeting", "hello", "--acme-home", "acme"]
        if form == "flags"
        else ["--host-setting", "acme.greeting=hello", "--host-setting=acme.home=acme"]
    )
    done = sevro_project.run(
        case, "--plugin", plugin, "--host", "acme.host.echo", "--sandbox", "none", *given
    )
    assert done.exit_code == 0, done.stderr
    assert trial_evidence(done.json())["checks"][0]["status"] == "passed"


def test_no_settings_given_means_none_reach_the_host(sevro_project: SevroProject) -> None:
    plugin = echo_plugin(sevro_project)
    case = sevro_project.case(checks=[regex_check("echo", r"^\{\}$")])
    done = sevro_project.run(
        case, "--plugin", plugin, "--host", "acme.host.echo", "--sandbox", "none"
    )
    assert done.exit_code == 0, done.stderr


def test_a_flag_of_another_host_is_refused(sevro_project: SevroProject) -> None:
    plugin = echo_plugin(sevro_project)
    case = sevro_project.case()
    done = sevro_project.run(case, "--plugin", plugin, "--acme-greeting", "hi")
    assert_refused(
        done,
        "--acme-greeting (acme.greeting) needs --host acme.host.echo, an arm on that host or a "
        "judge on it (such as --semantic-host acme.host.echo)",
    )
    done = sevro_project.run(case, "--host", "claude", "--codex-api-key-env", "KEY")
    assert_refused(
        done,
        "--codex-api-key-env (codex.apiKeyEnv) needs --host codex, an arm on that host or a "
        "judge on it (such as --semantic-host codex)",
    )
    # How the candidate runs is not a judge's setting: a Codex judge alone is not enough.
    done = sevro_project.run(
        case, "--semantic-host", "codex", "--codex-entrypoint", "app-server", "--sandbox", "none"
    )
    assert_refused(
        done,
        "--codex-entrypoint (codex.entrypoint) needs --host codex or an arm on that host: it "
        "sets how the candidate runs, a judge does not read it",
    )


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        (
            "acme.colour=red",
            "--host-setting 'acme.colour' is not a setting of any installed host (known: "
            "acme.greeting, acme.home, claude.allowWrite, claude.apiKeyEnv, claude.bin, "
            "claude.credentialFile, claude.projectSettings, claude.uvCacheDir, codex.apiKeyEnv, "
            "codex.authFile, codex.bin, codex.entrypoint, pi.api, pi.apiKeyEnv, pi.baseUrl, "
            "pi.bin, pi.credentialFile, pi.node)",
        ),
        (
            "codex.bin=/x",
            "--codex-bin (codex.bin) needs --host codex, an arm on that host or a judge on it "
            "(such as --semantic-host codex)",
        ),
        ("acme.greeting", "--host-setting must be KEY=VALUE with a non-empty KEY"),
        ("=hello", "--host-setting must be KEY=VALUE with a non-empty KEY"),
        ("acme.greeting= ", "--host-setting 'acme.greeting' must not have an empty value"),
    ],
)
def test_bad_host_setting_pairs_are_refused(
    sevro_project: SevroProject, pair: str, message: str
) -> None:
    plugin = echo_plugin(sevro_project)
    done = sevro_project.run(
        sevro_project.case(), "--plugin", plugin, "--host", "acme.host.echo", "--host-setting", pair
    )
    assert_refused(done, message)


def test_one_setting_given_twice_is_refused(sevro_project: SevroProject) -> None:
    plugin = echo_plugin(sevro_project)
    done = sevro_project.run(
        sevro_project.case(),
        "--plugin",
        plugin,
        "--host",
        "acme.host.echo",
        "--acme-greeting",
        "a",
        "--host-setting",
        "acme.greeting=b",
    )
    assert_refused(done, "acme.greeting is given twice (--acme-greeting and --host-setting)")


def test_doctor_of_a_plugin_host_gets_its_settings(sevro_project: SevroProject) -> None:
    plugin = echo_plugin(sevro_project)
    done = sevro_project.sevro(
        "--plugin", plugin, "doctor", "--host", "acme.host.echo", "--acme-greeting", "hi"
    )
    assert (done.exit_code, done.stdout) == (
        0,
        "sevro doctor: acme.host.echo\n  ok   greeting: greeting is hi\n",
    ), done.stderr
    done = sevro_project.sevro("--plugin", plugin, "doctor", "--host", "acme.host.echo")
    assert done.exit_code == 1
    assert (
        "FAIL greeting: no greeting set" in done.stdout
        and "fix: pass --acme-greeting" in done.stdout
    )


def test_doctor_of_a_host_without_checks_says_nothing_was_verified(
    sevro_project: SevroProject,
) -> None:
    plugin = echo_plugin(sevro_project, SILENT_HOST)
    done = sevro_project.sevro("--plugin", plugin, "doctor", "--host", "acme.host.echo")
    assert (done.exit_code, done.stdout) == (
        0,
        "sevro doctor: acme.host.echo\n"
        "  acme.host.echo declares no doctor checks: nothing was verified\n",
    )


@pytest.mark.parametrize(
    ("declaration", "message"),
    [
        (
            'HostSetting("acme.bin", "--codex-bin", "Clash.", "path")',
            "host setting flag --codex-bin is declared twice",
        ),
        (
            'HostSetting("codex.bin", "--acme-bin", "Clash.", "path")',
            "host setting key codex.bin is declared twice",
        ),
        (
            'HostSetting("acme.trials", "--trials", "Core.", "string")',
            "declares --trials, which is a flag of sevro itself",
        ),
        ('HostSetting("acme.n", "--acme-n", "N.", "number")', "of kind 'number'"),
        ('HostSetting("bin", "--acme-bin", "No namespace.", "path")', "invalid setting key 'bin'"),
        ('HostSetting("acme.bin", "-b", "Short.", "path")', "invalid flag '-b'"),
    ],
)
def test_bad_declarations_are_refused_at_plugin_load(
    sevro_project: SevroProject, declaration: str, message: str
) -> None:
    source = ECHO_HOST.replace(
        'HostSetting("acme.home", "--acme-home", "Where acme lives.", "path"),', declaration + ","
    )
    plugin = echo_plugin(sevro_project, source)
    for argv in (["run", sevro_project.case()], ["doctor", "--host", "scripted"], ["plugins"]):
        done = sevro_project.sevro("--plugin", plugin, *argv)
        assert done.exit_code == 64, (argv, done.stderr)
        assert message in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
