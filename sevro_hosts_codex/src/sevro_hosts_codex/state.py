"""The Codex state opt-in (the runtime file's top-level ``codexState``, seed 002).

A skill may install or change Codex skills or read Codex's configuration; without the opt-in
the private ``CODEX_HOME`` is invisible to the agent's commands. With it, commands see the real
isolated ``CODEX_HOME``: ``config.toml`` read-only, non-system ``skills/`` writable, bundled
``skills/.system`` read-only, everything else there (authentication, sessions) still denied.
The native process gets a ``HOME`` of its own, separate from the commands' ``HOME``; its
user-skill directory is writable and named to commands by ``SEVRO_CODEX_AGENT_SKILLS``. The
runner creates every one of these places before Codex starts and, after the candidate ran,
hands the five of them to checks as read-only bindings (``HostResult.state``): it never
creates replacement empty directories, so missing state stays a grading error.
"""

from __future__ import annotations

import os
from pathlib import Path

from attrs import frozen

from sevro_core.api import StateBinding

AGENT_SKILLS_VARIABLE = "SEVRO_CODEX_AGENT_SKILLS"
"""Names the native process's ``HOME/.agents/skills`` to the agent's commands."""
NATIVE_HOME = "native-home"
"""The native process's ``HOME`` under the private root (commands keep the trial's home)."""
CONFIG, SKILLS, SYSTEM = "config.toml", "skills", ".system"
AGENT_SKILLS = ".agents/skills"
COMMAND_CODEX_SKILLS = ".codex/skills"


@frozen
class StateLayout:
    """The three private roots the opt-in exposes: Codex's home, the native process's home and
    the home the agent's commands get."""

    codex_home: Path
    native_home: Path
    command_home: Path

    @property
    def agent_skills(self) -> Path:
        return self.native_home / AGENT_SKILLS

    def prepare(self) -> None:
        """Create every exposed place (0700, no link followed): the native and command skill
        directories and ``CODEX_HOME/skills/.system``, so the profile's grants exist."""
        for root, relative in (
            (self.codex_home, f"{SKILLS}/{SYSTEM}"),
            (self.native_home, AGENT_SKILLS),
            (self.command_home, AGENT_SKILLS),
            (self.command_home, COMMAND_CODEX_SKILLS),
        ):
            current = root
            for part in relative.split("/"):
                current = current / part
                os.makedirs(current, mode=0o700, exist_ok=True)
                if current.is_symlink():  # a private root: nothing else writes there first
                    raise OSError(f"{current} is a symbolic link")

    def profile(self) -> list[tuple[Path, str]]:
        """The permission-profile entries commands get: the configuration read-only, the
        non-system Codex skills and the native user skills writable, system skills read-only
        (listed after their parent, so the narrower grant wins)."""
        skills = self.codex_home / SKILLS
        return [
            (self.codex_home / CONFIG, "read"),
            (skills, "write"),
            (skills / SYSTEM, "read"),
            (self.agent_skills, "write"),
        ]

    def bindings(self) -> tuple[StateBinding, ...]:
        """The five reserved read-only bindings checks get once the candidate finished."""
        return (
            StateBinding("codex_config", self.codex_home, CONFIG, file=True),
            StateBinding("codex_skills", self.codex_home, SKILLS),
            StateBinding("agent_skills", self.native_home, AGENT_SKILLS),
            StateBinding("command_agent_skills", self.command_home, AGENT_SKILLS),
            StateBinding("command_codex_skills", self.command_home, COMMAND_CODEX_SKILLS),
        )


def untrusted_project(workspace: Path) -> list[str]:
    """``config.toml`` lines marking the workspace untrusted: Codex then loads none of the
    project's ``.codex`` layer (configuration, hooks, rules), so a fixture's ``.codex`` stays
    inert, represented input."""
    return ["", f"[projects.{_quoted(str(workspace))}]", 'trust_level = "untrusted"']


def _quoted(value: str) -> str:
    import json

    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ValueError(f"refusing a control character in a configuration value: {value!r}")
    return json.dumps(value, ensure_ascii=False)
