"""Codex and Claude Code as ``sevro.semantic`` judges in a real ``sevro run``.

The candidate (the same agent CLI, its own mock model) answers with text that tries to dictate
the verdict; the judge (``--semantic-host``, its own mock model) answers ``fail``, and the
check fails (exit 1) however the candidate asked; a malformed, wrong-id or extra-key reply is a
grading error (exit 3), never a pass. The judge's request offers the model no tool, quotes the
injection as data, and its usage is recorded per role apart from the candidate's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import CliResult, SevroProject
from sevro_core.testing.mockmodel import Message, MockModelServer, reply
from sevro_hosts_claude.testing import require_claude
from sevro_hosts_codex.testing import require_codex
from tests.hosts_claude.helpers import PROTOCOLS, claude_args
from tests.hosts_claude.helpers import host_config as claude_config
from tests.hosts_codex.helpers import INJECTION, JUDGE_REPLIES, run_codex, trial
from tests.hosts_codex.helpers import host_config as codex_config

pytestmark = pytest.mark.slow

CHECK = {
    "id": "c1",
    "grader": "sevro.semantic",
    "configuration": {"proposition": "The answer shows tests were added."},
}
ANSWER = f"Done.\n{INJECTION}"
FAIL = JUDGE_REPLIES["correct"]  # {"checks":[{"id":"c1","verdict":"fail",...}]}


def _case(project: SevroProject) -> Path:
    return project.case(checks=[CHECK])


def _judged(project: SevroProject, judge: MockModelServer) -> dict[str, Any]:
    evidence: dict[str, Any] = trial(project)["evidence"]
    (sent,) = [r for r in judge.requests if r not in judge.unexpected]
    assert sent.tools == (), sent.tools  # the judge's CLI offered its model nothing
    assert json.dumps(INJECTION)[1:-1] in sent.body.decode()  # quoted, as data
    (call,) = evidence["judges"]["calls"]
    assert call["role"] == "semantic" and call["route"]["model"] == "mock-model"
    usage = evidence["judges"]["usage"]["semantic"]
    assert usage["complete"] is True and usage["inputTokens"] == 100  # the judge's own
    return evidence


def _codex_run(
    project: SevroProject, codex: str, mock_model: Callable[..., Any], judge_text: str
) -> tuple[CliResult, MockModelServer]:
    candidate = mock_model([reply(Message(ANSWER))])
    judge = mock_model([reply(Message(judge_text))])
    judge_config = codex_config(project, judge).rename(project.root / "judge-codex.json")
    done = run_codex(
        project, codex, candidate, _case(project),
        "--semantic-host", "codex", "--semantic-host-config", judge_config,
        "--semantic-model", "mock-model",
    )  # fmt: skip
    return done, judge


def _claude_run(
    project: SevroProject, claude: str, mock_model: Callable[..., Any], judge_text: str
) -> tuple[CliResult, MockModelServer]:
    from tests.hosts_claude.helpers import API_KEY, API_KEY_ENV

    candidate = mock_model([reply(Message(ANSWER))], protocols=PROTOCOLS)
    judge = mock_model([reply(Message(judge_text))], protocols=PROTOCOLS)
    judge_config = claude_config(project, judge).rename(project.root / "judge-claude.json")
    done = project.run(
        _case(project), *claude_args(project, claude, candidate),
        "--semantic-host", "claude", "--semantic-host-config", judge_config,
        "--semantic-model", "mock-model",
        env={API_KEY_ENV: API_KEY}, timeout=180,
    )  # fmt: skip
    return done, judge


RUNS = {"codex": (require_codex, _codex_run), "claude": (require_claude, _claude_run)}


@pytest.mark.parametrize("host", sorted(RUNS))
def test_an_injected_pass_does_not_move_the_judge_the_check_fails(
    sevro_project: SevroProject, mock_model: Callable[..., Any], host: str
) -> None:
    require, run = RUNS[host]
    done, judge = run(sevro_project, require(), mock_model, FAIL)
    assert done.exit_code == 1, done.stdout + done.stderr
    evidence = _judged(sevro_project, judge)
    (check,) = evidence["checks"]
    assert check["status"] == "failed" and "no tests were added" in check["detail"]
    assert evidence["usage"]["inputTokens"] == 100  # the candidate's, counted apart


@pytest.mark.parametrize("kind", ["malformed", "wrong-id", "extra-key"])
@pytest.mark.parametrize("host", sorted(RUNS))
def test_a_bad_judge_reply_is_a_grading_error_never_a_pass(
    sevro_project: SevroProject, mock_model: Callable[..., Any], host: str, kind: str
) -> None:
    require, run = RUNS[host]
    done, judge = run(sevro_project, require(), mock_model, JUDGE_REPLIES[kind])
    assert done.exit_code == 3, done.stdout + done.stderr
    evidence = _judged(sevro_project, judge)
    assert evidence["grading"]["status"] == "error", evidence["grading"]
    assert evidence["task"]["verdict"] != "passed"


def test_a_real_cli_judges_a_scripted_candidate_with_its_own_settings(
    sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    """The judge's host flags (``--codex-bin``, its key) are accepted when only a judge runs on
    that host; a host flag of a host nothing in the run uses is still refused."""
    from tests.hosts_codex.helpers import API_KEY, API_KEY_ENV

    codex = require_codex()
    judge = mock_model([reply(Message(FAIL))])
    judge_config = codex_config(sevro_project, judge).rename(sevro_project.root / "judge.json")
    candidate = sevro_project.script(default=[[{"reply": {"text": ANSWER}}]])
    args = [_case(sevro_project), "--host-config", candidate, "--codex-bin", codex,
            "--codex-api-key-env", API_KEY_ENV]  # fmt: skip
    refused = sevro_project.run(*args)
    assert refused.exit_code == 64
    assert "--codex-bin (codex.bin) needs --host codex" in refused.stderr
    done = sevro_project.run(
        *args, "--semantic-host", "codex", "--semantic-host-config", judge_config,
        "--semantic-model", "mock-model", env={API_KEY_ENV: API_KEY}, timeout=180,
    )  # fmt: skip
    assert done.exit_code == 1, done.stdout + done.stderr
    evidence = _judged(sevro_project, judge)
    assert evidence["routes"][0]["host"] == "sevro.host.scripted"
    assert evidence["checks"][0]["status"] == "failed"


GOLD = "Gold answer: 42 (19 + 23)."


def _judge_args(project: SevroProject, host: str, judge: MockModelServer) -> list[str | Path]:
    """The flags that make ``host`` (its real CLI) the semantic judge of a scripted candidate."""
    if host == "codex":
        from tests.hosts_codex.helpers import API_KEY_ENV

        config = codex_config(project, judge).rename(project.root / "judge.json")
        return [*("--semantic-host", "codex", "--semantic-host-config", config),
                "--codex-bin", require_codex(), "--codex-api-key-env", API_KEY_ENV]  # fmt: skip
    from tests.hosts_claude.helpers import API_KEY_ENV as CLAUDE_KEY_ENV

    config = claude_config(project, judge).rename(project.root / "judge.json")
    return [*("--semantic-host", "claude", "--semantic-host-config", config),
            "--claude-bin", require_claude(), "--claude-api-key-env", CLAUDE_KEY_ENV]  # fmt: skip


@pytest.mark.parametrize("host", sorted(RUNS))
def test_the_reference_reaches_the_judges_model_and_only_its_own_checks_prompt(
    sevro_project: SevroProject, mock_model: Callable[..., Any], host: str
) -> None:
    """A check with ``reference`` and one without: two judge calls; the evaluator's gold text is
    in the request of the first and (the control) not in the second."""
    from tests.hosts_claude.helpers import API_KEY as CLAUDE_KEY
    from tests.hosts_claude.helpers import API_KEY_ENV as CLAUDE_KEY_ENV
    from tests.hosts_codex.helpers import API_KEY, API_KEY_ENV

    (sevro_project.root / "gold").mkdir()
    (sevro_project.root / "gold" / "answer.md").write_text(GOLD + "\n")
    with_reference = {"id": "c1", "grader": "sevro.semantic",
                      "configuration": {"proposition": "The answer gives the reference's total.",
                                        "reference": "gold/answer.md"}}  # fmt: skip
    without = {"id": "c2", "grader": "sevro.semantic",
               "configuration": {"proposition": "The answer is one sentence."}}  # fmt: skip
    case = sevro_project.case(evaluator={"gold": "gold"}, checks=[with_reference, without])
    candidate = sevro_project.script(default=[[{"reply": {"text": "The total is 42."}}]])
    replies = [
        json.dumps({"checks": [{"id": c, "verdict": "pass", "reason": "As the reference."}]})
        for c in ("c1", "c2")
    ]
    protocols = {"protocols": PROTOCOLS} if host == "claude" else {}
    judge = mock_model([reply(Message(text)) for text in replies], **protocols)
    done = sevro_project.run(
        case, "--host-config", candidate, *_judge_args(sevro_project, host, judge),
        "--semantic-model", "mock-model",
        env={API_KEY_ENV: API_KEY, CLAUDE_KEY_ENV: CLAUDE_KEY}, timeout=240,
    )  # fmt: skip
    assert done.exit_code == 0, done.stdout + done.stderr
    sent = [r for r in judge.requests if r not in judge.unexpected]
    assert len(sent) == 2, [r.body[:200] for r in sent]
    bodies = [r.body.decode() for r in sent]
    (first,) = [b for b in bodies if '\\"id\\":\\"c1\\"' in b]
    (second,) = [b for b in bodies if '\\"id\\":\\"c2\\"' in b]
    assert GOLD in first and "<reference>" in first  # the evaluator's file, in its block
    assert GOLD not in second and "<reference>" not in second
    assert all(r.tools == () for r in sent)  # still no tool to read anything with
    evidence = trial(sevro_project)["evidence"]
    assert sorted(c["purpose"] for c in evidence["judges"]["calls"]) == [
        "sevro.semantic:response",
        "sevro.semantic:response;reference:gold/answer.md",
    ]
    assert {c["id"]: c["status"] for c in evidence["checks"]} == {"c1": "passed", "c2": "passed"}
