"""Git fixtures through `sevro run`: both kinds, tools, hooks, git-head outcomes, cleanup."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject, require_tool
from tests.e2e.helpers import assert_valid_evidence, load, trial_evidence

BASE_FIXTURE: dict[str, Any] = {
    "kind": "generated",
    "commits": [{"message": "chore: initialize", "files": {"README.md": "base\n"}}],
}
BASE_COMMIT = "25f87e4807431d88bb775a4c9dc0e8bb3ed95115"
COMMIT = {"run": {"command": "git commit -qam 'agent change'"}}
EDIT = {"write": {"path": "README.md", "content": "agent\n"}}
DONE = {"reply": {"text": "done"}}


@pytest.fixture(autouse=True)
def _git() -> None:
    require_tool("git")


def head_check(check_id: str, kind: str) -> dict[str, Any]:
    return {"id": check_id, "grader": "sevro.git-head", "configuration": {"kind": kind}}


ALL_KINDS = [
    head_check("changed", "changed"),
    head_check("unchanged", "unchanged"),
    head_check("ancestor", "base-ancestor"),
]


def observation(evidence: dict[str, Any], observation_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(o for o in evidence["observations"] if o["id"] == observation_id)
    return found


def statuses(result: dict[str, Any], case: int = 0) -> dict[str, str]:
    return {c["id"]: c["status"] for c in result["cases"][case]["trials"][0]["checks"]}


def commands(evidence: dict[str, Any]) -> list[int | None]:
    return [c["exitCode"] for c in observation(evidence, "sevro.commands")["data"]["commands"]]


def test_generated_history_is_identical_in_every_trial(sevro_project: SevroProject) -> None:
    case = sevro_project.case(
        fixture=BASE_FIXTURE,
        checks=[head_check("same", "unchanged")],
        requiredEvidence=["sevro.observation.git-head", "sevro.observation.workspace"],
    )
    host = sevro_project.script(
        default=[[{"run": {"command": "git log --format='%H %an %aI' > log.txt"}}, DONE]]
    )
    done = sevro_project.run(case, "--host-config", host, "--trials", "2", "--jobs", "2")
    assert done.exit_code == 0, done.stdout + done.stderr
    result = done.json()
    run = assert_valid_evidence(result)
    for index in range(2):
        evidence = trial_evidence(result, trial=index)
        head = observation(evidence, "sevro.observation.git-head")
        assert head["source"] == "sevro.fixture.generated"
        assert head["data"] == {
            "baseRevision": BASE_COMMIT,
            "currentRevision": BASE_COMMIT,
            "baseAncestor": True,
        }
        changed = observation(evidence, "sevro.observation.workspace")["data"]["changedPaths"]
        assert changed == [{"path": "log.txt", "change": "added"}]
        assert evidence["fixture"]["provider"] == "sevro.fixture.generated"
        assert evidence["requiredEvidence"][1] == {
            "id": "sevro.observation.workspace",
            "status": "complete",
        }
        diff = Path(result["evidencePath"]).parent / evidence["artifactRefs"][0]["path"]
        text = diff.read_text()
        assert f"+{BASE_COMMIT} Sevro Fixture 2000-01-01T00:00:00+00:00\n" in text
    assert run["cases"][0]["fixtureProvider"] == "sevro.fixture.generated"


def test_every_git_head_outcome(sevro_project: SevroProject) -> None:
    scripts = {
        "commits": [EDIT, COMMIT, DONE],
        "idle": [DONE],
        "branches": [
            {"run": {"command": "git switch -qc feature"}},
            EDIT,
            COMMIT,
            {"run": {"command": "git switch -q main"}},
            {"run": {"command": "git merge -q --ff-only feature"}},
            DONE,
        ],
        "rewrites": [EDIT, {"run": {"command": "git commit -q --amend -am 'rewritten'"}}, DONE],
        "orphan": [
            {
                "run": {
                    "command": "git switch -q --orphan fresh && git commit -qm new --allow-empty"
                }
            },
            DONE,
        ],
    }
    for name in scripts:
        sevro_project.case(f"cases/{name}.json", id=name, fixture=BASE_FIXTURE, checks=ALL_KINDS)
    host = sevro_project.script(cases={name: [steps] for name, steps in scripts.items()})
    done = sevro_project.run(sevro_project.root / "cases", "--host-config", host)
    assert done.exit_code == 1, done.stdout + done.stderr
    result = done.json()
    assert_valid_evidence(result)
    order = [c["caseId"] for c in result["cases"]]
    expected = {
        "commits": ("passed", "failed", "passed"),
        "idle": ("failed", "passed", "passed"),
        "branches": ("passed", "failed", "passed"),
        "rewrites": ("passed", "failed", "failed"),
        "orphan": ("passed", "failed", "failed"),
    }
    for index, name in enumerate(order):
        found = statuses(result, index)
        assert (found["changed"], found["unchanged"], found["ancestor"]) == expected[name], name
        evidence = trial_evidence(result, case=index)
        assert all(code == 0 for code in commands(evidence)), (name, commands(evidence))
        head = observation(evidence, "sevro.observation.git-head")["data"]
        assert head["baseRevision"] == BASE_COMMIT, name


def test_destroyed_git_state_is_a_grading_error(sevro_project: SevroProject) -> None:
    case = sevro_project.case(fixture=BASE_FIXTURE, checks=[head_check("head", "unchanged")])
    host = sevro_project.script(default=[[{"run": {"command": "rm -rf .git"}}, DONE]])
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 3, done.stdout + done.stderr
    evidence = trial_evidence(done.json())
    assert evidence["grading"]["error"]["checkId"] == "head"
    assert evidence["grading"]["error"]["message"].startswith("git state unreadable: ")
    head = observation(evidence, "sevro.observation.git-head")
    assert head["completeness"] == "unavailable"
    assert head["data"]["baseRevision"] == BASE_COMMIT
    assert_valid_evidence(done.json())


def test_git_head_on_a_non_git_fixture_is_refused_at_load(sevro_project: SevroProject) -> None:
    case = sevro_project.case(fixture={"files": {"a": "b"}}, checks=[head_check("h", "changed")])
    host = sevro_project.script(default=[[DONE]])
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 64
    assert f"{case}#/checks/0/grader: grader sevro.git-head needs sevro.fixture.git" in done.stderr
    assert not sevro_project.results.exists()


def test_tools_are_on_path_and_hooks_fire(sevro_project: SevroProject) -> None:
    fixture = {
        **BASE_FIXTURE,
        "files": {"tests/check.sh": "grep -q fixed README.md\n"},
        "commitFiles": True,
        "bin": {"run-tests": "#!/bin/sh\nexec sh tests/check.sh\n"},
        "hooks": {"pre-commit": "#!/bin/sh\nrun-tests\n"},
    }
    case = sevro_project.case(fixture=fixture, checks=ALL_KINDS)
    host = sevro_project.script(
        default=[
            [
                EDIT,
                COMMIT,  # refused: the pre-commit hook runs run-tests, which wants "fixed"
                {
                    "run": {
                        "command": 'case "$PATH" in "$PWD/.git/fixture-bin:"*) ;; *) exit 9;; esac'
                    }
                },
                {"write": {"path": "README.md", "content": "fixed\n"}},
                {"run": {"command": "run-tests"}},
                COMMIT,
                DONE,
            ]
        ]
    )
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 1, done.stdout + done.stderr
    evidence = trial_evidence(done.json())
    assert commands(evidence) == [1, 0, 0, 0]
    assert statuses(done.json()) == {
        "changed": "passed",
        "unchanged": "failed",
        "ancestor": "passed",
    }


def test_overlay_staging_and_the_diff_artifact(sevro_project: SevroProject) -> None:
    fixture = {
        **BASE_FIXTURE,
        "files": {"README.md": "staged\n", "draft.md": "draft\n"},
        "staged": ["README.md"],
    }
    case = sevro_project.case(
        fixture=fixture,
        checks=[head_check("head", "changed")],
        requiredEvidence=["sevro.git.diff"],
    )
    host = sevro_project.script(
        default=[[{"run": {"command": "git commit -qm 'commit the staged change'"}}, DONE]]
    )
    done = sevro_project.run(case, "--host-config", host)
    assert done.exit_code == 0, done.stdout + done.stderr
    evidence = trial_evidence(done.json())
    assert commands(evidence) == [0]
    workspace = observation(evidence, "sevro.observation.workspace")["data"]
    assert workspace["changedPaths"] == [
        {"path": "README.md", "change": "modified"},
        {"path": "draft.md", "change": "added"},
    ]
    (ref,) = evidence["artifactRefs"]
    assert ref["id"] == "sevro.git.diff"
    diff = (Path(done.json()["evidencePath"]).parent / ref["path"]).read_text()
    assert "-base\n+staged\n" in diff and "+draft\n" in diff
    assert evidence["requiredEvidence"] == [{"id": "sevro.git.diff", "status": "complete"}]
    report = sevro_project.sevro("report", Path(done.json()["evidencePath"]).parent, "--json")
    assert report.exit_code == 0, report.stderr  # the retained diff is re-hashed and verified


@pytest.mark.parametrize(
    ("fixture", "pointer", "fragment"),
    [
        ({**BASE_FIXTURE, "files": {".git/hooks/x": "x"}}, "/files/.git~1hooks~1x", ".git"),
        ({**BASE_FIXTURE, "files": {"a": "x"}, "staged": ["b"]}, "/staged/0", "not a key"),
        ({**BASE_FIXTURE, "files": {"readme.MD": "x"}}, "/files/readme.MD", "collides"),
        ({"kind": "generated", "commits": [], "commitFiles": True}, "/commitFiles", "non-empty"),
    ],
)
def test_bad_git_fixtures_exit_64(
    sevro_project: SevroProject, fixture: dict[str, Any], pointer: str, fragment: str
) -> None:
    case = sevro_project.case(fixture=fixture)
    done = sevro_project.run(case, "--host-config", sevro_project.script(default=[[DONE]]))
    assert done.exit_code == 64
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"sevro: error: {case}#/fixture{pointer}: ") and fragment in line
    assert done.json()["diagnostic"]["code"] == "sevro.invocation.invalid"


def test_cleanup_survives_locked_dirs_and_never_follows_symlinks(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    script = (
        f"ln -s {outside} out-link && ln -s {outside}/keep.txt .git/objects/keep-link && "
        "mkdir -p locked/inner && touch locked/inner/f && chmod 000 locked/inner && "
        "chmod 500 locked && chmod -R a-w .git"
    )
    case = sevro_project.case(fixture=BASE_FIXTURE, checks=[head_check("head", "unchanged")])
    host = sevro_project.script(default=[[{"run": {"command": script}}, DONE]])
    done = sevro_project.run(case, "--host-config", host, "--trials", "2")
    assert done.exit_code == 0, done.stdout + done.stderr
    assert_valid_evidence(done.json())  # asserts each workspace is gone
    assert (outside / "keep.txt").read_text() == "keep"


def test_a_failed_persist_keeps_the_git_workspace(sevro_project: SevroProject) -> None:
    case = sevro_project.case(fixture=BASE_FIXTURE, checks=[head_check("head", "unchanged")])
    # A 400 kB final message cannot be retained; the run state's files are far smaller.
    host = sevro_project.script(default=[[{"reply": {"text": "x" * 400_000}}]])

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))

    done = subprocess.run(
        [
            *(sys.executable, "-m", "sevro_core", "run", str(case)),
            *("--host-config", str(host), "--results-root", str(sevro_project.results), "--json"),
        ],
        cwd=sevro_project.root,
        capture_output=True,
        text=True,
        preexec_fn=small_files,
        timeout=60,
        check=False,
    )
    assert done.returncode == 70, done.stderr
    workspace = Path(done.stderr.strip().split("fixture retained at ")[1])
    assert (workspace / ".git").is_dir() and (workspace / "README.md").read_text() == "base\n"
    shutil.rmtree(workspace)


def git(cwd: Path, *args: str) -> str:
    env = {
        "PATH": "/usr/bin:/bin",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Source",
        "GIT_AUTHOR_EMAIL": "source@example.invalid",
        "GIT_COMMITTER_NAME": "Source",
        "GIT_COMMITTER_EMAIL": "source@example.invalid",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env=env, check=True
    ).stdout


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A source root with one clean repository, ``app``, and a map file beside it."""
    root = tmp_path / "sources"
    repo = root / "app"
    (repo / "src").mkdir(parents=True)
    (repo / "src/app.py").write_text("def greet():\n    return 'hi'\n")
    (repo / "link.py").symlink_to("src/app.py")
    git(repo, "init", "-q", "-b", "trunk")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "app")
    git(repo, "remote", "add", "origin", "https://example.invalid/app.git")
    (tmp_path / "sources.json").write_text(json.dumps({"app": repo.as_uri()}))
    return repo


def source_flags(repo: Path) -> list[str | Path]:
    return [
        "--case-source-root",
        repo.parent,
        "--case-source-map-file",
        repo.parent.parent / "sources.json",
    ]


def test_repository_fixture_runs_and_its_commit_is_identity(
    sevro_project: SevroProject, source: Path
) -> None:
    fixture = {"sourceRef": "app", "files": {"tests/t.sh": "exit 0\n"}, "commitFiles": True}
    case = sevro_project.case(fixture=fixture, checks=ALL_KINDS[:1] + ALL_KINDS[2:])
    host = sevro_project.script(
        default=[
            [
                {"run": {"command": 'test -z "$(git remote)"'}},
                {"write": {"path": "src/app.py", "content": "def greet():\n    return 'hello'\n"}},
                COMMIT,
                DONE,
            ]
        ]
    )
    first = sevro_project.run(case, "--host-config", host, *source_flags(source))
    assert first.exit_code == 0, first.stdout + first.stderr
    run = assert_valid_evidence(first.json())
    evidence = trial_evidence(first.json())
    assert commands(evidence) == [0, 0]
    assert evidence["fixture"]["provider"] == "sevro.fixture.repository"
    head = observation(evidence, "sevro.observation.git-head")["data"]
    assert head["baseRevision"] != git(source, "rev-parse", "HEAD").strip()  # scaffolding
    assert observation(evidence, "sevro.observation.workspace")["data"]["changedPaths"] == [
        {"path": "src/app.py", "change": "modified"}
    ]
    (source / "README.md").write_text("moved on\n")
    git(source, "add", "README.md")
    git(source, "commit", "-qm", "second")
    second = sevro_project.run(case, "--host-config", host, *source_flags(source))
    assert second.exit_code == 0, second.stderr
    other = load(second.json()["evidencePath"])
    assert other["cases"][0]["digests"]["fixture"] != run["cases"][0]["digests"]["fixture"]
    assert other["evaluationIdentity"]["digest"] != run["evaluationIdentity"]["digest"]
    dimensions = other["evaluationIdentity"]["dimensions"]
    before = run["evaluationIdentity"]["dimensions"]
    assert dimensions["fixtureDigest"] != before["fixtureDigest"]
    assert dimensions["caseDigest"] == before["caseDigest"]


@pytest.mark.parametrize("problem", ["dirty", "untracked", "escape", "symlink-overlay", "flags"])
def test_repository_problems_exit_64_before_any_trial(
    sevro_project: SevroProject, source: Path, tmp_path: Path, problem: str
) -> None:
    fixture: dict[str, Any] = {"sourceRef": "app"}
    flags = source_flags(source)
    fragment = {
        "dirty": "is not clean",
        "untracked": "'?? new.txt'",
        "escape": "outside --case-source-root",
        "symlink-overlay": "a symlink in the source",
        "flags": "must be given together",
    }[problem]
    if problem == "dirty":
        (source / "src/app.py").write_text("changed\n")
    elif problem == "untracked":
        (source / "new.txt").write_text("new\n")
    elif problem == "escape":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (source.parent / "escape").symlink_to(elsewhere)
        (tmp_path / "sources.json").write_text(
            json.dumps({"app": (source.parent / "escape").as_uri()})
        )
    elif problem == "symlink-overlay":
        fixture["files"] = {"link.py": "print('through the link')\n"}
    else:
        flags = flags[:2]
    case = sevro_project.case(fixture=fixture)
    done = sevro_project.run(case, "--host-config", sevro_project.script(default=[[DONE]]), *flags)
    assert done.exit_code == 64, done.stderr
    assert fragment in done.stderr
    assert not sevro_project.results.exists()


def test_validate_and_dry_runs_handle_git_fixtures(
    sevro_project: SevroProject, source: Path
) -> None:
    generated = sevro_project.case("cases/generated.json", id="generated", fixture=BASE_FIXTURE)
    repository = sevro_project.case(
        "cases/repository.json", id="repository", fixture={"sourceRef": "app"}
    )
    ok = sevro_project.sevro("validate", generated.parent, *source_flags(source))
    assert ok.exit_code == 0 and "2 case(s) valid" in ok.stdout
    refused = sevro_project.sevro("validate", repository)
    assert refused.exit_code == 64 and "needs --case-source-root" in refused.stderr
    dry = sevro_project.run(
        generated.parent,
        "--host-config",
        sevro_project.script(default=[[DONE]]),
        "--dry",
        *source_flags(source),
    )
    assert dry.exit_code == 0, dry.stderr
    evidence = trial_evidence(dry.json())
    assert [o["id"] for o in evidence["observations"]] == ["sevro.observation.final-message"]
    assert_valid_evidence(dry.json())
