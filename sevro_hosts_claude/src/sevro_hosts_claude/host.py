"""The Claude Code host (``sevro.host.claude``): ``claude -p --output-format stream-json``.

Each trial runs Claude Code inside sevro's bubblewrap sandbox with a private
``CLAUDE_CONFIG_DIR``, ``HOME`` and temp directory and an environment built from nothing. The
prompt goes in on stdin; a follow-up prompt resumes the same session with ``--resume``. Every
turn's stream is parsed strictly and retained as an artifact; commands, tool calls, file changes
and skill activations become observations with the same ids and meaning as the Codex host's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import evolve, frozen

from sevro_core.api import (
    DEFAULT_PATH,
    HOST_HOOKS_OBSERVATION,
    NATIVE_GOAL_OBSERVATION,
    NO_HOST_PREPARATION,
    SKILL_ACTIVATIONS_OBSERVATION,
    TOOL_CALLS_OBSERVATION,
    AgentCliHost,
    AgentCliTrial,
    Case,
    Completeness,
    ConfigurationError,
    ConfiguredAgentCliHost,
    CredentialLocations,
    DoctorCheck,
    DoctorRequest,
    EvidenceIds,
    FileRead,
    HookLog,
    Host,
    HostFailure,
    HostOptions,
    HostPreparation,
    HostRequest,
    HostSetting,
    InstrumentationOffer,
    InvocationError,
    JsonValue,
    MountedSkill,
    NativeBinary,
    Observation,
    SkillPlaces,
    Snapshot,
    TurnEvidence,
    TurnRecord,
    Usage,
    command_entry,
    denumbered,
    front_matter_removed,
    hook_command,
    hookimpl,
    inside,
    line_count,
    passive_offers,
    read_confined,
    roots_to_hide,
    snapshot,
    workspace_path,
    write_private,
)
from sevro_hosts_claude import binary as binaries
from sevro_hosts_claude import credentials, nativegoal
from sevro_hosts_claude.budget import CallBudget
from sevro_hosts_claude.configuration import (
    ALLOW_WRITE,
    CREDENTIALS,
    JUDGE_FLAGS,
    PERMISSION_MODE,
    PROJECT_SETTINGS,
    PROJECT_SETTINGS_FILE,
    RUNTIME_TREES,
    SANDBOX_TMP,
    ClaudeConfig,
    TrialLayout,
    parse,
    render_settings,
    sandbox_argv,
)
from sevro_hosts_claude.events import ToolUse, Turn, parse_turn
from sevro_hosts_claude.limits import MAX_PLUGIN_MANIFEST_BYTES, MAX_SETTINGS_CHECK_BYTES
from sevro_hosts_claude.nested import NESTED_SKILLS_OBSERVATION, nested_skills

HOST_ID = "sevro.host.claude"
TURNS_OBSERVATION = "sevro.claude.turns"
EVENTS_ARTIFACT = "sevro.claude.events"
FOLLOW_UP_EVENTS_ARTIFACT = "sevro.claude.follow-up-events"
CONTINUATION_OBSERVATION = "sevro.claude.continuation"
REPOSITORY_INVOCATION_OBSERVATION = "sevro.claude.repository-invocation"
PLUGIN_DIRS_OBSERVATION = "sevro.claude.plugin-dirs"
EXPLICIT_INVOCATION_OBSERVATION = "sevro.claude.explicit-invocation"
_PLUGIN_NAME_RE = re.compile(r"^[a-z][a-z0-9-]*$")
_PLUGIN_SLASH_RE = re.compile(r"^/([a-z][a-z0-9-]*):([A-Za-z0-9._-]+)(?:\s|$)")
_SLASH_RE = re.compile(r"^/([A-Za-z0-9._-]+)(?:\s|$)")
_EXIT_RE = re.compile(r"^Exit code (\d+)")
PASSIVE_INSTRUMENTATION = frozenset(
    {
        SKILL_ACTIVATIONS_OBSERVATION,  # the PostToolUse hook that only records
        NESTED_SKILLS_OBSERVATION,  # read from the stream and the sub-agent transcripts
        TOOL_CALLS_OBSERVATION,  # read from the stream
        HOST_HOOKS_OBSERVATION,  # the hook executions, with hooks.nativeGoal
    }
)
"""Observers a candidate offers as instrumentation: each only records what the agent did, so
none changes execution (Claude runs ``passive`` only). Each id is also the observation that
shows it was applied."""
_HOOKS_ONLY = "the Claude host runs only its own passive skill-activation hook"
_FILE_TOOLS = ("Edit", "Write")
_QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
    # A child Agent session runs in the foreground, inside the call that started it: with
    # background agents (2.1.332's default) the turn's stream ends with a result before the
    # child does, and a second turn starts on its notification.
    "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1",
}


UV_CACHE_SETTING = HostSetting(
    "claude.uvCacheDir",
    "--claude-uv-cache-dir",
    "Deprecated (Sevro): a prepared UV cache copied privately for the candidate and checks, "
    "with UV_CACHE_DIR pointing at the copy; declare a runtime seed instead (docs/runtime.md).",
    "path",
    runtime_seed="UV_CACHE_DIR",
)


class ClaudeHost(AgentCliHost[ClaudeConfig]):
    """Claude Code, run inside sevro's bubblewrap sandbox (so ``bwrap`` is a prerequisite)."""

    id, name = HOST_ID, "claude"
    capabilities = AgentCliHost.turn_capabilities(TURNS_OBSERVATION) | {
        CONTINUATION_OBSERVATION,
        SKILL_ACTIVATIONS_OBSERVATION,
        NESTED_SKILLS_OBSERVATION,
    }
    package, tested_version = "@anthropic-ai/claude-code", binaries.TESTED_VERSION
    credential_flags = CREDENTIALS
    setting_help = (
        "Claude Code binary (default: claude on PATH).",
        "Claude Code .credentials.json copied into each trial's config directory.",
        "Name of the environment variable holding an Anthropic API key.",
    )
    credential_locations = CredentialLocations(
        home_entries=(".claude", ".claude.json"), home_variables=("CLAUDE_CONFIG_DIR",)
    )
    # Claude Code discovers project skills in `.claude/skills/<name>/SKILL.md` (listed in
    # `system/init` and offered to the model) and project memory in `CLAUDE.md` at the project
    # root, both project settings, which `--setting-sources project` keeps loading (the Claude
    # Code skills and memory docs; 2.1.332 names `.claude/skills/` as its "skills-dir" and reads
    # `CLAUDE.md`, `CLAUDE.local.md`, then `AGENTS.md`). tests/hosts_claude/
    # test_mounting_real_cli.py proves both reach the model's request.
    skill_places = SkillPlaces(".claude/skills", "CLAUDE.md")
    # Claude Code keeps each session's JSONL transcript (and its sub-agents' under
    # `<session>/subagents/`) below `CLAUDE_CONFIG_DIR/projects/<project>/`; the credentials and
    # settings beside it are never retained.
    native_transcript_tree = "projects"
    parse_config, locate = staticmethod(parse), staticmethod(binaries.locate)
    binary_version = staticmethod(binaries.version)

    @property
    def settings(self) -> tuple[HostSetting, ...]:
        """The shared three, the two switches that widen what the candidate gets, and Sevro's
        deprecated ``--claude-uv-cache-dir`` (the core copies that directory privately for the
        candidate and checks: a runtime seed)."""
        return (
            *super().settings,
            UV_CACHE_SETTING,
            HostSetting(
                ALLOW_WRITE,
                "--claude-allow-write",
                "Offer the candidate Claude Code's Write tool "
                "(off: Bash, Read, Edit, Skill, Agent).",
                "switch",
            ),
            HostSetting(
                PROJECT_SETTINGS,
                "--claude-project-settings",
                "Let Claude Code load the fixture's .claude/settings.json (refused otherwise).",
                "switch",
            ),
        )

    def configure(self, options: HostOptions) -> ConfiguredClaudeHost:
        """The configured host; it provides repository-invocation evidence only when project
        settings are loaded (as Sevro advertises it only with ``--claude-project-settings``)."""
        configured = super().configure(options)
        assert isinstance(configured, ConfiguredClaudeHost)
        config, extra = configured.config, set()
        if configured.judge:
            return configured  # candidate hook authority is not forwarded to judges
        if options.runtime is not None and options.runtime.hook_plugins:
            conflict = " (and conflicts with --claude-project-settings)" * config.project_settings
            raise InvocationError(
                "runtime configuration hooks.plugins is not supported by the Claude host yet"
                f"{conflict}: its plugin hooks cannot be sandboxed here; remove hooks.plugins "
                "or run the Codex host"
            )
        if configured.native_goal:
            if config.project_settings:
                raise ConfigurationError(
                    "hooks.nativeGoal runs Claude Code's native goal with plugin-only settings; "
                    "--claude-project-settings conflicts with it (docs/hosts/claude.md)"
                )
            extra |= {NATIVE_GOAL_OBSERVATION, HOST_HOOKS_OBSERVATION}
        if config.project_settings:
            extra.add(REPOSITORY_INVOCATION_OBSERVATION)
        # a case source's preparation may declare plugin roots and a /plugin:skill invocation
        extra |= {PLUGIN_DIRS_OBSERVATION, EXPLICIT_INVOCATION_OBSERVATION}
        return evolve(configured, capabilities=configured.capabilities | extra)

    def prerequisites(self) -> Mapping[str, Any]:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise ConfigurationError(
                "bwrap (bubblewrap) is not on PATH: the Claude host runs only inside its sandbox "
                "(run `sevro doctor --host claude`)"
            )
        return {"bwrap": str(Path(bwrap).resolve())}

    def credential_check(self, config: ClaudeConfig) -> DoctorCheck:
        """A flag's credential as every agent CLI checks it; else the discovered route."""
        if config.discovery is None:
            return super().credential_check(config)
        return credentials.check(config.discovery)

    def doctor_checks(self, binary: NativeBinary, request: DoctorRequest) -> list[DoctorCheck]:
        from sevro_hosts_claude.doctor import sandbox_check, sandbox_tools_check

        return [sandbox_tools_check(), sandbox_check(binary)]


@frozen(kw_only=True)
class ConfiguredClaudeHost(ConfiguredAgentCliHost[ClaudeConfig]):
    bwrap: str
    declared: HostPreparation = NO_HOST_PREPARATION
    """A case source's declarations: plugin roots (in ``config.plugin_dirs`` too) and an
    explicit invocation, checked before Claude Code starts."""

    def prepared(self, preparation: HostPreparation) -> ConfiguredClaudeHost:
        """This host honouring a case source's declarations (exit 64 for one it cannot): the
        plugin roots become ``--plugin-dir`` roots, and the declarations enter the redacted
        configuration, so the evaluation identity changes with them."""
        from sevro_hosts_claude.declarations import merged_plugin_dirs

        config = self.config
        merged = merged_plugin_dirs(
            preparation,
            judge=self.judge,
            configured=config.plugin_dirs,
            project_settings=config.project_settings,
        )
        if preparation == NO_HOST_PREPARATION:
            return self
        return evolve(self, config=evolve(config, plugin_dirs=merged), declared=preparation)

    def redacted_configuration(self) -> JsonValue:
        """The skeleton's, with the declarations when a case source made any."""
        base = super().redacted_configuration()
        if self.declared == NO_HOST_PREPARATION or not isinstance(base, dict):
            return base
        from sevro_hosts_claude.declarations import identity

        return {**base, "preparation": identity(self.declared)}

    @property
    def native_goal(self) -> bool:
        """``hooks.nativeGoal`` for the candidate (a judge never runs a goal)."""
        return self.runtime is not None and self.runtime.native_goal and not self.judge

    @property
    def instrumentation(self) -> tuple[InstrumentationOffer, ...]:
        """What an extension may request (docs/hosts/claude.md#instrumentation): the passive
        observers this configuration runs; a judge runs none."""
        return () if self.judge else passive_offers(PASSIVE_INSTRUMENTATION & self.capabilities)

    def check_case(self, case: Case) -> None:
        """Without ``hooks.nativeGoal`` a candidate prompt opening with ``/goal`` is refused
        (exit 64): Claude Code would set its native goal, which only the policy selects."""
        if self.judge or self.native_goal:
            return
        for index, prompt in enumerate(case.prompts):
            if nativegoal.opens_goal(prompt):
                raise InvocationError(
                    f"prompt {index + 1} opens with /goal, Claude Code's native goal: select "
                    '"hooks": {"nativeGoal": true} in the runtime configuration (docs/runtime.md)',
                    source=case.source,
                    pointer=case.pointer,
                )

    def redacted_isolation(self) -> dict[str, JsonValue]:
        isolation: dict[str, JsonValue] = {
            "tools": [] if self.judge else list(self.config.tools),
            # As root Claude Code refuses bypassPermissions; dontAsk is used for everyone.
            "permissionMode": PERMISSION_MODE,
            "sandbox": {"outer": "bubblewrap", "inner": "claude-code", "commandNetwork": False},
        }
        if not self.judge:
            isolation["projectSettings"] = self.config.project_settings
        if self.config.discovery is not None:
            isolation["credentialDiscovery"] = self.config.discovery.to_json()
        if self.native_goal:  # absent otherwise, so earlier configurations keep their digest
            isolation["nativeGoal"] = {"stopHook": nativegoal.script_digest()}
        if self.judge:
            isolation["judge"] = {
                "tools": "none",
                "flags": list(JUDGE_FLAGS),
                "mcpServers": "none",
                "settingSources": [],
                "workspace": "read",
                "fixtureEnvironment": False,
            }
        return isolation

    def trial(self, request: HostRequest) -> ClaudeTrial:
        return ClaudeTrial(self, request)


ClaudeHost.configured = ConfiguredClaudeHost


class ClaudeTrial(AgentCliTrial[ConfiguredClaudeHost, Turn]):
    """``claude -p`` in sevro's bubblewrap sandbox; follow-ups ``--resume`` the session."""

    evidence_ids = EvidenceIds(TURNS_OBSERVATION, EVENTS_ARTIFACT, FOLLOW_UP_EVENTS_ARTIFACT)
    completion = "a successful result"

    def __init__(self, host: ConfiguredClaudeHost, request: HostRequest) -> None:
        super().__init__(host, request)
        self.layout = TrialLayout.under(request.private_root)
        self.wrapper: list[str] = []
        self.ended: dict[int, Snapshot] = {}
        """The workspace as each turn left it (only for a trial with a follow-up)."""
        self.resumed: list[tuple[int, Snapshot]] = []
        """The workspace just before each follow-up turn started."""
        self.started_with_settings = False
        self.invocation: str | None = None
        self.plugins: list[tuple[str, str]] = []
        """``(directory, name)`` of each declared plugin, checked before the first turn."""
        self.plugin_invocation: tuple[str, str] | None = None
        self.budget = CallBudget(request.max_cost_usd)
        """The call's spend ceiling, passed on to each turn as what is left of it."""
        self.started = 0
        """Turns started (Claude Code ran or was running)."""
        self.budget_ended = False
        """The call ended at its ceiling: a turn stopped at it or the next was not started."""

    # -- set-up ---------------------------------------------------------------------------

    def candidate_home(self) -> Path | None:
        return self.layout.home

    def native_transcript_home(self) -> Path | None:
        return self.layout.config_dir

    @property
    def hooks_dir(self) -> Path:
        """Where the passive hook writes: in the config directory, which the agent's tools and
        Bash sandbox are denied; Claude Code runs hooks itself, outside its Bash sandbox."""
        return self.layout.config_dir / "sevro-hooks"

    @property
    def stop_dir(self) -> Path:
        """Where sevro's Stop hook records each Stop (``hooks.nativeGoal`` only)."""
        return self.layout.config_dir / "sevro-stop-hooks"

    def private_dirs(self) -> Sequence[Path]:
        layout = self.layout
        goal = (self.stop_dir,) if self.host.native_goal else ()
        return (layout.config_dir, self.hooks_dir, *goal, layout.home, layout.tmp)

    def configure_trial(self) -> None:
        request, layout, host = self.request, self.layout, self.host
        workspace = request.workspace
        if inside(host.binary.tree, workspace) or inside(workspace, host.binary.tree):
            raise HostFailure("the Claude Code package and the workspace overlap")
        target = layout.config_dir / ".credentials.json"
        self.copy_credential_file(target)  # a flag's file or the discovered saved login
        self.secrets += credentials.stage(host.config.discovery, target, os.environ)
        key = self.api_key()
        if key is not None:
            write_private(layout.api_key_file, key.encode())
        read_roots, writable = self.runtime_grants()
        # A judge runs with every hook disabled (no tools to observe); a candidate gets the
        # passive skill-activation hook.
        hook = None if self.judge else hook_command(self.hooks_dir)
        if hook is not None:
            self.hook_log = HookLog(self.hooks_dir)
        text = render_settings(
            layout,
            workspace,
            api_key=key is not None,
            judge=self.judge,
            writable=(*writable, *self._artifact_directories()),
            hook=hook,
            tools=host.config.tools,
            stop_hook=self._stop_hook(),
        )
        write_private(layout.settings_file, text.encode())
        # Claude Code's Bash tool runs with the CLI's own environment: the runtime policy's
        # variables and PATH go there, and its read roots are mounted in the outer sandbox.
        extra_read = [*read_roots]
        fixture_bin = self.fixture_bin_dir
        if fixture_bin is not None:
            extra_read.append(fixture_bin)
        prepared = self.role_runtime()
        self.env = {
            **(prepared.environment if prepared is not None else {}),
            "PATH": cli_path(self.command_path(DEFAULT_PATH)),
            "HOME": str(layout.home),
            "TMPDIR": str(SANDBOX_TMP),  # layout.tmp, at a path short enough for sockets
            "CLAUDE_CONFIG_DIR": str(layout.config_dir),
            "LANG": "C.UTF-8",
            "SHELL": "/bin/bash",
            **_QUIET_ENV,
            **self.fixture_environment,
        }
        if host.config.base_url is not None:
            self.env["ANTHROPIC_BASE_URL"] = host.config.base_url
        if host.config.max_retries is not None:
            self.env["CLAUDE_CODE_MAX_RETRIES"] = str(host.config.max_retries)
        self.wrapper = sandbox_argv(
            host.bwrap,
            workspace=workspace,
            layout=layout,
            executable_tree=host.binary.tree,
            extra_read=extra_read,
            extra_write=[p for p in writable if not inside(p, layout.root)],
            hidden=self._hidden(extra_read),
            judge=self.judge,
        )
        self.session = str(uuid.uuid4())
        if not self.judge:
            for directory in host.config.plugin_dirs:
                self.plugins.append((directory, self._plugin_name(directory)))
            self.plugin_invocation = self._plugin_invocation()
            self._declared_invocation()

    def _declared_invocation(self) -> None:
        """A declared invocation must open the first prompt and name a skill that exists (a
        declared plugin's, or the workspace's ``.claude/skills``), or the trial fails before
        Claude Code starts: Claude Code dispatches only a slash command opening the prompt."""
        declared = self.host.declared.invocation
        if declared is None:
            return
        if declared.kind == "claude-plugin":
            token = f"/{declared.plugin_name}:{declared.skill_name}"
            ok = self.plugin_invocation == (declared.plugin_name, declared.skill_name)
        else:
            token = f"/{declared.skill_name}"
            ok = self._repository_invocation() == declared.skill_name
        if not ok:
            raise HostFailure(
                f"the declared invocation {token} does not open the first prompt or names no "
                "skill of a declared plugin directory or of .claude/skills"
            )

    def _stop_hook(self) -> dict[str, Any] | None:
        """sevro's Stop hook for a native goal: its runner-owned script written privately."""
        if not self.host.native_goal:
            return None
        script = self.layout.config_dir / "sevro-stop-hook.sh"
        write_private(script, nativegoal.STOP_SCRIPT.encode())
        return nativegoal.stop_hook(self.host.bwrap, script, self.stop_dir)

    def _artifact_directories(self) -> list[Path]:
        """The declared candidate artifact directories, made empty in the candidate's home so
        Claude Code's Bash sandbox can grant them: it skips an ``allowWrite`` path that does not
        exist yet, and its HOME is read-only otherwise. None for a judge."""
        runtime = self.host.runtime
        if runtime is None or self.judge:
            return []
        made: list[Path] = []
        for relative in runtime.artifact_paths:
            current = self.layout.home
            for part in relative.split("/"):
                current = current / part
                try:
                    current.mkdir(mode=0o700)
                except FileExistsError:
                    if current.is_symlink() or not current.is_dir():
                        raise HostFailure(f"~/{relative} is not a directory ({current})") from None
            made.append(current)
        return made

    def _hidden(self, extra_read: Sequence[Path]) -> list[Path]:
        """Protected roots inside a mounted tree (covered in the sandbox)."""
        host = self.host
        mounted = (*(Path(t) for t in RUNTIME_TREES), host.binary.tree, *extra_read)
        return roots_to_hide(
            host.protected_roots,
            needed=mounted,
            exposed=lambda root: any(inside(root, tree) for tree in mounted),
        )

    # -- turns ----------------------------------------------------------------------------

    def argv(self, number: int) -> list[str]:
        host = self.host
        assert self.session is not None
        if self.hook_log is not None:
            self._refuse_project_hooks()
        argv = [str(host.binary.native), "-p", "--output-format", "stream-json", "--verbose"]
        argv += ["--permission-mode", PERMISSION_MODE]
        if self.judge:  # one prompt (the skeleton refuses more): nothing to resume
            argv += JUDGE_FLAGS
        else:
            tools = ",".join(host.config.tools)
            argv += ["--tools", tools, "--allowedTools", tools]
            argv += ["--setting-sources", "project"]
        argv += ["--settings", str(self.layout.settings_file), "--strict-mcp-config"]
        argv += ["--mcp-config", '{"mcpServers":{}}', "--no-chrome"]
        if host.native_goal:  # every hook's exit code, for sevro.host.hooks
            argv.append("--include-hook-events")
        if host.model is not None:
            argv += ["--model", host.model]
        if host.effort is not None:
            argv += ["--effort", host.effort]
        for directory, _ in self.plugins:
            argv += ["--plugin-dir", str(self.request.workspace / directory)]
        argv += self.budget.flag()  # a judge's call too: the same ceiling, the same way
        argv += ["--session-id" if number == 1 else "--resume", self.session]
        return [*self.wrapper, *argv]

    def _refuse_project_hooks(self) -> None:
        """Hooks are enabled for sevro's passive hook, so whatever else Claude Code loads must
        bring none: loaded project settings (``--claude-project-settings``) that mention hooks
        (or turning them off), or a declared plugin directory with a ``hooks`` directory or a
        manifest that mentions hooks, could run its own or silence the collector. Checked before
        every turn (the files may change); what cannot be checked is refused too."""
        checked = [(PROJECT_SETTINGS_FILE, MAX_SETTINGS_CHECK_BYTES)]
        if not self.host.config.project_settings:
            checked = []  # the settings file is refused anyway (_refuse_project_settings)
        for directory, _ in self.plugins:
            if os.path.lexists(self.request.workspace / directory / "hooks"):
                raise HostFailure(f"plugin directory {directory!r} bundles hooks: {_HOOKS_ONLY}")
            checked.append((f"{directory}/.claude-plugin/plugin.json", MAX_PLUGIN_MANIFEST_BYTES))
        for name, limit in checked:
            try:
                data, size = read_confined(self.request.workspace, name, limit)
            except FileNotFoundError:
                continue
            except (OSError, ValueError):
                raise HostFailure(f"the workspace's {name} cannot be checked for hooks") from None
            if b"hooks" in data.lower() or size > len(data):
                raise HostFailure(
                    f"the workspace's {name} mentions hooks (or is too large to check): "
                    f"{_HOOKS_ONLY}"
                )

    def parse(self, stream: bytes) -> Turn:
        return parse_turn(stream)

    def turn(self, number: int) -> TurnRecord[Turn]:
        """A turn after a check of the fixture's project settings and of what is left of the
        call's spend ceiling, and, in a trial with a follow-up, the workspace fingerprinted as
        the turn left it and as the next began."""
        workspace, follow_up = self.request.workspace, len(self.request.prompts) > 1
        refusal = self.budget.refusal(number)
        if refusal is not None:
            self.budget_ended = True
            raise HostFailure(refusal)
        if number == 1:
            self.started_with_settings = os.path.lexists(workspace / PROJECT_SETTINGS_FILE)
            self.invocation = self._repository_invocation()
        self._refuse_project_settings(number)
        if follow_up and number > 1:
            self.resumed.append((number, snapshot(workspace)))
        self.started = number
        record = super().turn(number)
        reported = record.turn.usage.reported_cost_usd if record.turn is not None else None
        self.budget.settled(number, reported)
        if follow_up:
            self.ended[number] = snapshot(workspace)
        return record

    def _refuse_project_settings(self, number: int) -> None:
        """Without ``--claude-project-settings`` a project settings file fails the trial before
        Claude Code could load it. The candidate cannot add one: Claude Code's Bash sandbox and
        its ``dontAsk`` mode refuse writes to it (tests/hosts_claude/test_parity_real_cli.py);
        this also catches one made between turns by anything else."""
        if self.host.config.project_settings or self.judge:
            return
        if os.path.lexists(self.request.workspace / PROJECT_SETTINGS_FILE):
            raise HostFailure(
                f"the workspace holds Claude Code project settings ({PROJECT_SETTINGS_FILE}) "
                f"before turn {number}; the Claude host loads them only with "
                "--claude-project-settings"
            )

    def _plugin_name(self, directory: str) -> str:
        """A declared plugin directory's manifest name; the directory, every part of its path
        and the manifest must be real (no link), or the trial fails before Claude Code runs."""
        current = self.request.workspace
        for part in (*directory.split("/"), ".claude-plugin", "plugin.json"):
            current = current / part
            if current.is_symlink():
                raise HostFailure(f"plugin directory {directory!r}: {current} is a link")
        manifest = current
        if not manifest.is_file():
            raise HostFailure(f"plugin directory {directory!r} has no .claude-plugin/plugin.json")
        with manifest.open("rb") as handle:
            data = handle.read(MAX_PLUGIN_MANIFEST_BYTES + 1)
        try:
            name = json.loads(data).get("name") if len(data) <= MAX_PLUGIN_MANIFEST_BYTES else None
        except (ValueError, AttributeError):
            name = None
        if not isinstance(name, str) or not _PLUGIN_NAME_RE.match(name):
            raise HostFailure(
                f"plugin directory {directory!r}: plugin.json must be a JSON object of at most "
                f"{MAX_PLUGIN_MANIFEST_BYTES} bytes whose name matches {_PLUGIN_NAME_RE.pattern}"
            )
        if any(name == known for _, known in self.plugins):
            raise HostFailure(f"plugin {name!r} is declared twice")
        return name

    def _plugin_invocation(self) -> tuple[str, str] | None:
        """``(plugin, skill)`` when the first prompt opens with ``/plugin:skill`` naming a
        declared plugin's skill (``<dir>/skills/<skill>/SKILL.md``), else None."""
        match = _PLUGIN_SLASH_RE.match(self.request.prompts[0])
        if match is None:
            return None
        plugin, skill = match.groups()
        for directory, name in self.plugins:
            path = self.request.workspace / directory / "skills" / skill / "SKILL.md"
            if name == plugin and skill not in (".", "..") and path.is_file():
                return plugin, skill
        return None

    def _repository_invocation(self) -> str | None:
        """The skill the first prompt invokes explicitly (``/name`` opening it) when that
        name is a repository skill of the workspace, else None."""
        match = _SLASH_RE.match(self.request.prompts[0])
        if match is None:
            return None
        name = match.group(1)
        skill = self.request.workspace / self.skills_dir / name / "SKILL.md"
        return name if name not in (".", "..") and skill.is_file() else None

    def continuity_error(self, number: int, turn: Turn) -> str | None:
        if turn.session_id != self.session:
            return f"turn {number}: claude ran session {turn.session_id}, not {self.session}"
        return None

    def failed_turn(self, number: int, turn: Turn, exit_code: int | None) -> str:
        if turn.budget_exhausted and self.budget.ceiling is not None:
            self.budget_ended = True
            return self.budget.exceeded(number, turn.usage.reported_cost_usd)
        return f"turn {number} failed (claude exited {exit_code}): {turn.failure}"

    # -- results --------------------------------------------------------------------------

    def offered_skills(
        self, skills: Sequence[MountedSkill], parsed: Sequence[TurnRecord[Turn]]
    ) -> tuple[Sequence[MountedSkill], bool]:
        """Only the skills Claude Code listed; unknown when no turn's stream parsed."""
        if not parsed:
            return skills, False
        names = {name for r in parsed if r.turn is not None for name in r.turn.skills}
        return [s for s in skills if s.name in names], True

    def turn_summary(self, turn: Turn) -> dict[str, JsonValue]:
        return {
            "sessionId": turn.session_id,
            "completed": turn.completed,
            "model": turn.model,
            "permissionMode": turn.permission_mode,
            "tools": list(turn.tools[:64]),
            "toolCalls": len(turn.calls),
            "numTurns": turn.num_turns,
            "permissionDenials": turn.permission_denials,
        }

    def hooked_calls(self, turn: Turn) -> Mapping[str, int]:
        """Every tool call, successful (``PostToolUse``) or not (``PostToolUseFailure``)."""
        counts: dict[str, int] = {}
        for call in turn.calls:
            counts[call.name] = counts.get(call.name, 0) + 1
        return counts

    def collect(
        self, number: int, turn: Turn, skills: Sequence[MountedSkill], into: TurnEvidence
    ) -> None:
        # Only skills Claude Code offered under their own name can be activated.
        offered = [skill for skill in skills if skill.name in turn.skills]
        cwd: str | None = "."  # Claude Code's shell keeps its directory between Bash calls
        for call in turn.calls:
            into.calls.append(self._call(number, call))
            at = (number, call.ordinal)
            if call.name == "Bash":
                into.commands.append(self._command(number, call))
                command = str(call.input.get("command", ""))
                code = 0 if call.is_error is False else None
                found = into.command(offered, at, (command, call.result_text or "", code), cwd)
                cwd = found.cwd
            elif call.name == "Read":
                read = self._read_tool(call, into)
                if read is not None:
                    into.tool_read(offered, at, read)
            elif call.name == "Skill":
                skill = next((s for s in offered if s.name == call.input.get("skill")), None)
                if skill is not None:
                    into.tool_read(offered, at, self._skill_tool(skill, call))

    def usage(self, turns: Sequence[Turn], all_turns: bool) -> Usage:
        """The turns' tokens added up (each ``usage`` is its own process's), complete too when
        the call ended at its ceiling with every started turn's result read (nothing else
        ran); the reported cost is the last turn's ``total_cost_usd``, the session's so far
        (sevro_hosts_claude/budget.py), unknown when a turn reported none."""
        at_ceiling = self.budget_ended and len(turns) == self.started
        summed = Usage.summed([t.usage for t in turns], all_turns or at_ceiling)
        costs = [t.usage.reported_cost_usd for t in turns]
        last = costs[-1] if costs and None not in costs else None
        return evolve(summed, reported_cost_usd=round(last, 9) if last is not None else None)

    def observations(
        self,
        parsed: Sequence[TurnRecord[Turn]],
        skills: tuple[Sequence[MountedSkill], bool],
        snapshots: tuple[Snapshot, Snapshot],
    ) -> tuple[Observation, ...]:
        """The shared observations, then the continuation and repository-invocation receipts."""
        extra: list[Observation] = []
        turns = {r.number: r.turn for r in parsed if r.turn is not None}
        if len(self.request.prompts) > 1 and not self.judge:
            extra.append(self._continuation(turns))
        if self.host.config.project_settings and not self.judge:
            extra.append(self._invocation_receipt(turns.get(1)))
        if not self.judge:  # advertised always: no declared plugin gives an empty receipt
            extra += self._plugin_receipts(turns.get(1))
        if not self.judge:
            numbers = range(1, len(self.request.prompts) + 1)
            state, data = nested_skills(
                {n: turns.get(n) for n in numbers},
                skills[0],
                self.request.workspace,
                self.layout.config_dir / "projects",
            )
            extra.append(Observation(NESTED_SKILLS_OBSERVATION, self.host.route.host, state, data))
        if self.host.native_goal:
            extra += self._goal_observations(parsed)
        return (*super().observations(parsed, skills, snapshots), *extra)

    def _goal_observations(self, parsed: Sequence[TurnRecord[Turn]]) -> list[Observation]:
        """``sevro.host.native-goal`` from the session transcript (known only when every turn
        ended with a result) and ``sevro.host.hooks`` from the streams and Stop records."""
        host, session = self.host.route.host, self.session or ""
        last = parsed[-1].turn if len(parsed) == len(self.request.prompts) else None
        ended = last is not None and last.completed
        streams = [(r.number, r.stream) for r in parsed]
        return [
            nativegoal.goal_observation(host, self.layout.config_dir, session, ended, self.scrub),
            nativegoal.hooks_observation(host, streams, self.stop_dir, len(self.request.prompts)),
        ]

    def _continuation(self, turns: Mapping[int, Turn]) -> Observation:
        """``sevro.claude.continuation``: the bound session, and per follow-up whether Claude
        Code ran that session and whether the workspace changed between the end of the turn
        before and the start of the follow-up. No paths or contents; partial when a follow-up
        did not run, did not parse or a fingerprint is incomplete."""
        entries: list[JsonValue] = []
        complete = len(self.resumed) == len(self.request.prompts) - 1
        for number, started in self.resumed:
            ended, turn = self.ended.get(number - 1), turns.get(number)
            known = ended is not None and ended.complete and started.complete
            entries.append(
                {
                    "turn": number,
                    "resumedSession": turn.session_id == self.session if turn else None,
                    "workspaceUnchanged": ended.entries == started.entries
                    if known and ended is not None
                    else None,
                }
            )
            complete = complete and known and turn is not None
        return Observation(
            CONTINUATION_OBSERVATION,
            self.host.route.host,
            Completeness.COMPLETE if complete else Completeness.PARTIAL,
            {"sessionId": self.session, "followUps": entries},
        )

    def _plugin_receipts(self, first: Turn | None) -> list[Observation]:
        """``sevro.claude.plugin-dirs``: each declared plugin, whether Claude Code's session
        listed it from that directory, and the skills it offered under the plugin's name;
        ``sevro.claude.explicit-invocation``: the ``/plugin:skill`` the first prompt opened with
        and whether the session listed that skill. Partial when the first turn did not parse
        (or a plugin was never checked: set-up failed before)."""
        complete = first is not None and len(self.plugins) == len(self.host.config.plugin_dirs)
        state = Completeness.COMPLETE if complete else Completeness.PARTIAL
        plugins: list[JsonValue] = []
        for directory, name in self.plugins:
            path = str(self.request.workspace / directory)
            listed = first.skills if first is not None else ()
            plugins.append(
                {
                    "dir": directory,
                    "name": name,
                    "loaded": (name, path) in first.plugins if first is not None else None,
                    "skills": [s.split(":", 1)[1] for s in listed if s.startswith(f"{name}:")],
                }
            )
        invocation: JsonValue = None
        if self.plugin_invocation is not None:
            plugin, skill = self.plugin_invocation
            seen = f"{plugin}:{skill}" in first.skills if first is not None else None
            invocation = {"plugin": plugin, "skill": skill, "listed": seen}
        host = self.host.route.host
        return [
            Observation(PLUGIN_DIRS_OBSERVATION, host, state, {"plugins": plugins}),
            Observation(EXPLICIT_INVOCATION_OBSERVATION, host, state, {"invocation": invocation}),
        ]

    def _invocation_receipt(self, first: Turn | None) -> Observation:
        """``sevro.claude.repository-invocation``: project settings were loaded, whether the
        fixture had a settings file, and the explicit ``/skill`` the first prompt opened with
        when it names a repository skill, with whether Claude Code's session listed it (so it
        dispatched the command rather than passing it on as text). Partial when the first
        turn's stream did not parse."""
        invocation: JsonValue = None
        if self.invocation is not None:
            listed = self.invocation in first.skills if first is not None else None
            invocation = {"skill": self.invocation, "listed": listed}
        return Observation(
            REPOSITORY_INVOCATION_OBSERVATION,
            self.host.route.host,
            Completeness.COMPLETE if first is not None else Completeness.PARTIAL,
            {
                "projectSettings": True,
                "settingsFile": self.started_with_settings,
                "invocation": invocation,
            },
        )

    def _call(self, turn: int, call: ToolUse) -> dict[str, JsonValue]:
        kind = {"Bash": "command_execution", "Edit": "file_change", "Write": "file_change"}
        entry: dict[str, JsonValue] = {
            "turn": turn,
            "ordinal": call.ordinal,
            "kind": kind.get(call.name, "tool_call"),
            "tool": call.name[:256],
            "status": "failed" if call.is_error else "completed",
        }
        if call.name in _FILE_TOOLS and isinstance(call.input.get("file_path"), str):
            entry["paths"] = [self.scrub(str(call.input["file_path"]))[:1024]]
        if call.name == "Skill" and isinstance(call.input.get("skill"), str):
            entry["skill"] = str(call.input["skill"])[:256]
        entry.update(self.call_text(call.input))
        return entry

    def _command(self, turn: int, call: ToolUse) -> dict[str, JsonValue]:
        command = str(call.input.get("command", ""))
        output = call.result_text or ""
        code: int | None = None
        if call.is_error is False:
            code = 0
        elif call.is_error and (match := _EXIT_RE.match(output)):
            code = int(match.group(1))
        status = "failed" if call.is_error else "completed"
        return command_entry(turn, call.ordinal, self.scrub(command), output, code, status)

    def _read_tool(self, call: ToolUse, into: TurnEvidence) -> FileRead | None:
        """A ``Read`` of a workspace file: complete when it succeeded, its range (``offset``,
        ``limit``) covers every line and the line-numbered text it returned (or the file
        content Claude Code reports) is the file's exact text."""
        raw = call.input.get("file_path")
        path = workspace_path(self.request.workspace, raw) if isinstance(raw, str) else None
        if path is None or path == "." or into.files is None:
            return None
        text = into.files.text(path)
        offset, limit = call.input.get("offset"), call.input.get("limit")
        covers = offset in (None, 0, 1) and (
            limit is None
            or (isinstance(limit, int) and text is not None and limit >= line_count(text))
        )
        data = call.result_data
        file = data.get("file") if isinstance(data, dict) else None
        shown = denumbered(call.result_text or "")
        reported = file.get("content") if isinstance(file, dict) else None
        exact = text is not None and text in (shown, reported)
        return FileRead(path, call.is_error is False and covers and exact, "Read")

    def _skill_tool(self, skill: MountedSkill, call: ToolUse) -> FileRead:
        """A ``Skill`` call reads the skill's ``SKILL.md`` when Claude Code launched it and then
        injected the body (front matter removed) under the skill's own base directory."""
        name = skill.name
        base = self.request.workspace / Path(skill.path).parent
        launched = call.is_error is False and (call.result_text or "").strip() == (
            f"Launching skill: {name}"
        )
        body = front_matter_removed(skill.body).strip() if skill.body is not None else None
        delivered = body is not None and any(
            f"Base directory for this skill: {base}" in text and body in text
            for text in call.injected
        )
        return FileRead(skill.path, launched and delivered, "Skill")


def cli_path(declared: str) -> str:
    """The declared PATH with sevro's fixed entries after it: Claude Code finds its own sandbox
    tools (``bwrap``, ``socat``) on PATH, so a declared PATH without them would break it."""
    entries = declared.split(":")
    return ":".join([*entries, *(e for e in DEFAULT_PATH.split(":") if e not in entries)])


_HOST: Host = ClaudeHost()


@hookimpl
def sevro_register_hosts(register: Callable[[Host], None]) -> None:
    register(_HOST)
