"""Every host declares where its CLI discovers skills and instructions (``skill_places``).

The places are checked against the real CLIs in ``tests/hosts_*/test_mounting_real_cli.py``;
here: each plugin and each configured host answers ``skill_places_of`` with its declaration.
"""

from __future__ import annotations

import pytest

from sevro_core.builtins.scripted_host import SKILLS_DIRS, ScriptedHost
from sevro_core.plugin.protocols import HostOptions, SkillPlaces, skill_places_of
from sevro_hosts_claude.host import ClaudeHost, ClaudeTrial
from sevro_hosts_codex.host import CodexHost, CodexTrial

SCRIPT = {"format": "sevro.scripted-host.v1", "default": {"turns": [[{"reply": {"text": "x"}}]]}}


@pytest.mark.parametrize(
    ("host", "places"),
    [
        (CodexHost(), SkillPlaces(".agents/skills", "AGENTS.md")),
        (ClaudeHost(), SkillPlaces(".claude/skills", "CLAUDE.md")),
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
    for trial in (CodexTrial, ClaudeTrial):
        assert "skills_dir" not in vars(trial)


def test_a_host_without_a_declaration_has_no_places() -> None:
    class Bare:
        skill_places = ".agents/skills"  # not a SkillPlaces: not a declaration

    assert skill_places_of(object()) is None and skill_places_of(Bare()) is None
