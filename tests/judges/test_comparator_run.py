"""The comparator in a real experiment run: the scripted host as the candidate and as the
comparator judge, every eligible pair judged in both orders after the trials, the judgements
persisted with the run's evidence and counted in the statistics apart from the objective ones,
and the judge never shown an arm or skill name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sevro_core.testing import SevroProject, require_tool

SKILLED_A = '+written with care\\n",\n  "diffTruncated": false\n },\n "B"'
"""Matches the prompt only when A's diff is the one the skill produced: the rubric quotes A's
fields (its diff last) right before B's."""


def criteria(winner: str) -> str:
    names = (
        "functional_correctness",
        "security_reliability",
        "maintainability_extensibility",
        "performance_efficiency",
        "simplicity_scope_discipline",
    )
    return json.dumps(
        {
            "criteria": {
                n: {"winner": winner if n == names[2] else "tie", "reason": "r"} for n in names
            }
        }
    )


GIT_FIXTURE = {"kind": "generated", "commits": [{"message": "init", "files": {"in.txt": "x\n"}}]}


def _experiment(
    project: SevroProject, rules: list[dict[str, str]], fixture: Any = GIT_FIXTURE
) -> tuple[list[str], Path]:
    require_tool("git")
    skill = project.skill("skills/careful-notes", "careful-notes", "Write notes with care.")
    case = project.case(
        prompt="Write out.txt.",
        fixture=fixture,
        checks=[
            {"id": "written", "grader": "sevro.shell", "configuration": {"run": "test -s out.txt"}}
        ],
    )
    command = (
        "if test -f .agents/skills/careful-notes/SKILL.md; then echo 'written with care' > out.txt;"
        " else echo 'written' > out.txt; fi"
    )
    host = project.script(
        default=[[{"run": {"command": command}}, {"reply": {"text": "Wrote out.txt."}}]]
    )
    judge = project.write_json("judge.json", {"judges": {"comparator": rules}})
    flags = [str(case), "--skill", str(skill), "--baseline", "none", "--trials", "3"]
    flags += ["--host-config", str(host), "--comparator-host", "scripted"]
    flags += ["--comparator-host-config", str(judge)]
    return flags, skill


def _run(project: SevroProject) -> dict[str, Any]:
    paths = sorted(project.results.rglob("run.json"))
    return json.loads(paths[-1].read_text())


def test_a_consistent_judge_gives_the_candidate_every_pair(sevro_project: SevroProject) -> None:
    rules = [{"promptContains": SKILLED_A, "reply": criteria("A")}, {"reply": criteria("B")}]
    flags, _ = _experiment(sevro_project, rules)
    done = sevro_project.sevro("run", *flags, "--results-root", sevro_project.results)
    assert done.exit_code == 0, done
    assert "candidate against baseline, judged: 3 wins, 0 losses, 0 ties" in done.stdout
    assert "  Comparator usage: 6 judge calls; tokens and cost unknown." in done.stdout
    judged = _run(sevro_project)["statistics"]["comparisons"][0]["judged"]
    assert (judged["eligiblePairs"], judged["judgedPairs"], judged["wins"]) == (3, 3, 3)
    assert (judged["losses"], judged["ties"], judged["inconclusive"]["total"]) == (0, 0, 0)
    assert judged["signTest"] == {"decisive": 3, "pTwoSided": 0.25}
    assert judged["rubric"] == {"id": "sevro.rubric.software-engineering", "version": "1.0.0"}
    assert judged["judge"]["role"] == "comparator" and judged["calibration"] is None
    unknown = dict.fromkeys(("inputTokens", "outputTokens", "costUsd", "reportedCostUsd"))
    assert judged["usage"] == {  # the scripted judge reports no usage: unknown, never 0
        **unknown,
        "cachedInputTokens": None,
        "reasoningTokens": None,
        "complete": False,
        "calls": 6,
    }
    pairs = sorted(sevro_project.results.rglob("pair-*.json"))
    assert [p.name for p in pairs] == ["pair-1.json", "pair-2.json", "pair-3.json"]
    document = json.loads(pairs[0].read_text())
    assert document["judgement"]["outcome"] == "candidate"
    assert [o["decision"] for o in document["judgement"]["orders"]] == ["B", "A"]
    assert [c["purpose"] for c in document["calls"]] == [
        "sevro.rubric.software-engineering:AB",
        "sevro.rubric.software-engineering:BA",
    ]
    run_dir = pairs[0].parents[3]
    prompts = [run_dir / r["path"] for r in document["artifactRefs"] if r["id"].endswith("prompt")]
    assert len(prompts) == 2
    for prompt in prompts:
        text = prompt.read_text()
        assert "written with care" in text and "in.txt" in text  # the results and the base
        for leak in ("careful-notes", "candidate", "baseline", ".agents", "SKILL.md"):
            assert leak not in text, leak


def test_a_fixture_without_git_is_compared_on_sevros_own_diff(sevro_project: SevroProject) -> None:
    """Inline files have no base commit: each trial keeps sevro's text diff of the fixture's files
    (``sevro.files.diff``), and the judge compares those, blind to the mounted skill."""
    skilled_a = '+written with care\\n",\n  "diffTruncated": false\n },\n "B"'
    rules = [{"promptContains": skilled_a, "reply": criteria("A")}, {"reply": criteria("B")}]
    flags, _ = _experiment(sevro_project, rules, fixture={"files": {"in.txt": "x\n"}})
    done = sevro_project.sevro("run", *flags, "--results-root", sevro_project.results)
    assert done.exit_code == 0, done
    judged = _run(sevro_project)["statistics"]["comparisons"][0]["judged"]
    assert (judged["judgedPairs"], judged["wins"]) == (3, 3), judged
    document = json.loads(sorted(sevro_project.results.rglob("pair-*.json"))[0].read_text())
    run_dir = sorted(sevro_project.results.rglob("pair-*.json"))[0].parents[3]
    prompt = next(
        run_dir / r["path"] for r in document["artifactRefs"] if r["id"].endswith("prompt")
    ).read_text()
    assert "diff --git a/out.txt b/out.txt" in prompt
    for leak in ("careful-notes", ".agents", "SKILL.md"):
        assert leak not in prompt, leak


def test_the_report_recounts_the_judged_block_from_the_verified_pair_files(
    sevro_project: SevroProject,
) -> None:
    rules = [{"promptContains": SKILLED_A, "reply": criteria("A")}, {"reply": criteria("B")}]
    flags, _ = _experiment(sevro_project, rules)
    assert sevro_project.run(*flags).exit_code == 0
    run_dir = next(sevro_project.results.rglob("run.json")).parent
    shown = sevro_project.sevro("report", run_dir, "--json")
    assert shown.exit_code == 0, shown
    report = json.loads(shown.stdout)
    assert report["experiments"][0]["statistics"]["comparisons"][0]["judged"]["wins"] == 3
    markdown = sevro_project.sevro("report", run_dir)
    assert "#### Blinded pairwise comparison: candidate against baseline" in markdown.stdout
    assert "3 wins, 0 losses, 0 ties" in markdown.stdout and "not calibrated" in markdown.stdout
    assert "Comparator usage: 6 judge calls; tokens and cost unknown." in markdown.stdout
    assert (
        "| baseline..candidate | comparator | 3 | unknown | unknown | unknown |"
        in (markdown.stdout.split("## Judge usage")[1])
    )
    pair = next(run_dir.rglob("pair-2.json"))
    document = json.loads(pair.read_text())
    document["judgement"]["outcome"] = "baseline"  # an edited judgement: counts no longer match
    pair.write_text(json.dumps(document))
    refused = sevro_project.sevro("report", run_dir, "--json")
    assert refused.exit_code == 64, refused
    assert "do not match" in refused.stderr
    document["judgement"]["outcome"] = "candidate"
    document["trials"]["control"] = "0" * 64  # a judgement of other trials
    pair.write_text(json.dumps(document))
    refused = sevro_project.sevro("report", run_dir, "--json")
    assert refused.exit_code == 64, refused
    assert "does not match the trials it judged" in refused.stderr
    document["trials"]["control"] = json.loads(next(run_dir.rglob("pair-1.json")).read_text())[
        "trials"
    ]["control"]
    document["calls"][0]["usage"]["inputTokens"] = -5  # not what sevro writes: refused on read
    pair.write_text(json.dumps(document))
    refused = sevro_project.sevro("report", run_dir, "--json")
    assert refused.exit_code == 64, refused
    assert "is not a pair-judgement.v1 document: /calls/0/usage/inputTokens" in refused.stderr
    assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1


def test_a_judge_that_always_prefers_a_is_flagged_for_position_bias(
    sevro_project: SevroProject,
) -> None:
    flags, _ = _experiment(sevro_project, [{"reply": criteria("A")}])
    done = sevro_project.run(*flags)
    assert done.exit_code == 0, done
    judged = _run(sevro_project)["statistics"]["comparisons"][0]["judged"]
    assert (judged["judgedPairs"], judged["wins"], judged["losses"], judged["ties"]) == (3, 0, 0, 0)
    assert judged["inconclusive"] == {"total": 3, "positionBias": 3, "judgeError": 0}
    assert judged["signTest"]["pTwoSided"] is None


def test_a_judge_answering_malformed_is_a_judge_error_never_a_tie(
    sevro_project: SevroProject,
) -> None:
    flags, _ = _experiment(sevro_project, [{"reply": "A is better."}])
    done = sevro_project.run(*flags)
    assert done.exit_code == 0, done
    judged = _run(sevro_project)["statistics"]["comparisons"][0]["judged"]
    assert (judged["wins"], judged["losses"], judged["ties"]) == (0, 0, 0)
    assert judged["inconclusive"] == {"total": 3, "positionBias": 0, "judgeError": 3}
