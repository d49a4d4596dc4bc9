"""Skill-activation controls every hook-collecting host runs (issue 19, item 1): commands that
return a prepared skill's body whole, in pages, or composed from several reads (positive), and
commands that show only part of it or another file (negative)."""

from __future__ import annotations

from typing import Any

BODY = "---\nname: greet\ndescription: Greets people.\n---\n# Greet\n\n" + "".join(
    f"Step {n}: say hello warmly.\n" for n in range(1, 9)
)
"""14 lines."""
OTHER = "# Notes\n\nStep 1: say hello warmly.\n"


def fixture(skills_dir: str) -> dict[str, Any]:
    return {"files": {f"{skills_dir}/greet/SKILL.md": BODY, "notes.md": OTHER, "copy.md": BODY}}


def SOURCED(skills_dir: str) -> list[str]:
    """Only content from the prepared file counts: a fixture file copying the body, read whole,
    in a page, and beside a one-line read of the real file (negative), then the real file in
    ``sed`` pages (a composed activation at the fifth command, from two reads)."""
    skill = f"{skills_dir}/greet/SKILL.md"
    return [
        "cat copy.md",
        "sed -n '1,7p' copy.md",
        f"cat copy.md; head -n 1 {skill}",
        f"sed -n '1,7p' {skill}",
        f"sed -n '8,14p' {skill}",
    ]


def check_sourced(document: dict[str, Any], first_ordinal: int = 1) -> None:
    observation = activations(document)
    assert observation["completeness"] == "complete", observation
    data = observation["data"]
    found = [
        (a["skill"], a["turn"], a["ordinal"], a["kind"], a["reads"]) for a in data["activations"]
    ]
    assert found == [("greet", 1, first_ordinal + 4, "composed", 2)], found
    check_agreement(document)


def POSITIVE(skills_dir: str) -> list[str]:
    """Four activations: whole (``cat``), whole with line numbers, composed from ``sed`` pages,
    composed from ``head`` then ``tail``."""
    skill = f"{skills_dir}/greet/SKILL.md"
    return [
        f"cat {skill}",
        f"cat -n {skill}",
        f"sed -n '1,5p' {skill}",
        f"sed -n '6,10p' {skill}",
        f"sed -n '11,14p' {skill}",
        f"head -n 7 {skill}",
        f"tail -n 7 {skill}",
    ]


def NEGATIVE(skills_dir: str) -> list[str]:
    """No activation: front matter only, a middle page, a grep, another file sharing a line, a
    listing, and a page that stops one line short of the end."""
    skill = f"{skills_dir}/greet/SKILL.md"
    return [
        f"head -n 4 {skill}",
        f"sed -n '6,9p' {skill}",
        f"grep -n Step {skill}",
        "cat notes.md",
        f"ls {skills_dir}/greet",
        f"wc -l {skill}",
        f"sed -n '1,13p' {skill} | tail -n 12",
    ]


def activations(document: dict[str, Any]) -> dict[str, Any]:
    (found,) = [
        o for o in document["evidence"]["observations"] if o["id"] == "sevro.host.skill-activations"
    ]
    return dict(found)


def check_positive(document: dict[str, Any], first_ordinal: int = 1) -> None:
    observation = activations(document)
    assert observation["completeness"] == "complete", observation
    data = observation["data"]
    found = [
        (a["skill"], a["turn"], a["ordinal"], a["kind"], a["reads"]) for a in data["activations"]
    ]
    o = first_ordinal
    assert found == [
        ("greet", 1, o, "whole", 1),
        ("greet", 1, o + 1, "whole", 1),
        ("greet", 1, o + 4, "composed", 3),
        ("greet", 1, o + 6, "composed", 2),
    ], found
    assert data["activated"] == ["greet"]
    assert data["records"] >= 7
    check_agreement(document)


def check_negative(document: dict[str, Any]) -> None:
    observation = activations(document)
    assert observation["completeness"] == "complete", observation
    assert observation["data"]["activations"] == [] and observation["data"]["activated"] == []
    assert observation["data"]["records"] >= 7
    check_agreement(document)


def check_agreement(document: dict[str, Any]) -> None:
    """``sevro.skills`` carries every activation as a ``read`` entry ``via`` hooks, and its
    ``read`` list includes every activated skill."""
    (skills,) = [o for o in document["evidence"]["observations"] if o["id"] == "sevro.skills"]
    data = activations(document)["data"]
    via = [
        (r["skill"], r["turn"], r["ordinal"])
        for r in skills["data"]["reads"]
        if r.get("via") == "hooks" and r["status"] == "read"
    ]
    assert via == [(a["skill"], a["turn"], a["ordinal"]) for a in data["activations"]]
    assert set(data["activated"]) <= set(skills["data"]["read"])


MARK = "-$((6*7))"
"""Appended to an ``echo`` marker, so the marker the shell prints (``...-42``) differs from the
command text the model's conversation also holds."""


def REACH(hooks: str, config: str, shown: tuple[str, ...] = ()) -> list[str]:
    """Commands that try to list, read and write the hook records directory ``hooks`` (and
    count what the private directory ``config`` holding it shows beyond the ``shown`` paths),
    each echoing a marker only on success; then the same commands on the workspace (controls).
    The caller adds one real read of the skill last."""
    attempts = [
        'echo "HOME=$HOME"',
        f"ls -a {hooks} && echo HOOKS-LISTED{MARK}",
        f"cat {hooks}/*.json && echo HOOKS-READ{MARK}",
        f"echo '{{}}' > {hooks}/1-1.json && echo HOOKS-WRITTEN{MARK}",
    ]
    # masked (empty) or refused: nothing of it is shown but the ``shown`` paths (find patterns)
    hide = "".join(f" -not -path '{pattern}'" for pattern in shown)
    attempts.append(f"find {config} -mindepth 1{hide} | wc -l | sed 's/^/CONFIG-ENTRIES-/'")
    return [
        *attempts,
        f'ls -a "$PWD" && echo WORKSPACE-LISTED{MARK}',
        f'cat "$PWD/notes.md" && echo WORKSPACE-READ{MARK}',
        f"echo '{{}}' > \"$PWD/out.json\" && echo WORKSPACE-WRITTEN{MARK}",
    ]


def check_out_of_reach(document: dict[str, Any], seen: str, calls: int) -> None:
    """``seen`` (what the model was sent) shows every control succeeding and no attempt; the
    skill's one real read (the last of ``calls``) is the only activation, and
    the evidence stays complete (no forged or foreign record)."""
    for marker in ("WORKSPACE-LISTED", "WORKSPACE-READ", "WORKSPACE-WRITTEN"):
        assert f"{marker}-42" in seen, marker
    assert "# Notes" in seen
    for marker in ("HOOKS-LISTED", "HOOKS-READ", "HOOKS-WRITTEN"):
        assert f"{marker}-42" not in seen, marker
    assert "CONFIG-ENTRIES-0" in seen
    assert "hook_event_name" not in seen and "tool_response" not in seen
    observation = activations(document)
    assert observation["completeness"] == "complete", observation
    found = [(a["skill"], a["ordinal"], a["kind"]) for a in observation["data"]["activations"]]
    assert found == [("greet", calls, "whole")], found
    assert observation["data"]["records"] == calls
