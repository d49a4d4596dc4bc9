"""Bad input exits 64 with one line naming the file and pointer, before anything runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sevro_core.formats.schemas import validator
from sevro_core.testing import CliResult, SevroProject, require_tool
from tests.e2e.helpers import load, regex_check


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
            "sevro.host.claude, sevro.host.codex, sevro.host.pi, sevro.host.scripted",
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
        "from sevro_core.plugin.hookspecs import hookimpl\n"
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


# --- red-team findings (issue 12): each refused at load, exit 64, one line, nothing written ---


def assert_refused_anywhere(done: CliResult, fragment: str, project: SevroProject) -> None:
    """``assert_refused`` for commands that name their own results root (or none)."""
    before = sorted(p.relative_to(project.root) for p in project.root.rglob("*"))
    assert_refused(done, fragment, project)
    after = sorted(p.relative_to(project.root) for p in project.root.rglob("*"))
    assert after == before, "nothing may be written before validation passes"


@pytest.mark.parametrize(
    ("literal", "fragment"),
    [
        ("1e400", "number 1e400 overflows a double (not finite)"),
        ("-1e400", "number -1e400 overflows a double (not finite)"),
        ("NaN", "number NaN is not finite"),
        ("-Infinity", "number -Infinity is not finite"),
        ("9007199254740993", "number 9007199254740993 is outside the exact integer range"),
    ],
)
def test_non_finite_and_inexact_numbers_are_refused_with_a_pointer(
    sevro_project: SevroProject, host: Path, literal: str, fragment: str
) -> None:
    case = sevro_project.root / "case.json"
    case.write_text(
        '{"id": "n", "prompt": "p", "fixture": {"files": {}}, "requiredEvidence": [],'
        ' "checks": [{"id": "j", "grader": "sevro.json",'
        f' "configuration": {{"pointer": "/v", "equals": {literal}}}}}]}}'
    )
    where = f"{case}#/checks/0/configuration/equals: "
    assert_refused(sevro_project.run(case, "--host-config", host), where + fragment, sevro_project)
    validated = sevro_project.sevro("validate", case)
    assert validated.exit_code == 64, validated.stderr
    assert validated.stderr.startswith(f"sevro: error: {where}{fragment}")
    assert len(validated.stderr.splitlines()) == 1


def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def test_a_fifo_case_file_is_refused_without_blocking(
    sevro_project: SevroProject, host: Path
) -> None:
    case = fifo(sevro_project.root / "case.json")
    done = sevro_project.sevro(
        "run", case, "--host-config", host, "--json", "--results-root", sevro_project.results,
        timeout=30,
    )  # fmt: skip
    assert_refused(done, f"{case}: case file is not a regular file (a FIFO)", sevro_project)


def test_a_fifo_in_a_case_directory_is_refused(sevro_project: SevroProject, host: Path) -> None:
    sevro_project.case("cases/a.json")
    entry = fifo(sevro_project.root / "cases" / "b.json")
    done = sevro_project.sevro(
        "run", sevro_project.root / "cases", "--host-config", host, "--json",
        "--results-root", sevro_project.results, timeout=30,
    )  # fmt: skip
    assert_refused(done, f"{entry}: case file is not a regular file (a FIFO)", sevro_project)


def test_a_fifo_host_config_is_refused(sevro_project: SevroProject) -> None:
    config = fifo(sevro_project.root / "host.json")
    done = sevro_project.sevro(
        "run", sevro_project.case(), "--host-config", config, "--json",
        "--results-root", sevro_project.results, timeout=30,
    )  # fmt: skip
    assert_refused(
        done, f"{config}: host configuration is not a regular file (a FIFO)", sevro_project
    )


def test_a_fifo_source_map_is_refused(sevro_project: SevroProject, host: Path) -> None:
    sources = sevro_project.root / "sources"
    sources.mkdir()
    source_map = fifo(sevro_project.root / "map.json")
    done = sevro_project.sevro(
        "run", sevro_project.case(), "--host-config", host, "--json",
        "--results-root", sevro_project.results, "--case-source-root", sources,
        "--case-source-map-file", source_map, timeout=30,
    )  # fmt: skip
    assert_refused(
        done, f"{source_map}: case source map is not a regular file (a FIFO)", sevro_project
    )


def test_a_fifo_in_a_non_git_project_root_is_recorded_not_opened(
    sevro_project: SevroProject, host: Path
) -> None:
    """Documented in docs/identity.md: special files enter the project digest by kind only."""
    fifo(sevro_project.root / "src" / "pipe")
    done = sevro_project.sevro(
        "run", sevro_project.case(), "--host-config", host, "--json",
        "--results-root", sevro_project.results, timeout=60,
    )  # fmt: skip
    assert done.exit_code == 0, done.stderr
    first = load(done.json()["evidencePath"])["evaluationIdentity"]["dimensions"]
    (sevro_project.root / "src" / "pipe").unlink()
    (sevro_project.root / "src" / "pipe").write_text("")
    again = sevro_project.run(sevro_project.case(), "--host-config", host)
    second = load(again.json()["evidencePath"])["evaluationIdentity"]["dimensions"]
    assert first["projectDigest"] != second["projectDigest"]


def test_a_read_only_workspace_root_is_refused_up_front(
    sevro_project: SevroProject, host: Path
) -> None:
    """Even root cannot write a read-only mount; bubblewrap makes one for the test."""
    bwrap = require_tool("bwrap")
    workspaces = sevro_project.root / "workspaces"
    workspaces.mkdir()
    done = subprocess.run(
        [
            bwrap, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--ro-bind", str(workspaces), str(workspaces),
            sys.executable, "-m", "sevro_core", "run", str(sevro_project.case()),
            "--host-config", str(host), "--json", "--results-root", str(sevro_project.results),
            "--workspace-root", str(workspaces),
        ],
        cwd=sevro_project.root, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert_refused(
        CliResult(done.returncode, done.stdout, done.stderr),
        f"{workspaces}: --workspace-root is not writable",
        sevro_project,
    )


def test_nul_in_a_shell_command_is_refused(sevro_project: SevroProject, host: Path) -> None:
    case = sevro_project.case(
        checks=[{"id": "s", "grader": "sevro.shell", "configuration": {"run": "true\u0000x"}}]
    )
    assert_refused(
        sevro_project.run(case, "--host-config", host),
        f"{case}#/checks/0/configuration/run: run must not contain a NUL character",
        sevro_project,
    )
    script = sevro_project.script(
        "nul.json", default=[[{"run": {"command": "echo\u0000x"}}, {"reply": {"text": "ok"}}]]
    )
    assert_refused(
        sevro_project.run(sevro_project.case(), "--host-config", script),
        f"{script}#/default/turns/0/0/run/command: command must not contain a NUL character",
        sevro_project,
    )


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"$ref": "#/$defs/a"}}},
        {"not": {"$ref": "#"}},
    ],
    ids=["self", "a-b-a", "not-self"],
)
def test_a_self_referencing_schema_is_refused(
    sevro_project: SevroProject, host: Path, schema: dict[str, object]
) -> None:
    if "$defs" in schema:
        schema = {**schema, "$ref": "#/$defs/a"}
    case = sevro_project.case(
        checks=[{"id": "s", "grader": "sevro.schema", "configuration": {"schema": schema}}]
    )
    assert_refused(
        sevro_project.run(case, "--host-config", host),
        f"{case}#/checks/0/configuration/schema: $ref cycle",
        sevro_project,
    )


def test_a_recursive_schema_that_descends_is_accepted(sevro_project: SevroProject) -> None:
    """The negative control: recursion through ``properties`` consumes the document."""
    tree = {"type": "object", "properties": {"child": {"$ref": "#"}}}
    case = sevro_project.case(
        checks=[{"id": "s", "grader": "sevro.schema", "configuration": {"schema": tree}}]
    )
    done = sevro_project.sevro("validate", case)
    assert done.exit_code == 0, done.stderr


def test_fixture_paths_equal_under_unicode_normalization_are_refused(
    sevro_project: SevroProject, host: Path
) -> None:
    nfc, nfd = "caf\u00e9.txt", "cafe\u0301.txt"
    case = sevro_project.case(fixture={"files": {nfc: "a", nfd: "b"}})
    assert_refused(
        sevro_project.run(case, "--host-config", host),
        f"path {nfc!r} collides with {nfd!r} (the same path, ignoring case and Unicode "
        "normalization)",
        sevro_project,
    )


@pytest.mark.parametrize(
    ("flag", "value", "fragment"),
    [
        ("--results-root", "", "--results-root must not be empty"),
        ("--workspace-root", "", "--workspace-root must not be empty"),
        ("--project-root", " ", "--project-root must not be empty"),
        ("--host-config", "", "--host-config must not be empty"),
        ("--model", "", "--model must not be empty"),
        ("--model", "gpt\nrm -rf", "--model must be one line of printable text"),
        ("--model", " gpt", "--model must be one line of printable text"),
        ("--effort", "", "--effort must not be empty"),
        ("--effort", "high\n", "--effort must be one line of printable text"),
    ],
)
def test_empty_and_multi_line_flag_values_are_refused(
    sevro_project: SevroProject, host: Path, flag: str, value: str, fragment: str
) -> None:
    case = sevro_project.case()
    done = sevro_project.sevro("run", case, "--host-config", host, "--json", flag, value)
    assert_refused_anywhere(done, fragment, sevro_project)
    joined = sevro_project.sevro("run", case, "--host-config", host, "--json", f"{flag}={value}")
    assert_refused_anywhere(joined, fragment, sevro_project)


def test_an_empty_case_argument_is_refused(sevro_project: SevroProject, host: Path) -> None:
    done = sevro_project.sevro("run", "", "--host-config", host, "--json")
    assert_refused_anywhere(done, "an argument must not be empty", sevro_project)
