"""The read detector: positive and negative controls for every command form item 5 lists.

Each command really runs (``/bin/sh -c`` in a workspace) and the detector sees its real output
and exit code, as a host would hand them in.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sevro_core.hosts.reads import (
    WorkspaceFiles,
    command_reads,
    denumbered,
    front_matter_removed,
    workspace_path,
)
from sevro_core.hosts.skills import MountedSkill, classify_read, discover_skills

SKILL = ".agents/skills/greet/SKILL.md"
BODY = "---\nname: greet\ndescription: Greets people.\n---\n# Greet\n\nSay hello warmly.\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / ".agents/skills/greet/references").mkdir(parents=True)
    (tmp_path / SKILL).write_text(BODY)
    (tmp_path / ".agents/skills/greet/references/tone.md").write_text("Be kind.\n")
    (tmp_path / "notes.md").write_text("unrelated\n")
    return tmp_path


def run(workspace: Path, command: str) -> tuple[str, int]:
    done = subprocess.run(
        ["/bin/sh", "-c", command], cwd=workspace, capture_output=True, text=True, check=False
    )
    return done.stdout + done.stderr, done.returncode


def status(workspace: Path, command: str) -> str | None:
    skill = discover_skills(workspace)[0][0]
    output, code = run(workspace, command)
    return classify_read(skill, workspace, command, output, code)


READ_FORMS = [
    f"cat {SKILL}",
    f"cat -n {SKILL}",
    f"sed -n '1,200p' {SKILL}",
    f"sed -n '1,$p' {SKILL}",
    f"head -n 200 {SKILL}",
    f"head -200 {SKILL}",
    f"tail -n +1 {SKILL}",
    f"cat {SKILL} | cat",
    "cd .agents/skills/greet && cat SKILL.md",
    "cd .agents && cd skills/greet; cat -n SKILL.md",
    f"cat ./{SKILL}",
    f"cat -- {SKILL}",
    f"cat < {SKILL}",
    f"cat {SKILL} 2>&1",
    f"/bin/bash -lc 'cat {SKILL}'",
    f"echo start && cat {SKILL} && echo done",
]
PARTIAL_FORMS = [
    f"sed -n '1,2p' {SKILL}",
    f"head -n 3 {SKILL}",
    f"grep name {SKILL}",
    f"grep -n hello {SKILL}",
    f"cat {SKILL} | head -n 2",
    f"cat {SKILL} > /dev/null",
    f"cat {SKILL} | grep hello",
    f"awk 'NR<3' {SKILL}",
    f"cat -A {SKILL}",
    f"cat {SKILL}; exit 3",
    f"less {SKILL}",
    f"sed -n -e '1,200p' {SKILL}",
    f"sed -n '3,200p' {SKILL}",
    f"head -c 20 {SKILL}",
]
NOT_READ_FORMS = [
    "ls .agents/skills/greet",
    "ls -la .agents/skills/greet",
    f"wc -l {SKILL}",
    f"stat {SKILL}",
    f"file {SKILL}",
    f"test -f {SKILL} && echo yes",
    "cat .agents/skills/greet/references/tone.md",
    "cat notes.md",
    f"echo {SKILL}",
    f"cp {SKILL} copy.md",
    "find .agents -name SKILL.md",
    "cat > out.md <<'EOF'\nread .agents/skills/greet/SKILL.md first\nEOF",
    "cat greet/SKILL.md",
    f"sed -i 's/hello/hi/' {SKILL}",
    f"echo extra | tee -a {SKILL}",
]


@pytest.mark.parametrize("command", READ_FORMS)
def test_whole_reads_count_as_read(workspace: Path, command: str) -> None:
    assert status(workspace, command) == "read"


@pytest.mark.parametrize("command", PARTIAL_FORMS)
def test_partial_reads_are_partial(workspace: Path, command: str) -> None:
    assert status(workspace, command) == "partial"


@pytest.mark.parametrize("command", NOT_READ_FORMS)
def test_metadata_other_files_and_names_are_not_reads(workspace: Path, command: str) -> None:
    assert status(workspace, command) is None


def test_an_absolute_path_inside_the_workspace_is_the_same_file(workspace: Path) -> None:
    assert status(workspace, f"cat {workspace / SKILL}") == "read"
    assert status(workspace, f"cat {workspace}/./.agents/skills/../skills/greet/SKILL.md") == "read"


def test_output_that_does_not_hold_the_body_is_partial(workspace: Path) -> None:
    skill = discover_skills(workspace)[0][0]
    assert classify_read(skill, workspace, f"cat {SKILL}", BODY[:-3], 0) == "partial"
    assert classify_read(skill, workspace, f"cat {SKILL}", BODY, 1) == "partial"
    assert classify_read(skill, workspace, f"cat {SKILL}", BODY, None) == "partial"


def test_the_body_is_the_one_mounted_at_the_start(workspace: Path) -> None:
    skill = discover_skills(workspace)[0][0]
    (workspace / SKILL).write_text("changed\n")
    assert classify_read(skill, workspace, f"cat {SKILL}", "changed\n", 0) == "partial"
    assert classify_read(skill, workspace, f"cat {SKILL}", BODY, 0) == "read"


def test_an_unreadable_skill_is_never_read(workspace: Path) -> None:
    unknown = MountedSkill("greet", SKILL, None, None, None)
    assert classify_read(unknown, workspace, f"cat {SKILL}", BODY, 0) == "partial"


def test_every_file_a_command_reads_is_reported(workspace: Path) -> None:
    command = (
        f"cat notes.md {SKILL}; grep -c x .agents/skills/greet/references/tone.md; wc -l notes.md"
    )
    output, code = run(workspace, command)
    found = command_reads(command, output, code, WorkspaceFiles(workspace))
    assert [(r.path, r.complete, r.how) for r in found.reads] == [
        ("notes.md", True, "cat"),
        (SKILL, True, "cat"),
        (".agents/skills/greet/references/tone.md", False, "grep"),
    ]
    assert not found.unresolved and found.cwd == "."


def test_globs_are_expanded_against_the_workspace(workspace: Path) -> None:
    assert status(workspace, "cat .agents/skills/*/SKILL.md") == "read"
    assert status(workspace, "head -n 2 .agents/skills/gr??t/SKILL.md") == "partial"
    files = WorkspaceFiles(workspace)
    found = command_reads("grep -l Be .agents/skills/greet/*/*.md", "", 0, files)
    assert found.reads == () and not found.unresolved  # grep's files are not expanded


def test_variables_empty_globs_and_unknown_directories_are_unresolved(workspace: Path) -> None:
    files = WorkspaceFiles(workspace)
    for command in ("cat $F", "cat nothing/*.md", "cd - && cat SKILL.md", "cat **/SKILL.md"):
        found = command_reads(command, "", 0, files)
        assert found.unresolved and not found.reads, command
    assert not command_reads("grep 'a*' notes.md", "", 0, files).unresolved


def test_paths_outside_the_workspace_are_not_recorded(workspace: Path, tmp_path: Path) -> None:
    files = WorkspaceFiles(workspace)
    for command in ("cat /etc/hostname", "cat ../outside.md", "cd .. && cat x/SKILL.md"):
        assert command_reads(command, "", 0, files).reads == (), command


def test_a_symlink_is_never_followed(
    workspace: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside") / "secret.md"
    outside.write_text("secret\n")
    (workspace / "link.md").symlink_to(outside)
    found = command_reads("cat link.md", "secret\n", 0, WorkspaceFiles(workspace))
    assert [(r.path, r.complete) for r in found.reads] == [("link.md", False)]


def test_a_missing_file_read_is_a_partial_touch(workspace: Path) -> None:
    output, code = run(workspace, "cat gone.md")
    found = command_reads("cat gone.md", output, code, WorkspaceFiles(workspace))
    assert [(r.path, r.complete) for r in found.reads] == [("gone.md", False)]
    assert not found.unresolved


def test_a_successful_read_of_a_missing_file_is_unresolved(workspace: Path) -> None:
    """Codex runs `cat SKILL.md` with a `workdir` it does not report: some file was read."""
    found = command_reads("cat SKILL.md", BODY, 0, WorkspaceFiles(workspace))
    assert found.unresolved and not found.reads


def test_the_directory_carries_over_when_the_host_shell_keeps_it(workspace: Path) -> None:
    files = WorkspaceFiles(workspace)
    first = command_reads("cd .agents/skills/greet", "", 0, files)
    assert first.cwd == ".agents/skills/greet"
    second = command_reads("cat SKILL.md", BODY, 0, files, first.cwd)
    assert [(r.path, r.complete) for r in second.reads] == [(SKILL, True)]


def test_unparseable_commands_are_unresolved(workspace: Path) -> None:
    from sevro_core.limits import MAX_READ_COMMAND_CHARS

    files = WorkspaceFiles(workspace)
    for command in (
        "cat 'unterminated",
        "cat notes.md " + " " * MAX_READ_COMMAND_CHARS,
        "cat a\0b",
    ):
        found = command_reads(command, "unrelated\n", 0, files)
        assert found.unresolved and not found.reads, command[:20]


def test_numbered_output_and_front_matter() -> None:
    assert denumbered("1\tA\n2\tB\n3\t") == "A\nB\n"
    assert denumbered("     1\tA\n     2\tB") == "A\nB"
    assert denumbered("1\u2192A\n2\u2192B") == "A\nB"
    assert denumbered("1\tA\n3\tB") is None
    assert denumbered("A\nB") is None
    assert front_matter_removed(BODY) == "# Greet\n\nSay hello warmly.\n"
    assert front_matter_removed("no front matter\n") == "no front matter\n"


def test_tool_paths_are_canonical_and_confined(tmp_path: Path) -> None:
    assert workspace_path(tmp_path, "./a/../b.md") == "b.md"
    assert workspace_path(tmp_path, str(tmp_path / "c" / "d.md")) == "c/d.md"
    assert workspace_path(tmp_path, "../x.md") is None
    assert workspace_path(tmp_path, "/etc/passwd") is None


def test_the_log_is_bounded_and_then_partial() -> None:
    from sevro_core.hosts.reads import CommandReads, FileRead, ReadLog
    from sevro_core.limits import MAX_FILE_READS

    log = ReadLog()
    one = CommandReads((FileRead("a.md", True, "cat"),), True, ".")
    for ordinal in range(MAX_FILE_READS):
        log.add(1, ordinal, one)
    assert not log.overflowed
    log.add(2, 0, one)
    assert log.overflowed and len(log.entries) == MAX_FILE_READS
    unresolved = ReadLog()
    for ordinal in range(MAX_FILE_READS + 1):
        unresolved.add(1, ordinal, CommandReads((), True, None))
    assert unresolved.overflowed and len(unresolved.unresolved) == MAX_FILE_READS
    data = log.data("AGENTS.md")
    assert data["instructionsFile"] == "AGENTS.md"
    assert data["reads"][0] == {
        "turn": 1,
        "ordinal": 0,
        "path": "a.md",
        "complete": True,
        "how": "cat",
    }


def test_the_instructions_file_is_the_first_override_present(tmp_path: Path) -> None:
    from sevro_core.hosts.reads import instructions_file
    from sevro_core.plugin.protocols import SkillPlaces

    places = SkillPlaces(".agents/skills", "AGENTS.md", overrides=("AGENTS.override.md",))
    assert instructions_file(tmp_path, places) == "AGENTS.md"
    (tmp_path / "AGENTS.override.md").write_text("x\n")
    assert instructions_file(tmp_path, places) == "AGENTS.override.md"
    assert instructions_file(tmp_path, None) is None


def test_a_here_string_is_not_a_here_document(workspace: Path) -> None:
    command = f"cat <<<word; cat {SKILL}"
    output, code = run(workspace, f"bash -c '{command}'")
    found = command_reads(f"bash -c '{command}'", output, code, WorkspaceFiles(workspace))
    assert [(r.path, r.complete) for r in found.reads] == [(SKILL, True)]
