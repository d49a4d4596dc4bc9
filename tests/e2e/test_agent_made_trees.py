"""Trees an agent leaves behind (deep, wide, FIFOs, links) never break grading or cleanup."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from sevro_core.testing import SevroProject, require_sandbox, require_tool
from tests.e2e.helpers import assert_valid_evidence, trial_evidence

INLINE = {"files": {"a.txt": "a\n"}}
GENERATED = {
    "kind": "generated",
    "commits": [{"message": "chore: initialize", "files": {"README.md": "base\n"}}],
}
REQUIRED = ["sevro.observation.git-head", "sevro.observation.workspace"]


LEAF = "echo x > f && mkfifo p && ln -s / up && chmod 500 ."
WIDE = "mkdir w && cd w && seq 3000 | xargs mkdir && seq 3000 | sed 's|$|/f|' | xargs touch"
CHAIN = "chain() { p=$1; i=0; while [ $i -lt 1000 ]; do p=$p/d; i=$((i+1)); done; mkdir -p $p; }; "


def hostile_tree(depth: int) -> str:
    """A shell command: a ``depth``-deep chain ``d/d/...`` ending in a read-only directory that
    holds a file, a FIFO and a link to ``/``; and a directory 3000 entries wide."""
    chain = f"i=0; while [ $i -lt {depth} ]; do mkdir d && cd d || exit 1; i=$((i+1)); done"
    return f"({chain}; {LEAF}) && {WIDE}"


def beyond_path_max() -> str:
    """As :func:`hostile_tree` but 3002 levels deep: ``sh`` cannot ``cd`` past PATH_MAX, so
    three 1000-level chains are made and moved into each other by short relative paths."""
    deepest = "X" + "/d" * 1000
    middle = "Y" + "/d" * 1000
    return (
        f"{CHAIN}chain X && (cd {deepest} && {LEAF}) && chain Y && mv X {middle}/ && "
        f"mkdir d && chain d/d && mv Y {'d' + '/d' * 1001}/ && {WIDE}"
    )


def run_hostile(project: SevroProject, command: str, fixture: dict[str, Any]) -> dict[str, Any]:
    require_sandbox()
    require_tool("git")
    workspaces = project.root / "workspaces"
    workspaces.mkdir()
    case = project.case(
        fixture=fixture,
        checks=[
            {"id": "said", "grader": "sevro.regex", "configuration": {"pattern": "^done$"}},
            {"id": "deep", "grader": "sevro.shell", "configuration": {"run": "test -d d/d/d"}},
        ],
        requiredEvidence=REQUIRED if fixture is GENERATED else [],
    )
    host = project.script(
        default=[[{"run": {"command": command, "timeoutMs": 120_000}}, {"reply": {"text": "done"}}]]
    )
    try:
        done = project.run(
            case, "--host-config", host, "--trials", "2", "--workspace-root", workspaces
        )
    finally:
        leaked = list(workspaces.iterdir())
        # pytest's own tmp_path cleanup recurses: never leave it a deep tree, whatever failed
        subprocess.run(["rm", "-rf", *map(str, leaked)], check=False)
    assert done.exit_code in (0, 4), (done.stdout, done.stderr)  # a verdict, never a crash
    result: dict[str, Any] = done.json()
    assert_valid_evidence(result)  # also: every trial's workspace is gone
    assert leaked == [], "a workspace or private directory leaked"
    evidence = trial_evidence(result)
    assert [c["status"] for c in evidence["checks"]] == ["passed", "passed"]
    return result


def workspace_data(result: dict[str, Any]) -> dict[str, Any]:
    evidence = trial_evidence(result)
    found: dict[str, Any] = next(
        o for o in evidence["observations"] if o["id"] == "sevro.observation.workspace"
    )
    return found


@pytest.mark.parametrize("fixture", [INLINE, GENERATED], ids=["inline", "git"])
def test_a_tree_deeper_than_the_recursion_limit_is_graded_and_removed(
    sevro_project: SevroProject, fixture: dict[str, Any]
) -> None:
    result = run_hostile(sevro_project, hostile_tree(1100), fixture)
    assert result["exitCode"] == 0
    assert [t["task"] for t in result["cases"][0]["trials"]] == ["passed", "passed"]
    if fixture is GENERATED:
        evidence = trial_evidence(result)
        assert evidence["requiredEvidence"] == [{"id": i, "status": "complete"} for i in REQUIRED]
        data = workspace_data(result)["data"]
        assert data["changedPathCount"] == 3000 + 2  # w/*/f, the deep file and the deep link
        assert {"path": "d/" * 1100 + "f", "change": "added"} in data["changedPaths"]
        assert {"path": "w/1/f", "change": "added"} in data["changedPaths"]


def test_files_beyond_path_max_make_the_git_account_partial_never_complete(
    sevro_project: SevroProject,
) -> None:
    """Git skips what it cannot open with a warning; that is missing evidence, not 'no change'."""
    result = run_hostile(sevro_project, beyond_path_max(), GENERATED)
    observation = workspace_data(result)
    assert observation["completeness"] == "partial"
    assert observation["data"]["truncated"] is True
    assert trial_evidence(result)["requiredEvidence"][1] == {
        "id": "sevro.observation.workspace",
        "status": "partial",
    }
    assert [t["task"] for t in result["cases"][0]["trials"]] == ["not_assessed"] * 2
    assert result["exitCode"] == 4  # required evidence incomplete
