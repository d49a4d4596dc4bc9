"""Sevro's spellings of ``sevro run``/``report`` flags (issue 19 item 5), each with a control.

Every test drives the real CLI (or, for cancellation, the real engine with the built-in scripted
host); only the model is absent, since no flag here needs one.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sevro_core.testing import SevroProject
from tests.e2e.helpers import assert_valid_evidence, regex_check

REPO_ROOT = Path(__file__).resolve().parents[2]
DIGEST_A = "a" * 64
DIGEST_B = "b" * 64

ADAPTER = """\
from sevro_core.api import HostResult, Route, hookimpl


class Bound:
    route = Route("acme.host.adapter", "adapter-model", "none")
    capabilities = frozenset()

    def redacted_configuration(self):
        return {}

    def check_case(self, case):
        return None

    def run(self, request):
        return HostResult(final_message="ready", complete=True)


class Adapter:
    id = "acme.host.adapter"
    version = "1"
    capabilities = frozenset()
    requires = frozenset()

    def configure(self, options):
        return Bound()


@hookimpl
def sevro_register_hosts(register):
    register(Adapter())
"""


def _ready_case(project: SevroProject) -> Path:
    return project.case(checks=[regex_check("ready", "^ready$")])


def test_case_file_is_one_case_argument(sevro_project: SevroProject) -> None:
    case, script = (
        _ready_case(sevro_project),
        sevro_project.script(default=[[{"reply": {"text": "ready"}}]]),
    )
    done = sevro_project.run("--case-file", case, "--host-config", script)
    assert done.exit_code == 0, done.stderr
    assert done.json()["cases"][0]["caseId"] == "example"
    both = sevro_project.run(case, "--case-file", case, "--host-config", script)
    assert both.exit_code == 64 and "exclusive" in both.stderr
    neither = sevro_project.run("--host-config", script)
    assert neither.exit_code == 64 and "no case" in neither.stderr
    assert "Traceback" not in both.stderr + neither.stderr


def test_report_result_file(sevro_project: SevroProject) -> None:
    script = sevro_project.script(default=[[{"reply": {"text": "ready"}}]])
    done = sevro_project.run(_ready_case(sevro_project), "--host-config", script)
    result = sevro_project.root / "result.json"
    result.write_text(done.stdout)
    report = sevro_project.sevro("report", "--result-file", result, "--json")
    assert report.exit_code == 0, report.stderr
    assert [row["task"] for row in report.json()["rows"]] == ["passed"]
    empty = sevro_project.sevro("report")
    assert empty.exit_code == 64 and "no input" in empty.stderr


def test_adapter_module_is_the_runs_host(sevro_project: SevroProject) -> None:
    module = sevro_project.root / "adapters" / "host_adapter.py"
    module.parent.mkdir()
    module.write_text(ADAPTER)
    case = _ready_case(sevro_project)
    done = sevro_project.run("--case-file", case, "--adapter-module", module)
    assert done.exit_code == 0, done.stderr
    run = assert_valid_evidence(done.json())
    assert [r["host"] for r in run["routes"]] == ["acme.host.adapter"]
    dotted = sevro_project.run(
        case, "--adapter-module", "host_adapter", env={"PYTHONPATH": str(module.parent)}
    )
    assert dotted.exit_code == 0, dotted.stderr
    both = sevro_project.run(case, "--adapter-module", module, "--host", "scripted")
    assert both.exit_code == 64 and "exclusive" in both.stderr


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("relative/host_adapter.py", "absolute"),
        ("no_such_module_anywhere", "no such Python module"),
        ("{empty}", "exactly one host, not 0"),
    ],
)
def test_adapter_module_refusals(sevro_project: SevroProject, value: str, message: str) -> None:
    empty = sevro_project.root / "empty_adapter.py"
    empty.write_text("x = 1\n")
    value = value.replace("{empty}", str(empty))
    done = sevro_project.run(_ready_case(sevro_project), "--adapter-module", value)
    assert done.exit_code == 64, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not sevro_project.results.exists(), "refused before anything ran"


def test_digest_overrides_land_in_the_identity(sevro_project: SevroProject) -> None:
    script = sevro_project.script(default=[[{"reply": {"text": "ready"}}]])
    args = [_ready_case(sevro_project), "--host-config", script, "--dry"]
    plain = assert_valid_evidence(sevro_project.run(*args).json())
    done = sevro_project.run(*args, "--runner-build-digest", DIGEST_A, "--project-digest", DIGEST_B)
    assert done.exit_code == 0, done.stderr
    run = assert_valid_evidence(done.json())
    dimensions = run["evaluationIdentity"]["dimensions"]
    assert dimensions["runnerBuildDigest"] == DIGEST_A == run["runner"]["buildDigest"]
    assert dimensions["projectDigest"] == DIGEST_B
    assert plain["evaluationIdentity"]["dimensions"]["runnerBuildDigest"] != DIGEST_A
    assert plain["evaluationIdentity"]["digest"] != run["evaluationIdentity"]["digest"]
    bad = sevro_project.run(*args, "--project-digest", "ABC")
    assert bad.exit_code == 64 and "64 lowercase hex" in bad.stderr


def test_runner_checkout_root_records_the_running_checkout(sevro_project: SevroProject) -> None:
    import sevro_core

    if not Path(sevro_core.__file__).resolve().is_relative_to(REPO_ROOT):
        pytest.fail("sevro_core must run from this checkout (scripts/setup installs it so)")
    script = sevro_project.script(default=[[{"reply": {"text": "ready"}}]])
    args = [_ready_case(sevro_project), "--host-config", script, "--dry"]
    done = sevro_project.run(*args, "--runner-checkout-root", REPO_ROOT)
    assert done.exit_code == 0, done.stderr
    runner = assert_valid_evidence(done.json())["runner"]
    head = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert runner["source"] == "checkout" and runner["revision"] == head
    assert runner["root"] == REPO_ROOT.as_uri()
    result = sevro_project.root / "result.json"
    result.write_text(done.stdout)
    report = sevro_project.sevro("report", "--result-file", result, "--json")
    assert report.exit_code == 0, report.stderr
    assert report.json()["rows"][0]["runnerBuildDigest"] == runner["buildDigest"]
    other = sevro_project.root / "other"
    other.mkdir()
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    foreign = sevro_project.run(*args, "--runner-checkout-root", other)
    assert foreign.exit_code == 64 and "not the running sevro" in foreign.stderr
    relative = sevro_project.run(*args, "--runner-checkout-root", "other")
    assert relative.exit_code == 64 and "absolute" in relative.stderr


def test_shell_isolation(sevro_project: SevroProject) -> None:
    script = sevro_project.script(default=[[{"reply": {"text": "ready"}}]])
    args = [_ready_case(sevro_project), "--host-config", script, "--dry", "--shell-isolation"]
    assert sevro_project.run(*args).exit_code == 0
    off = sevro_project.run(*args, "--sandbox", "none")
    assert off.exit_code == 64 and "--shell-isolation" in off.stderr


@pytest.mark.parametrize(("reason", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_cancellation_before_admission_keeps_an_interrupted_run(
    tmp_path: Path, reason: str, code: int
) -> None:
    """A signal before any trial is admitted: no host call, an interrupted record, 130/143."""
    from sevro_core.models import CancelToken
    from sevro_core.plugin.manager import load_plugins
    from sevro_core.plugin.protocols import HostOptions
    from sevro_core.run.planning import RunSettings
    from sevro_core.run.runner import execute, prepare

    marker = tmp_path / "host-ran"
    case = tmp_path / "case.json"
    case.write_text(
        json.dumps(
            {
                "id": "example",
                "prompt": "Return ready.",
                "fixture": {"files": {}},
                "checks": [regex_check("ready", "^ready$")],
                "requiredEvidence": [],
            }
        )
    )
    script = {
        "format": "sevro.scripted-host.v1",
        "default": {
            "turns": [[{"run": {"command": f"touch {marker}"}}, {"reply": {"text": "ready"}}]]
        },
    }
    settings = RunSettings(
        trials=2, threshold=1.0, jobs=1, dry=False, condition="passive",
        results_root=tmp_path / "results", project_root=tmp_path, host="scripted",
        host_options=HostOptions(config=script), sandbox="none",
    )  # fmt: skip
    plan = prepare([case], load_plugins(), settings)
    token = CancelToken()
    token.cancel(reason)
    outcome = execute(plan, cancel=token)
    assert outcome.exit_code == code
    assert not marker.exists(), "no host was called"
    assert [t["artifactPath"] for t in outcome.result["cases"][0]["trials"]] == [None, None]
    run = assert_valid_evidence(outcome.result)
    assert run["status"] == "interrupted"
    assert not list((outcome.run_dir / "cases").rglob("trial-*.json"))


JUDGE = """\
import json

from sevro_core.api import HostResult, Route, hookimpl


class Bound:
    route = Route("acme.host.judge", "judge-model", "none")
    capabilities = frozenset()

    def redacted_configuration(self):
        return {}

    def check_case(self, case):
        return None

    def run(self, request):
        verdict = {"checks": [{"id": "sem", "verdict": "VERDICT", "reason": "read the reply"}]}
        return HostResult(final_message=json.dumps(verdict), complete=True)


class Judge:
    id = "acme.host.judge"
    version = "1"
    capabilities = frozenset()
    requires = frozenset()

    def configure(self, options):
        return Bound()


@hookimpl
def sevro_register_hosts(register):
    register(Judge())
"""


@pytest.mark.parametrize(("verdict", "code"), [("pass", 0), ("fail", 1)])
def test_semantic_adapter_module_is_the_judge(
    sevro_project: SevroProject, verdict: str, code: int
) -> None:
    judge = sevro_project.root / f"judge_{verdict}.py"
    judge.write_text(JUDGE.replace("VERDICT", verdict))
    check = {"id": "sem", "grader": "sevro.semantic", "configuration": {"proposition": "ready"}}
    case = sevro_project.case(checks=[check])
    script = sevro_project.script(default=[[{"reply": {"text": "ready"}}]])
    done = sevro_project.run(case, "--host-config", script, "--semantic-adapter-module", judge)
    assert done.exit_code == code, done.stderr
    run = assert_valid_evidence(done.json())
    assert {"role": "semantic", "host": "acme.host.judge"}.items() <= {
        **next(r for r in run["routes"] if r.get("role") == "semantic")
    }.items()
    both = sevro_project.run(
        case, "--semantic-adapter-module", judge, "--semantic-host", "scripted"
    )
    assert both.exit_code == 64
    assert "--semantic-host and --semantic-adapter-module are exclusive" in both.stderr
