"""`sevro run --run-settings-file`: recurring selections from a file, a flag beating the file,
the file's use in the run's identity, and bad files refused with one line before anything runs."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from sevro_core.formats.schemas import validator
from sevro_core.testing import SevroProject, require_tool
from tests.e2e.helpers import assert_valid_evidence, load, regex_check, trial_evidence
from tests.e2e.test_host_settings import echo_plugin

FORMAT = "sevro.run-settings.v1"


def scripted(project: SevroProject, **settings: Any) -> tuple[Path, Path]:
    """A ready case, its scripted host under ``settings/`` and a settings file naming it by a
    path relative to the file (the test's working directory is the project root)."""
    case = project.case(checks=[regex_check("ready", "^ready$")])
    project.script("settings/host.json", default=[[{"reply": {"text": "ready"}}]])
    document = {
        "format": FORMAT,
        "host": "scripted",
        "hostConfig": "host.json",
        "trials": 2,
        "sandbox": "none",
        "resultsRoot": "out",
        **settings,
    }
    return case, project.write_json("settings/run.json", document)


def test_a_real_scripted_run_takes_its_selections_from_the_file(
    sevro_project: SevroProject,
) -> None:
    case, settings = scripted(sevro_project)
    done = sevro_project.sevro("run", case, "--run-settings-file", settings, "--json")
    assert done.exit_code == 0, done.stderr
    result = done.json()
    run = assert_valid_evidence(result)
    out = (sevro_project.root / "settings" / "out").resolve()
    assert Path(result["evidencePath"]).is_relative_to(out), "resultsRoot is file-relative"
    assert not (sevro_project.root / "sevro-results").exists()
    assert len(result["cases"][0]["trials"]) == 2
    redacted = run["configuration"]["redacted"]
    assert redacted["trialCount"] == 2
    assert redacted["sandbox"]["backend"] == "none"
    digest = hashlib.sha256(settings.read_bytes()).hexdigest()
    assert redacted["runSettings"] == {
        "format": FORMAT,
        "digest": digest,
        "applied": ["--host", "--host-config", "--trials", "--sandbox", "--results-root"],
        "overridden": [],
    }
    note = f"sevro: run settings {settings} (sha256 {digest[:12]}): --host, --host-config, "
    assert note in done.stderr


def test_a_flag_beats_the_file_and_the_identity_says_so(sevro_project: SevroProject) -> None:
    case, settings = scripted(sevro_project)
    done = sevro_project.sevro(
        "run", case, "--run-settings-file", settings, "--trials", "1", "--json"
    )
    assert done.exit_code == 0, done.stderr
    run = assert_valid_evidence(done.json())
    redacted = run["configuration"]["redacted"]
    assert redacted["trialCount"] == 1  # the flag; without it the file's 2 (test above)
    assert redacted["runSettings"]["overridden"] == ["--trials"]
    assert "--trials" not in redacted["runSettings"]["applied"]
    assert "the command line gave --trials" in done.stderr


def test_the_settings_file_is_recorded_but_not_evaluated(sevro_project: SevroProject) -> None:
    """Same effective values by flags alone: only ``runSettings`` tells the two runs apart, and
    it is provenance: the configuration digest, the identity and ``--compare`` ignore it."""
    case, settings = scripted(sevro_project)
    by_file = sevro_project.sevro("run", case, "--run-settings-file", settings, "--json")
    host = sevro_project.root / "settings" / "host.json"
    out = sevro_project.root / "settings" / "out"
    by_flags = sevro_project.sevro(
        "run", case, "--host", "scripted", "--host-config", host, "--trials", "2",
        "--sandbox", "none", "--results-root", out, "--json",
    )  # fmt: skip
    assert (by_file.exit_code, by_flags.exit_code) == (0, 0), by_flags.stderr
    file_run = load(by_file.json()["evidencePath"])["configuration"]
    flag_run = load(by_flags.json()["evidencePath"])["configuration"]
    assert "runSettings" not in flag_run["redacted"]
    without = {k: v for k, v in file_run["redacted"].items() if k != "runSettings"}
    assert without == flag_run["redacted"]
    assert file_run["digest"] == flag_run["digest"]
    file_doc = load(by_file.json()["evidencePath"])
    flag_doc = load(by_flags.json()["evidencePath"])
    assert file_doc["evaluationIdentity"]["digest"] == flag_doc["evaluationIdentity"]["digest"]
    compared = sevro_project.sevro(
        "report", Path(by_file.json()["evidencePath"]).parent,
        Path(by_flags.json()["evidencePath"]).parent, "--compare",
    )  # fmt: skip
    assert compared.exit_code in (0, 1), compared.stderr  # compared, not refused (64)
    assert "the runs differ" not in compared.stderr
    # control: a real difference in what is evaluated still changes the digest
    other = sevro_project.sevro(
        "run", case, "--run-settings-file", settings, "--trials", "3", "--json",
    )  # fmt: skip
    assert other.exit_code == 0, other.stderr
    other_run = load(other.json()["evidencePath"])["configuration"]
    assert other_run["digest"] != file_run["digest"]


def test_dry_shows_what_the_file_decided(sevro_project: SevroProject) -> None:
    case, settings = scripted(sevro_project)
    done = sevro_project.sevro("run", case, "--run-settings-file", settings, "--dry", "--json")
    assert done.exit_code == 0, done.stderr
    run = load(done.json()["evidencePath"])
    assert run["configuration"]["redacted"]["executionMode"] == "dry"
    assert run["configuration"]["redacted"]["runSettings"]["applied"][0] == "--host"
    assert re.search(r"sevro: run settings .*: --host, --host-config, --trials", done.stderr)


def test_host_settings_come_from_the_file_and_a_flag_beats_one(
    sevro_project: SevroProject,
) -> None:
    plugin = echo_plugin(sevro_project)
    settings = sevro_project.write_json(
        "settings/run.json",
        {
            "format": FORMAT,
            "host": "acme.host.echo",
            "sandbox": "none",
            "hostSettings": {"acme.greeting": "from-file", "acme.home": "acme"},
        },
    )
    home = str(sevro_project.root / "settings" / "acme")  # relative to the file, not the cwd
    for given, greeting in (((), "from-file"), (("--acme-greeting", "flag"), "flag")):
        expected = json.dumps({"acme.greeting": greeting, "acme.home": home}, sort_keys=True)
        case = sevro_project.case(checks=[regex_check("echo", f"^{re.escape(expected)}$")])
        done = sevro_project.run(case, "--plugin", plugin, "--run-settings-file", settings, *given)
        assert done.exit_code == 0, done.stderr
        assert trial_evidence(done.json())["checks"][0]["status"] == "passed", greeting
        record = load(done.json()["evidencePath"])["configuration"]["redacted"]["runSettings"]
        assert ("hostSettings.acme.greeting" in record["overridden"]) == bool(given)


BAD = [
    ("missing", None, "sevro: error: "),
    ("not-json", b"{nope", "sevro: error: "),
    ("unknown key", {"format": FORMAT, "hots": "scripted"}, "/hots"),
    ("wrong type", {"format": FORMAT, "trials": "2"}, "/trials"),
    ("no format", {"host": "scripted"}, "format"),
    ("other format", {"format": "sevro.runtime.v1"}, "/format"),
    ("missing host config", {"format": FORMAT, "hostConfig": "nowhere.json"}, "/hostConfig"),
    (
        "missing judge config",
        {"format": FORMAT, "judges": {"semantic": {"host": "codex", "hostConfig": "no.json"}}},
        "/judges/semantic/hostConfig",
    ),
    ("unknown host setting", {"format": FORMAT, "hostSettings": {"acme.x": "1"}}, "acme.x"),
    ("zero trials", {"format": FORMAT, "trials": 0}, "/trials"),
]


@pytest.mark.parametrize(("name", "content", "says"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_settings_file_is_refused_before_anything_runs(
    sevro_project: SevroProject, name: str, content: Any, says: str
) -> None:
    path = sevro_project.root / "run-settings.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        sevro_project.write_json(path.name, content)
    case = sevro_project.case()
    done = sevro_project.run(case, "--run-settings-file", path)
    assert done.exit_code == 64, (name, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sevro: error: "), done.stderr
    assert says in lines[0] and "Traceback" not in done.stderr
    assert str(path) in lines[0] or name == "missing host config"
    assert not sevro_project.results.exists(), "nothing ran"


def test_the_published_schema_is_the_one_checked() -> None:
    """Positive and negative controls of the schema itself (docs/schemas/ links to it)."""
    check = validator("run-settings.v1")
    good = {"format": FORMAT, "judges": {"advisory": {"host": "claude", "exclude": ["a.txt"]}}}
    assert not list(check.iter_errors(good))
    assert list(check.iter_errors({**good, "judges": {"comparator": {"exclude": ["a"]}}}))
    link = Path(__file__).parents[2] / "docs" / "schemas" / "run-settings.v1.schema.json"
    assert link.is_symlink() and json.loads(link.read_text())["$id"].endswith("run-settings.v1")


def test_the_documented_settings_file_is_valid_and_a_changed_copy_is_not() -> None:
    text = (Path(__file__).parents[2] / "docs" / "running.md").read_text(encoding="utf-8")
    blocks = [json.loads(b) for b in re.findall(r"^```json\n(.*?)^```$", text, re.M | re.S)]
    documented = [b for b in blocks if isinstance(b, dict) and b.get("format") == FORMAT]
    assert len(documented) == 1
    check = validator("run-settings.v1")
    assert not list(check.iter_errors(documented[0]))
    assert list(check.iter_errors({**documented[0], "trial": 5}))


def test_a_flag_given_with_its_default_value_still_beats_the_file(
    sevro_project: SevroProject,
) -> None:
    case, settings = scripted(sevro_project, jobs=1)
    done = sevro_project.sevro(
        "run", case, "--run-settings-file", settings, "--jobs", "3", "--dry", "--json"
    )
    assert done.exit_code == 0, done.stderr
    redacted = load(done.json()["evidencePath"])["configuration"]["redacted"]
    assert (redacted["jobs"], redacted["runSettings"]["overridden"]) == (3, ["--jobs"])
    done = sevro_project.sevro("run", case, "--run-settings-file", settings, "--dry", "--json")
    assert load(done.json()["evidencePath"])["configuration"]["redacted"]["jobs"] == 1


def test_an_advisory_judge_from_the_file_runs_as_the_same_flags_would(
    sevro_project: SevroProject,
) -> None:
    """The scripted host reviews as the advisory judge; its route and exclusions come from the
    file (config path relative to it) and match a run given the same flags."""
    from tests.judges.test_advisory_run import DAMNING, FIXTURE, PASSING, STEPS

    require_tool("git")
    case = sevro_project.case(fixture=FIXTURE, checks=PASSING)
    host = sevro_project.script(default=[STEPS])
    reply = [{"promptContains": "VISIBLE", "reply": json.dumps(DAMNING)}]
    judge = sevro_project.write_json("settings/judge.json", {"judges": {"advisory": reply}})
    settings = sevro_project.write_json(
        "settings/run.json",
        {
            "format": FORMAT,
            "judges": {
                "advisory": {"host": "scripted", "hostConfig": "judge.json", "exclude": ["notes"]}
            },
        },
    )
    by_file = sevro_project.run(case, "--host-config", host, "--run-settings-file", settings)
    assert by_file.exit_code == 0, by_file.stderr
    review = trial_evidence(by_file.json())["advisoryReview"]
    assert review["status"] == "completed" and review["findings"] == [DAMNING["findings"][0]]
    flags = ["--advisory-host", "scripted", "--advisory-host-config", judge]
    by_flags = sevro_project.run(case, "--host-config", host, *flags, "--advisory-exclude", "notes")
    assert by_flags.exit_code == 0, by_flags.stderr
    file_run = load(by_file.json()["evidencePath"])["configuration"]["redacted"]
    flag_run = load(by_flags.json()["evidencePath"])["configuration"]["redacted"]
    assert file_run["judges"] == flag_run["judges"]
    assert file_run["runSettings"]["applied"] == [
        "--advisory-host", "--advisory-host-config", "--advisory-exclude"
    ]  # fmt: skip
