"""The Git fixtures' probe: base HEAD held in memory, git-head facts, fingerprint and diff."""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sevro_core.builtins.generated_fixture import GeneratedFixtureProvider
from sevro_core.fixtures import probe as gitprobe
from sevro_core.fixtures.workspace import create_workspace
from sevro_core.models import CancelToken, Observation
from sevro_core.plugin.protocols import FixtureReport, WorkspaceProbe
from sevro_core.states import Completeness
from sevro_core.testing import require_tool

DECLARATION: dict[str, Any] = {
    "kind": "generated",
    "commits": [
        {
            "message": "base",
            "files": {"README.md": "base\n", "src/app.py": "x = 1\n", "src/keep.py": "k\n"},
        }
    ],
    "files": {".gitignore": "*.log\n"},
    "commitFiles": True,
}


@pytest.fixture(autouse=True)
def _git() -> None:
    require_tool("git")


def git(workspace: Path, *args: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(
        ["git", *args], cwd=workspace, capture_output=True, text=True, env=env, check=True
    )
    return done.stdout


def prepared(
    tmp_path: Path, declaration: dict[str, Any] = DECLARATION
) -> tuple[Path, WorkspaceProbe, dict[str, Any]]:
    workspace = create_workspace(tmp_path)
    fixture = GeneratedFixtureProvider().compile(declaration).materialise(workspace)
    assert fixture.probe is not None
    return workspace, fixture.probe, dict(fixture.probe.baseline(CancelToken()))


def observed(probe: WorkspaceProbe, baseline: dict[str, Any]) -> dict[str, Observation]:
    report = probe.observe(baseline, CancelToken())
    assert isinstance(report, FixtureReport)
    return {o.id: o for o in report.observations}


def diff_of(probe: WorkspaceProbe, baseline: dict[str, Any]) -> bytes:
    (artifact,) = probe.observe(baseline, CancelToken()).artifacts
    assert artifact.id == "sevro.git.diff"
    return artifact.content


def test_untouched_workspace(tmp_path: Path) -> None:
    workspace, probe, baseline = prepared(tmp_path)
    assert baseline == {"baseRevision": git(workspace, "rev-parse", "HEAD").strip()}
    found = observed(probe, baseline)
    head = found["sevro.observation.git-head"]
    assert head.completeness is Completeness.COMPLETE
    base = baseline["baseRevision"]
    assert head.data == {"baseRevision": base, "currentRevision": base, "baseAncestor": True}
    workspace_obs = found["sevro.observation.workspace"]
    assert workspace_obs.completeness is Completeness.COMPLETE
    assert workspace_obs.data == {
        "baseRevision": base,
        "changedPaths": [],
        "changedPathCount": 0,
        "truncated": False,
        "diffTruncated": False,
    }
    assert diff_of(probe, baseline) == b""


def test_changes_are_fingerprinted_and_diffed_against_the_base(tmp_path: Path) -> None:
    workspace, probe, baseline = prepared(tmp_path)
    (workspace / "src/app.py").write_text("x = 2\n")
    (workspace / "README.md").unlink()
    (workspace / "new dir").mkdir()
    (workspace / "new dir/n.txt").write_text("new\n")
    os.chmod(workspace / "src/keep.py", 0o755)
    (workspace / "debug.log").write_text("ignored\n")
    (workspace / "link").symlink_to("src/app.py")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "agent work")
    found = observed(probe, baseline)
    head = found["sevro.observation.git-head"].data
    assert head["currentRevision"] != head["baseRevision"] and head["baseAncestor"] is True
    data = found["sevro.observation.workspace"].data
    assert data["changedPaths"] == [
        {"path": "README.md", "change": "deleted"},
        {"path": "link", "change": "added"},
        {"path": "new dir/n.txt", "change": "added"},
        {"path": "src/app.py", "change": "modified"},
        {"path": "src/keep.py", "change": "modified"},
    ]
    diff = diff_of(probe, baseline)
    assert b"-x = 1\n+x = 2\n" in diff and b"old mode 100644\nnew mode 100755" in diff
    assert b"ignored" not in diff
    # The diff is real: applied to the base it reproduces the agent's commit.
    check = create_workspace(tmp_path)
    git(check, "clone", "-q", str(workspace), ".")
    git(check, "checkout", "-q", baseline["baseRevision"])
    (check / "patch").write_bytes(diff)
    git(check, "apply", "--index", "patch")
    (check / "patch").unlink()
    assert git(check, "write-tree") == git(workspace, "rev-parse", "HEAD^{tree}")


def test_the_base_cannot_be_rewritten_by_the_candidate(tmp_path: Path) -> None:
    workspace, probe, baseline = prepared(tmp_path)
    git(workspace, "commit", "-q", "--amend", "-m", "rewritten base")
    (workspace / ".git/ORIG_HEAD").write_text(baseline["baseRevision"] + "\n")
    head = observed(probe, baseline)["sevro.observation.git-head"].data
    assert head["baseRevision"] == baseline["baseRevision"]
    assert head["currentRevision"] != baseline["baseRevision"]
    assert head["baseAncestor"] is False


def test_configured_programs_never_run(tmp_path: Path) -> None:
    workspace, probe, baseline = prepared(tmp_path)
    marker = tmp_path / "ran"
    program = f"sh -c 'touch {marker}; cat'"
    with open(workspace / ".git/config", "a") as config:
        config.write(
            f'[filter "evil"]\n\tclean = {program}\n\tsmudge = {program}\n'
            f'[diff "evil"]\n\ttextconv = {program}\n\tcommand = {program}\n'
            f"[core]\n\tfsmonitor = {program}\n[diff]\n\texternal = {program}\n"
        )
    (workspace / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (workspace / "src/app.py").write_text("x = 3\n")
    found = observed(probe, baseline)
    assert diff_of(probe, baseline).count(b"diff --git") == 2
    assert found["sevro.observation.workspace"].completeness is Completeness.COMPLETE
    assert not marker.exists()


def test_symlinks_are_never_followed_out_of_the_tree(tmp_path: Path) -> None:
    workspace, probe, baseline = prepared(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "app.py").write_text("SECRET\n")
    shutil.rmtree(workspace / "src")
    (workspace / "src").symlink_to(outside)
    data = observed(probe, baseline)["sevro.observation.workspace"].data
    assert {"path": "src/app.py", "change": "deleted"} in data["changedPaths"]
    assert {"path": "src", "change": "added"} in data["changedPaths"]
    assert b"SECRET" not in diff_of(probe, baseline)


@pytest.mark.parametrize("damage", ["remove", "symlink", "garbage-head"])
def test_unreadable_git_state_is_unavailable(tmp_path: Path, damage: str) -> None:
    workspace, probe, baseline = prepared(tmp_path)
    other, _, _ = prepared(tmp_path)
    if damage == "garbage-head":
        (workspace / ".git/HEAD").write_text("garbage\n")
    else:
        shutil.rmtree(workspace / ".git")
        if damage == "symlink":
            (workspace / ".git").symlink_to(other / ".git")
    report = probe.observe(baseline, CancelToken())
    assert report.artifacts == ()
    for observation in report.observations:
        assert observation.completeness is Completeness.UNAVAILABLE
        assert observation.data["baseRevision"] == baseline["baseRevision"]
        prefix = "git state" if observation.id == "sevro.observation.git-head" else "workspace"
        assert str(observation.data["error"]).startswith(f"{prefix} unreadable: ")


def test_bounds_make_the_fingerprint_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, probe, baseline = prepared(tmp_path)
    for index in range(5):
        (workspace / f"f{index}.txt").write_text("x" * 100)
    monkeypatch.setattr(gitprobe, "MAX_WORKSPACE_CHANGED_PATHS", 2)
    monkeypatch.setattr(gitprobe, "MAX_WORKSPACE_DIFF_BYTES", 300)
    found = observed(probe, baseline)["sevro.observation.workspace"]
    assert found.completeness is Completeness.COMPLETE
    assert len(found.data["changedPaths"]) == 2 and found.data["changedPathCount"] == 5
    assert found.data["truncated"] is True and found.data["diffTruncated"] is True
    assert len(diff_of(probe, baseline)) == 300
    monkeypatch.setattr(gitprobe, "MAX_WORKSPACE_HASHED_BYTES", 250)
    partial = observed(probe, baseline)["sevro.observation.workspace"]
    assert partial.completeness is Completeness.PARTIAL and partial.data["truncated"] is True


def test_a_file_the_candidate_locked_makes_the_fingerprint_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, probe, baseline = prepared(tmp_path)
    (workspace / "src/app.py").write_text("x = 2\n")
    real = gitprobe._blob_entry

    def locked(root: Path, path: bytes, algorithm: str, budget: list[int]) -> Any:
        if path == b"README.md":  # as chmod 000 would, for a candidate that is not root
            raise PermissionError(13, "Permission denied")
        return real(root, path, algorithm, budget)

    monkeypatch.setattr(gitprobe, "_blob_entry", locked)
    found = observed(probe, baseline)["sevro.observation.workspace"]
    assert found.completeness is Completeness.PARTIAL and found.data["truncated"] is True
    assert found.data["changedPaths"] == [{"path": "src/app.py", "change": "modified"}]
    assert b"README.md" not in diff_of(probe, baseline)


def test_an_empty_history_has_no_base(tmp_path: Path) -> None:
    workspace, probe, baseline = prepared(tmp_path, {"kind": "generated", "commits": []})
    assert baseline == {"baseRevision": None}
    unborn = observed(probe, baseline)["sevro.observation.git-head"].data
    assert unborn == {"baseRevision": None, "currentRevision": None, "baseAncestor": True}
    (workspace / "a.txt").write_text("a\n")
    git(workspace, "add", "a.txt")
    git(workspace, "commit", "-qm", "first")
    found = observed(probe, baseline)
    assert found["sevro.observation.git-head"].data["baseAncestor"] is True
    assert found["sevro.observation.workspace"].data["changedPaths"] == [
        {"path": "a.txt", "change": "added"}
    ]
    assert b"+a\n" in diff_of(probe, baseline)


def crafted_index(paths: list[bytes]) -> bytes:
    """A raw index (version 2) listing ``paths``, which `git update-index` would refuse."""
    body = b"DIRC" + struct.pack(">II", 2, len(paths))
    empty_blob = bytes.fromhex("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")
    for path in sorted(paths):
        entry = struct.pack(">10I", 0, 0, 0, 0, 0, 0, 0o100644, 0, 0, 0) + empty_blob
        entry += struct.pack(">H", len(path)) + path
        body += entry + b"\0" * (8 - len(entry) % 8)
    return body + hashlib.sha1(body).digest()


def test_a_crafted_index_cannot_lead_the_probe_out_of_the_tree(tmp_path: Path) -> None:
    workspace, probe, baseline = prepared(tmp_path)
    (workspace.parent / "outside.txt").write_text("SECRET\n")
    names = [b"../outside.txt", b"/etc/hostname", b"a/../../outside.txt", b"README.md"]
    (workspace / ".git/index").write_bytes(crafted_index(names))
    data = observed(probe, baseline)["sevro.observation.workspace"].data
    assert data["changedPaths"] == []  # the listed names outside the tree were never read
    (workspace / "README.md").write_text("changed\n")
    assert observed(probe, baseline)["sevro.observation.workspace"].data["changedPaths"] == [
        {"path": "README.md", "change": "modified"}
    ]
    assert b"SECRET" not in diff_of(probe, baseline)
