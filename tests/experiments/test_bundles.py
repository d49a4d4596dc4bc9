"""Skill bundles: SKILL.md front matter parsed with a real YAML library, bounded and checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sevro_core.errors import InvocationError
from sevro_core.experiments.bundles import BundleFile, load_bundle, parse_front_matter
from sevro_core.experiments.sources import DirectorySource, parse_source, read_source
from sevro_core.fixtures.git import Git
from sevro_core.formats.canonical import sha256_hex
from sevro_core.limits import (
    MAX_SKILL_DESCRIPTION_LENGTH,
    MAX_SKILL_FILE_BYTES,
    MAX_SKILL_FRONT_MATTER_BYTES,
    MAX_SKILL_FRONT_MATTER_DEPTH,
    MAX_SKILL_NAME_LENGTH,
)
from sevro_core.testing import require_tool

GOOD = (
    "---\n"
    "name: release-notes\n"
    "description: >-\n"
    "  Write release notes from the merged pull requests.\n"
    "license: Apache-2.0\n"
    "metadata:\n"
    "  version: '1.2'\n"
    "---\n"
    "# Release notes\n"
    "Read reference.md first.\n"
)


def bundle_with(tmp_path: Path, skill: str | bytes | None) -> Path:
    bundle = tmp_path / "release-notes"
    bundle.mkdir(parents=True)
    if skill is not None:
        data = skill.encode() if isinstance(skill, str) else skill
        (bundle / "SKILL.md").write_bytes(data)
    (bundle / "reference.md").write_bytes(b"# Reference\n")
    return bundle


def load(bundle: Path) -> object:
    return load_bundle(read_source(DirectorySource(bundle)))


def refusal(tmp_path: Path, skill: str | bytes | None) -> str:
    with pytest.raises(InvocationError) as caught:
        load(bundle_with(tmp_path, skill))
    message = str(caught.value)
    assert caught.value.exit_code == 64
    assert "\n" not in message
    return message


def test_a_bundle_carries_name_description_and_every_file(tmp_path: Path) -> None:
    bundle = bundle_with(tmp_path, GOOD)
    tree = read_source(DirectorySource(bundle))
    loaded = load_bundle(tree)
    assert loaded.name == "release-notes"
    assert loaded.description == "Write release notes from the merged pull requests."
    assert loaded.files == (
        BundleFile("SKILL.md", sha256_hex(GOOD.encode()), len(GOOD.encode())),
        BundleFile("reference.md", sha256_hex(b"# Reference\n"), 12),
    )
    assert loaded.fingerprint == tree.fingerprint


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_a_bundle_loads_from_a_git_ref(tmp_path: Path, object_format: str) -> None:
    git = Git(require_tool("git"))
    repo = tmp_path / "repo"
    repo.mkdir()
    git.run("init", "-q", f"--object-format={object_format}", "-b", "main", str(repo), cwd=repo)
    (repo / "skills").mkdir()
    bundle_with(repo / "skills", GOOD)
    git.run("add", "-A", cwd=repo)
    git.run("commit", "-q", "-m", "Add the skill", cwd=repo)
    from_git = load_bundle(read_source(parse_source("git:main:skills/release-notes", repo), git))
    from_directory = load(repo / "skills" / "release-notes")
    assert from_git == from_directory
    # a path of the repository that holds no SKILL.md is not a bundle
    with pytest.raises(InvocationError, match=r"is not a skill bundle: it has no SKILL\.md"):
        load_bundle(read_source(parse_source("git:main:skills", repo), git))


def test_a_directory_without_skill_md_is_not_a_bundle(tmp_path: Path) -> None:
    assert "is not a skill bundle: it has no SKILL.md" in refusal(tmp_path, None)


def test_a_nested_skill_md_does_not_count(tmp_path: Path) -> None:
    bundle = bundle_with(tmp_path, None)
    (bundle / "docs").mkdir()
    (bundle / "docs" / "SKILL.md").write_text(GOOD)
    with pytest.raises(InvocationError, match=r"it has no SKILL\.md"):
        load(bundle)


@pytest.mark.parametrize(
    ("skill", "message"),
    [
        ("# Release notes\nno front matter\n", "has no YAML front matter"),
        ("", "has no YAML front matter"),
        ("---\nname: x\ndescription: y\n", "never closed"),
        ("---\nname: [unclosed\ndescription: y\n---\n", "is not valid YAML"),
        ("---\nname: a\n  bad: indent\n---\n", "is not valid YAML"),
        ("---\n- name\n- description\n---\n", "must be a mapping"),
        ("---\njust a string\n---\n", "must be a mapping"),
        ("---\n---\n", "must be a mapping"),
        ("---\n1: x\nname: a\ndescription: b\n---\n", "must be a mapping"),
        ("---\ndescription: y\n---\n", "needs a string 'name'"),
        ("---\nname: a\n---\n", "non-empty string 'description'"),
        ("---\nname: a\ndescription: '   '\n---\n", "non-empty string 'description'"),
        ("---\nname: a\ndescription: [y]\n---\n", "non-empty string 'description'"),
        ("---\nname: 123\ndescription: y\n---\n", "needs a string 'name'"),
        ("---\nname: yes\ndescription: y\n---\n", "needs a string 'name'"),
        ("---\nbase: &a x\nname: *a\ndescription: y\n---\n", "may not use YAML aliases"),
        ("---\nname: !!python/object:os.system x\ndescription: y\n---\n", "is not valid YAML"),
    ],
)
def test_bad_front_matter_is_one_clear_line(tmp_path: Path, skill: str, message: str) -> None:
    found = refusal(tmp_path, skill)
    assert message in found
    assert "SKILL.md" in found


@pytest.mark.parametrize(
    "name",
    [
        "../escape",
        "a/b",
        "Release-Notes",
        "-leading",
        "trailing-",
        ".hidden",
        "with space",
        "a" * (MAX_SKILL_NAME_LENGTH + 1),
        "caf\u00e9",
        "",
    ],
)
def test_unsafe_names_are_refused(tmp_path: Path, name: str) -> None:
    skill = f"---\nname: {name!r}\ndescription: y\n---\n"
    assert "lowercase letters, digits and inner hyphens" in refusal(tmp_path, skill)


@pytest.mark.parametrize("name", ["a", "release-notes", "v2", "a" * MAX_SKILL_NAME_LENGTH])
def test_safe_names_are_accepted(tmp_path: Path, name: str) -> None:
    skill = f"---\nname: {name}\ndescription: y\n---\n"
    assert load_bundle(read_source(DirectorySource(bundle_with(tmp_path, skill)))).name == name


def test_the_description_is_bounded(tmp_path: Path) -> None:
    longest = "d" * MAX_SKILL_DESCRIPTION_LENGTH
    fine = load_bundle(
        read_source(
            DirectorySource(
                bundle_with(tmp_path / "a", f"---\nname: a\ndescription: {longest}\n---\n")
            )
        )
    )
    assert fine.description == longest
    too_long = f"---\nname: a\ndescription: {longest}d\n---\n"
    assert "description is longer than" in refusal(tmp_path, too_long)


def test_oversized_front_matter_is_refused(tmp_path: Path) -> None:
    padding = "# " + "x" * MAX_SKILL_FRONT_MATTER_BYTES + "\n"
    skill = f"---\nname: a\ndescription: y\n{padding}---\n"
    assert "front matter is larger than" in refusal(tmp_path, skill)


def test_an_oversized_skill_file_is_refused(tmp_path: Path) -> None:
    skill = "---\nname: a\ndescription: y\n---\n" + "x" * MAX_SKILL_FILE_BYTES
    assert "SKILL.md is larger than" in refusal(tmp_path, skill)


def test_nesting_is_bounded_before_yaml_builds_anything(tmp_path: Path) -> None:
    depth = MAX_SKILL_FRONT_MATTER_DEPTH
    # the top-level mapping is one level: the value may nest depth - 1 more
    fits = "[" * (depth - 1) + "]" * (depth - 1)
    assert parse_front_matter(f"---\nx: {fits}\n---\n".encode(), "SKILL.md")["x"] is not None
    deeper = "[" * depth + "]" * depth
    assert "nests deeper than" in refusal(tmp_path / "a", f"---\nx: {deeper}\n---\n")
    # far beyond the recursion limit: still one clear line, never a RecursionError
    hostile = "[" * 20_000 + "]" * 20_000
    assert "nests deeper than" in refusal(tmp_path / "b", f"---\nx: {hostile}\n---\n")


def test_front_matter_must_be_utf8(tmp_path: Path) -> None:
    assert "is not UTF-8" in refusal(tmp_path, b"---\nname: a\ndescription: \xff\n---\n")


def test_windows_line_endings_and_a_bom_are_accepted(tmp_path: Path) -> None:
    skill = "\ufeff---\r\nname: a\r\ndescription: y\r\n---\r\nBody\r\n"
    assert load_bundle(read_source(DirectorySource(bundle_with(tmp_path, skill)))).name == "a"


def test_yaml_is_imported_lazily() -> None:
    """Importing the modules must not import PyYAML (``sevro --help`` stays fast)."""
    probe = (
        "import sys, sevro_core.experiments.bundles, sevro_core.experiments.sources; "
        "print('yaml' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
