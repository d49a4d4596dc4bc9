"""The call's spend ceiling passed on to the real ``claude`` (``--max-budget-usd``).

Claude Code prices what the mock Messages server reports by the model id it asked for, so the
tests ask for ``claude-sonnet-4-5`` ($3 per million input tokens, $15 per million output) and
have the mock report large usage: 100,000 input and 10 output tokens cost $0.30015. Claude
Code stops a process once its own spend reaches the budget it was given (``>=``), and reports
``total_cost_usd`` for the whole session, a ``--resume`` carrying the earlier turns' cost on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.models import CancelToken, HostRequest, HostResult
from sevro_core.plugin.protocols import HostOptions
from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, MockModelServer, reply
from sevro_hosts_claude.host import ClaudeHost, ClaudeTrial, ConfiguredClaudeHost
from sevro_hosts_claude.testing import require_claude
from tests.hosts_claude.helpers import API_KEY, API_KEY_ENV, PROTOCOLS, claude_args
from tests.hosts_codex.helpers import trial

pytestmark = pytest.mark.slow

MODEL = "claude-sonnet-4-5"
TURN_COST = 0.30015  # 100,000 input tokens at $3/M and 10 output tokens at $15/M
BUDGET = "--max-budget-usd"


@pytest.fixture
def claude(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    return require_claude()


@pytest.fixture
def model(mock_model: Callable[..., Any]) -> Callable[..., MockModelServer]:
    """A mock model answering ``turns`` prompts, each reply reporting ``tokens`` input."""

    def start(turns: int, tokens: int = 100_000) -> MockModelServer:
        usage = {"input": tokens, "cached": 0, "output": 10, "reasoning": 0}
        replies = [reply(Message(f"reply {n}"), usage=usage) for n in range(1, turns + 1)]
        return mock_model(replies, protocols=PROTOCOLS)  # type: ignore[no-any-return]

    return start


def configure(claude: str, origin: str, role: str) -> ConfiguredClaudeHost:
    config = {
        "format": "sevro.claude-host.v1",
        "baseUrl": origin,
        "turnTimeoutSeconds": 60,
        "maxRetries": 0,
    }
    settings = {"claude.bin": claude, "claude.apiKeyEnv": API_KEY_ENV}
    options = HostOptions(config=config, model=MODEL, settings=settings, role=role)
    configured = ClaudeHost().configure(options)
    assert isinstance(configured, ConfiguredClaudeHost)
    return configured


def request(tmp_path: Path, prompts: int, ceiling: float | None, role: str) -> HostRequest:
    workspace, private = tmp_path / "ws", tmp_path / "private"
    workspace.mkdir()
    private.mkdir(mode=0o700)
    return HostRequest(
        case_id="budgeted",
        trial=1,
        prompts=tuple(f"Prompt {n}." for n in range(1, prompts + 1)),
        workspace=workspace,
        condition="passive",
        cancel=CancelToken(),
        private_root=private,
        role=role,
        max_cost_usd=ceiling,
    )


class Run:
    """One call through the host, with the argv each turn's ``claude`` was started with."""

    def __init__(
        self,
        claude: str,
        server: MockModelServer,
        asked: HostRequest,
        edit: Callable[[int, list[str]], list[str]] | None = None,
    ) -> None:
        self.argvs: dict[int, list[str]] = {}
        trial = configure(claude, server.origin, asked.role).trial(asked)
        assert isinstance(trial, ClaudeTrial)
        planned = trial.argv

        def argv(number: int) -> list[str]:
            started = planned(number)
            started = edit(number, started) if edit is not None else started
            self.argvs[number] = started
            return started

        trial.argv = argv  # type: ignore[method-assign]
        self.result: HostResult = trial.run()

    def budgets(self) -> list[str | None]:
        """Each turn's ``--max-budget-usd`` value (None: the flag was not passed)."""
        found: list[str | None] = []
        for number in sorted(self.argvs):
            argv = self.argvs[number][self.argvs[number].index("-p") :]
            found.append(argv[argv.index(BUDGET) + 1] if BUDGET in argv else None)
            assert argv.count(BUDGET) <= 1
        return found

    def results(self) -> list[dict[str, Any]]:
        """Each turn's ``result`` event, in turn order."""
        found = []
        for artifact in sorted(self.result.artifacts, key=lambda a: a.id):
            if "events" not in artifact.id:
                continue
            lines = artifact.content.decode().splitlines()
            found += [json.loads(x) for x in lines if json.loads(x).get("type") == "result"]
        return found


def test_a_turn_over_the_ceiling_ends_as_an_execution_failure_naming_the_ceiling(
    claude: str, model: Callable[..., MockModelServer], tmp_path: Path
) -> None:
    server = model(1, tokens=1_000_000)  # $3.00015, far over the ceiling
    run = Run(claude, server, request(tmp_path, 1, 0.01, "candidate"))
    assert run.budgets() == ["0.01"]
    result = run.result
    assert result.execution_failed and not result.complete and result.final_message is None
    assert not result.cancelled
    assert result.error is not None
    assert "turn 1: the call's spend ceiling of $0.01 was reached" in result.error
    assert "--max-budget-usd 0.01" in result.error and "error_max_budget_usd" in result.error
    (ended,) = run.results()
    assert ended["subtype"] == "error_max_budget_usd" and ended["is_error"] is True
    # Claude Code's own figure is kept, over the ceiling: a response is paid before the check.
    assert result.usage.reported_cost_usd == pytest.approx(3.00015)
    # Its result's ``usage`` is all zero; the tokens come from the process's per-model usage,
    # and as nothing else ran the call's usage is complete and sevro prices it too.
    assert ended["usage"]["input_tokens"] == 0
    assert result.usage.input_tokens == 1_000_000 and result.usage.output_tokens == 10
    assert result.usage.complete and result.usage.cost_usd == pytest.approx(3.00015)
    assert len(server.requests) == 1


def test_each_turn_is_given_what_the_turns_before_left_of_the_ceiling(
    claude: str, model: Callable[..., MockModelServer], tmp_path: Path
) -> None:
    server = model(3)
    run = Run(claude, server, request(tmp_path, 3, 1.0, "candidate"))
    result = run.result
    assert result.error is None and result.complete and result.final_message == "reply 3"
    # Claude Code reports the session's cost so far (cumulative over --resume) ...
    totals = [r["total_cost_usd"] for r in run.results()]
    assert totals == pytest.approx([TURN_COST, 2 * TURN_COST, 3 * TURN_COST])
    # ... so turn n is given the ceiling less turn n-1's total, and the call costs the last.
    assert run.budgets() == ["1", "0.69985", "0.3997"]
    assert result.usage.reported_cost_usd == pytest.approx(3 * TURN_COST)
    assert result.usage.complete and result.usage.input_tokens == 300_000


def test_the_remainder_is_enforced_on_the_follow_up(
    claude: str, model: Callable[..., MockModelServer], tmp_path: Path
) -> None:
    server = model(2)  # turn 1 leaves $0.19985 of $0.5; turn 2 costs $0.30015
    run = Run(claude, server, request(tmp_path, 2, 0.5, "candidate"))
    assert run.budgets() == ["0.5", "0.19985"]
    result = run.result
    assert result.execution_failed and result.error is not None
    assert "turn 2: the call's spend ceiling of $0.5 was reached" in result.error
    assert "--max-budget-usd 0.19985" in result.error
    assert result.usage.reported_cost_usd == pytest.approx(2 * TURN_COST)
    assert result.usage.complete and result.usage.input_tokens == 200_000
    assert len(server.requests) == 2


def test_negative_control_no_ceiling_passes_no_budget(
    claude: str, model: Callable[..., MockModelServer], tmp_path: Path
) -> None:
    server = model(2, tokens=1_000_000)
    run = Run(claude, server, request(tmp_path, 2, None, "candidate"))
    assert run.budgets() == [None, None]
    assert run.result.error is None and run.result.complete
    assert run.result.usage.reported_cost_usd == pytest.approx(2 * 3.00015)


def test_a_ceiling_used_up_by_turn_one_never_starts_turn_two(
    claude: str, model: Callable[..., MockModelServer], tmp_path: Path
) -> None:
    """Claude Code stops at its budget, so a turn it finished always leaves something; turn 1
    runs here without the flag to stand for a turn that overran it (its $0.30015 against a
    $0.2 ceiling): what it reported is then the whole ceiling and more, and turn 2 must not
    start."""

    def unbudgeted_first(number: int, argv: list[str]) -> list[str]:
        if number == 1:
            at = argv.index(BUDGET)
            return [*argv[:at], *argv[at + 2 :]]
        return argv

    server = model(2)
    run = Run(claude, server, request(tmp_path, 2, 0.2, "candidate"), unbudgeted_first)
    result = run.result
    assert sorted(run.argvs) == [1] and len(server.requests) == 1  # turn 2 never ran
    assert result.execution_failed and not result.complete and result.error is not None
    assert result.error.startswith(
        "turn 2 not started: the call's spend ceiling of $0.2 is used up "
        "(Claude Code reported $0.30015 spent by turn 1)"
    )
    assert result.turns_completed == 1
    assert result.usage.reported_cost_usd == pytest.approx(TURN_COST)
    assert result.usage.complete and result.usage.cost_usd == pytest.approx(TURN_COST)


def test_a_judge_is_given_its_ceiling_the_same_way(
    claude: str, model: Callable[..., MockModelServer], tmp_path: Path
) -> None:
    server = model(1, tokens=1_000_000)
    run = Run(claude, server, request(tmp_path, 1, 0.25, "semantic"))
    assert run.budgets() == ["0.25"]
    assert "--safe-mode" in run.argvs[1]  # it ran as the judge
    assert run.result.execution_failed and run.result.error is not None
    assert "the call's spend ceiling of $0.25 was reached" in run.result.error


def test_negative_control_a_judge_within_its_ceiling_answers(
    claude: str, model: Callable[..., MockModelServer], tmp_path: Path
) -> None:
    server = model(1)
    run = Run(claude, server, request(tmp_path, 1, 0.5, "advisory"))
    assert run.budgets() == ["0.5"]
    assert run.result.error is None and run.result.final_message == "reply 1"


def test_the_ceiling_is_no_part_of_the_hosts_identity(claude: str, tmp_path: Path) -> None:
    """The evaluation identity holds the host's redacted configuration: the ceiling belongs
    to the request (what a run may spend), so two calls with different ceilings are the same
    evaluation; only their argv differs, by the flag."""
    host = configure(claude, "http://127.0.0.1:9", "candidate")
    argvs = []
    for ceiling in (None, 0.75):
        (tmp_path / str(ceiling)).mkdir()
        trial = host.trial(request(tmp_path / str(ceiling), 1, ceiling, "candidate"))
        trial.prepare()
        argv = trial.argv(1)
        argvs.append([a for a in argv if a != trial.session and str(tmp_path) not in a])
    assert "budget" not in json.dumps(host.redacted_configuration()).lower()
    unbudgeted, budgeted = argvs
    at = budgeted.index(BUDGET)
    assert budgeted[at : at + 2] == [BUDGET, "0.75"]
    assert [*budgeted[:at], *budgeted[at + 2 :]] == unbudgeted


def test_sevro_run_passes_the_per_call_ceiling_and_charges_the_overrun(
    sevro_project: SevroProject, claude: str, model: Callable[..., MockModelServer]
) -> None:
    """Through ``sevro run``: the engine's per-call ceiling reaches Claude Code over both
    turns, the follow-up stops at what turn 1 left, the trial is an execution failure naming
    the ceiling, and the journal reconciles the call at what it cost (an overrun), not more."""
    server = model(2)  # $0.30015 a turn against a $0.5 ceiling
    case = sevro_project.case(prompt="Prompt 1.", followUpPrompt="Prompt 2.")
    args = claude_args(sevro_project, claude, server)
    args[args.index("--model") + 1] = MODEL  # a model Claude Code prices
    done = sevro_project.run(
        case,
        *args,
        "--max-cost-usd", "5", "--max-call-cost-usd", "0.5",
        env={API_KEY_ENV: API_KEY},
        timeout=180,
    )  # fmt: skip
    assert done.exit_code == 2, done.stdout + done.stderr  # an execution failure
    execution = trial(sevro_project)["evidence"]["execution"]
    assert execution["status"] == "failed"
    assert "turn 2: the call's spend ceiling of $0.5 was reached" in execution["message"]
    assert "--max-budget-usd 0.19985" in execution["message"]
    run_id = done.json()["runId"]
    path = sevro_project.results / ".sevro-state" / "spend" / f"{run_id}.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["kind"], r["usd"]) for r in records] == [
        ("reserve", 0.5),
        ("reconcile", pytest.approx(2 * TURN_COST)),  # not the sum of the session's totals
    ]
    assert len(server.requests) == 2
