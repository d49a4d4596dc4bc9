"""Sources of skills and context files: none, a directory, a Git ref; fingerprints and drift."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sevro_core.errors import InvocationError
from sevro_core.experiments.mounting import MountedSkillBundle, MountError, mount_arm
from sevro_core.experiments.sources import (
    DirectorySource,
    GitSource,
    NoSource,
    SourceChangedError,
    parse_source,
    read_source,
    tree_digest,
    verify,
)
from sevro_core.fixtures.git import Git
from sevro_core.limits import MAX_SOURCE_BYTES, MAX_SOURCE_FILES
from sevro_core.plugin.protocols import SkillPlaces
from sevro_core.testing import require_tool

SKILL = b"---\nname: release-notes\ndescription: Write release notes.\n---\nBody\n"


def git_for_tests() -> Git:
    return Git(require_tool("git"))


def write_bundle(root: Path) -> Path:
    bundle = root / "skills" / "release-notes"
    (bundle / "scripts").mkdir(parents=True)
    (bundle / "SKILL.md").write_bytes(SKILL)
    (bundle / "reference.md").write_bytes(b"# Reference\n")
    script = bundle / "scripts" / "collect.sh"
    script.write_bytes(b"#!/bin/sh\necho collect\n")
    script.chmod(0o755)
    return bundle


def committed_repository(root: Path, object_format: str) -> tuple[Git, Path]:
    """A real repository (``sha1`` or ``sha256``) with the bundle committed on ``main``."""
    git = git_for_tests()
    root.mkdir()
    git.run("init", "-q", f"--object-format={object_format}", "-b", "main", str(root), cwd=root)
    write_bundle(root)
    git.run("add", "-A", cwd=root)
    git.run("commit", "-q", "-m", "Add the skill", cwd=root)
    return git, root


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_a_git_ref_reads_the_committed_tree(tmp_path: Path, object_format: str) -> None:
    git, repo = committed_repository(tmp_path / "repo", object_format)
    # the working tree drifts after the commit: a Git source must not see it
    (repo / "skills" / "release-notes" / "reference.md").write_bytes(b"uncommitted\n")
    (repo / "skills" / "release-notes" / "new.md").write_bytes(b"untracked\n")
    source = parse_source("git:main:skills/release-notes", repo / "skills")
    assert isinstance(source, GitSource)
    tree = read_source(source, git)
    assert [entry.path for entry in tree.files] == [
        "SKILL.md",
        "reference.md",
        "scripts/collect.sh",
    ]
    assert tree.file("reference.md") is not None
    assert tree.file("reference.md").data == b"# Reference\n"  # type: ignore[union-attr]
    assert tree.file("scripts/collect.sh").mode == "100755"  # type: ignore[union-attr]
    assert tree.revision is not None
    assert len(tree.revision) == (40 if object_format == "sha1" else 64)


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_byte_identical_content_has_one_fingerprint_from_a_directory_and_a_git_ref(
    tmp_path: Path, object_format: str
) -> None:
    git, repo = committed_repository(tmp_path / "repo", object_format)
    from_git = read_source(parse_source("git:main:skills/release-notes", repo), git)
    directory = write_bundle(tmp_path / "copy")
    from_directory = read_source(DirectorySource(directory))
    assert from_git.fingerprint == from_directory.fingerprint
    # negative control: one byte more is another fingerprint
    (directory / "reference.md").write_bytes(b"# Reference!\n")
    assert read_source(DirectorySource(directory)).fingerprint != from_git.fingerprint


def test_the_fingerprint_is_the_tree_digest_over_path_mode_and_sha256(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path)
    tree = read_source(DirectorySource(bundle))
    assert tree.fingerprint == tree_digest(tuple(reversed(tree.files)))
    (bundle / "scripts" / "collect.sh").chmod(0o644)
    assert read_source(DirectorySource(bundle)).fingerprint != tree.fingerprint


def test_a_git_source_may_name_the_root_and_any_revision(tmp_path: Path) -> None:
    git, repo = committed_repository(tmp_path / "repo", "sha256")
    commit = git.revision(repo)
    git.run("tag", "v1", cwd=repo)
    by_branch = read_source(parse_source("git:main:skills/release-notes", repo), git)
    by_commit = read_source(parse_source(f"git:{commit}:skills/release-notes", repo), git)
    by_tag = read_source(parse_source("git:v1:./skills/release-notes", repo), git)
    assert by_branch.fingerprint == by_commit.fingerprint == by_tag.fingerprint
    assert by_tag.revision == commit
    root = read_source(parse_source("git:main:.", repo), git)
    assert [entry.path for entry in root.files] == [
        "skills/release-notes/SKILL.md",
        "skills/release-notes/reference.md",
        "skills/release-notes/scripts/collect.sh",
    ]


def test_a_ref_that_does_not_exist_is_one_clear_line(tmp_path: Path) -> None:
    git, repo = committed_repository(tmp_path / "repo", "sha1")
    with pytest.raises(InvocationError, match="no commit named 'no-such-branch'") as caught:
        read_source(parse_source("git:no-such-branch:skills/release-notes", repo), git)
    assert caught.value.exit_code == 64
    assert "\n" not in str(caught.value)


def test_a_git_path_that_is_missing_is_refused(tmp_path: Path) -> None:
    git, repo = committed_repository(tmp_path / "repo", "sha1")
    with pytest.raises(InvocationError, match="is neither a directory nor a file at main"):
        read_source(parse_source("git:main:skills/missing", repo), git)


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_a_git_path_naming_a_file_is_a_tree_of_that_one_file(
    tmp_path: Path, object_format: str
) -> None:
    """Context files are often one file (``git:main:AGENTS.md``); the bytes are the commit's."""
    git, repo = committed_repository(tmp_path / "repo", object_format)
    committed = (repo / "skills" / "release-notes" / "SKILL.md").read_bytes()
    (repo / "skills" / "release-notes" / "SKILL.md").write_text("edited, not committed")
    tree = read_source(parse_source("git:main:skills/release-notes/SKILL.md", repo), git)
    assert [(f.path, f.data) for f in tree.files] == [("SKILL.md", committed)]
    assert tree.revision is not None


def test_a_git_source_outside_a_repository_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvocationError, match="is not in a Git repository"):
        read_source(GitSource(tmp_path, "main", "skills"), git_for_tests())


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("git:main", "must be git:<ref>:<path>"),
        ("git:-bad:skills", "names no valid Git ref"),
        ("git::skills", "names no valid Git ref"),
        ("git:main:../outside", "must stay inside the repository"),
        ("git:main:/etc", "must stay inside the repository"),
        ("", "a source must be"),
    ],
)
def test_bad_source_specs_are_refused(tmp_path: Path, spec: str, message: str) -> None:
    with pytest.raises(InvocationError, match=message):
        parse_source(spec, tmp_path)


def test_source_specs_name_their_kind(tmp_path: Path) -> None:
    assert parse_source("none", tmp_path) == NoSource()
    assert parse_source("skills/x", tmp_path) == DirectorySource(tmp_path / "skills/x")
    assert parse_source("git:HEAD~1", tmp_path, default_path="skills/x") == GitSource(
        tmp_path, "HEAD~1", "skills/x"
    )
    assert parse_source("git:main:.", tmp_path) == GitSource(tmp_path, "main", "")


def test_none_is_an_empty_tree() -> None:
    tree = read_source(NoSource())
    assert tree.files == ()
    assert tree.fingerprint == tree_digest(())


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_a_symlink_in_a_git_tree_is_refused(tmp_path: Path, object_format: str) -> None:
    git, repo = committed_repository(tmp_path / "repo", object_format)
    (repo / "skills" / "release-notes" / "escape").symlink_to("/etc/passwd")
    git.run("add", "-A", cwd=repo)
    git.run("commit", "-q", "-m", "Add a link", cwd=repo)
    with pytest.raises(InvocationError, match="symbolic link 'escape'"):
        read_source(parse_source("git:main:skills/release-notes", repo), git)
    # negative control: the commit before the link reads fine
    assert read_source(parse_source("git:main~1:skills/release-notes", repo), git).files


def test_a_symlink_escaping_a_directory_is_refused_not_followed(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    (bundle / "escape.md").symlink_to(secret)
    with pytest.raises(InvocationError, match=r"symbolic link 'escape\.md'"):
        read_source(DirectorySource(bundle))
    (bundle / "escape.md").unlink()
    (bundle / "linked-dir").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(InvocationError, match="symbolic link 'linked-dir'"):
        read_source(DirectorySource(bundle))
    (bundle / "linked-dir").unlink()
    assert read_source(DirectorySource(bundle)).file("SKILL.md") is not None


def test_special_files_are_refused(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path)
    os.mkfifo(bundle / "pipe")
    with pytest.raises(InvocationError, match="special file 'pipe'"):
        read_source(DirectorySource(bundle))


def test_a_missing_source_is_refused_and_a_file_is_a_tree_of_one_file(tmp_path: Path) -> None:
    with pytest.raises(InvocationError, match="does not exist"):
        read_source(DirectorySource(tmp_path / "missing"))
    (tmp_path / "AGENTS.md").write_text("Be brief.\n")
    tree = read_source(DirectorySource(tmp_path / "AGENTS.md"))
    assert [(f.path, f.data, f.mode) for f in tree.files] == [
        ("AGENTS.md", b"Be brief.\n", "100644")
    ]
    (tmp_path / "link.md").symlink_to(tmp_path / "AGENTS.md")
    with pytest.raises(InvocationError, match="cannot be read"):
        read_source(DirectorySource(tmp_path / "link.md"))


def test_names_equal_after_nfc_normalisation_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    root.mkdir()
    (root / "caf\u00e9.md").write_text("composed")
    (root / "cafe\u0301.md").write_text("decomposed")
    with pytest.raises(InvocationError, match="after Unicode NFC normalisation"):
        read_source(DirectorySource(root))


def test_a_file_and_a_directory_equal_after_nfc_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    (root / "cafe\u0301").mkdir(parents=True)
    (root / "cafe\u0301" / "inside.md").write_text("in the directory")
    (root / "caf\u00e9").write_text("a file")
    with pytest.raises(InvocationError, match="after Unicode NFC normalisation"):
        read_source(DirectorySource(root))
    (root / "caf\u00e9").unlink()
    assert [entry.path for entry in read_source(DirectorySource(root)).files] == [
        "caf\u00e9/inside.md"
    ]


def test_a_decomposed_name_is_recorded_in_nfc(tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    root.mkdir()
    (root / "cafe\u0301.md").write_text("decomposed")
    assert [entry.path for entry in read_source(DirectorySource(root)).files] == ["caf\u00e9.md"]


def test_too_many_files_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    root.mkdir()
    for index in range(MAX_SOURCE_FILES + 1):
        (root / f"{index}.md").write_bytes(b"")
    with pytest.raises(InvocationError, match=f"more than {MAX_SOURCE_FILES} files"):
        read_source(DirectorySource(root))
    (root / "0.md").unlink()
    assert len(read_source(DirectorySource(root)).files) == MAX_SOURCE_FILES


def test_too_many_bytes_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    root.mkdir()
    (root / "half.bin").write_bytes(b"x" * (MAX_SOURCE_BYTES // 2))
    (root / "rest.bin").write_bytes(b"x" * (MAX_SOURCE_BYTES - MAX_SOURCE_BYTES // 2))
    assert sum(entry.size for entry in read_source(DirectorySource(root)).files) == MAX_SOURCE_BYTES
    (root / "one-more.bin").write_bytes(b"x")
    with pytest.raises(InvocationError, match=f"more than {MAX_SOURCE_BYTES} bytes"):
        read_source(DirectorySource(root))


def test_a_git_tree_over_the_byte_bound_is_refused_from_its_listing(tmp_path: Path) -> None:
    git, repo = committed_repository(tmp_path / "repo", "sha1")
    (repo / "skills" / "release-notes" / "big.bin").write_bytes(b"\0" * MAX_SOURCE_BYTES)
    git.run("add", "-A", cwd=repo)
    git.run("commit", "-q", "-m", "Add a large file", cwd=repo)
    with pytest.raises(InvocationError, match=f"more than {MAX_SOURCE_BYTES} bytes"):
        read_source(parse_source("git:main:skills/release-notes", repo), git)
    assert read_source(parse_source("git:main~1:skills/release-notes", repo), git).files


def test_a_working_tree_edited_after_fingerprinting_is_detected(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path)
    source = DirectorySource(bundle)
    fingerprint = read_source(source).fingerprint
    # negative control: unchanged content verifies (twice: verification changes nothing)
    assert verify(source, fingerprint).fingerprint == fingerprint
    assert verify(source, fingerprint).fingerprint == fingerprint
    (bundle / "reference.md").write_bytes(b"# Reference, edited mid-run\n")
    with pytest.raises(SourceChangedError, match="changed since it was fingerprinted") as caught:
        verify(source, fingerprint)
    assert caught.value.exit_code == 64
    assert "\n" not in str(caught.value)


def test_a_file_added_or_a_mode_changed_is_drift_too(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path)
    source = DirectorySource(bundle)
    fingerprint = read_source(source).fingerprint
    (bundle / "scripts" / "collect.sh").chmod(0o644)
    with pytest.raises(SourceChangedError):
        verify(source, fingerprint)
    (bundle / "scripts" / "collect.sh").chmod(0o755)
    verify(source, fingerprint)
    (bundle / "extra.md").write_bytes(b"")
    with pytest.raises(SourceChangedError):
        verify(source, fingerprint)


def test_a_git_source_verifies_against_its_ref(tmp_path: Path) -> None:
    git, repo = committed_repository(tmp_path / "repo", "sha256")
    source = parse_source("git:main:skills/release-notes", repo)
    fingerprint = read_source(source, git).fingerprint
    (repo / "skills" / "release-notes" / "reference.md").write_bytes(b"working tree only\n")
    assert verify(source, fingerprint, git).fingerprint == fingerprint
    git.run("commit", "-q", "-am", "Move main", cwd=repo)
    with pytest.raises(SourceChangedError):
        verify(source, fingerprint, git)


def test_a_git_tree_mounted_keeps_its_bytes_modes_and_fingerprint(tmp_path: Path) -> None:
    """What the engine installs (``mount_arm``) is the tree read, byte for byte, private."""
    git, repo = committed_repository(tmp_path / "repo", "sha1")
    tree = read_source(parse_source("git:main:skills/release-notes", repo), git)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    bundle = [MountedSkillBundle("release-notes", tree)]
    mount_arm(workspace, SkillPlaces(".agents/skills", "AGENTS.md"), bundle, ())
    target = workspace / ".agents" / "skills" / "release-notes"
    assert (target / "SKILL.md").read_bytes() == SKILL
    assert stat.S_IMODE((target / "scripts" / "collect.sh").stat().st_mode) == 0o700
    assert stat.S_IMODE((target / "reference.md").stat().st_mode) == 0o600
    assert stat.S_IMODE(target.stat().st_mode) == 0o700
    assert read_source(DirectorySource(target)).fingerprint == tree.fingerprint
    with pytest.raises(MountError, match="already has"):
        mount_arm(workspace, SkillPlaces(".agents/skills", "AGENTS.md"), bundle, ())
