"""The Codex state opt-in (runtime key ``codexState``, seed 002; issue 19 item 2): commands see
the real isolated CODEX_HOME (configuration read-only, non-system skills writable, system
skills read-only, credentials and sessions denied), checks get the five read-only state
bindings, and a fixture-local ``.codex`` is accepted only as inert input."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.api import DEFAULT_PATH, CancelToken, HostFailure
from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_codex import binary as binaries
from sevro_hosts_codex.configuration import TrialLayout, parse, render_config_toml
from sevro_hosts_codex.preflight import PROBLEMS, preflight_argv, run_preflight
from sevro_hosts_codex.state import AGENT_SKILLS_VARIABLE, StateLayout, untrusted_project
from sevro_hosts_codex.testing import require_codex
from tests.hosts_codex.helpers import run_codex, shell, trial

pytestmark = pytest.mark.slow

PLANTED = '{"OPENAI_API_KEY": "sk-planted-state"}'


@pytest.fixture
def codex() -> str:
    return require_codex()


def _sandbox(tmp_path: Path, codex: str, *, weaken: bool = False) -> tuple[Any, ...]:
    """A trial-shaped layout with the state opt-in's profile (``weaken``: CODEX_HOME granted
    whole, to show the probes notice), a planted auth.json and session file."""
    binary = binaries.locate(codex)
    root = tmp_path / "trial"
    workspace = root / "workspace"
    layout = TrialLayout(root / "codex-home", root / "home", root / "tmp", root / "bin")
    for directory in (workspace, layout.codex_home, layout.home, layout.tmp, layout.bin):
        directory.mkdir(parents=True, mode=0o700)
    state = StateLayout(layout.codex_home, root / "native-home", layout.home)
    state.prepare()
    (layout.codex_home / "auth.json").write_text(PLANTED)
    (layout.codex_home / "sessions").mkdir()
    (layout.codex_home / "sessions" / "s.jsonl").write_text("SESSION\n")
    os.symlink(binary.native, layout.bin / "codex-linux-sandbox")
    env = {"PATH": DEFAULT_PATH, "HOME": str(layout.home), "TMPDIR": str(layout.tmp)}
    command_env = {
        **env,
        "CODEX_HOME": str(layout.codex_home),
        AGENT_SKILLS_VARIABLE: str(state.agent_skills),
    }
    text = render_config_toml(
        parse(None, {}),
        model=None,
        effort=None,
        layout=layout,
        executable_tree=binary.tree,
        denied=[],
        command_env=command_env,
        granted=(([layout.codex_home] if weaken else []), ()),
        state=state.profile(),
        projects=untrusted_project(workspace),
    )
    (layout.codex_home / "config.toml").write_text(text)
    native_env = {
        **env,
        "PATH": f"{layout.bin}:{DEFAULT_PATH}",
        "CODEX_HOME": str(layout.codex_home),
    }
    return binary, workspace, layout, state, native_env


def test_the_preflight_holds_with_the_state_profile_and_notices_readable_credentials(
    tmp_path: Path, codex: str
) -> None:
    for weaken in (False, True):
        binary, workspace, layout, _, env = _sandbox(tmp_path / str(weaken), codex, weaken=weaken)
        argv = preflight_argv(
            binary.native, workspace, (layout.tmp, layout.codex_home), False, None, state=True
        )
        if not weaken:
            run_preflight(argv, workspace=workspace, env=env, timeout_s=60, cancel=CancelToken())
            continue
        with pytest.raises(HostFailure) as failure:  # auth.json readable: the probe says so
            run_preflight(argv, workspace=workspace, env=env, timeout_s=60, cancel=CancelToken())
        assert PROBLEMS[23] in failure.value.message


def test_state_profile_grants_exactly_what_the_seed_says(tmp_path: Path, codex: str) -> None:
    binary, workspace, layout, state, env = _sandbox(tmp_path, codex)
    home, native = layout.codex_home, state.agent_skills
    probes = {
        "config readable": f'grep -q trust_level "{home}/config.toml"',
        "config not writable": f"! sh -c 'echo x >> \"{home}/config.toml\"' 2>/dev/null",
        "skills writable": f'mkdir -p "{home}/skills/m" && echo body > "{home}/skills/m/SKILL.md"',
        "system read-only": f'! touch "{home}/skills/.system/x" 2>/dev/null',
        "auth unreadable": f'! cat "{home}/auth.json" 2>/dev/null',
        "sessions unreadable": f'! cat "{home}/sessions/s.jsonl" 2>/dev/null',
        "native skills writable": f'mkdir -p "{native}/n" && echo b > "{native}/n/SKILL.md"',
    }
    for what, probe in probes.items():
        argv = [str(binary.native), "sandbox", "-P", "sevro", "-C", str(workspace), "--"]
        done = subprocess.run(
            [*argv, "/bin/bash", "-c", probe],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, (what, done.stdout, done.stderr)
    assert (home / "skills" / "m" / "SKILL.md").read_text() == "body\n"
    assert (home / "auth.json").read_text() == PLANTED
    assert not (home / "skills" / ".system" / "x").exists()


# -- whole runs through `sevro run --host codex` ---------------------------------------------

SKILL = "---\\nname: made\\ndescription: made by the candidate\\n---\\nbody\\n"
WRITE = (
    f'mkdir -p "$CODEX_HOME/skills/made"'
    f' && printf -- "{SKILL}" > "$CODEX_HOME/skills/made/SKILL.md"'
    f' && mkdir -p "$SEVRO_CODEX_AGENT_SKILLS/native" && printf -- "{SKILL}"'
    ' > "$SEVRO_CODEX_AGENT_SKILLS/native/SKILL.md"'
)
SEES = {
    "codex-skill": 'grep -q "^body$" "$SEVRO_CANDIDATE_ARTIFACT_CODEX_SKILLS/made/SKILL.md"',
    "agent-skill": 'test -f "$SEVRO_CANDIDATE_ARTIFACT_AGENT_SKILLS/native/SKILL.md"',
    "command-agent": 'test -d "$SEVRO_CANDIDATE_ARTIFACT_COMMAND_AGENT_SKILLS"',
    "command-codex": 'test -d "$SEVRO_CANDIDATE_ARTIFACT_COMMAND_CODEX_SKILLS"',
    "untrusted": 'grep -q \'trust_level = "untrusted"\' "$SEVRO_CANDIDATE_ARTIFACT_CODEX_CONFIG"',
    "threads": 'grep -q "threads_per_session = 3" "$SEVRO_CANDIDATE_ARTIFACT_CODEX_CONFIG"',
    "read-only": '! touch "$SEVRO_CANDIDATE_ARTIFACT_CODEX_SKILLS/made/x" 2>/dev/null',
}
DENIED = (
    '! cat "$CODEX_HOME/auth.json" 2>/dev/null && ! ls "$CODEX_HOME/sessions" 2>/dev/null'
    " && ! sh -c 'echo x >> \"$CODEX_HOME/config.toml\"' 2>/dev/null"
    " && echo denied > denied.txt"
)


def _check(check_id: str, run: str) -> dict[str, Any]:
    return {"id": check_id, "grader": "sevro.shell", "configuration": {"run": run}}


def _runtime(project: SevroProject, selected: bool) -> Path:
    document: dict[str, Any] = {"format": "sevro.runtime.v1"}
    if selected:
        document["codexState"] = True
    return project.write_json("runtime.json", document)


def _config_root(project: SevroProject) -> Path:
    root = project.root / "config-root"
    (root / ".codex").mkdir(parents=True)
    (root / ".codex" / "config.toml").write_text(
        "[agents]\nmax_concurrent_threads_per_session = 3\n"
    )
    return root


@pytest.mark.parametrize("mode", ["writes", "link", "off"])
def test_a_candidate_s_codex_skills_reach_checks_only_through_the_opt_in(
    sevro_project: SevroProject, mock_model: Callable[..., Any], codex: str, mode: str
) -> None:
    command = f"{DENIED} && {WRITE}"
    if mode == "link":  # the bound tree is checked like an artifact directory
        command += ' && ln -s /etc/passwd "$CODEX_HOME/skills/made/evil"'
    server = mock_model([reply(shell(command)), reply(Message("ready"))])
    case = sevro_project.case(
        checks=[
            *(_check(k, v) for k, v in SEES.items()),
            _check("denied", "grep -q denied denied.txt"),
        ]
    )
    runtime = _runtime(sevro_project, mode != "off")
    config_root = _config_root(sevro_project)
    done = run_codex(
        sevro_project,
        codex,
        server,
        case,
        "--runtime-config-file",
        str(runtime),
        "--config-root",
        str(config_root),
    )
    checks = {c["id"]: c for c in trial(sevro_project)["evidence"]["checks"]}
    if mode == "writes":
        assert done.exit_code == 0, done.stdout + done.stderr + json.dumps(checks)
        assert {c["status"] for c in checks.values()} == {"passed"}
        assert not list(sevro_project.root.rglob("native-home")), "removed with the trial"
    elif mode == "link":  # unsafe state: every check a grading error, never a pass
        assert {c["status"] for c in checks.values()} == {"unavailable"}, checks
        assert "holds a symbolic link 'made/evil'" in checks["codex-skill"]["detail"]
        assert done.exit_code != 0
    else:  # without the opt-in CODEX_HOME is invisible and nothing is bound
        assert checks["codex-skill"]["status"] == "failed" and done.exit_code != 0, checks


EXEC = ("exec", "--json", "--skip-git-repo-check")
INERT = "SENTINEL-PROJECT-CONFIG-7f3a"
AGENTS = "AGENTS-SENTINEL-91c2"
REPOSITORY_SKILL = {
    ".agents/skills/demo/SKILL.md": "---\nname: demo\ndescription: REPO-SKILL-DESC-5d1e\n---\nb\n"
}
FIXTURE_CODEX = {".codex/config.toml": f'developer_instructions = "{INERT}"\n'}


def test_a_fixture_codex_directory_is_inert_with_the_opt_in_and_refused_without(
    sevro_project: SevroProject, mock_model: Callable[..., Any], codex: str
) -> None:
    server = mock_model([reply(Message("ready"))])
    case = sevro_project.case(
        fixture={"files": {**FIXTURE_CODEX, **REPOSITORY_SKILL, "AGENTS.md": AGENTS}},
        checks=[_check("kept", "test -f .codex/config.toml")],
    )
    done = run_codex(sevro_project, codex, server, case)
    assert done.exit_code == 64 and "select codexState" in done.stderr, done.stderr
    assert server.requests == []
    runtime = _runtime(sevro_project, True)
    done = run_codex(sevro_project, codex, server, case, "--runtime-config-file", str(runtime))
    assert done.exit_code == 0, done.stdout + done.stderr
    (request,) = server.requests
    assert b"REPO-SKILL-DESC-5d1e" in request.body, "the repository's skills still load"
    assert INERT.encode() not in request.body, "the fixture's Codex configuration had effect"
    # Codex 0.171.0 skips an untrusted project's AGENTS.md too (docs/hosts/codex.md says so):
    # a Codex that starts loading it again shows here, and the docs must change with it.
    assert AGENTS.encode() not in request.body


def test_the_same_project_configuration_has_effect_when_the_project_is_trusted(
    tmp_path: Path, mock_model: Callable[..., Any], codex: str
) -> None:
    """The positive control of the test above: Codex itself reads this `.codex/config.toml`
    once the project is trusted, so its absence there is the untrusted mark's doing."""
    server = mock_model([reply(Message("ready")), reply(Message("ready"))])
    binary, workspace, layout, _, env = _sandbox(tmp_path, codex)
    (workspace / ".codex").mkdir()
    (workspace / ".codex" / "config.toml").write_text(FIXTURE_CODEX[".codex/config.toml"])
    for trust, seen in (("untrusted", False), ("trusted", True)):
        config = [
            'model = "mock-model"',
            'model_provider = "mock"',
            'approval_policy = "never"',
            "project_root_markers = []",
            "",
            "[model_providers.mock]",
            'name = "mock"',
            f'base_url = "{server.base_url}"',
            'wire_api = "responses"',
            'env_key = "SEVRO_STATE_KEY"',
            "request_max_retries = 0",
            "stream_max_retries = 0",
            "",
            f'[projects."{workspace}"]',
            f'trust_level = "{trust}"',
        ]
        (layout.codex_home / "config.toml").write_text("\n".join(config) + "\n")
        before = len(server.requests)
        done = subprocess.run(
            [str(binary.native), *EXEC, "-C", str(workspace), "-"],
            input="Return ready.",
            env={**env, "SEVRO_STATE_KEY": "sk-test"},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        (request,) = server.requests[before:]
        assert (INERT.encode() in request.body) is seen, trust
