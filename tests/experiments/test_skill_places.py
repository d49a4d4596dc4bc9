"""Every host declares where its CLI discovers skills and instructions (``skill_places``).

The places are checked against the real CLIs in ``tests/hosts_*/test_mounting_real_cli.py``;
here: each plugin and each configured host answers ``skill_places_of`` with its declaration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sevro_core.builtins.scripted_host import SKILLS_DIRS, ScriptedHost
from sevro_core.experiments.mounting import MountedSkillBundle, mount_arm
from sevro_core.experiments.sources import DirectorySource, read_source
from sevro_core.models import CancelToken, HostRequest
from sevro_core.plugin.protocols import HostOptions, SkillPlaces, skill_places_of
from sevro_hosts_claude.host import ClaudeHost, ClaudeTrial
from sevro_hosts_codex.host import CodexHost, CodexTrial
from sevro_hosts_pi.host import PiHost, PiTrial

SCRIPT = {"format": "sevro.scripted-host.v1", "default": {"turns": [[{"reply": {"text": "x"}}]]}}


@pytest.mark.parametrize(
    ("host", "places"),
    [
        (CodexHost(), SkillPlaces(".agents/skills", "AGENTS.md", ("AGENTS.override.md",))),
        (ClaudeHost(), SkillPlaces(".claude/skills", "CLAUDE.md")),
        (PiHost(), SkillPlaces(".agents/skills", "AGENTS.md")),
        (ScriptedHost(), SkillPlaces(".agents/skills", "AGENTS.md")),
    ],
)
def test_each_host_declares_where_its_cli_finds_skills(host: object, places: SkillPlaces) -> None:
    assert skill_places_of(host) == places


def test_the_configured_scripted_host_keeps_the_declaration_and_discovers_both_dirs() -> None:
    configured = ScriptedHost().configure(HostOptions(config=SCRIPT))
    assert skill_places_of(configured) == ScriptedHost.skill_places
    assert ScriptedHost.skill_places.skills_dir in SKILLS_DIRS  # what it mounts, it discovers


def test_the_agent_cli_trials_have_no_skills_dir_of_their_own() -> None:
    """``skills_dir`` comes from the plugin's declaration, so the two cannot disagree."""
    for trial in (CodexTrial, ClaudeTrial, PiTrial):
        assert "skills_dir" not in vars(trial)


def test_a_host_without_a_declaration_has_no_places() -> None:
    class Bare:
        skill_places = ".agents/skills"  # not a SkillPlaces: not a declaration

    assert skill_places_of(object()) is None and skill_places_of(Bare()) is None


def test_an_arm_mounted_for_the_scripted_host_is_offered_and_its_read_observed(
    tmp_path: Path,
) -> None:
    """The scripted host discovers what an experiment mounts at its declared places; its
    ``read`` steps see the mounted skill and context (positive and negative control)."""
    skill_source, context_source = tmp_path / "skill", tmp_path / "context"
    skill_source.mkdir()
    context_source.mkdir()
    (skill_source / "SKILL.md").write_bytes(b"---\nname: tidy\ndescription: Tidies.\n---\nTidy.\n")
    (context_source / "rules.md").write_bytes(b"Rule: be tidy.\n")
    skill = MountedSkillBundle("tidy", read_source(DirectorySource(skill_source)))
    steps = [
        {"read": {"path": ".agents/skills/tidy/SKILL.md"}},
        {"read": {"path": "AGENTS.md"}},
        {"reply": {"text": "done"}},
    ]
    config = {"format": "sevro.scripted-host.v1", "default": {"turns": [steps]}}
    configured = ScriptedHost().configure(HostOptions(config=config))
    results: dict[bool, dict[str, Any]] = {}
    for mounted in (True, False):
        root = tmp_path / str(mounted)
        workspace, private = root / "workspace", root / "private"
        workspace.mkdir(parents=True)
        private.mkdir()
        if mounted:
            context = read_source(DirectorySource(context_source))
            mount_arm(workspace, ScriptedHost.skill_places, [skill], [context])
        request = HostRequest(
            case_id="c",
            trial=1,
            prompts=("Go.",),
            workspace=workspace,
            condition="passive",
            cancel=CancelToken(),
            private_root=private,
        )
        results[mounted] = {o.id: o.data for o in configured.run(request).observations}
    skills, reads = results[True]["sevro.skills"], results[True]["sevro.file-reads"]
    assert [s["name"] for s in skills["offered"]] == ["tidy"] and skills["read"] == ["tidy"]
    assert [r.get("complete") for r in reads["reads"]] == [True, True]
    skills = results[False]["sevro.skills"]
    assert skills["offered"] == [] and skills["read"] == []
