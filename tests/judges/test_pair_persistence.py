"""Persisted pair judgements: what a resumed judging step reuses (only a judgement of the same
trials, rubric, rule and judge) and what ``sevro report`` counts (only files that judged the
trials run.json records)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.experiments.pairjudgements import read_pair_judgements
from sevro_core.judges.comparator import PairJudgement, unjudged
from sevro_core.models import Route, TrialStates
from sevro_core.run import pairjudging
from sevro_core.run.records import TrialRecord
from sevro_core.states import Execution, Grading, Verdict
from sevro_core.store.evidence import EvidenceStore

ROUTE = Route("sevro.host.scripted", "m", "none", role="comparator")


def record(arm: str, sha: str) -> TrialRecord:
    states = TrialStates(Execution.COMPLETED, Grading.COMPLETED, Verdict.PASSED)
    return TrialRecord("case", 1, states, (), None, arm=arm, sha256=sha, document={})


def comparing(tmp_path: Path, *, version: str = "1.0.0", when: str = "both-passed") -> Any:
    store = EvidenceStore(tmp_path / "results", "run-1", reopen=(tmp_path / "results").exists())
    plan = SimpleNamespace(
        settings=SimpleNamespace(judges=SimpleNamespace(compare_when=when)),
        judges=SimpleNamespace(get=lambda role: SimpleNamespace(route=ROUTE)),
    )
    rubric = SimpleNamespace(id="sevro.rubric.software-engineering", version=version)
    return pairjudging._Comparing(plan, store, None, rubric, "baseline", "candidate", {})  # type: ignore[arg-type]


JUDGED = PairJudgement("candidate", (), ())
TRIALS = (record("baseline", "a" * 64), record("candidate", "b" * 64))


def test_a_resumed_step_reuses_only_a_judgement_of_the_same_trials_rubric_and_judge(
    tmp_path: Path,
) -> None:
    first = comparing(tmp_path)
    pairjudging._persist(first, ("case", 1), TRIALS, JUDGED, [])
    assert pairjudging._reusable(comparing(tmp_path), "case", 1, TRIALS) == (JUDGED, ())
    rerun = (record("baseline", "a" * 64), record("candidate", "c" * 64))
    assert pairjudging._reusable(comparing(tmp_path), "case", 1, rerun) is None
    assert pairjudging._reusable(comparing(tmp_path, version="1.1.0"), "case", 1, TRIALS) is None
    assert (
        pairjudging._reusable(comparing(tmp_path, when="both-completed"), "case", 1, TRIALS) is None
    )
    assert pairjudging._reusable(comparing(tmp_path), "case", 2, TRIALS) is None  # never judged
    path = next(tmp_path.rglob("pair-1.json"))
    path.write_text("{not json")
    assert pairjudging._reusable(comparing(tmp_path), "case", 1, TRIALS) is None


def run_json(control_sha: str | None, treatment_sha: str | None) -> dict[str, Any]:
    return {
        "runId": "run-1",
        "trials": [
            {"caseId": "case", "arm": "baseline", "trial": 1, "sha256": control_sha},
            {"caseId": "case", "arm": "candidate", "trial": 1, "sha256": treatment_sha},
        ],
    }


def test_the_report_reads_only_judgements_of_the_recorded_trials(tmp_path: Path) -> None:
    c = comparing(tmp_path)
    failed = unjudged("AB: the judge failed")
    pairjudging._persist(c, ("case", 1), TRIALS, failed, [])
    run_dir = c.store.run_dir
    found = read_pair_judgements(run_dir, run_json("a" * 64, "b" * 64), "baseline", "candidate")
    assert found == {("case", 1): failed}
    assert read_pair_judgements(run_dir, run_json("a" * 64, "b" * 64), "other", "candidate") == {}
    for digests in (("a" * 64, "d" * 64), (None, None)):
        with pytest.raises(InvocationError, match="does not match the trials"):
            read_pair_judgements(run_dir, run_json(*digests), "baseline", "candidate")
    other_run = {**run_json("a" * 64, "b" * 64), "runId": "run-2"}
    with pytest.raises(InvocationError, match="another run"):
        read_pair_judgements(run_dir, other_run, "baseline", "candidate")
    moved = next(run_dir.rglob("pair-1.json"))
    moved.rename(moved.with_name("pair-2.json"))  # a judgement filed under another pair
    with pytest.raises(InvocationError, match="another run or pair"):
        read_pair_judgements(run_dir, run_json("a" * 64, "b" * 64), "baseline", "candidate")


def test_a_base_fixture_that_fails_makes_its_pairs_judge_errors_without_asking(
    tmp_path: Path,
) -> None:
    class Broken:
        capabilities: frozenset[str] = frozenset()

        def identity(self) -> Any:
            return {}

        def materialise(self, workspace: Path) -> Any:
            raise OSError("disk full")

    c = comparing(tmp_path)
    c.plan.settings.workspace_root = tmp_path
    planned = SimpleNamespace(fixture=Broken(), case=SimpleNamespace(id="case", prompts=("t",)))
    base = pairjudging._base(c, planned)  # type: ignore[arg-type]
    assert isinstance(base, str) and "disk full" in base
    judged, calls = pairjudging._judge_one(c, planned, base, TRIALS, 1)  # type: ignore[arg-type]
    assert (judged.outcome, judged.flags, calls) == ("inconclusive", ("judge-error",), [])
    assert "could not be materialised" in (judged.reason or "")
    assert list(tmp_path.glob("sevro-judged-base-*")) == []  # nothing left behind


def test_pair_files_are_checked_against_their_schema_on_write_and_on_read(tmp_path: Path) -> None:
    from sevro_core.formats.schemas import EvidenceSchemaError, validator
    from sevro_core.judges.session import JudgeCall
    from sevro_core.models import JudgeReply, Usage

    c = comparing(tmp_path)
    spent = Usage(120, 30, 0, 0, 0.002, complete=True)
    call = JudgeCall(
        1, "comparator", "r:AB", "prompt", JudgeReply("{}", True, ROUTE, usage=spent), 5
    )
    pairjudging._persist(c, ("case", 1), TRIALS, JUDGED, [call])
    path = next(tmp_path.rglob("pair-1.json"))
    assert validator("pair-judgement.v1").is_valid(json.loads(path.read_text()))
    assert pairjudging._reusable(comparing(tmp_path), "case", 1, TRIALS) == (JUDGED, (spent,))
    wrong = JudgeCall(2, "semantic", "r:BA", "p", JudgeReply("{}", True, ROUTE), 5)
    with pytest.raises(EvidenceSchemaError, match=r"pair-judgement\.v1"):  # never written
        pairjudging._persist(c, ("case", 2), TRIALS, JUDGED, [wrong])
    assert not (path.parent / "pair-2.json").exists()
    document = json.loads(path.read_text())
    document["calls"][0]["usage"]["costUsd"] = "free"
    path.write_text(json.dumps(document))
    assert pairjudging._reusable(comparing(tmp_path), "case", 1, TRIALS) is None  # judged again
    with pytest.raises(InvocationError, match=r"not a pair-judgement\.v1 document: /calls/0/usage"):
        read_pair_judgements(c.store.run_dir, run_json("a" * 64, "b" * 64), "baseline", "candidate")


def test_the_pair_schema_bounds_are_the_session_bounds() -> None:
    from sevro_core.formats.schemas import load_schema
    from sevro_core.limits import MAX_JUDGE_CALLS_PER_TRIAL

    schema = load_schema("pair-judgement.v1")["properties"]
    assert schema["calls"]["maxItems"] == MAX_JUDGE_CALLS_PER_TRIAL
    assert schema["artifactRefs"]["maxItems"] == 2 * MAX_JUDGE_CALLS_PER_TRIAL
