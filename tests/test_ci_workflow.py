"""The documented GitHub Actions workflow cannot rot silently: it parses, docs/ci.md shows it as
committed, every ``sevro`` command it runs exists with every flag it passes, and the files it
publishes and uploads are the ones its run step writes."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import click
import pytest
import typer
import yaml

from sevro_core.cli import app

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "examples" / "ci" / "github-workflow.yml"


def workflow() -> dict[str, Any]:
    document = yaml.safe_load(WORKFLOW.read_text("utf-8"))
    assert isinstance(document, dict)
    return document


def steps() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = workflow()["jobs"]["evaluate"]["steps"]
    return found


def sevro_calls(script: str) -> list[list[str]]:
    """Each ``sevro ...`` command line of a step's script, as words (continuations joined)."""
    joined = script.replace("\\\n", " ")
    calls = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if "sevro" in words:
            calls.append(words[words.index("sevro") :])
    return calls


def flags_of(command: str) -> set[str] | None:
    group = typer.main.get_command(app)
    assert isinstance(group, click.Group)
    found = group.commands.get(command)
    if found is None:
        return None
    return {opt for param in found.params for opt in (*param.opts, *param.secondary_opts)}


def unknown_flags(words: list[str]) -> list[str]:
    """The flags of one ``sevro COMMAND ...`` call that COMMAND does not take."""
    command = words[1]
    known = flags_of(command)
    assert known is not None, f"sevro {command} does not exist"
    return [
        w.split("=")[0] for w in words[2:] if w.startswith("-") and w.split("=")[0] not in known
    ]


def test_the_workflow_is_the_one_docs_ci_shows() -> None:
    page = (ROOT / "docs" / "ci.md").read_text("utf-8")
    shown = re.findall(r"```yaml\n(.*?)```", page, re.DOTALL)
    assert WORKFLOW.read_text("utf-8") in shown
    assert "examples/ci/github-workflow.yml" in page


def test_every_sevro_call_uses_real_commands_and_flags() -> None:
    calls = [call for step in steps() for call in sevro_calls(step.get("run", ""))]
    assert [call[1] for call in calls] == ["doctor", "run", "view", "report"]
    for call in calls:
        assert unknown_flags(call) == [], call
    (run,) = (call for call in calls if call[1] == "run")
    assert {"--junit", "--github-summary", "--results-root"} <= set(run)


def test_the_flag_check_can_fail() -> None:
    """Negative control: a flag sevro does not have, and a command it does not have, are caught."""
    assert unknown_flags(["sevro", "run", "cases", "--junit", "x", "--junitt", "y"]) == ["--junitt"]
    assert unknown_flags(["sevro", "report", "r", "--github-summary=1"]) == []
    with pytest.raises(AssertionError, match="does not exist"):
        unknown_flags(["sevro", "publish", "--all"])


def test_what_is_published_is_what_the_run_writes() -> None:
    by_action = {step["uses"].split("@")[0]: step for step in steps() if "uses" in step}
    assert {"actions/checkout", "actions/upload-artifact", "mikepenz/action-junit-report"} <= set(
        by_action
    )
    calls = {call[1]: call for step in steps() for call in sevro_calls(step.get("run", ""))}
    run, view = calls["run"], calls["view"]
    junit = run[run.index("--junit") + 1]
    results = run[run.index("--results-root") + 1]
    report_dir = view[view.index("--out") + 1]
    assert by_action["mikepenz/action-junit-report"]["with"]["report_paths"] == junit
    uploaded = by_action["actions/upload-artifact"]["with"]["path"].split()
    assert {f"{results}/", report_dir} <= set(uploaded)
    assert view[2].startswith(results) and calls["report"][2] == results
    # the upload and the JUnit publication run also when the evaluation step failed
    for action in ("actions/upload-artifact", "mikepenz/action-junit-report"):
        assert by_action[action]["if"] == "${{ !cancelled() }}"
    assert workflow()["permissions"]["checks"] == "write"
