"""``sevro run --extension-command-file``: the real CLI, the scripted host and the Node reference
extension, end to end (describe, resolve, prepare once, evaluate per trial)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.cliresult import CliResult
from tests.extensions.conftest import REFERENCE

SAYS_HELLO = [[{"run": {"command": "test -f notes/PREPARED.md"}}, {"reply": {"text": "hello"}}]]
SAYS_BYE = [[{"reply": {"text": "goodbye"}}]]
SECRET = "s3cr3t-extension-value-7f1c"
EXTENSION = "sevro-test.reference"


def _extension(project: SevroProject, node: str, source: Path = REFERENCE) -> list[str]:
    command = project.write_json("extension/command.json", [node, str(source)])
    return [
        "--extension-command-file",
        str(command),
        "--extension-source-file",
        str(source),
    ]


def _run(
    project: SevroProject, node: str, steps: Sequence[Any], *extra: str, case_id: str = "greets"
) -> CliResult:
    host = project.script(default=steps)
    return project.run(
        "--host",
        "scripted",
        "--host-config",
        host,
        "--project-root",
        project.root,
        "--sandbox",
        "none",
        *_extension(project, node),
        "--case-id",
        case_id,
        *extra,
    )


def _run_json(result: CliResult) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(Path(result.json()["evidencePath"]).read_text())
    return document


def _trial(result: CliResult, case_id: str = "greets") -> dict[str, Any]:
    path = Path(result.json()["evidencePath"]).parent / "cases" / case_id / "trial-1.json"
    evidence: dict[str, Any] = json.loads(path.read_text())["evidence"]
    return evidence


def test_an_extension_case_passes_when_the_agent_does_the_thing(
    sevro_project: SevroProject, node: str
) -> None:
    result = _run(sevro_project, node, SAYS_HELLO)
    assert result.exit_code == 0, result.stderr
    assert result.json()["task"]["verdict"] == "passed"
    run = _run_json(result)
    dimensions = run["evaluationIdentity"]["dimensions"]
    assert dimensions["extensionProtocol"] == "sevro.extension.v1"
    assert dimensions["extensionDigest"] == run["extension"]["sourceDigest"]
    assert len(run["extension"]["configurationDigest"]) == 64
    assert run["configuration"]["redacted"]["extension"]["id"] == "sevro-test.reference"
    assert run["graders"]["active"] == [
        {"id": "sevro-test.reference.answer", "source": "extension", "version": "1.0.0"}
    ]
    trial = _trial(result)
    assert trial["checks"] == [
        {
            "id": "sevro-test.reference.answer",
            "grader": "sevro-test.reference.answer",
            "status": "passed",
            "evidenceRefs": ["sevro.observation.final-message"],
        }
    ]
    lengths = [m for m in trial["metrics"] if m["id"] == "sevro-test.reference.message-length"]
    assert lengths == [{"id": lengths[0]["id"], "value": 5, "unit": "characters"}]
    assert trial["extension"]["preparation"]["artifacts"][0]["relativePath"] == "notes/PREPARED.md"


def test_an_extension_case_fails_when_the_agent_does_not(
    sevro_project: SevroProject, node: str
) -> None:
    """Negative control: the same case, an agent that never says hello."""
    result = _run(sevro_project, node, SAYS_BYE)
    assert result.exit_code == 1, result.stderr
    assert result.json()["task"]["verdict"] == "failed"
    assert _trial(result)["checks"][0]["status"] == "failed"


def test_the_identity_follows_the_extension_source(sevro_project: SevroProject, node: str) -> None:
    """Another extension source is another evaluation; the same source, the same identity."""
    first = _run_json(_run(sevro_project, node, SAYS_HELLO))
    again = _run_json(_run(sevro_project, node, SAYS_HELLO))
    copy = sevro_project.root / "extension" / "copy.js"
    copy.write_text(REFERENCE.read_text() + "\n// another revision\n")
    host = sevro_project.script(default=SAYS_HELLO)
    other = sevro_project.run(
        *("--host", "scripted", "--host-config", host, "--project-root", sevro_project.root),
        *("--sandbox", "none", "--case-id", "greets"),
        *_extension(sevro_project, node, copy),
    )
    assert other.exit_code == 0, other.stderr
    digest = first["evaluationIdentity"]["digest"]
    assert again["evaluationIdentity"]["digest"] == digest
    assert _run_json(other)["evaluationIdentity"]["digest"] != digest
    assert (
        _run_json(other)["evaluationIdentity"]["dimensions"]["extensionDigest"]
        != first["evaluationIdentity"]["dimensions"]["extensionDigest"]
    )


def test_a_source_changed_between_calls_fails_the_trial(
    sevro_project: SevroProject, node: str
) -> None:
    """The agent edits the extension between ``prepare`` and ``evaluate``: a grading error
    naming the file, never a pass (the unchanged run above passes)."""
    copy = sevro_project.root / "extension" / "copy.js"
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REFERENCE, copy)
    edit = {"run": {"command": f"echo '// edited' >> {copy}"}}
    host = sevro_project.script(default=[[edit, {"reply": {"text": "hello"}}]])
    result = sevro_project.run(
        *("--host", "scripted", "--host-config", host, "--project-root", sevro_project.root),
        *("--sandbox", "none", "--case-id", "greets"),
        *_extension(sevro_project, node, copy),
    )
    assert result.exit_code == 3, result.stderr
    assert result.json()["grading"]["status"] == "error"
    error = _trial(result)["grading"]["error"]["message"]
    assert f"extension source {copy} changed before evaluate" in error


def test_the_private_configuration_reaches_the_extension_but_never_the_evidence(
    sevro_project: SevroProject, node: str
) -> None:
    private = sevro_project.write_json("extension/private.json", {"sevro-test.key": SECRET})
    redacted = sevro_project.write_json("extension/redacted.json", {"sevro-test.key": "<set>"})
    result = _run(
        sevro_project,
        node,
        SAYS_HELLO,
        *("--extension-configuration-file", str(private)),
        *("--extension-redacted-configuration-file", str(redacted)),
    )
    assert result.exit_code == 0, result.stderr
    keys = [m for m in _trial(result)["metrics"] if m["id"].endswith(".configuration-keys")]
    assert keys[0]["value"] == 1  # the extension was given the private configuration
    assert _run_json(result)["extension"]["configuration"] == {"sevro-test.key": "<set>"}
    found = [
        path
        for path in sevro_project.results.rglob("*")
        if path.is_file() and SECRET.encode() in path.read_bytes()
    ]
    assert not found
    assert SECRET not in result.stdout + result.stderr
    # positive control of the search: the private file itself holds the secret
    assert SECRET.encode() in private.read_bytes()


def test_an_extension_policy_never_passes_a_failed_execution(
    sevro_project: SevroProject, node: str
) -> None:
    """The extension would recommend ``passed`` whatever happened; the host failed: evaluate is
    not even asked (Sevro), and the trial is not passed."""
    config = sevro_project.write_json("extension/private.json", {"sevro-test.recommend": "passed"})
    flags = (
        *("--task-verdict-policy", "sevro-test.reference.strict"),
        *("--extension-configuration-file", str(config)),
        *("--extension-redacted-configuration-file", str(config)),
    )
    failed = _run(sevro_project, node, [[{"fail": {"message": "agent crashed"}}]], *flags)
    assert failed.exit_code == 2, failed.stderr
    assert failed.json()["execution"]["status"] == "failed"
    assert failed.json()["task"]["verdict"] != "passed"
    assert _trial(failed)["taskVerdictPolicy"] == {
        "id": "sevro-test.reference.strict",
        "recommendation": None,
    }
    # evaluated and recommended passed, but its own check is unavailable (no final message):
    # grading is unavailable, so the guard keeps the trial from passing
    silent = _run(sevro_project, node, [[{"write": {"path": "x.txt", "content": "x"}}]], *flags)
    assert silent.json()["grading"]["status"] == "unavailable", silent.stderr
    assert _trial(silent)["taskVerdictPolicy"]["recommendation"] == "passed"
    assert silent.json()["task"]["verdict"] == "not_assessed"
    # positive control: the recommendation decides a completed, fully graded trial
    config.write_text(json.dumps({"sevro-test.recommend": "failed"}))
    overruled = _run(sevro_project, node, SAYS_HELLO, *flags)
    assert overruled.exit_code == 1, overruled.stderr
    assert _trial(overruled)["checks"][0]["status"] == "passed"
    assert overruled.json()["task"]["verdict"] == "failed"


def test_a_replaced_builtin_grader_is_not_run(sevro_project: SevroProject, node: str) -> None:
    """Case ``mixed`` declares a regex check that always fails beside the extension's."""
    kept = _run(sevro_project, node, SAYS_HELLO, case_id="mixed")
    assert kept.exit_code == 1, kept.stderr  # control: the regex check runs and fails
    replaced = _run(
        sevro_project,
        node,
        SAYS_HELLO,
        *("--replace-builtin-grader", "sevro.regex"),
        case_id="mixed",
    )
    assert replaced.exit_code == 0, replaced.stderr
    assert [c["id"] for c in _trial(replaced, "mixed")["checks"]] == ["sevro-test.reference.answer"]
    run = _run_json(replaced)
    assert [g["id"] for g in run["graders"]["active"]] == ["sevro-test.reference.answer"]
    assert run["graders"]["replacedDefaults"] == ["sevro.regex"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--case-id", "greets"], "--case-id needs --extension-command-file"),
        (["--task-verdict-policy", "acme.x"], "--task-verdict-policy needs"),
        (["CASE", "EXT", "--case-id", "greets"], "exclusive"),
        (["EXT"], "needs --case-id"),
        (["EXT", "--case-id", "nope"], "returned no case for --case-id 'nope'"),
        (["EXT", "--case-id", "greets", "--extension-configuration-file", "CFG"], "together"),
        (
            ["EXT", "--case-id", "greets", *(["--replace-builtin-grader", "sevro.regex"] * 2)],
            "same grader twice",
        ),
        (["EXT", "--case-id", "greets", "--replace-builtin-grader", "Bad"], "not a namespaced"),
        (
            ["EXT", "--case-id", "greets", "--replace-builtin-grader", "sevro.regex"],
            "the case declares no check with this grader",
        ),
        (
            ["EXT", "--case-id", "greets", "--replace-builtin-grader", f"{EXTENSION}.answer"],
            "names a grader of the extension",
        ),
        (
            ["EXT", "--case-id", "greets", "--task-verdict-policy", "acme.unknown"],
            "does not advertise task-verdict policy acme.unknown",
        ),
        (["EXT", "--case-id", "greets", "--skill", "SKILL"], "--skill cannot be combined"),
    ],
)
def test_bad_extension_flags_exit_64_with_one_line(
    sevro_project: SevroProject, node: str, arguments: list[str], message: str
) -> None:
    case = sevro_project.case()
    config = sevro_project.write_json("extension/private.json", {})
    replaced: list[str] = []
    for argument in arguments:
        if argument == "EXT":
            replaced += _extension(sevro_project, node)
        else:
            table = {"CASE": str(case), "CFG": str(config), "SKILL": str(sevro_project.root)}
            replaced.append(table.get(argument, argument))
    host = sevro_project.script(default=SAYS_HELLO)
    result = sevro_project.sevro(
        "run", "--host", "scripted", "--host-config", host, "--sandbox", "none", *replaced
    )
    assert result.exit_code == 64, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert not sevro_project.results.exists()


def test_a_run_settings_file_names_the_extension(sevro_project: SevroProject, node: str) -> None:
    """The extension flags from ``--run-settings-file`` (relative to it), ``--case-id`` given."""
    source = sevro_project.root / "settings" / "extension.js"
    source.parent.mkdir()
    shutil.copyfile(REFERENCE, source)
    sevro_project.write_json("settings/command.json", [node, str(source)])
    settings = sevro_project.write_json(
        "settings/run.json",
        {
            "format": "sevro.run-settings.v1",
            "extensionCommandFile": "command.json",
            "extensionSourceFiles": ["extension.js"],
            "taskVerdictPolicy": f"{EXTENSION}.strict",
        },
    )
    host = sevro_project.script(default=SAYS_HELLO)
    result = sevro_project.run(
        *("--host", "scripted", "--host-config", host, "--project-root", sevro_project.root),
        *("--sandbox", "none", "--case-id", "greets", "--run-settings-file", settings),
    )
    assert result.exit_code == 0, result.stderr
    run = _run_json(result)
    assert run["configuration"]["redacted"]["runSettings"]["applied"] == [
        "--extension-command-file",
        "--extension-source-file",
        "--task-verdict-policy",
    ]
    assert run["extension"]["replacements"]["taskVerdictPolicy"] == f"{EXTENSION}.strict"
    # negative control: a listed source that does not exist is refused before anything runs
    settings.write_text(settings.read_text().replace('"extension.js"', '"missing.js"'))
    refused = sevro_project.run(
        *("--host", "scripted", "--host-config", host, "--case-id", "greets"),
        *("--sandbox", "none", "--run-settings-file", settings),
    )
    assert refused.exit_code == 64
    assert "#/extensionSourceFiles/0: no such file" in refused.stderr


def test_a_registered_verdict_policy_wins_over_the_extension(
    sevro_project: SevroProject, node: str
) -> None:
    """``--task-verdict-policy`` naming a Python policy: the extension is asked for none."""
    config = sevro_project.write_json("extension/private.json", {"sevro-test.recommend": "failed"})
    result = _run(
        sevro_project,
        node,
        SAYS_HELLO,
        *("--task-verdict-policy", "sevro.verdict.default"),
        *("--extension-configuration-file", str(config)),
        *("--extension-redacted-configuration-file", str(config)),
    )
    assert result.exit_code == 0, result.stderr  # the recommendation "failed" was never asked
    run = _run_json(result)
    assert run["verdictPolicy"]["id"] == "sevro.verdict.default"
    assert run["extension"]["replacements"]["taskVerdictPolicy"] is None
    assert "taskVerdictPolicy" not in _trial(result)


def test_instrumentation_the_scripted_host_does_not_offer_exits_64(
    sevro_project: SevroProject, node: str
) -> None:
    """The scripted host offers no instrumentation: a request is refused before any trial."""
    config = sevro_project.write_json(
        "extension/private.json", {"sevro-test.instrument": ["sevro.claude.tool-calls"]}
    )
    result = _run(
        sevro_project,
        node,
        SAYS_HELLO,
        *("--extension-configuration-file", str(config)),
        *("--extension-redacted-configuration-file", str(config)),
    )
    assert result.exit_code == 64, result.stderr
    assert "sevro.claude.tool-calls" in result.stderr and "does not offer" in result.stderr
    assert not (sevro_project.results / "cases").exists()
