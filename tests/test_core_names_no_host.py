"""The core names no host but its built-in scripted one: host knowledge lives in host plugins.

Adding a host (pi, ...) must not mean editing ``sevro_core``. The scan is case-insensitive and
matches the names inside identifiers too (``CODEX_HOME``, ``require_claude``).
"""

from __future__ import annotations

import re
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "sevro_core" / "src" / "sevro_core"
HOST_NAMES = re.compile(r"codex|claude|anthropic|openai", re.IGNORECASE)
ALLOWED = {
    # The test kit's mock model server speaks the OpenAI and Anthropic wire formats: it is what
    # real agent CLIs talk to in tests, not knowledge of a host.
    ("testing/mockmodel.py", None),
    # The scripted host stands in for every agent: it finds skills in the directories the agent
    # CLIs read, so one skill case runs on every host (docs/hosts/scripted.md).
    ("builtins/scripted_host.py", 'SKILLS_DIRS = (".agents/skills", ".claude/skills")'),
    # Seed 002's runtime-file key `codexState` and the five binding names it reserves are
    # names of the runtime contract (sevro.runtime.v1), not host knowledge: the core parses the
    # key and reserves the names; only a host plugin supplies the state (StateBinding).
    ("isolation/candidateartifacts.py", '"codex_config",'),
    ("isolation/candidateartifacts.py", '"codex_skills",'),
    ("isolation/candidateartifacts.py", '"command_codex_skills",'),
    ("isolation/runtime.py", 'STATE_KEY = "codexState"'),
    ("isolation/runtime.py", "codex_state: bool = False"),
    ("isolation/runtime.py", "codex_state=self.codex_state,"),
    ("isolation/runtime.py", "if self.codex_state:"),
    ("isolation/runtime.py", "codex_state=document.get(STATE_KEY, False),"),
    ("plugin/hostruntime.py", "codex_state: bool = False"),
    # The extension protocol's prepare declarations (codexMarketplace, claudePluginDirs and the
    # per-host skill invocations) are names of that contract, carried by the core unread; only
    # a host plugin honours them (its configured host's `prepared`).
    ("plugin/preparation.py", None),
    ("api.py", "CodexMarketplace,"),
    ("api.py", '"CodexMarketplace",'),
    (
        "run/engine.py",
        "candidate_state(runtime is not None and runtime.codex_state, host, result.state),",
    ),
}


def host_names_in(root: Path) -> list[str]:
    hits = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if (relative, None) in ALLOWED:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if HOST_NAMES.search(line) and (relative, line.strip()) not in ALLOWED:
                hits.append(f"{relative}:{number}: {line.strip()}")
    return hits


def test_core_names_no_host_but_scripted() -> None:
    assert host_names_in(CORE) == []


def test_the_scan_finds_a_host_name(tmp_path: Path) -> None:
    (tmp_path / "module.py").write_text('HOME_VARIABLE = "CODEX_HOME"\n"""Uses Claude."""\n')
    (tmp_path / "clean.py").write_text('"""Runs any host."""\n')
    assert host_names_in(tmp_path) == [
        'module.py:1: HOME_VARIABLE = "CODEX_HOME"',
        'module.py:2: """Uses Claude."""',
    ]
