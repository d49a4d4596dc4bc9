"""The runtime file's top-level host-state opt-in (seed 002 ``codexState``): loading, identity,
the five reserved names, the read-only state bindings checks get, and the grading error when
the candidate host cannot supply them (docs/runtime.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sevro_core.isolation.candidateartifacts import STATE_NAMES
from sevro_core.models import StateBinding
from sevro_core.run.checkinputs import candidate_state
from sevro_core.testing import SevroProject, require_sandbox
from tests.e2e.helpers import assert_valid_evidence, trial_evidence
from tests.runtime.test_runtime_loading import area, doc, load, refused  # noqa: F401

KEY = "codex" + "State"


def test_the_opt_in_is_loaded_and_enters_the_policy_digest(area: Path) -> None:  # noqa: F811
    selected = load(area, doc(**{KEY: True}))
    plain = load(area, doc())
    off = load(area, doc(**{KEY: False}))
    assert selected.host_runtime().codex_state and not plain.host_runtime().codex_state
    assert selected.configuration()[KEY] is True
    assert KEY not in plain.configuration(), "not selected: the document is as before"
    assert off.configuration() == plain.configuration()
    assert selected.configuration()["digest"] != plain.configuration()["digest"]


@pytest.mark.parametrize(
    ("document", "fragment", "pointer"),
    [
        ({KEY: "yes"}, "", f"/{KEY}"),
        (
            {"runtime": {"artifactDirectories": [{"name": "codex_skills", "path": "x"}]}},
            "reserved for the host-state bindings",
            "/runtime/artifactDirectories/0/name",
        ),
    ],
)
def test_bad_selections_are_refused(
    area: Path,  # noqa: F811
    document: dict[str, object],
    fragment: str,
    pointer: str,
) -> None:
    refused(area, doc(**document), fragment, pointer)


def _bindings(tmp_path: Path) -> tuple[StateBinding, ...]:
    native, command = tmp_path / "native", tmp_path / "command"
    for directory in (native / "skills", native / ".agents/skills", command / ".agents/skills"):
        directory.mkdir(parents=True)
    (command / ".codex/skills").mkdir(parents=True)
    (native / "config.toml").write_text("model = 'x'\n")
    return (
        StateBinding("codex_config", native, "config.toml", file=True),
        StateBinding("codex_skills", native, "skills"),
        StateBinding("agent_skills", native, ".agents/skills"),
        StateBinding("command_agent_skills", command, ".agents/skills"),
        StateBinding("command_codex_skills", command, ".codex/skills"),
    )


def test_clean_state_is_granted_read_only_by_the_five_variables(tmp_path: Path) -> None:
    bindings = _bindings(tmp_path)
    granted = candidate_state(True, "h", bindings)
    assert granted.problem is None
    assert sorted(granted.environment) == sorted(
        f"SEVRO_CANDIDATE_ARTIFACT_{n.upper()}" for n in STATE_NAMES
    )
    assert granted.environment["SEVRO_CANDIDATE_ARTIFACT_CODEX_CONFIG"] == str(
        tmp_path / "native" / "config.toml"
    )
    assert set(granted.read_only) == {Path(v) for v in granted.environment.values()}
    assert candidate_state(False, "h", ()).problem is None, "not selected: nothing needed"


def _problem(tmp_path: Path, bindings: tuple[StateBinding, ...]) -> str:
    granted = candidate_state(True, "h", bindings)
    assert granted.problem is not None and not granted.environment
    return granted.problem


def test_missing_or_unsafe_state_is_a_problem_never_a_grant(tmp_path: Path) -> None:
    bindings = _bindings(tmp_path)
    assert "supplies no SEVRO_CANDIDATE_ARTIFACT_AGENT_SKILLS" in _problem(tmp_path, ())
    assert "supplies no" in _problem(tmp_path, bindings[1:])
    skills = tmp_path / "native" / "skills"
    (skills / "link").symlink_to("/etc/passwd")
    assert "holds a symbolic link 'link'" in _problem(tmp_path, bindings)
    (skills / "link").unlink()
    os.mkfifo(skills / "pipe")
    assert "holds a special file 'pipe'" in _problem(tmp_path, bindings)
    (skills / "pipe").unlink()
    config = tmp_path / "native" / "config.toml"
    os.link(config, tmp_path / "hard")
    assert "is a hard link" in _problem(tmp_path, bindings)
    (tmp_path / "hard").unlink()
    assert candidate_state(True, "h", bindings).problem is None, "the control: clean again"
    config.unlink()
    config.mkdir()  # configuration cannot be replaced by a directory
    assert "is not a regular file" in _problem(tmp_path, bindings)
    config.rmdir()
    config.symlink_to(tmp_path / "command" / ".codex")
    assert "symbolic link on its way" in _problem(tmp_path, bindings)
    config.unlink()
    assert "does not exist" in _problem(tmp_path, bindings)


def test_a_host_that_supplies_no_state_makes_every_check_a_grading_error(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    require_sandbox()
    checks = [
        {"id": "t", "grader": "sevro.shell", "configuration": {"run": "true"}},
    ]
    case = sevro_project.case(checks=checks)
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    outcomes = {}
    for selected in (True, False):
        config = tmp_path / f"runtime-{selected}.json"
        config.write_text(json.dumps(doc(**({KEY: True} if selected else {}))))
        done = sevro_project.run(case, "--host-config", host, "--runtime-config-file", config)
        assert_valid_evidence(done.json())
        (check,) = trial_evidence(done.json())["checks"]
        outcomes[selected] = (done.exit_code, check["status"], check.get("detail") or "")
    code, status, detail = outcomes[True]
    assert status == "unavailable" and code != 0, outcomes
    assert "supplies no SEVRO_CANDIDATE_ARTIFACT_" in detail and "grader error" in detail
    assert outcomes[False][:2] == (0, "passed"), "the control: without the opt-in it passes"
