"""sevro's own diff of a non-Git fixture: what changed, in Git's section shape, and nothing else."""

from __future__ import annotations

from pathlib import Path

from sevro_core.judges.subjects import BaseFiles
from sevro_core.judges.textdiff import text_diff


def test_changed_added_and_deleted_files_each_get_a_section(tmp_path: Path) -> None:
    before = BaseFiles({"same.txt": "x\n", "edit.txt": "a\nb\n", "gone.txt": "bye"}, False)
    (tmp_path / "same.txt").write_text("x\n")
    (tmp_path / "edit.txt").write_text("a\nB\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "new.txt").write_text("hello\n")
    diff, truncated = text_diff(before, tmp_path)
    text = diff.decode()
    assert not truncated
    assert "same.txt" not in text  # unchanged files are not shown
    assert text.count("diff --git ") == 3
    assert "diff --git a/edit.txt b/edit.txt\n--- a/edit.txt\n+++ b/edit.txt\n" in text
    assert "-b\n+B\n" in text
    assert "diff --git a/sub/new.txt b/sub/new.txt\nnew file mode 100644\n--- /dev/null\n" in text
    assert "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n" in text
    assert "-bye\n\\ No newline at end of file\n" in text


def test_nothing_changed_is_an_empty_diff_and_a_cut_side_is_flagged(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("same\n")
    assert text_diff(BaseFiles({"a.txt": "same\n"}, False), tmp_path) == (b"", False)
    assert text_diff(BaseFiles({"a.txt": "same\n"}, True), tmp_path) == (b"", True)


def test_a_symlink_in_the_workspace_is_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("SECRET\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "link.txt").symlink_to(outside)
    diff, _ = text_diff(BaseFiles({}, False), workspace)
    assert b"SECRET" not in diff


def test_where_an_arm_was_mounted_is_left_out(tmp_path: Path) -> None:
    (tmp_path / ".agents" / "skills" / "tidy").mkdir(parents=True)
    (tmp_path / ".agents" / "skills" / "tidy" / "SKILL.md").write_text("SECRET-SKILL\n")
    (tmp_path / "AGENTS.md").write_text("SECRET-CONTEXT\n")
    (tmp_path / "out.txt").write_text("work\n")
    diff, _ = text_diff(BaseFiles({}, False), tmp_path, (".agents/skills", "AGENTS.md"))
    assert b"SECRET" not in diff and b"diff --git a/out.txt b/out.txt" in diff
    unfiltered, _ = text_diff(
        BaseFiles({}, False), tmp_path
    )  # the control: present unless withheld
    assert b"SECRET-SKILL" in unfiltered and b"SECRET-CONTEXT" in unfiltered
