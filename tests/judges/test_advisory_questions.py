"""skill-eval ``review_questions`` reach the advisory reviewer's case and never the agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from sevro_core.run.skilleval import load_skilleval
from tests.skilleval import seed

QUESTION = "Did the second turn apply the first-turn guidance without redelivery?"


def test_review_questions_are_the_reviewers_not_the_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = seed.seed_repository(tmp_path / "repo").resolve()
    monkeypatch.chdir(repo)
    asked = seed.write_json(repo / "groups" / "asked.json", seed.body_group())
    _, cases = load_skilleval(asked, None)
    assert [c.review_questions for c in cases] == [(QUESTION,)]
    for case in cases:
        assert all(QUESTION not in prompt for prompt in case.prompts)
        assert QUESTION not in repr(case.declaration())
    silent = seed.write_json(
        repo / "groups" / "silent.json", {**seed.body_group(), "review_questions": []}
    )
    _, cases = load_skilleval(silent, None)
    assert [c.review_questions for c in cases] == [()]
