"""Every exit code of `sevro run`, through the real CLI and the scripted host."""

from __future__ import annotations

import json
from pathlib import Path

from sevro_core.testing import SevroProject
from tests.e2e.helpers import assert_valid_evidence, load, regex_check, trial_evidence


def test_passing_case_exits_0_with_complete_evidence(sevro_project: SevroProject) -> None:
    case = sevro_project.case(
        prompt="Say ready.",
        fixture={"files": {"a.txt": "x"}},
        checks=[regex_check("ready", "^ready$")],
    )
    host = sevro_project.script(
        default=[[{"read": {"path": "a.txt"}}, {"reply": {"text": "ready"}}]]
    )
    done = sevro_project.run(case, "--host-config", host, "--trials", "2")
    assert done.exit_code == 0, done.stderr
    result = done.json()
    assert result["execution"] == {"status": "completed"}
    assert result["grading"] == {"status": "completed"}
    assert result["task"] == {"verdict": "passed"}
    assert result["cases"][0]["passRate"] == 1.0
    run = assert_valid_evidence(result)
    assert run["routes"] == [
        {"role": "candidate", "host": "sevro.host.scripted", "model": "scripted", "effort": "none"}
    ]
    evidence = trial_evidence(result)
    assert evidence["usage"] == {
        "inputTokens": None,
        "outputTokens": None,
        "cachedInputTokens": None,
        "reasoningTokens": None,
        "costUsd": None,
        "reportedCostUsd": None,
        "complete": False,
    }
    assert evidence["observations"][0]["id"] == "sevro.observation.final-message"
    reads = next(o for o in evidence["observations"] if o["id"] == "sevro.file-reads")
    assert reads["data"]["reads"][0]["path"] == "a.txt" and reads["data"]["reads"][0]["complete"]
    raw = Path(result["evidencePath"]).parent / evidence["rawResult"]["path"]
    assert raw.read_text() == "ready"
    assert evidence["checks"] == [
        {
            "id": "ready",
            "grader": "sevro.regex",
            "status": "passed",
            "evidenceRefs": ["sevro.observation.final-message"],
        }
    ]


def test_failed_check_exits_1(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("ready", "^ready$")])
    done = sevro_project.run(
        case, "--host-config", sevro_project.script(default=[[{"reply": {"text": "nope"}}]])
    )
    assert done.exit_code == 1
    result = done.json()
    assert result["task"]["verdict"] == "failed"
    assert result["cases"][0]["trials"][0]["checks"][0]["status"] == "failed"
    assert_valid_evidence(result)


def test_host_failure_exits_2_and_stops_admission(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("ready", "ready")])
    host = sevro_project.script(default=[[{"fail": {"message": "model refused"}}]])
    done = sevro_project.run(case, "--host-config", host, "--trials", "3", "--jobs", "1")
    assert done.exit_code == 2
    result = done.json()
    assert result["execution"] == {"status": "failed", "errorCode": "sevro.host.failed"}
    trials = result["cases"][0]["trials"]
    assert [t["execution"] for t in trials] == ["failed", "not_run", "not_run"]
    assert [t["task"] for t in trials] == ["not_assessed"] * 3
    assert trials[1]["artifactPath"] is None
    evidence = trial_evidence(result)
    assert evidence["execution"]["message"] == "scripted failure: model refused"
    assert_valid_evidence(result)


def test_grader_error_exits_3(sevro_project: SevroProject) -> None:
    plugin = sevro_project.root / "broken_grader.py"
    plugin.write_text(
        "from sevro_core.errors import GradingError\n"
        "from sevro_core.plugin.hookspecs import hookimpl\n"
        "class Check:\n"
        "    def grade(self, check_id, view):\n"
        "        raise GradingError('the judge is unreachable')\n"
        "class Broken:\n"
        "    id = 'acme.broken'\n    version = '0.1'\n    stage = 10\n"
        "    capabilities = frozenset()\n    requires = frozenset()\n"
        "    def compile(self, configuration):\n        return Check()\n"
        "@hookimpl\n"
        "def sevro_register_graders(register):\n    register(Broken())\n"
    )
    case = sevro_project.case(
        checks=[regex_check("ok", "x"), {"id": "b", "grader": "acme.broken", "configuration": {}}]
    )
    done = sevro_project.run(
        case,
        "--plugin",
        plugin,
        "--host-config",
        sevro_project.script(default=[[{"reply": {"text": "x"}}]]),
    )
    assert done.exit_code == 3, done.stderr
    result = done.json()
    assert result["grading"] == {"status": "error", "errorCode": "sevro.grader.error"}
    evidence = trial_evidence(result)
    assert evidence["grading"]["error"] == {"checkId": "b", "message": "the judge is unreachable"}
    assert [c["status"] for c in evidence["checks"]] == ["passed", "unavailable"]
    assert_valid_evidence(result)


def test_missing_final_message_is_unavailable_exit_4(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("ready", ".*")])
    done = sevro_project.run(case, "--host-config", sevro_project.script(default=[[]]))
    assert done.exit_code == 4
    result = done.json()
    assert result["grading"]["status"] == "unavailable"
    assert result["task"]["verdict"] == "not_assessed"
    evidence = trial_evidence(result)
    assert evidence["observationCompleteness"] == "unavailable"
    assert evidence["checks"][0]["status"] == "unavailable"
    assert evidence["rawResult"] is None


def test_required_evidence_missing_is_exit_4(sevro_project: SevroProject) -> None:
    plugin = sevro_project.root / "forgetful_host.py"
    plugin.write_text(
        "from sevro_core.plugin.hookspecs import hookimpl\n"
        "from sevro_core.models import HostResult, Route\n"
        "class Bound:\n"
        "    route = Route('acme.host.forgetful', 'm', 'e')\n"
        "    capabilities = frozenset({'acme.trace'})\n"
        "    def redacted_configuration(self):\n        return {}\n"
        "    def check_case(self, case):\n        pass\n"
        "    def run(self, request):\n"
        "        return HostResult(final_message='done', complete=True)\n"
        "class Forgetful:\n"
        "    id = 'acme.host.forgetful'\n    version = '1'\n"
        "    capabilities = frozenset({'acme.trace'})\n    requires = frozenset()\n"
        "    def configure(self, options):\n        return Bound()\n"
        "@hookimpl\n"
        "def sevro_register_hosts(register):\n    register(Forgetful())\n"
    )
    case = sevro_project.case(checks=[regex_check("done", "done")], requiredEvidence=["acme.trace"])
    done = sevro_project.run(case, "--plugin", plugin, "--host", "acme.host.forgetful")
    assert done.exit_code == 4, done.stderr
    evidence = trial_evidence(done.json())
    assert evidence["requiredEvidence"] == [{"id": "acme.trace", "status": "unavailable"}]
    assert evidence["checks"][0]["status"] == "passed"
    assert done.json()["task"]["verdict"] == "not_assessed"


def test_persistence_failure_exits_70_and_keeps_the_workspace(sevro_project: SevroProject) -> None:
    import resource
    import signal
    import subprocess
    import sys

    case = sevro_project.case(
        fixture={"files": {"kept.txt": "evidence"}}, checks=[regex_check("r", "x")]
    )
    # The final message (400 kB) is more than any file may hold; the run state's are far smaller.
    host = sevro_project.script(default=[[{"reply": {"text": "x" * 400_000}}]])

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sevro_core",
            "run",
            str(case),
            "--host-config",
            str(host),
            "--results-root",
            str(sevro_project.results),
            "--json",
        ],
        cwd=sevro_project.root,
        capture_output=True,
        text=True,
        preexec_fn=small_files,
        timeout=60,
        check=False,
    )
    assert done.returncode == 70, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("sevro: error: trial persistence failed (File too large); ")
    workspace = Path(line.split("fixture retained at ")[1])
    assert (workspace / "kept.txt").read_text() == "evidence"
    document = json.loads(done.stdout)
    assert (
        document["exitCode"] == 70 and document["diagnostic"]["code"] == "sevro.persistence.failed"
    )
    assert "Traceback" not in done.stderr
    import shutil

    shutil.rmtree(workspace)


def test_dry_run_prepares_only_and_has_its_own_identity(sevro_project: SevroProject) -> None:
    case = sevro_project.case(fixture={"files": {"a": "b"}}, checks=[regex_check("r", "x")])
    host = sevro_project.script(default=[[{"fail": {"message": "must not run"}}]])
    dry = sevro_project.run(case, "--host-config", host, "--dry")
    assert dry.exit_code == 0
    result = dry.json()
    assert (
        result["execution"]["status"],
        result["grading"]["status"],
        result["task"]["verdict"],
    ) == ("not_run", "not_requested", "not_assessed")
    run = assert_valid_evidence(result)
    assert trial_evidence(result)["executionMode"] == "dry"
    executed = sevro_project.run(case, "--host-config", host)
    other = load(executed.json()["evidencePath"])
    assert run["evaluationIdentity"]["digest"] != other["evaluationIdentity"]["digest"]
    assert run["configuration"]["redacted"]["executionMode"] == "dry"


def test_identity_is_stable_and_tracks_its_dimensions(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("r", "x")])
    host = sevro_project.script(default=[[{"reply": {"text": "x"}}]])

    def identity(*extra: str) -> dict[str, object]:
        done = sevro_project.run(case, "--host-config", host, *extra)
        return load(done.json()["evidencePath"])["evaluationIdentity"]

    first, second = identity(), identity()
    assert first == second
    assert first["algorithm"] == "sevro.identity.v1" and len(first["dimensions"]) == 16
    more = identity("--trials", "2")
    assert more["digest"] != first["digest"]
    assert more["dimensions"]["trialCount"] == 2
    jobs = identity("--jobs", "1")
    assert jobs["dimensions"]["configurationDigest"] != first["dimensions"]["configurationDigest"]
    model = identity("--model", "other")
    assert model["dimensions"]["routeDigest"] != first["dimensions"]["routeDigest"]


def test_trial_files_carry_the_evaluation_identity(sevro_project: SevroProject) -> None:
    case = sevro_project.case(checks=[regex_check("r", "x")])
    done = sevro_project.run(
        case, "--host-config", sevro_project.script(default=[[{"reply": {"text": "x"}}]])
    )
    run = load(done.json()["evidencePath"])
    evidence = trial_evidence(done.json())
    assert evidence["evaluationDigest"] == run["evaluationIdentity"]["digest"]
    assert evidence["caseDigest"] == run["cases"][0]["digests"]["identity"]


def test_a_broken_verdict_policy_is_a_grading_error(sevro_project: SevroProject) -> None:
    plugin = sevro_project.root / "policy.py"
    plugin.write_text(
        "from sevro_core.plugin.hookspecs import hookimpl\n"
        "class Broken:\n"
        "    id = 'acme.verdict.broken'\n    version = '1'\n"
        "    capabilities = frozenset()\n    requires = frozenset()\n"
        "    def verdict(self, execution, grading, outcomes):\n"
        "        raise ValueError('no opinion')\n"
        "@hookimpl\n"
        "def sevro_register_verdict_policies(register):\n    register(Broken())\n"
    )
    case = sevro_project.case(checks=[regex_check("r", "x")])
    done = sevro_project.run(
        case,
        "--plugin",
        plugin,
        "--verdict-policy",
        "acme.verdict.broken",
        "--host-config",
        sevro_project.script(default=[[{"reply": {"text": "x"}}]]),
    )
    assert done.exit_code == 3, done.stderr
    evidence = trial_evidence(done.json())
    assert evidence["grading"]["error"]["message"].startswith(
        "verdict policy acme.verdict.broken failed: ValueError: no opinion"
    )
    assert evidence["task"]["verdict"] == "not_assessed"
    assert_valid_evidence(done.json())
