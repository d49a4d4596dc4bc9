"""The skill-read calibration controls every host runs (issue 15, item 5): commands the CLIs
really use to read a skill, each with what sevro must report for the skill's ``SKILL.md``.

One trial per host runs them all in order (each command is one tool call); the commands that
change directory come last, because Claude Code's shell keeps its directory between calls.
"""

from __future__ import annotations

from typing import Any

BODY = "---\nname: greet\ndescription: Greets people.\n---\n# Greet\n\n" + "".join(
    f"Step {n}: say hello warmly.\n" for n in range(1, 9)
)
NOTES = "Project notes.\n"


def controls(skills_dir: str) -> list[tuple[str, str | None]]:
    """(command, ``read`` / ``partial`` / None for untouched) against ``<skills_dir>/greet``."""
    skill = f"{skills_dir}/greet/SKILL.md"
    return [
        (f"cat {skill}", "read"),
        (f"cat -n {skill}", "read"),
        (f"sed -n '1,200p' {skill}", "read"),
        (f"head -n 200 {skill}", "read"),
        (f"cat {skill} | cat", "read"),
        (f"cat ./{skill}", "read"),
        (f"sed -n '1,2p' {skill}", "partial"),
        (f"head -n 3 {skill}", "partial"),
        (f"grep -n name {skill}", "partial"),
        (f"cat {skill} | head -n 2", "partial"),
        (f"ls {skills_dir}/greet", None),
        (f"wc -l {skill}", None),
        (f"stat {skill}", None),
        ("cat notes.md", None),
        (f"echo {skill}", None),
        (f"cd {skills_dir}/greet && cat SKILL.md", "read"),
    ]


def check_controls(
    document: dict[str, Any], skills_dir: str, first_ordinal: int = 1
) -> list[dict[str, Any]]:
    """Assert each control's ``sevro.file-reads`` entries for the skill (matched to commands by
    ordinal through ``sevro.commands``); return the commands observed."""
    observations = {o["id"]: o for o in document["evidence"]["observations"]}
    reads = observations["sevro.file-reads"]
    assert reads["completeness"] == "complete"
    commands = observations["sevro.commands"]["data"]["commands"]
    expected = controls(skills_dir)
    assert len(commands) >= len(expected), commands
    skill = f"{skills_dir}/greet/SKILL.md"
    for (command, status), entry in zip(expected, commands, strict=False):
        touches = [
            r["complete"]
            for r in reads["data"]["reads"]
            if r["ordinal"] == entry["ordinal"]
            and r["turn"] == entry["turn"]
            and r["path"] == skill
        ]
        got = None if not touches else ("read" if any(touches) else "partial")
        assert got == status, (command, entry, touches)
    notes = [r for r in reads["data"]["reads"] if r["path"] == "notes.md"]
    assert [r["complete"] for r in notes] == [True], notes  # the other file is read, not the skill
    return list(commands)
