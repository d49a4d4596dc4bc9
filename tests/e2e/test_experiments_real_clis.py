"""``sevro run --skill DIR --baseline none`` through the real Codex and Claude Code CLIs against
the mock model: the engine mounts the candidate's skill (and an experiment file's context) where
each CLI looks, the CLI offers it to the model, a read is observed and stamped with the arm and
its target, and the baseline arm's trial offers nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from sevro_core.testing import SevroProject, require_sandbox
from sevro_core.testing.mockmodel import Message, MockModelServer, ToolCall, reply
from sevro_hosts_claude.testing import require_claude
from sevro_hosts_codex.testing import require_codex
from tests.e2e.helpers import assert_valid_evidence, load
from tests.hosts_claude.helpers import PROTOCOLS, run_claude
from tests.hosts_codex.helpers import run_codex, shell

pytestmark = pytest.mark.slow

NAME = "zephyr-ledger"
DESCRIPTION = "Balances zephyr ledgers q7v4 before a release."
CONTEXT = "House rule k9w2: answer in one word.\n"


def inputs(project: SevroProject) -> Any:
    project.skill(
        "skills/ledger", NAME, DESCRIPTION, "Add the columns twice.\n", **{"columns.md": "x\n"}
    )
    (project.root / "context").mkdir()
    (project.root / "context" / "rules.md").write_text(CONTEXT)
    project.case("cases/books.json", id="books", requiredEvidence=["sevro.skills"])
    return project.write_json(
        "experiment.json",
        {
            "format": "sevro.experiment.v1",
            "arms": {
                "baseline": {"skills": [], "target": None, "context": []},
                "candidate": {"skills": ["skills/ledger"], "target": NAME, "context": ["context"]},
            },
            "cases": ["cases"],
            "repetitions": 1,
        },
    )


def check(project: SevroProject, done: Any, server: MockModelServer) -> None:
    run = assert_valid_evidence(done.json())
    documents = {
        t["arm"]: load(project.results / done.json()["runId"] / t["path"]) for t in run["trials"]
    }
    skills = {
        arm: next(o for o in d["evidence"]["observations"] if o["id"] == "sevro.skills")["data"]
        for arm, d in documents.items()
    }
    assert skills["candidate"]["read"] == [NAME]
    assert (skills["candidate"]["arm"], skills["candidate"]["target"]) == ("candidate", NAME)
    assert [s["name"] for s in skills["candidate"]["offered"]] == [NAME]
    assert skills["baseline"]["offered"] == [] and skills["baseline"]["read"] == []
    assert (skills["baseline"]["arm"], skills["baseline"]["target"]) == ("baseline", None)
    # pair 1 runs baseline first (--jobs 1): its one request, then the candidate's
    baseline_request, candidate_request = (json.dumps(r.json()) for r in server.requests[:2])
    assert NAME not in baseline_request and DESCRIPTION not in baseline_request
    assert "House rule k9w2" not in baseline_request
    assert NAME in candidate_request and DESCRIPTION in candidate_request
    assert "House rule k9w2" in candidate_request


def test_codex_is_offered_the_candidates_mounted_skill_and_reads_it(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    codex = require_codex()
    require_sandbox()
    experiment = inputs(sevro_project)
    read = shell(f"cat .agents/skills/{NAME}/SKILL.md")
    server = mock_model([reply(Message("done")), reply(read), reply(Message("balanced"))])
    done = run_codex(sevro_project, codex, server, experiment, "--jobs", "1")
    assert done.exit_code == 0, done.stdout + done.stderr
    check(sevro_project, done, server)


def test_claude_code_is_offered_the_candidates_mounted_skill_and_reads_it(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    claude = require_claude()
    require_sandbox()
    experiment = inputs(sevro_project)
    read = ToolCall("Read", {"file_path": f".claude/skills/{NAME}/SKILL.md"})
    replies = [reply(Message("done")), reply(read), reply(Message("balanced"))]
    server = mock_model(replies, protocols=PROTOCOLS)
    done = run_claude(sevro_project, claude, server, experiment, "--jobs", "1")
    assert done.exit_code == 0, done.stdout + done.stderr
    check(sevro_project, done, server)


def test_codex_state_refuses_an_arm_whose_context_codex_would_not_send(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    """With ``codexState`` the project is untrusted and Codex skips its ``AGENTS.md``: an arm
    mounting context there is refused before anything runs (the candidate's context would
    silently never reach the model), while the same experiment without context is accepted."""
    codex = require_codex()
    require_sandbox()
    experiment = inputs(sevro_project)
    runtime = sevro_project.write_json(
        "runtime.json", {"format": "sevro.runtime.v1", "codexState": True}
    )
    server = mock_model([reply(Message("done"))])
    flags = ("--runtime-config-file", str(runtime), "--dry")
    done = run_codex(sevro_project, codex, server, experiment, *flags)
    assert done.exit_code == 64, done.stdout + done.stderr
    assert "arm 'candidate' mounts context into AGENTS.md, but codexState" in done.stderr
    assert server.requests == []
    document = json.loads(experiment.read_text())
    document["arms"]["candidate"]["context"] = []
    experiment.write_text(json.dumps(document))
    done = run_codex(sevro_project, codex, server, experiment, *flags)
    assert done.exit_code == 0, done.stdout + done.stderr
