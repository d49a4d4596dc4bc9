"""The scripted host reports ``sevro.skills`` by the CLI hosts' rules; ``sevro.skill-activation``
grades it; a timed-out ``run`` step fails the trial."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from sevro_core.testing import SevroProject, require_sandbox
from tests.e2e.helpers import trial_evidence

SKILL = "---\nname: greet\ndescription: Greets people.\n---\nSay hello warmly.\n"
AGENTS = ".agents/skills/greet/SKILL.md"
CLAUDE = ".claude/skills/greet/SKILL.md"


def skill_check(expect: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": "skill",
        "grader": "sevro.skill-activation",
        "configuration": {"expect": expect, **extra},
    }


def skills_of(result: dict[str, Any]) -> dict[str, Any]:
    evidence = trial_evidence(result)
    found = next(o for o in evidence["observations"] if o["id"] == "sevro.skills")
    assert found["completeness"] == "complete"
    data: dict[str, Any] = found["data"]
    return data


def run_steps(
    project: SevroProject, steps: list[dict[str, Any]], expect: str = "read", **files: str
) -> Any:
    case = project.case(
        fixture={"files": files or {AGENTS: SKILL}},
        checks=[skill_check(expect)],
        requiredEvidence=["sevro.skills"],
    )
    host = project.script(default=[[*steps, {"reply": {"text": "ok"}}]])
    return project.run(case, "--host-config", host)


@pytest.mark.parametrize("path", [AGENTS, CLAUDE])
def test_a_whole_read_step_is_a_read(sevro_project: SevroProject, path: str) -> None:
    done = run_steps(sevro_project, [{"read": {"path": path}}], **{path: SKILL})
    assert done.exit_code == 0, done.stdout + done.stderr
    data = skills_of(done.json())
    assert [s["path"] for s in data["offered"]] == [path]
    assert data["reads"] == [{"skill": "greet", "turn": 1, "ordinal": 1, "status": "read"}]
    assert data["read"] == ["greet"]


def test_no_read_fails_read_and_passes_not_read(sevro_project: SevroProject) -> None:
    steps = [{"read": {"path": "other.txt"}}, {"write": {"path": "x.txt", "content": "x"}}]
    done = run_steps(sevro_project, steps)
    assert done.exit_code == 1, done.stdout + done.stderr
    check = done.json()["cases"][0]["trials"][0]
    data = skills_of(done.json())
    assert data["reads"] == [] and data["read"] == []
    assert data["offered"][0]["name"] == "greet", check
    assert run_steps(sevro_project, steps, "not-read").exit_code == 0


def test_both_hosts_directories_are_offered(sevro_project: SevroProject) -> None:
    done = run_steps(sevro_project, [{"read": {"path": CLAUDE}}], **{AGENTS: SKILL, CLAUDE: SKILL})
    assert done.exit_code == 0, done.stdout + done.stderr
    data = skills_of(done.json())
    assert [s["path"] for s in data["offered"]] == [AGENTS, CLAUDE]
    assert data["read"] == ["greet"]


def test_a_changed_skill_file_is_only_a_partial_read(sevro_project: SevroProject) -> None:
    steps = [{"write": {"path": AGENTS, "content": "replaced\n"}}, {"read": {"path": AGENTS}}]
    done = run_steps(sevro_project, steps)
    assert done.exit_code == 1
    assert skills_of(done.json())["reads"][0]["status"] == "partial"
    # the same touch never lets not-read pass: it is unavailable
    assert run_steps(sevro_project, steps, "not-read").exit_code == 4


def test_run_steps_follow_the_cli_hosts_rules(sevro_project: SevroProject) -> None:
    require_sandbox()
    steps = [{"run": {"command": f"cat {AGENTS}"}}]
    done = run_steps(sevro_project, steps)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert skills_of(done.json())["read"] == ["greet"]
    paged = run_steps(sevro_project, [{"run": {"command": f"head -n 2 {AGENTS}"}}])
    assert paged.exit_code == 1
    assert skills_of(paged.json())["reads"][0]["status"] == "partial"


MUTE_HOST = textwrap.dedent("""
    from sevro_core.plugin.hookspecs import hookimpl
    from sevro_core.models import UNKNOWN_USAGE, HostResult, Route


    class Configured:
        route = Route(host="acme.host.mute", model="m", effort="none")
        capabilities = frozenset()

        def redacted_configuration(self):
            return {}

        def check_case(self, case):
            pass

        def run(self, request):
            return HostResult(final_message="ok", complete=True, usage=UNKNOWN_USAGE,
                              turns_completed=1)


    class Mute:
        id = "acme.host.mute"
        version = "1.0.0"
        capabilities = frozenset()
        requires = frozenset()

        def configure(self, options):
            return Configured()


    @hookimpl
    def sevro_register_hosts(register):
        register(Mute())
""")


def test_a_host_without_skills_evidence_is_refused_before_any_trial(
    sevro_project: SevroProject,
) -> None:
    plugin = sevro_project.root / "mute.py"
    plugin.write_text(MUTE_HOST)
    case = sevro_project.case(fixture={"files": {AGENTS: SKILL}}, checks=[skill_check("read")])
    done = sevro_project.run(case, "--host", "acme.host.mute", "--plugin", plugin)
    assert done.exit_code == 64, done.stdout + done.stderr
    assert "case.json#/checks/0/grader: grader sevro.skill-activation needs sevro.skills" in (
        done.stderr
    )
    assert not sevro_project.results.exists() or not any(sevro_project.results.rglob("trial-*"))


def test_a_timed_out_run_step_fails_the_trial(sevro_project: SevroProject) -> None:
    require_sandbox()
    case = sevro_project.case(checks=[], requiredEvidence=["sevro.commands"])
    host = sevro_project.script(
        default=[
            [
                {"run": {"command": "true"}},
                {"run": {"command": "sleep 5", "timeoutMs": 200}},
                {"reply": {"text": "ok"}},
            ]
        ]
    )
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 2, done.stdout + done.stderr
    evidence = trial_evidence(done.json())
    assert evidence["execution"]["message"] == "run step 2 timed out after 200 ms: 'sleep 5'"
    commands = next(o for o in evidence["observations"] if o["id"] == "sevro.commands")
    assert [c["timedOut"] for c in commands["data"]["commands"]] == [False, True]


def test_bad_configuration_is_refused_at_load_with_its_pointer(
    sevro_project: SevroProject,
) -> None:
    case = sevro_project.case(checks=[skill_check("seen")])
    done = sevro_project.sevro("validate", case)
    assert done.exit_code == 64
    assert done.stderr.startswith("sevro: error: ") and len(done.stderr.splitlines()) == 1
    assert "case.json#/checks/0/configuration/expect: " in done.stderr, done.stderr


def test_the_two_hosts_skill_case_runs_on_the_scripted_host(sevro_project: SevroProject) -> None:
    """tests/e2e/test_one_case_two_hosts.py grades this case on Codex and Claude."""
    require_sandbox()
    from tests.e2e.test_one_case_two_hosts import CASE, WORK

    case = sevro_project.case(**CASE)
    reads = sevro_project.script(
        default=[
            [{"read": {"path": CLAUDE}}, {"run": {"command": WORK}}, {"reply": {"text": "ready"}}]
        ]
    )
    done = sevro_project.run(case, "--host-config", reads)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert skills_of(done.json())["read"] == ["greet"]
    skips = sevro_project.script(
        "skips.json", default=[[{"run": {"command": WORK}}, {"reply": {"text": "ready"}}]]
    )
    assert sevro_project.run(case, "--host-config", skips).exit_code == 1
