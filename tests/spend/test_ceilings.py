"""Spend ceilings end to end: every call reserves its ceiling in the run's journal before it
starts, the run stops at its ceiling (exit 5) keeping every finished trial, unknown costs are
charged at their ceiling, and a resumed run replays the journal (docs/spend.md).

The scripted host reports usage (its ``usage``), priced from the built-in table for ``gpt-5``
(USD 1.25 in, 10 out per million): 100 000 input and 10 000 output tokens cost $0.225 a call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sevro_core.formats.schemas import validator
from sevro_core.testing import CliResult, SevroProcess, SevroProject, start_sevro
from sevro_core.testing.background import SEVRO
from tests.e2e.helpers import assert_valid_evidence, regex_check
from tests.e2e.test_run_state import Scenario, runs
from tests.judges.helpers import verdicts

USAGE = {
    "inputTokens": 100_000,
    "outputTokens": 10_000,
    "cachedInputTokens": 0,
    "reasoningTokens": 0,
}
CALL_COST = 0.225


def host(project: SevroProject, *, usage: bool = True, **extra: Any) -> Path:
    config: dict[str, Any] = {
        "format": "sevro.scripted-host.v1",
        "model": "gpt-5",
        "default": {"turns": [[{"reply": {"text": "ok"}}]]},
        **extra,
    }
    if usage:
        config["usage"] = USAGE
    return project.write_json("host.json", config)


def ceiling_run(project: SevroProject, *flags: str, usage: bool = True) -> CliResult:
    """``sevro run --json`` of one case passing on ``ok``, its host reporting ``USAGE``."""
    case = project.case(checks=[regex_check("r", "^ok$")])
    return project.run(case, "--host-config", host(project, usage=usage), *flags)


def journal(project: SevroProject, run_id: str) -> list[dict[str, Any]]:
    path = project.results / ".sevro-state" / "spend" / f"{run_id}.jsonl"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    return [json.loads(line) for line in path.read_text().splitlines()]


def run_json(done: CliResult) -> dict[str, Any]:
    return assert_valid_evidence(done.json())


def kinds(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(r["kind"], r["call"]) for r in records]


def test_the_ceiling_stops_new_calls_and_keeps_finished_trials(
    sevro_project: SevroProject,
) -> None:
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    done = sevro_project.run(
        case, "--host-config", host(sevro_project), "--trials", "6", "--jobs", "1",
        "--max-cost-usd", "1", "--max-call-cost-usd", "0.3", "--accept-exposure",
    )  # fmt: skip
    assert done.exit_code == 5, done.stderr
    assert "sevro: spend: worst case $1.8 (6 candidate x $0.3); run ceiling $1" in done.stderr
    result = done.json()
    assert result["diagnostic"]["code"] == "sevro.spend.ceiling-reached"
    trials = result["cases"][0]["trials"]
    # 4 calls of $0.225 are $0.9; a fifth would reserve $0.3 and pass $1: it never starts
    assert [t["task"] for t in trials] == ["passed"] * 4 + ["not_assessed"] * 2
    assert [t["execution"] for t in trials[4:]] == ["not_run", "not_run"]
    run = run_json(done)
    assert run["status"] == "stopped"
    assert [t["path"] is not None for t in run["trials"]] == [True] * 4 + [False] * 2
    spend = run["spend"]
    assert spend["stopped"]["trialsNotStarted"] == 2
    assert spend["totals"]["chargedUsd"] == pytest.approx(4 * CALL_COST)
    assert spend["totals"]["openUsd"] == 0
    assert (spend["totals"]["reservations"], spend["totals"]["forfeits"]) == (4, 0)
    records = journal(sevro_project, result["runId"])
    assert kinds(records) == [
        (kind, f"1:{n}") for n in range(1, 5) for kind in ("reserve", "reconcile")
    ]  # every reservation came before its call and none after the stop
    assert [r["usd"] for r in records if r["kind"] == "reconcile"] == [CALL_COST] * 4
    assert spend["journal"]["records"] == 8
    runs = sevro_project.sevro("runs", "--json", "--results-root", sevro_project.results)
    (row,) = runs.json()["runs"]
    assert row["resumable"] is True  # resumable with a higher ceiling


def test_the_summary_says_the_ceiling_stopped_the_run(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    done = sevro_project.sevro(
        "run", case, "--host-config", host(sevro_project), "--trials", "3", "--jobs", "1",
        "--results-root", sevro_project.results,
        "--max-cost-usd", "0.6", "--max-call-cost-usd", "0.3", "--accept-exposure",
    )  # fmt: skip
    assert done.exit_code == 5, done.stderr
    assert "exit 5: stopped at the spend ceiling: the run's spend ceiling $0.6 is reached" in (
        done.stdout
    )
    assert "not run: the run's spend ceiling was reached before this trial" in done.stdout
    assert "spend: $0.4500 charged of the $0.6 ceiling over 2 calls" in done.stdout


def test_without_a_ceiling_in_reach_the_run_completes(sevro_project: SevroProject) -> None:
    """Control: the same run under a ceiling it never reaches runs every trial, exit 0."""
    done = ceiling_run(
        sevro_project, "--trials", "3", "--max-cost-usd", "1", "--max-call-cost-usd", "0.3"
    )
    assert done.exit_code == 0, done.stderr
    spend = run_json(done)["spend"]
    assert spend["stopped"] is None
    assert spend["exposure"] == {
        "calls": {"candidate": 3}, "worstCaseUsd": 0.9, "committedUsd": 0.0, "accepted": False,
    }  # fmt: skip
    assert spend["totals"]["chargedUsd"] == pytest.approx(3 * CALL_COST)


def test_exposure_over_the_ceiling_is_refused_before_anything_runs(
    sevro_project: SevroProject,
) -> None:
    done = ceiling_run(
        sevro_project, "--trials", "4", "--max-cost-usd", "1", "--max-call-cost-usd", "0.3"
    )
    assert done.exit_code == 64, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("sevro: error: spend: worst case $1.2 (4 candidate x $0.3)")
    assert "passes the run ceiling $1" in line and "--accept-exposure" in line
    assert not sevro_project.results.exists() or not any(sevro_project.results.iterdir())


def test_unknown_cost_is_charged_at_the_ceiling(sevro_project: SevroProject) -> None:
    """A call whose cost is unknown (no usage reported) forfeits its whole reservation."""
    done = ceiling_run(
        sevro_project, "--trials", "3", "--jobs", "1", "--max-cost-usd", "0.7",
        "--max-call-cost-usd", "0.3", "--accept-exposure", usage=False,
    )  # fmt: skip
    assert done.exit_code == 5, done.stderr  # 2 forfeits of $0.3: a third would pass $0.7
    records = journal(sevro_project, done.json()["runId"])
    assert kinds(records) == [
        ("reserve", "1:1"), ("forfeit", "1:1"), ("reserve", "1:2"), ("forfeit", "1:2"),
    ]  # fmt: skip
    assert {r["reason"] for r in records if r["kind"] == "forfeit"} == {"cost unknown"}
    totals = run_json(done)["spend"]["totals"]
    assert (totals["forfeits"], totals["forfeitedUsd"]) == (2, pytest.approx(0.6))
    assert totals["chargedUsd"] == pytest.approx(0.6)


def test_a_role_ceiling_leaves_the_judges_checks_unasked(sevro_project: SevroProject) -> None:
    """The semantic judge's own ceiling: once its next call would pass it, no new call of any
    role starts; the check it could not ask is unavailable, never a pass."""
    checks = [
        regex_check("r", "^ok$"),
        {
            "id": "says-ok",
            "grader": "sevro.semantic",
            "configuration": {"proposition": "The reply says ok."},
        },
    ]
    case = sevro_project.case(checks=checks)
    judge = host(
        sevro_project,
        judges={"semantic": [{"reply": verdicts(("says-ok", "pass", "It says ok."))}]},
    )
    done = sevro_project.run(
        case, "--host-config", judge, "--trials", "2", "--jobs", "1",
        "--semantic-host", "scripted", "--semantic-host-config", judge,
        "--max-cost-usd", "semantic=0.4", "--max-call-cost-usd", "candidate=0.3",
        "--max-call-cost-usd", "semantic=0.3", "--accept-exposure",
    )  # fmt: skip
    assert done.exit_code == 5, done.stderr
    trials = done.json()["cases"][0]["trials"]
    first, second = ({c["id"]: c["status"] for c in t["checks"]} for t in trials)
    assert first == {"r": "passed", "says-ok": "passed"}
    # trial 2's candidate call was reserved before the semantic ceiling was reached; its
    # judge call would take the semantic role to $0.225 + $0.3 > $0.4
    assert second == {"r": "passed", "says-ok": "unavailable"}
    run = run_json(done)
    (path,) = [t["path"] for t in run["trials"] if t["trial"] == 2]
    evidence = json.loads((Path(done.json()["evidencePath"]).parent / path).read_text())
    unasked = next(c for c in evidence["evidence"]["checks"] if c["id"] == "says-ok")
    assert unasked["detail"].startswith("not asked: the semantic spend ceiling $0.4 is reached")
    spend = run["spend"]
    assert spend["stopped"]["judgeCallsNotAsked"] == 1
    assert spend["totals"]["byRole"] == {
        "candidate": pytest.approx(2 * CALL_COST),
        "semantic": pytest.approx(CALL_COST),
    }


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-cost-usd", "1"], "the candidate calls have no per-call ceiling"),
        (["--max-cost-usd", "-1", "--max-call-cost-usd", "0.1"], "above 0"),
        (["--max-cost-usd", "nan", "--max-call-cost-usd", "0.1"], "above 0"),
        (["--max-cost-usd", "1", "--max-call-cost-usd", "robot=0.1"], "unknown role 'robot'"),
        (["--max-cost-usd", "1", "--max-call-cost-usd", "2"], "is above the run's ceiling $1"),
        (["--max-cost-usd", "1", "--max-cost-usd", "2", "--max-call-cost-usd", "0.1"], "twice"),
        (["--max-call-cost-usd", "0.1", "--max-cost-usd", "semantic=1"], "lacks"),
        (["--accept-exposure"], "--accept-exposure needs --max-cost-usd"),
    ],
)
def test_ceilings_that_cannot_work_exit_64(
    sevro_project: SevroProject, flags: list[str], message: str
) -> None:
    done = ceiling_run(sevro_project, *flags)
    assert done.exit_code == 64, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("sevro: error: ") and message in line, line
    assert "Traceback" not in done.stderr
    assert not sevro_project.results.exists() or not any(sevro_project.results.iterdir())


def test_a_stopped_run_resumes_under_a_higher_ceiling(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    config = host(sevro_project)
    base = [case, "--host-config", config, "--trials", "4", "--jobs", "1"]
    ceiling = ["--max-call-cost-usd", "0.3"]
    stopped = sevro_project.run(*base, "--max-cost-usd", "0.7", *ceiling, "--accept-exposure")
    assert stopped.exit_code == 5, stopped.stderr
    run_id = stopped.json()["runId"]
    still = sevro_project.run(*base, "--max-cost-usd", "0.9", *ceiling, "--resume")
    assert still.exit_code == 64, still.stderr  # $0.45 charged + 2 x $0.3 passes $0.9
    assert "$0.45 already charged or reserved + 2 candidate x $0.3" in still.stderr
    bare = sevro_project.run(*base, "--resume")
    assert bare.exit_code == 64, bare.stderr
    assert f"run {run_id} was started with a spend ceiling" in bare.stderr
    done = sevro_project.run(*base, "--max-cost-usd", "1.2", *ceiling, "--resume")
    assert done.exit_code == 0, done.stderr
    assert done.json()["runId"] == run_id
    run = run_json(done)
    last = run["attempts"][-1]["attempt"]  # the refused resumes were attempts too
    assert [(t["trial"], t["attempt"]) for t in run["trials"]] == [
        (1, 1), (2, 1), (3, last), (4, last),
    ]  # fmt: skip
    assert run["spend"]["totals"]["chargedUsd"] == pytest.approx(4 * CALL_COST)
    calls = [r["call"] for r in journal(sevro_project, run_id) if r["kind"] == "reserve"]
    assert calls == ["1:1", "1:2", f"{last}:1", f"{last}:2"]


class KilledRun(Scenario):
    """A run whose trial ``block_at`` blocks until the runner is SIGKILLed mid-call."""

    def start_with(self, *extra: str) -> SevroProcess:
        process = start_sevro(self.argv(*extra)[len(SEVRO) :], cwd=self.project.root)
        process.wait_until(self.blocked, timeout=30)
        return process


CEILING = ("--max-cost-usd", "5", "--max-call-cost-usd", "1", "--accept-exposure")


def test_sigkill_between_reservation_and_reconciliation_is_charged_in_full(
    sevro_project: SevroProject,
) -> None:
    """The runner dies with trial 3's call reserved and not reconciled: resume replays the
    journal and charges that reservation in full before anything else starts."""
    scenario = KilledRun(sevro_project, block_at=3)
    scenario.kill_runner(scenario.start_with(*CEILING))
    (row,) = runs(sevro_project)
    run_id = row["runId"]
    before = journal(sevro_project, run_id)
    assert kinds(before) == [
        ("reserve", "1:1"),
        ("forfeit", "1:1"),
        ("reserve", "1:2"),
        ("forfeit", "1:2"),
        ("reserve", "1:3"),
    ]  # fmt: skip  (the scripted host reports no usage here: cost unknown, forfeited)
    done = scenario.run("--resume", *CEILING)
    assert done.returncode == 0, done.stderr
    after = journal(sevro_project, run_id)
    assert after[: len(before)] == before, "the journal is only ever appended to"
    replayed = after[len(before)]
    assert (replayed["kind"], replayed["call"], replayed["usd"], replayed["attempt"]) == (
        "forfeit", "1:3", 1, 2,
    )  # fmt: skip
    assert replayed["reason"] == "unclosed at resume: the process died"
    assert kinds(after[len(before) + 1 :]) == [
        ("reserve", "2:1"), ("forfeit", "2:1"), ("reserve", "2:2"), ("forfeit", "2:2"),
    ]  # fmt: skip
    totals = assert_valid_evidence(json.loads(done.stdout))["spend"]["totals"]
    assert totals["chargedUsd"] == pytest.approx(5.0)  # 5 calls started, each charged $1
    assert (totals["reservations"], totals["forfeits"], totals["openUsd"]) == (5, 5, 0)


def test_a_run_without_a_journal_cannot_resume_with_a_ceiling(
    sevro_project: SevroProject,
) -> None:
    """Its earlier calls were never journaled: a ceiling could not account for them."""
    scenario = KilledRun(sevro_project, block_at=2, trials=2)
    scenario.kill_runner(scenario.start_with())
    done = scenario.run("--resume", *CEILING)
    assert done.returncode == 64, done.stderr
    assert "ran without a spend ceiling, so its earlier calls were never journaled" in (done.stderr)
    assert runs(sevro_project)[0]["resumable"] is True, "the refusal keeps it resumable"


def test_report_shows_reservations_and_forfeits(sevro_project: SevroProject) -> None:
    done = ceiling_run(
        sevro_project, "--trials", "2", "--max-cost-usd", "1", "--max-call-cost-usd", "0.3",
        usage=False,
    )  # fmt: skip
    assert done.exit_code == 0, done.stderr
    run_dir = Path(done.json()["evidencePath"]).parent
    report = sevro_project.sevro("report", run_dir, "--format", "json")
    assert report.exit_code == 0, report.stderr
    document = report.json()
    assert not list(validator("report.v1").iter_errors(document))
    (item,) = document["inputs"]
    assert item["spendLimits"]["totals"]["forfeits"] == 2
    markdown = sevro_project.sevro("report", run_dir)
    assert "### Spend ceilings" in markdown.stdout
    assert "| $1.0000 | $0.6000 | $0.0000 | 2 | 2 ($0.6000) | no |" in markdown.stdout


def test_the_documented_example_stops_where_the_docs_say(sevro_project: SevroProject) -> None:
    """docs/spend.md's scripted-host example with its flags: four trials, then exit 5; without
    the reported usage (the behaviour it shows) every call forfeits and only three run."""
    text = (Path(__file__).parents[2] / "docs" / "spend.md").read_text()
    section = text[text.index("**Trying it without a model.**") :]
    body = section[
        section.index("```json\n") + 8 : section.index("\n```", section.index("```json"))
    ]
    config = json.loads(body)
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    flags = ["--trials", "6", "--max-cost-usd", "1", "--max-call-cost-usd", "0.3"]
    for usage, started in ((True, 4), (False, 3)):
        if not usage:
            config.pop("usage")
        sevro_project.write_json("documented.json", config)
        done = sevro_project.run(
            case, "--host-config", sevro_project.root / "documented.json", "--jobs", "1",
            *flags, "--accept-exposure",
        )  # fmt: skip
        assert done.exit_code == 5, done.stderr
        trials = done.json()["cases"][0]["trials"]
        assert sum(t["execution"] == "completed" for t in trials) == started
