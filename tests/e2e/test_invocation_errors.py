"""Bad input exits 64 with one line naming the file and pointer, before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sevro_core.schemas import validator
from sevro_core.testing import CliResult, SevroProject
from tests.e2e.helpers import regex_check


def assert_refused(done: CliResult, fragment: str, project: SevroProject) -> dict[str, object]:
    assert done.exit_code == 64, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sevro: error: "), done.stderr
    assert fragment in lines[0], lines[0]
    document = json.loads(done.stdout)
    assert not list(validator("cli-result.v1").iter_errors(document))
    assert document["exitCode"] == 64 and document["runId"] is None
    assert document["diagnostic"]["code"] == "sevro.invocation.invalid"
    assert not project.results.exists(), "nothing may be written before validation passes"
    return document


@pytest.fixture
def host(sevro_project: SevroProject) -> Path:
    return sevro_project.script(default=[[{"reply": {"text": "ok"}}]])


def test_schema_error_names_file_and_pointer(sevro_project: SevroProject, host: Path) -> None:
    case = sevro_project.write_json(
        "cases.json",
        [
            {
                "id": "a",
                "prompt": "p",
                "fixture": {"files": {}},
                "checks": [],
                "requiredEvidence": [],
            },
            {
                "id": "b",
                "prompt": "p",
                "fixture": {"files": {}},
                "checks": [{"id": "c", "grader": "sevro.regex", "configuration": {}, "oops": 1}],
                "requiredEvidence": [],
            },
        ],
    )
    assert_refused(
        sevro_project.run(case, "--host-config", host),
        f"{case}#/1/checks/0/oops: unknown key 'oops'",
        sevro_project,
    )


def test_duplicate_key_is_refused(sevro_project: SevroProject, host: Path) -> None:
    case = sevro_project.root / "dup.json"
    case.write_text('{"id": "a", "id": "b", "prompt": "p"}')
    assert_refused(
        sevro_project.run(case, "--host-config", host),
        f"{case}#/id: duplicate key 'id'",
        sevro_project,
    )


def test_unsafe_fixture_path(sevro_project: SevroProject, host: Path) -> None:
    case = sevro_project.case(fixture={"files": {"../escape": "x"}})
    assert_refused(
        sevro_project.run(case, "--host-config", host),
        f"{case}#/fixture/files/..~1escape: path '../escape'",
        sevro_project,
    )


def test_unknown_grader(sevro_project: SevroProject, host: Path) -> None:
    case = sevro_project.case(checks=[{"id": "x", "grader": "acme.missing", "configuration": {}}])
    assert_refused(
        sevro_project.run(case, "--host-config", host),
        f"{case}#/checks/0/grader: unknown grader 'acme.missing'",
        sevro_project,
    )


def test_bad_grader_configuration(sevro_project: SevroProject, host: Path) -> None:
    case = sevro_project.case(checks=[regex_check("x", "a", flags="q")])
    assert_refused(
        sevro_project.run(case, "--host-config", host),
        f"{case}#/checks/0/configuration/flags",
        sevro_project,
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--trials", "0"], "--trials must be between 1 and 10000, not 0"),
        (["--trials", "abc"], "'abc' is not a valid integer"),
        (["--jobs", "0"], "--jobs must be between 1 and 64"),
        (["--threshold", "0"], "--threshold must be in (0, 1], not 0.0"),
        (["--threshold", "1.5"], "--threshold must be in (0, 1]"),
        (["--threshold", "nan"], "--threshold must be in (0, 1]"),
        (
            ["--condition", "enforced"],
            "--condition enforced is not supported by sevro.host.scripted",
        ),
        (["--condition", "bold"], "--condition must be passive or enforced"),
        (
            ["--host", "nope"],
            "--host 'nope' is not installed; available hosts: "
            "sevro.host.claude, sevro.host.codex, sevro.host.scripted",
        ),
        (["--no-such-flag"], "No such option"),
        (["--verdict-policy", "acme.x"], "--verdict-policy 'acme.x' is not installed"),
        (["--log-format", "xml"], "--log-format must be console or json"),
    ],
)
def test_bad_flags(sevro_project: SevroProject, host: Path, args: list[str], fragment: str) -> None:
    case = sevro_project.case()
    assert_refused(sevro_project.run(case, "--host-config", host, *args), fragment, sevro_project)


def test_missing_host_config(sevro_project: SevroProject) -> None:
    case = sevro_project.case()
    assert_refused(sevro_project.run(case), "the scripted host needs --host-config", sevro_project)


def test_invalid_host_config(sevro_project: SevroProject) -> None:
    host = sevro_project.write_json("host.json", {"default": {"turns": [[{"dance": {}}]]}})
    assert_refused(
        sevro_project.run(sevro_project.case(), "--host-config", host),
        f"{host}#/default/turns/0/0/dance: unknown key 'dance'",
        sevro_project,
    )


def test_script_without_the_follow_up_turn(sevro_project: SevroProject, host: Path) -> None:
    case = sevro_project.case(followUpPrompt="And then?")
    assert_refused(
        sevro_project.run(case, "--host-config", host),
        f"{host}#/default/turns: script has 1 turn(s) but case 'example' has 2",
        sevro_project,
    )


def test_follow_up_needs_a_continuing_host(sevro_project: SevroProject) -> None:
    plugin = sevro_project.root / "oneshot.py"
    plugin.write_text(
        "from sevro_core.hookspecs import hookimpl\n"
        "from sevro_core.models import Route\n"
        "class Bound:\n    route = Route('acme.host.oneshot', 'm', 'e')\n"
        "    capabilities = frozenset()\n"
        "    def redacted_configuration(self):\n        return {}\n"
        "    def check_case(self, case):\n        pass\n"
        "class OneShot:\n    id = 'acme.host.oneshot'\n    version = '1'\n"
        "    capabilities = frozenset()\n    requires = frozenset()\n"
        "    def configure(self, options):\n        return Bound()\n"
        "@hookimpl\ndef sevro_register_hosts(register):\n    register(OneShot())\n"
    )
    case = sevro_project.case(followUpPrompt="More.")
    assert_refused(
        sevro_project.run(case, "--plugin", plugin, "--host", "acme.host.oneshot"),
        f"{case}#/followUpPrompt: host acme.host.oneshot cannot continue",
        sevro_project,
    )


def test_required_evidence_nobody_produces(sevro_project: SevroProject, host: Path) -> None:
    case = sevro_project.case(requiredEvidence=["sevro.codex.skill-reads"])
    assert_refused(
        sevro_project.run(case, "--host-config", host),
        f"{case}#/requiredEvidence/0: required evidence 'sevro.codex.skill-reads'",
        sevro_project,
    )


def test_missing_case_file(sevro_project: SevroProject, host: Path) -> None:
    missing = sevro_project.root / "missing.json"
    assert_refused(
        sevro_project.run(missing, "--host-config", host),
        f"{missing}: case file does not exist",
        sevro_project,
    )


def test_earlier_runs_are_kept_when_a_later_one_is_refused(
    sevro_project: SevroProject, host: Path
) -> None:
    good = sevro_project.run(sevro_project.case(), "--host-config", host)
    assert good.exit_code == 0
    kept = sorted(sevro_project.results.rglob("*"))
    bad = sevro_project.run(sevro_project.case("bad.json", prompt=""), "--host-config", host)
    assert bad.exit_code == 64
    assert sorted(sevro_project.results.rglob("*")) == kept


def test_human_mode_prints_one_line_and_nothing_on_stdout(
    sevro_project: SevroProject, host: Path
) -> None:
    done = sevro_project.sevro("run", sevro_project.case(prompt=" "), "--host-config", host)
    assert done.exit_code == 64 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1


def test_validate_command(sevro_project: SevroProject) -> None:
    good = sevro_project.case(checks=[regex_check("r", "x")])
    done = sevro_project.sevro("validate", good)
    assert done.exit_code == 0 and done.stdout.strip() == "1 case(s) valid"
    bad = sevro_project.case("bad.json", id="bad", checks=[regex_check("r", "(")])
    done = sevro_project.sevro("validate", good, bad)
    assert done.exit_code == 64
    assert done.stderr.startswith(f"sevro: error: {bad}#/checks/0/configuration/pattern")
