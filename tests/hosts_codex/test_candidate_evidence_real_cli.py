"""A real Codex run's transcripts and candidate artifacts reach checks (SEVRO_CANDIDATE_*)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_codex.testing import require_codex
from tests.hosts_codex.helpers import run_codex, shell, trial

pytestmark = pytest.mark.slow

TRANSCRIPTS = (
    'cd "$SEVRO_CANDIDATE_TRANSCRIPTS" && grep -q \'"capture": "complete"\' index.json'
    ' && grep -q \'"path": "codex/sevro.codex.events"\' index.json'
    ' && grep -q "$(sha256sum codex/sevro.codex.events | cut -d" " -f1)" index.json'
    " && grep -q turn.completed codex/sevro.codex.events"
)
ARTIFACT = 'grep -q passed "$SEVRO_CANDIDATE_ARTIFACT_REVIEWS/r.json"'
WRITE = 'mkdir -p "$HOME/.darrow/reviews" && echo passed > "$HOME/.darrow/reviews/r.json"'


def check(check_id: str, run: str) -> dict[str, Any]:
    return {"id": check_id, "grader": "sevro.shell", "configuration": {"run": run}}


@pytest.mark.parametrize("writes", [True, False])
def test_transcripts_and_artifacts_of_a_real_codex_run(
    sevro_project: SevroProject,
    mock_model: Callable[..., Any],
    tmp_path: Path,
    writes: bool,
) -> None:
    codex = require_codex()
    first = reply(shell(WRITE)) if writes else reply(shell("true"))
    server = mock_model([first, reply(Message("ready"))])
    config = tmp_path / "runtime.json"
    config.write_text(
        json.dumps(
            {
                "format": "sevro.runtime.v1",
                "runtime": {
                    "artifactDirectories": [{"name": "reviews", "path": ".darrow/reviews"}]
                },
            }
        )
    )
    case = sevro_project.case(
        checks=[check("transcripts", TRANSCRIPTS), check("artifact", ARTIFACT)]
    )
    done = run_codex(sevro_project, codex, server, case, "--runtime-config-file", str(config))
    checks = {c["id"]: c for c in trial(sevro_project)["evidence"]["checks"]}
    if writes:
        assert done.exit_code == 0, done.stdout + done.stderr + json.dumps(checks)
        assert {c["status"] for c in checks.values()} == {"passed"}
    else:  # the negative control: nothing written, every check a grading error
        assert {c["status"] for c in checks.values()} == {"unavailable"}, checks
        assert "does not exist" in checks["artifact"]["detail"]
        assert done.exit_code != 0
