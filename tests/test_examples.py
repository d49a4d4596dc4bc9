"""Every documented example checks what it claims: it passes with a host that does what the
example says, and fails with one that does not.

Case examples in README and docs run on the scripted host with a script per control (below);
the Codex and Claude examples run on the real CLIs against the mock model; the cases in
``examples/`` run with their documented host and with that host minus the claimed behaviour.
A new case example without controls fails :func:`test_every_documented_case_has_controls`.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve

from sevro_core.api import CONTEXT_OBSERVATION, Completeness, Observation
from sevro_core.testing import SevroProject, require_sandbox, require_tool, trial_view
from sevro_core.testing.mockmodel import Message, ToolCall, reply
from sevro_graders.context_text_grader import ContextTextGrader
from sevro_hosts_claude.testing import require_claude
from sevro_hosts_codex.testing import require_codex
from sevro_hosts_pi.testing import require_pi
from tests.hosts_claude.helpers import PROTOCOLS, bash, run_claude
from tests.hosts_codex.helpers import run_codex, shell
from tests.hosts_pi.qa_helpers import bash as pi_bash
from tests.hosts_pi.qa_helpers import run_pi

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
JSON_BLOCK = re.compile(r"^```json\n(.*?)^```$", re.MULTILINE | re.DOTALL)
Steps = list[dict[str, Any]]


class Turns(list[Steps]):
    """A control for a case with several turns: one list of steps per turn."""


def documented_cases() -> dict[str, dict[str, Any]]:
    """Case-shaped JSON blocks by ``doc#id``."""
    found = {}
    for doc in DOCS:
        for body in JSON_BLOCK.findall(doc.read_text("utf-8")):
            block = json.loads(body)
            if isinstance(block, dict) and "checks" in block and ({"prompt", "turns"} & set(block)):
                found[f"{doc.relative_to(ROOT)}#{block['id']}"] = block
    return found


def replying(text: str, *before: dict[str, Any]) -> Steps:
    return [*before, {"reply": {"text": text}}]


GREET_SKILL = {"read": {"path": ".agents/skills/greet/SKILL.md"}}
SCRIPTED: dict[str, tuple[Steps | Turns, Steps | Turns]] = {
    # doc#id: (a host that does what the example claims, one that does not)
    "docs/cases.md#basic-graded": (replying("ready"), replying("blocked")),
    "docs/graders.md#says-ready": (replying("ready"), replying("Sorry, I cannot.")),
    "docs/graders.md#json-result": (
        replying('{"status": "ready", "files": [{"path": "README.md"}]}'),
        replying('{"status": "ready", "files": [{"path": "docs/x.md"}]}'),
    ),
    "docs/graders.md#schema-result": (
        replying('{"status": "ready", "notes": ["all good"]}'),
        replying('{"status": "done", "notes": ["all good"]}'),
    ),
    "docs/graders.md#combined": (
        replying('{"status": "ready"}'),
        replying('{"status": "ready", "detail": "Exception"}'),
    ),
    "docs/graders.md#fix-the-bug": (
        replying("done", {"write": {"path": "answer.txt", "content": "42\n"}}),
        replying("done"),
    ),
    "docs/graders.md#verified-status": (
        replying("done", {"write": {"path": "status.txt", "content": "ready\n"}}),
        replying("done"),
    ),
    "docs/graders.md#fix-and-commit": (
        replying(
            "done",
            {"write": {"path": "app.py", "content": "x = 2\n"}},
            {"run": {"command": "git commit -qam 'Fix x'"}},
        ),
        replying("done", {"write": {"path": "app.py", "content": "x = 2\n"}}),
    ),
    "docs/graders.md#uses-the-skill": (
        replying("Hello, Ada!", GREET_SKILL),
        replying("Hello, Ada!"),
    ),
    "docs/expectations.md#changelog-created": (
        replying(
            "done",
            {"write": {"path": "CHANGELOG.md", "content": "# Changes\n"}},
            {"run": {"command": "rm TODO.txt"}},
        ),
        replying("done", {"write": {"path": "CHANGELOG.md/x", "content": ""}}),
    ),
    "docs/expectations.md#changelog-entry": (
        replying(
            "done",
            {"write": {"path": "CHANGELOG.md", "content": "# Changes\n\n- login timeout\n"}},
        ),
        replying("done", {"write": {"path": "CHANGELOG.md", "content": "# Changes\n- TODO\n"}}),
    ),
    "docs/cases.md#notes-then-release": (
        Turns(
            [
                replying("noted", {"write": {"path": "NOTES.md", "content": "- fix\n"}}),
                replying(
                    "released",
                    {"write": {"path": "CHANGELOG.md", "content": "- fix\n"}},
                    {"run": {"command": "rm NOTES.md"}},
                ),
            ]
        ),
        Turns(  # writes the changelog at once and never deletes the notes
            [
                replying(
                    "noted",
                    {"write": {"path": "NOTES.md", "content": "- fix\n"}},
                    {"write": {"path": "CHANGELOG.md", "content": "- fix\n"}},
                ),
                replying("released"),
            ]
        ),
    ),
    "docs/expectations.md#says-released": (
        Turns(
            [
                replying("2.0.3"),
                replying("released 2.1.0", {"write": {"path": "VERSION", "content": "2.1.0\n"}}),
            ]
        ),
        Turns(  # answers turn 1 in a sentence, and bumps the patch version
            [
                replying("The version is 2.0.3."),
                replying("released 2.0.4", {"write": {"path": "VERSION", "content": "2.0.4\n"}}),
            ]
        ),
    ),
    "docs/expectations.md#result-json": (
        replying("done", {"write": {"path": "result.json", "content": '{"status": "complete"}'}}),
        replying(
            "done",
            {"write": {"path": "result.json", "content": '{"status": "failed", "error": "x"}'}},
        ),
    ),
    "docs/expectations.md#reads-the-reference": (
        replying(
            "Hello, Ada!",
            {"run": {"command": "cd .agents/skills/greet && cat -n references/tone.md"}},
        ),
        replying(
            "Hello, Ada!",
            {"run": {"command": "grep Warm .agents/skills/greet/references/tone.md"}},
            {"run": {"command": "cat secrets.md"}},
        ),
    ),
}
CAUGHT_BY = {
    # doc#id: the checks the host that does not do it must fail (the rest pass)
    "docs/cases.md#basic-graded": {"ready"},
    "docs/graders.md#says-ready": {"ready-line", "no-apology"},
    "docs/graders.md#json-result": {"touched-readme"},
    "docs/graders.md#schema-result": {"shape"},
    "docs/graders.md#combined": {"contract"},
    "docs/graders.md#fix-the-bug": {"tests-pass", "answer"},
    "docs/graders.md#verified-status": {"verified", "verified/status"},
    "docs/graders.md#fix-and-commit": {"committed"},
    "docs/graders.md#uses-the-skill": {"skill-read"},
    "docs/expectations.md#changelog-created": {"changelog", "todo-gone"},
    "docs/expectations.md#changelog-entry": {"mentions-fix", "no-placeholder"},
    "docs/expectations.md#result-json": {"status", "no-error"},
    "docs/cases.md#notes-then-release": {"no-changelog-yet", "notes-gone"},
    "docs/expectations.md#says-released": {"names-version", "released", "bumped"},
    "docs/expectations.md#reads-the-reference": {"tone-read", "secrets-untouched"},
}
REAL_CLI = {
    "docs/hosts/codex.md#release-notes",
    "docs/hosts/codex.md#installs-no-skill",
    "docs/hosts/claude.md#release-notes",
    "docs/hosts/pi.md#release-notes",
    "docs/expectations.md#runs-a-command",
    "docs/expectations.md#writes-the-changelog",
}


JUDGED = {"docs/graders.md#explains-ci-failure", "docs/judges.md#explains-the-fix"}
"""Cases whose checks need a judge: controlled by their own test, with the scripted host judging."""
OBSERVED = {"docs/expectations.md#guidance-reaches-the-model"}
"""Cases whose checks read what only a host that honours host profiles observes (the model's
context): controlled by grading the example's own checks on that observation, both ways."""


def test_every_documented_case_has_controls() -> None:
    assert set(documented_cases()) == set(SCRIPTED) | REAL_CLI | JUDGED | OBSERVED
    assert set(CAUGHT_BY) == set(SCRIPTED)


def _run_scripted(project: SevroProject, case: dict[str, Any], steps: Steps | Turns) -> Any:
    case_file = project.write_json("case.json", case)
    host = project.script(default=steps if isinstance(steps, Turns) else [steps])
    shutil.rmtree(project.results, ignore_errors=True)
    return project.run(case_file, "--host-config", host)


def _task(done: Any) -> tuple[int, str, dict[str, str]]:
    result = done.json()
    (case,) = result["cases"]
    (trial,) = case["trials"]
    document = json.loads(Path(trial["artifactPath"]).read_text())
    checks = {c["id"]: c["status"] for c in document["evidence"]["checks"]}
    return done.exit_code, case["task"], checks


@pytest.mark.parametrize("where", sorted(SCRIPTED))
def test_documented_case_passes_only_when_the_host_does_what_it_claims(
    where: str, sevro_project: SevroProject
) -> None:
    require_sandbox()  # scripted run steps and shell checks run in the sandbox
    case = documented_cases()[where]
    does, does_not = SCRIPTED[where]
    passed = _run_scripted(sevro_project, case, does)
    assert _task(passed)[:2] == (0, "passed"), passed.stdout + passed.stderr
    failed = _run_scripted(sevro_project, case, does_not)
    code, task, checks = _task(failed)
    assert (code, task) == (1, "failed"), failed.stdout + failed.stderr
    assert {c for c, status in checks.items() if status != "passed"} == CAUGHT_BY[where], checks
    assert {c for c, status in checks.items() if status == "failed"} == CAUGHT_BY[where], checks


# ---- the sevro.semantic example, with the scripted host as the (simulated) judge ----------

SEMANTIC_JUDGE = {
    "judges": {
        "semantic": [
            {
                "promptContains": "clean environment",
                "reply": '{"checks":[{"id":"gives-a-reason","verdict":"pass",'
                '"reason":"It names a missing local file in a clean CI environment."}]}',
            },
            {
                "reply": '{"checks":[{"id":"gives-a-reason","verdict":"fail",'
                '"reason":"It gives no cause."}]}'
            },
        ]
    }
}


@pytest.mark.parametrize(
    ("answer", "code", "task"),
    [
        (
            "Because CI starts from a clean environment, a file only your machine has is missing.",
            0,
            "passed",
        ),
        ("It can happen sometimes.", 1, "failed"),
    ],
    ids=["gives-a-cause", "restates"],
)
def test_the_semantic_example_checks_what_it_claims(
    answer: str, code: int, task: str, sevro_project: SevroProject
) -> None:
    case = documented_cases()["docs/graders.md#explains-ci-failure"]
    case_file = sevro_project.write_json("case.json", case)
    host = sevro_project.script(default=[[{"reply": {"text": answer}}]])
    judge = sevro_project.write_json("judge.json", SEMANTIC_JUDGE)
    done = sevro_project.run(
        case_file, "--host-config", host, "--semantic-host", "scripted",
        "--semantic-host-config", judge,
    )  # fmt: skip
    assert _task(done) == (code, task, {"gives-a-reason": task}), done.stdout + done.stderr


# ---- examples/judges: docs/judges.md's semantic and comparator examples ------------------

JUDGES = ROOT / "examples" / "judges"
VAGUE_NOTE = "# Notes\n\n- Updated parse.py.\n"


def _judged_run(project: SevroProject, host: Path) -> Any:
    shutil.rmtree(project.results, ignore_errors=True)
    return project.run(
        JUDGES / "cases", "--host-config", host, "--semantic-host", "scripted",
        "--semantic-host-config", JUDGES / "judge.json",
    )  # fmt: skip


def test_the_judges_example_is_the_case_the_page_shows() -> None:
    shown = documented_cases()["docs/judges.md#explains-the-fix"]
    assert shown == json.loads((JUDGES / "cases" / "explains-the-fix.json").read_text())


def test_the_judges_example_passes_only_when_the_agent_explains_and_notes_the_fix(
    sevro_project: SevroProject,
) -> None:
    """docs/judges.md runs the example with host.json (exit 0, two judge calls: one per
    source). Control: an agent that fixes the bug but explains nothing and writes a vague
    note; the same judge rules then fail both claims, and only those."""
    require_sandbox()
    done = _judged_run(sevro_project, JUDGES / "host.json")
    statuses = {"names-the-cause": "passed", "no-blame": "passed", "note-for-users": "passed"}
    assert _task(done) == (0, "passed", statuses), done.stdout + done.stderr
    (trial,) = done.json()["cases"][0]["trials"]
    evidence = json.loads(Path(trial["artifactPath"]).read_text())["evidence"]
    purposes = [call["purpose"] for call in evidence["judges"]["calls"]]
    assert purposes == ["sevro.semantic:response", "sevro.semantic:artifact:NOTES.md"]

    host = json.loads((JUDGES / "host.json").read_text())
    (turn,) = host["cases"]["explains-the-fix"]["turns"]
    for step in turn:
        if step.get("write", {}).get("path") == "NOTES.md":
            step["write"]["content"] = VAGUE_NOTE
        if "reply" in step:
            step["reply"]["text"] = "The test passes now."
    careless = sevro_project.write_json("careless.json", host)
    done = _judged_run(sevro_project, careless)
    statuses = {"names-the-cause": "failed", "no-blame": "passed", "note-for-users": "failed"}
    assert _task(done) == (1, "failed", statuses), done.stdout + done.stderr


COMPARE = JUDGES / "compare"


def _compared(project: SevroProject, host: Path) -> tuple[Any, dict[str, Any]]:
    shutil.rmtree(project.results, ignore_errors=True)
    done = project.run(
        COMPARE / "case.json", "--skill", COMPARE / "skills" / "tidy-changes",
        "--baseline", "none", "--trials", "3", "--host-config", host,
        "--comparator-host", "scripted", "--comparator-host-config", COMPARE / "judge.json",
    )  # fmt: skip
    (run_json,) = project.results.glob("*/run.json")
    (comparison,) = json.loads(run_json.read_text())["statistics"]["comparisons"]
    return done, comparison["judged"]


def test_the_comparator_example_gives_wins_only_when_the_skill_changes_the_result(
    sevro_project: SevroProject,
) -> None:
    """docs/judges.md runs examples/judges/compare: every pair a win for the candidate, the
    objective verdict untouched (exit 0). Control: an agent that ignores the skill leaves the
    same stray file in both arms; the judge rules then answer by position, and every pair is
    inconclusive (position bias), never a win."""
    require_tool("git")
    require_sandbox()
    done, judged = _compared(sevro_project, COMPARE / "host.json")
    assert done.exit_code == 0, done.stdout + done.stderr
    assert (judged["judgedPairs"], judged["wins"], judged["losses"], judged["ties"]) == (3, 3, 0, 0)
    assert judged["signTest"] == {"decisive": 3, "pTwoSided": 0.25}
    host = json.loads((COMPARE / "host.json").read_text())
    (turn,) = host["default"]["turns"]
    (run,) = [step["run"] for step in turn if "run" in step]
    run["command"] = run["command"].replace("test -f .agents/skills/tidy-changes/SKILL.md || ", "")
    careless = sevro_project.write_json("careless.json", host)
    done, judged = _compared(sevro_project, careless)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert (judged["wins"], judged["losses"], judged["ties"]) == (0, 0, 0)
    assert judged["inconclusive"]["total"] == judged["inconclusive"]["positionBias"] == 3


# ---- the Codex and Claude examples, on the real CLIs with the mock model ------------------

NOTES = "printf '# Release notes\\n\\nFixed the login timeout.\\n' > NOTES.md"


@pytest.mark.slow
@pytest.mark.parametrize("works", [True, False], ids=["does-it", "only-replies"])
def test_the_codex_example_checks_what_it_claims(
    works: bool, sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    codex = require_codex()
    require_sandbox()
    case = documented_cases()["docs/hosts/codex.md#release-notes"]
    work = [
        reply(shell("cat .agents/skills/release-notes/SKILL.md")),
        reply(shell(NOTES)),
    ]
    server = mock_model([*(work if works else []), reply(Message("done"))])
    done = run_codex(sevro_project, codex, server, sevro_project.write_json("case.json", case))
    _assert_release_notes(done, works)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["installs-nothing", "installs-a-skill", "no-opt-in"])
def test_the_codex_state_absence_example_checks_what_it_claims(
    mode: str, sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    codex = require_codex()
    require_sandbox()
    case = documented_cases()["docs/hosts/codex.md#installs-no-skill"]
    install = 'mkdir -p "$CODEX_HOME/skills/x" && echo body > "$CODEX_HOME/skills/x/SKILL.md"'
    work = [reply(shell(install))] if mode == "installs-a-skill" else []
    server = mock_model([*work, reply(Message("the check target is false"))])
    runtime = {
        "format": "sevro.runtime.v1",
        **({} if mode == "no-opt-in" else {"codexState": True}),
    }
    done = run_codex(
        sevro_project,
        codex,
        server,
        sevro_project.write_json("case.json", case),
        "--runtime-config-file",
        str(sevro_project.write_json("runtime.json", runtime)),
    )
    (check,) = json.loads(done.stdout)["cases"][0]["trials"][0]["checks"]
    # Without the opt-in nothing is bound: the recipe's `test -d` guard fails, never passes.
    expected = "passed" if mode == "installs-nothing" else "failed"
    assert check["status"] == expected, done.stdout + done.stderr
    assert (done.exit_code == 0) is (mode == "installs-nothing")


@pytest.mark.slow
@pytest.mark.parametrize("works", [True, False], ids=["does-it", "only-replies"])
def test_the_claude_example_checks_what_it_claims(
    works: bool, sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    claude = require_claude()
    require_sandbox()
    case = documented_cases()["docs/hosts/claude.md#release-notes"]
    work = [
        reply(ToolCall("Read", {"file_path": ".claude/skills/release-notes/SKILL.md"})),
        reply(bash(NOTES)),
    ]
    server = mock_model([*(work if works else []), reply(Message("done"))], protocols=PROTOCOLS)
    done = run_claude(sevro_project, claude, server, sevro_project.write_json("case.json", case))
    _assert_release_notes(done, works)


@pytest.mark.slow
@pytest.mark.parametrize("works", [True, False], ids=["does-it", "only-replies"])
def test_the_pi_example_checks_what_it_claims(
    works: bool, sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    pi = require_pi()
    require_sandbox()
    case = documented_cases()["docs/hosts/pi.md#release-notes"]
    work = [
        reply(ToolCall("read", {"path": ".agents/skills/release-notes/SKILL.md"})),
        reply(pi_bash(NOTES)),
    ]
    server = mock_model([*(work if works else []), reply(Message("done"))])
    done = run_pi(sevro_project, pi, server, sevro_project.write_json("case.json", case))
    _assert_release_notes(done, works)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("steps", "caught"),
    [
        ("bash", set()),
        ("write", {"shell-used", "no-edit-tool"}),
        ("failing-bash", {"shell-used"}),
    ],
)
def test_the_tool_call_example_checks_what_it_claims(
    steps: str, caught: set[str], sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    claude = require_claude()
    require_sandbox()
    case = documented_cases()["docs/expectations.md#runs-a-command"]
    work = {
        "bash": bash(NOTES),
        "write": ToolCall("Write", {"file_path": "NOTES.md", "content": "Fixed the login.\n"}),
        "failing-bash": bash("exit 3"),
    }[steps]
    server = mock_model([reply(work), reply(Message("done"))], protocols=PROTOCOLS)
    case_file = sevro_project.write_json("case.json", case)
    # Write is offered only when asked for (docs/hosts/claude.md)
    done = run_claude(sevro_project, claude, server, case_file, "--claude-allow-write")
    code, task, checks = _task(done)
    assert {c for c, status in checks.items() if status == "failed"} == caught, checks
    assert all(status in {"passed", "failed"} for status in checks.values()), checks
    assert (code, task) == ((0, "passed") if not caught else (1, "failed")), done.stdout


CHANGELOG = "printf '# Changelog\\n\\n- Fixed the login.\\n' > CHANGELOG.md"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "caught"),
    [
        (CHANGELOG, set()),
        ("printf 'print(1)\\n' > src/app.py", {"changelog-written", "code-untouched"}),
        (f"{CHANGELOG} && mkdir -p src/new && touch src/new/x.py", {"code-untouched"}),
    ],
    ids=["does-it", "edits-code-only", "also-adds-code"],
)
def test_the_changed_paths_example_checks_what_it_claims(
    command: str, caught: set[str], sevro_project: SevroProject, mock_model: Callable[..., Any]
) -> None:
    claude = require_claude()
    require_sandbox()
    case = documented_cases()["docs/expectations.md#writes-the-changelog"]
    server = mock_model([reply(bash(command)), reply(Message("done"))], protocols=PROTOCOLS)
    done = run_claude(sevro_project, claude, server, sevro_project.write_json("case.json", case))
    code, task, checks = _task(done)
    assert {c for c, status in checks.items() if status == "failed"} == caught, checks
    assert all(status in {"passed", "failed"} for status in checks.values()), checks
    assert (code, task) == ((0, "passed") if not caught else (1, "failed")), done.stdout


def _assert_release_notes(done: Any, works: bool) -> None:
    code, task, checks = _task(done)
    if works:
        assert (code, task) == (0, "passed"), done.stdout + done.stderr
        return
    assert (code, task) == (1, "failed"), done.stdout + done.stderr
    assert checks == {
        "skill-read": "failed",
        "notes-follow-the-skill": "failed",
        "done": "passed",
    }, checks


# ---- examples/ -----------------------------------------------------------------------------

QUICKSTART = ROOT / "examples" / "quickstart"


def _without(host: dict[str, Any], case_id: str, drop: Callable[[dict[str, Any]], bool]) -> Any:
    changed = copy.deepcopy(host)
    turns = changed["cases"][case_id]["turns"]
    kept = [step for step in turns[0] if not drop(step)]
    assert len(kept) < len(turns[0]), "the control must remove a step"
    turns[0] = kept
    return changed


def _case_results(done: Any) -> dict[str, str]:
    return {c["caseId"]: c["task"] for c in done.json()["cases"]}


def test_the_quickstart_checks_what_it_claims(sevro_project: SevroProject) -> None:
    require_sandbox()
    host = json.loads((QUICKSTART / "host.json").read_text())
    cases = QUICKSTART / "cases"
    documented = sevro_project.run(cases, "--host-config", QUICKSTART / "host.json")
    assert documented.exit_code == 0, documented.stdout + documented.stderr
    assert _case_results(documented) == {"greeting": "passed", "summary": "passed"}

    def skill_read(step: dict[str, Any]) -> bool:
        return "SKILL.md" in step.get("read", {}).get("path", "")

    def summary_written(step: dict[str, Any]) -> bool:
        return step.get("write", {}).get("path") == "SUMMARY.md"

    careless = _without(_without(host, "greeting", skill_read), "summary", summary_written)
    path = sevro_project.write_json("careless.json", careless)
    done = sevro_project.run(cases, "--host-config", path)
    assert done.exit_code == 1, done.stdout + done.stderr
    assert _case_results(done) == {"greeting": "failed", "summary": "failed"}
    failing = {}
    for case_id, trial in ((c["caseId"], c["trials"][0]) for c in done.json()["cases"]):
        document = json.loads(Path(trial["artifactPath"]).read_text())
        checks = document["evidence"]["checks"]
        failing[case_id] = [c["id"] for c in checks if c["status"] != "passed"]
    assert failing == {"greeting": ["skill-read"], "summary": ["one-line-summary"]}


GIT_CODING = ROOT / "examples" / "git-coding"


def _greeter_source(root: Path) -> list[str]:
    """The clean source repository docs/git-fixtures.md makes, and the flags that declare it."""
    require_tool("git")
    source = root / "sources" / "greeter"
    (source / "tests").mkdir(parents=True)
    (source / "greet.sh").write_text('#!/bin/sh\necho "Hello, world"\n')
    (source / "tests" / "greet.test.sh").write_text(
        '#!/bin/sh\nset -e\ntest "$(sh greet.sh Ada)" = "Hello, Ada!"\n'
    )
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    for argv in (
        ["git", "init", "-q"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=D", "-c", "user.email=d@d.invalid", "commit", "-qm", "greeter"],
    ):
        subprocess.run(argv, cwd=source, env=env, check=True)
    source_map = root / "sources.json"
    source_map.write_text(json.dumps({"greeter": f"file://{source}"}))
    return ["--case-source-root", str(root / "sources"), "--case-source-map-file", str(source_map)]


@pytest.mark.parametrize("host", ["host.json", "host-careless.json"])
def test_the_git_coding_repository_variant_checks_what_it_claims(
    host: str, sevro_project: SevroProject
) -> None:
    """docs/git-fixtures.md runs the repository variant with host.json only."""
    require_sandbox()
    flags = _greeter_source(sevro_project.root)
    done = sevro_project.run(GIT_CODING / "repository", "--host-config", GIT_CODING / host, *flags)
    expected = (0, "passed") if host == "host.json" else (1, "failed")
    assert _task(done)[:2] == expected, done.stdout + done.stderr


def test_the_git_coding_example_needs_passing_tests_not_just_a_commit(
    sevro_project: SevroProject,
) -> None:
    """host.json and host-careless.json run in docs/git-fixtures.md; this control commits a
    broken fix past the hook with --no-verify, which only the tests-pass check catches."""
    require_sandbox()
    host = json.loads((GIT_CODING / "host.json").read_text())
    steps = host["default"]["turns"][0]
    for step in steps:
        if "write" in step:
            step["write"]["content"] = '#!/bin/sh\necho "Hello, $1"\n'
        if "run" in step and step["run"]["command"].startswith("git commit"):
            step["run"]["command"] = "git commit --no-verify -qam 'Fix greeting'"
    steps[:] = [s for s in steps if s.get("run", {}).get("command") != "run-tests"]
    path = sevro_project.write_json("sneaky.json", host)
    done = sevro_project.run(GIT_CODING / "cases", "--host-config", path)
    assert done.exit_code == 1, done.stdout + done.stderr
    (trial,) = done.json()["cases"][0]["trials"]
    document = json.loads(Path(trial["artifactPath"]).read_text())
    statuses = {c["id"]: c["status"] for c in document["evidence"]["checks"]}
    assert statuses == {
        "tests-pass": "failed",
        "committed": "passed",
        "history-kept": "passed",
        "replied": "passed",
    }


VERIFIER = ROOT / "examples" / "verifier"


@pytest.mark.parametrize(
    ("host", "code", "status", "failed"),
    [
        ("host.json", 0, "passed", set()),
        ("host-lazy.json", 1, "failed", {"total-file", "final-answer"}),
    ],
    ids=["computes", "guesses"],
)
def test_the_verifier_example_passes_only_when_the_agent_computes_the_sum(
    host: str, code: int, status: str, failed: set[str], sevro_project: SevroProject
) -> None:
    """docs/evaluator-resources.md runs examples/verifier with both hosts: verify.py, kept in
    the evaluator directory with its gold file, passes the agent that sums and fails the one
    that guesses, naming exactly the assertions that did not hold."""
    require_sandbox()
    require_tool("python3")
    done = sevro_project.run(VERIFIER / "cases", "--host-config", VERIFIER / host)
    assert done.exit_code == code, done.stdout + done.stderr
    (trial,) = done.json()["cases"][0]["trials"]
    document = json.loads(Path(trial["artifactPath"]).read_text())
    check, *parts = document["evidence"]["checks"]
    assert check["status"] == status, check
    assert {p["id"]: p["status"] == "passed" for p in parts} == {
        f"verified/{i}": i not in failed for i in ("total-file", "final-answer", "input-untouched")
    }, "each assertion is its own check outcome, after the check"
    observation = next(
        o
        for o in document["evidence"]["observations"]
        if o["id"] == "sevro.observation.verifier.verified"
    )
    assertions = {a["id"]: a["passed"] for a in observation["data"]["assertions"]}
    assert set(assertions) == {"total-file", "final-answer", "input-untouched"}
    assert {i for i, passed in assertions.items() if not passed} == failed


HARBOR = ROOT / "examples" / "harbor"
WORD_COUNT = HARBOR / "word-count"
HIDDEN_INPUTS = {"many-lines", "empty", "no-final-newline"}


def test_the_harbor_example_is_a_harbor_task_run_by_its_case() -> None:
    """A Harbor task directory: the case's prompt is instruction.md, and tests/ (with test.sh and
    the inputs it tries) is the case's evaluator directory, never the candidate's."""
    case = json.loads((WORD_COUNT / "case.json").read_text())
    assert case["prompt"] == (WORD_COUNT / "instruction.md").read_text()
    assert case["evaluator"] == {"tests": "tests"}
    (check,) = case["checks"]
    assert check["configuration"]["run"] == {"script": "tests/test.sh", "interpreter": ["sh"]}
    assert not set(case["fixture"]["files"]) & {"tests", "tests/test.sh", "instruction.md"}
    assert {p.name for p in (WORD_COUNT / "tests" / "inputs").iterdir()} == {
        "one-line.txt", "many-lines.txt", "empty.txt", "no-newline.txt",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("host", "code", "failed"),
    [("host.json", 0, set()), ("host-fits-the-sample.json", 1, HIDDEN_INPUTS)],
    ids=["fixes", "fits-the-sample"],
)
def test_the_harbor_example_passes_only_the_agent_that_fixes_the_count(
    host: str, code: int, failed: set[str], sevro_project: SevroProject
) -> None:
    """docs/evaluator-resources.md runs examples/harbor with both hosts: test.sh passes the agent
    that counts words and fails the one that prints the README's sample answer, on exactly the
    inputs it could not see, each reported as its own check outcome."""
    require_sandbox()
    done = sevro_project.run(WORD_COUNT, "--host-config", HARBOR / host)
    assert done.exit_code == code, done.stdout + done.stderr
    (trial,) = done.json()["cases"][0]["trials"]
    check, *parts = trial["checks"]
    assert (check["id"], check["status"]) == ("tests", "failed" if failed else "passed")
    statuses = {p["id"].removeprefix("tests/"): p["status"] for p in parts}
    assert set(statuses) == {"script-present", "one-line", *HIDDEN_INPUTS}
    assert {i for i, status in statuses.items() if status == "failed"} == failed


def test_the_harbor_example_calibrates_and_a_weakened_test_sh_does_not(
    sevro_project: SevroProject,
) -> None:
    """``sevro calibrate`` agrees on all four variants; the control is the same task whose
    test.sh tries count.sh only on the README's sample (the check an agent can fit): the
    variant that fits the sample then passes, and calibration exits 1 naming it."""
    require_sandbox()
    done = sevro_project.sevro("calibrate", WORD_COUNT, "--results-root", sevro_project.results)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert "all 4 variant(s) got the verdict they expect" in done.stdout
    weak = sevro_project.root / "word-count"
    shutil.copytree(WORD_COUNT, weak)
    test_sh = weak / "tests" / "test.sh"
    script = test_sh.read_text()
    for hidden in ("many-lines many-lines.txt 9", "empty empty.txt 0", "no-final-newline no-"):
        assert hidden in script
        script = "\n".join(line for line in script.splitlines() if hidden not in line) + "\n"
    test_sh.write_text(script)
    done = sevro_project.sevro("calibrate", weak, "--results-root", sevro_project.results)
    assert done.exit_code == 1, done.stdout + done.stderr
    disagreeing = [line.split()[1] for line in done.stdout.splitlines() if "DISAGREES" in line]
    assert disagreeing == ["fits-the-sample"], done.stdout


SKILL_AB = ROOT / "examples" / "skill-ab"


def _skill_ab(project: SevroProject, host: Path) -> tuple[Any, dict[str, Any]]:
    done = project.run(SKILL_AB / "experiment.json", "--host-config", host)
    (run_json,) = project.results.glob("*/run.json")
    statistics = json.loads(run_json.read_text())["statistics"]
    shutil.rmtree(project.results)  # the next run of the same experiment starts afresh
    return done, statistics


def test_the_skill_ab_example_shows_the_skill_helping_and_only_when_it_does(
    sevro_project: SevroProject,
) -> None:
    """docs/experiments.md runs examples/skill-ab: the candidate improves on the baseline. The
    control is an agent that never follows the skill (it drafts the notes by hand in every
    arm): the same experiment then finds no detectable difference."""
    require_sandbox()
    documented, statistics = _skill_ab(sevro_project, SKILL_AB / "host.json")
    assert documented.exit_code == 1, documented.stderr  # the baseline's cases fail
    (comparison,) = statistics["comparisons"]
    pooled = comparison["pooled"]
    assert pooled["verdict"] == "improved"
    assert (pooled["transitions"]["fixed"], pooled["transitions"]["broken"]) == (16, 0)
    assert comparison["activation"]["treatment"]["rate"] == 1.0
    host = json.loads((SKILL_AB / "host.json").read_text())
    (run_step,) = [s for s in host["default"]["turns"][0] if "run" in s]
    run_step["run"]["command"] = (
        run_step["run"]["command"].split("; else ", 1)[1].removesuffix("; fi")
    )
    careless = sevro_project.write_json("careless.json", host)
    done, statistics = _skill_ab(sevro_project, careless)
    assert done.exit_code == 1, done.stderr
    (comparison,) = statistics["comparisons"]
    assert comparison["pooled"]["verdict"] == "no detectable difference"
    assert comparison["pooled"]["transitions"]["fixed"] == 0


SKILL_CREATOR = ROOT / "examples" / "skill-creator"


def _skill_creator(project: SevroProject, host: Path) -> dict[str, Any]:
    done = project.sevro(
        "run",
        SKILL_CREATOR / "evals.json",
        "--skill",
        SKILL_CREATOR / "skills" / "changelog",
        "--host-config",
        host,
        "--trials",
        "2",
        "--results-root",
        project.results,
    )
    assert done.exit_code == 1, done.stdout + done.stderr  # q03 never triggers
    (run_json,) = project.results.glob("*/run.json")
    (arm,) = json.loads(run_json.read_text())["statistics"]["triggers"]["arms"]
    shutil.rmtree(project.results)
    return dict(arm)


def test_the_skill_creator_example_measures_the_reads_it_claims(
    sevro_project: SevroProject,
) -> None:
    """docs/skill-creator.md runs examples/skill-creator: the scripted model reads the skill for
    two of the three trigger queries (recall 2/3, precision 1). Controls: without those reads
    recall is 0; reading it for every query brings the false positives into precision."""
    require_sandbox()
    documented = _skill_creator(sevro_project, SKILL_CREATOR / "host.json")
    assert [q["triggered"] for q in documented["queries"]] == [2, 2, 0, 0, 0]
    pooled = documented["pooled"]
    assert pooled["recall"]["value"] == pytest.approx(2 / 3)
    assert pooled["precision"]["value"] == 1.0
    host = json.loads((SKILL_CREATOR / "host.json").read_text())
    careless = copy.deepcopy(host)
    for script in careless["cases"].values():
        script["turns"][0] = [s for s in script["turns"][0] if "read" not in s]
    blind = _skill_creator(sevro_project, sevro_project.write_json("blind.json", careless))
    assert blind["pooled"]["recall"]["value"] == 0.0
    assert blind["pooled"]["precision"]["value"] is None  # nothing triggered: unknown, not 0
    eager = copy.deepcopy(host)
    (read,) = [s for s in host["cases"][next(iter(host["cases"]))]["turns"][0] if "read" in s]
    eager["default"]["turns"][0].insert(0, read)
    eager_arm = _skill_creator(sevro_project, sevro_project.write_json("eager.json", eager))
    assert eager_arm["pooled"]["falsePositives"] == 4
    assert eager_arm["pooled"]["precision"]["value"] == pytest.approx(6 / 10)


SKILL_CREATOR_EVALS = ROOT / "examples" / "skill-creator-evals"
INPUT_CHANGELOG = (SKILL_CREATOR_EVALS / "changelog/evals/files/CHANGELOG.md").read_text()


def test_the_skill_creator_evals_example_maps_what_the_docs_claim(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """docs/skill-creator.md validates examples/skill-creator-evals: two evals, three semantic
    checks, one input file; its scripted candidate answers each eval and each judge route
    matches exactly one eval's expectations."""
    from types import SimpleNamespace

    from sevro_core.run.evalset import load_eval_experiment

    monkeypatch.chdir(ROOT)
    flags = SimpleNamespace(skill=None, baseline=None, trials=1, semantic_host="scripted")
    design, cases = load_eval_experiment(
        SKILL_CREATOR_EVALS / "changelog" / "evals" / "evals.json", flags
    )
    host = json.loads((SKILL_CREATOR_EVALS / "host.json").read_text())
    assert [c.id for c in cases] == list(host["cases"]) == ["eval-1", "eval-2"]
    assert cases[0].fixture == {"files": {"CHANGELOG.md": INPUT_CHANGELOG}}
    assert [len(c.checks) for c in cases] == [2, 1]
    assert [arm.id for arm in design.arms] == ["baseline", "candidate"]
    assert [f.path for f in design.arms[1].skills[0].tree.files] == ["SKILL.md"]
    judge = json.loads((SKILL_CREATOR_EVALS / "judge.json").read_text())
    routes = [route["promptContains"] for route in judge["judges"]["semantic"]]
    for route in routes:
        matching = [c.id for c in cases if any(route in str(k.configuration) for k in c.checks)]
        assert len(matching) == 1, (route, matching)


def test_the_skill_creator_evals_example_grades_each_expectation(
    sevro_project: SevroProject,
) -> None:
    """The example's judge passes eval-1's two expectations and fails eval-2's, in both arms
    (the scripted candidate replies the same with and without the skill)."""
    require_sandbox()
    done = sevro_project.run(
        SKILL_CREATOR_EVALS / "changelog",
        "--host-config",
        SKILL_CREATOR_EVALS / "host.json",
        "--semantic-host",
        "scripted",
        "--semantic-host-config",
        SKILL_CREATOR_EVALS / "judge.json",
        "--trials",
        "1",
    )
    assert done.exit_code == 1, done.stdout + done.stderr
    outcomes = {}
    for case in done.json()["cases"]:
        (trial,) = case["trials"]
        evidence = json.loads(Path(trial["artifactPath"]).read_text())["evidence"]
        outcomes[case["caseId"], case["arm"]] = [c["status"] for c in evidence["checks"]]
    for arm in ("baseline", "candidate"):
        assert outcomes["eval-1", arm] == ["passed", "passed"]
        assert outcomes["eval-2", arm] == ["failed"]


# ---- the sevro.context-text example, graded on the context observation both ways ------------

CONTEXT_DOES = {
    "turns": [
        {"turn": 1, "systemPrompt": "Agent. PROBE_MODE=injection-test",
         "requests": [{"request": 1, "text": "Inspect the task."}]},
        {"turn": 2, "systemPrompt": "Agent.",
         "requests": [{"request": 1, "text": "Complete it."},
                      {"request": 2, "text": 'Complete it.\n\nread({"path":"TASK.md"})'}]},
    ]
}  # fmt: skip


def _context_outcomes(data: dict[str, Any]) -> dict[str, str]:
    case = documented_cases()["docs/expectations.md#guidance-reaches-the-model"]
    found = Observation(CONTEXT_OBSERVATION, "host", Completeness.COMPLETE, data)
    final = evolve(trial_view("done", observations=[found]), prompts=tuple(case["turns"]))
    outcomes = {}
    for check in case["checks"]:
        view = final if "turn" not in check else evolve(final, turn=check["turn"])
        outcome = ContextTextGrader().compile(check["configuration"]).grade(check["id"], view)
        outcomes[check["id"]] = outcome.status.value
    return outcomes


def test_the_context_text_example_checks_what_it_claims() -> None:
    assert set(_context_outcomes(CONTEXT_DOES).values()) == {"passed"}
    does_not = copy.deepcopy(CONTEXT_DOES)
    does_not["turns"][0]["systemPrompt"] = "Agent."
    does_not["turns"][1]["requests"][1]["text"] = "Complete it."
    does_not["turns"][1]["requests"][0]["text"] = "key sk-123"
    assert _context_outcomes(does_not) == {
        "mode-in-system-prompt": "failed",
        "task-read-before-last-request": "failed",
        "no-leak-in-first-request": "failed",
    }
