"""The Codex CLI host (``sevro.host.codex``): ``codex exec --json`` in the trial workspace.

Each trial gets a private ``CODEX_HOME`` (generated ``config.toml``, copied credentials), a
private ``HOME`` and temp directory, and an environment built from nothing. The prompt goes in on
stdin; a follow-up prompt resumes the same thread with ``codex exec resume``. Every turn's JSONL
stream is parsed strictly and retained as an artifact; commands, tool calls, file changes and
skill reads become observations any grader can use.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
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
    ConfiguredAgentCliHost,
    CredentialLocations,
    DoctorCheck,
    DoctorRequest,
    EvidenceIds,
    HookLog,
    Host,
    HostFailure,
    HostOptions,
    HostPreparation,
    HostRequest,
    HostResult,
    HostSetting,
    InstrumentationOffer,
    InvocationError,
    IsolationError,
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
    hook_command,
    hookimpl,
    inside,
    join_pointer,
    passive_offers,
    protected_executable,
    roots_to_hide,
    write_private,
)
from sevro_hosts_codex import binary as binaries
from sevro_hosts_codex.appserver import ENTRYPOINT_SETTING, ENTRYPOINTS
from sevro_hosts_codex.configuration import (
    AGENT_THREADS_KEY,
    CREDENTIALS,
    JUDGE_DISABLED_FEATURES,
    JUDGE_OVERRIDES,
    CodexConfig,
    TrialLayout,
    imported_agent_threads,
    parse,
    render_config_toml,
)
from sevro_hosts_codex.continuation import CONTINUATION_OBSERVATION, ContinuationRecorder
from sevro_hosts_codex.declarations import PLUGIN_MARKETPLACE_CAPABILITY
from sevro_hosts_codex.events import Turn, parse_turn
from sevro_hosts_codex.invocation import (
    EXPLICIT_INVOCATION_OBSERVATION,
    REPOSITORY_INVOCATION_OBSERVATION,
)
from sevro_hosts_codex.nativecalls import NATIVE_CALLS_OBSERVATION, native_calls
from sevro_hosts_codex.pluginhooks import HOOK_ROLE, Declared, Handler, executions, wrapper
from sevro_hosts_codex.plugins import Installed, Marketplace
from sevro_hosts_codex.state import (
    AGENT_SKILLS_VARIABLE,
    NATIVE_HOME,
    StateLayout,
    untrusted_project,
)
from sevro_hosts_codex.workdirs import command_workdirs

HOST_ID = "sevro.host.codex"
TURNS_OBSERVATION = "sevro.codex.turns"
EVENTS_ARTIFACT = "sevro.codex.events"
FOLLOW_UP_EVENTS_ARTIFACT = "sevro.codex.follow-up-events"
SANDBOX_HELPER = "codex-linux-sandbox"
_MINIMAL_TREES = tuple(Path(p) for p in ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/opt"))
"""Trees Codex's ``:minimal`` read grant may expose (observed on Linux with 0.171.0)."""
_TOOL_ITEMS = (
    "command_execution",
    "file_change",
    "mcp_tool_call",
    "web_search",
    "collab_tool_call",
)
PASSIVE_INSTRUMENTATION = frozenset(
    {
        SKILL_ACTIVATIONS_OBSERVATION,  # the PostToolUse hook that only records
        NATIVE_CALLS_OBSERVATION,  # read from the event stream
        TOOL_CALLS_OBSERVATION,  # read from the event stream
        HOST_HOOKS_OBSERVATION,  # plugin hooks' digests and sandboxed runs, with a marketplace
    }
)
"""Observers a candidate offers as instrumentation: each only records what the agent did, so
none changes execution (Codex runs ``passive`` only). Each id is also the observation that
shows it was applied."""


class CodexHost(AgentCliHost[CodexConfig]):
    """Codex CLI; each turn runs in a PID namespace of its own, Codex's own sandbox isolates
    the agent's commands."""

    id = HOST_ID
    capabilities = AgentCliHost.turn_capabilities(TURNS_OBSERVATION) | {
        SKILL_ACTIVATIONS_OBSERVATION,
        CONTINUATION_OBSERVATION,
        NATIVE_CALLS_OBSERVATION,
    }
    name, package, tested_version = "codex", "@openai/codex", binaries.TESTED_VERSION
    credential_flags = CREDENTIALS
    setting_help = (
        "Codex CLI binary (default: codex on PATH).",
        "Codex auth.json copied into each trial's home.",
        "Name of the environment variable holding an API key.",
    )
    uses_pid_namespace = True
    # Codex discovers repository skills in `.agents/skills/<name>/SKILL.md` (from the working
    # directory up to the project root; `project_root_markers = []` makes the workspace that
    # root) and project instructions in `AGENTS.md` (developers.openai.com/codex/skills; the
    # 0.171.0 binary names `.agents/skills` beside `codex-home-skills` and reads AGENTS.md in
    # `core/src/agents_md.rs`). A project's `AGENTS.override.md` is read *instead of* its
    # AGENTS.md, so context goes there when a fixture has one.
    # tests/hosts_codex/test_mounting_real_cli.py proves each reaches the model's request.
    skill_places = SkillPlaces(".agents/skills", "AGENTS.md", overrides=("AGENTS.override.md",))
    credential_locations = CredentialLocations(
        home_entries=(".codex",), home_variables=("CODEX_HOME",)
    )
    # Codex writes one rollout per thread (the root and each child) below
    # `CODEX_HOME/sessions/YYYY/MM/DD/` (see `sessions`); `nativeTranscripts` retains that tree.
    native_transcript_tree = "sessions"
    parse_config = staticmethod(parse)
    locate = staticmethod(binaries.locate)
    binary_version = staticmethod(binaries.version)

    @property
    def settings(self) -> tuple[HostSetting, ...]:
        """The shared three and ``--codex-entrypoint`` (``exec`` unless chosen)."""
        entry = HostSetting(
            ENTRYPOINT_SETTING,
            "--codex-entrypoint",
            "Run the candidate through `codex exec` (default) or `codex app-server` (native "
            "goal turns; hooks.nativeGoal selects it).",
            "string",
            candidate_only=True,
        )
        return (*super().settings, entry)

    def doctor_checks(self, binary: NativeBinary, request: DoctorRequest) -> list[DoctorCheck]:
        from sevro_hosts_codex.doctor import sandbox_check

        return [sandbox_check(binary)]

    def configure(self, options: HostOptions) -> ConfiguredCodexHost:
        """The skeleton's configuration, refusing (exit 64) a Codex executable inside a
        protected root, with the one setting imported from the configuration root."""
        configured = super().configure(options)
        assert isinstance(configured, ConfiguredCodexHost)
        binary = configured.binary
        found = protected_executable((binary.native, binary.tree), configured.protected_roots)
        if found is not None:
            raise InvocationError(
                f"the Codex executable {found[0]} lies inside the protected root {found[1]}; "
                "install Codex elsewhere or pass --codex-bin outside every protected root"
            )
        from sevro_hosts_codex.plugins import load

        if configured.judge and configured.config.marketplace is not None:
            raise InvocationError(
                f"a Codex judge ({options.role}) takes no plugin marketplace: judges run without "
                "tools or plugins; remove marketplace from its host configuration"
            )
        marketplace = None if configured.judge else load(configured.config.marketplace)
        entrypoint = entrypoint_of(options)
        extra = set()
        if not configured.judge:  # what a case source's preparation may declare (Sevro's ids)
            extra |= {REPOSITORY_INVOCATION_OBSERVATION, EXPLICIT_INVOCATION_OBSERVATION}
            extra.add(PLUGIN_MARKETPLACE_CAPABILITY)
        if entrypoint == "app-server" and not configured.judge:
            extra.add(NATIVE_GOAL_OBSERVATION)
        if marketplace is not None:
            extra.add(HOST_HOOKS_OBSERVATION)
        return evolve(
            configured,
            agent_threads=imported_agent_threads(options.config_root),
            marketplace=marketplace,
            capabilities=configured.capabilities | extra,
            entrypoint="exec" if configured.judge else entrypoint,
            hook_plugins=() if configured.judge else selected_hook_plugins(options, marketplace),
        )


def selected_hook_plugins(options: HostOptions, marketplace: Marketplace | None) -> tuple[str, ...]:
    """``hooks.plugins`` of the runtime policy, each a plugin the marketplace mounts (exit 64
    otherwise); a judge never gets them (candidate hook authority is not forwarded)."""
    names = options.runtime.hook_plugins if options.runtime is not None else ()
    mounted = [p.name for p in marketplace.plugins] if marketplace is not None else []
    for name in names:
        if name not in mounted:
            where = f"mounts only {mounted}" if mounted else "is configured (no marketplace)"
            raise InvocationError(
                f"runtime configuration hooks.plugins names {name!r}, but no such Codex plugin "
                f"is mounted: the Codex plugin marketplace {where}; remove the name or mount it"
            )
    return tuple(names)


@frozen(kw_only=True)
class ConfiguredCodexHost(ConfiguredAgentCliHost[CodexConfig]):
    agent_threads: int | None = None
    """``agents.max_concurrent_threads_per_session`` imported from ``--config-root``."""
    marketplace: Marketplace | None = None
    """The verified local plugin marketplace, installed fresh for each candidate trial."""
    entrypoint: str = "exec"
    """``exec`` or ``app-server`` (a judge always answers through ``exec``)."""
    hook_plugins: tuple[str, ...] = ()
    """The marketplace plugins whose command hooks run (sandboxed), from ``hooks.plugins``."""
    declared: HostPreparation = NO_HOST_PREPARATION
    """A case source's declarations (a marketplace in the workspace, an explicit invocation)."""

    def prepared(self, preparation: HostPreparation) -> ConfiguredCodexHost:
        """This host honouring a case source's declarations (exit 64 for one it cannot): they
        enter the redacted configuration, so the evaluation identity changes with them."""
        from sevro_hosts_codex.declarations import check

        check(preparation, judge=self.judge, configured=self.marketplace)
        if preparation == NO_HOST_PREPARATION:
            return self
        extra = {HOST_HOOKS_OBSERVATION} if preparation.codex_marketplace is not None else set()
        return evolve(self, declared=preparation, capabilities=self.capabilities | extra)

    @property
    def installs_plugins(self) -> bool:
        """A candidate trial installs a marketplace (configured or declared)."""
        declared = self.declared.codex_marketplace is not None
        return not self.judge and (self.marketplace is not None or declared)

    def redacted_configuration(self) -> JsonValue:
        """The skeleton's, with the imported setting (``null``: Codex's default) and the
        marketplace's name, plugins and content digests (so a changed plugin is another
        evaluation), and an entrypoint other than ``exec``."""
        base = super().redacted_configuration()
        assert isinstance(base, dict)
        extra: dict[str, JsonValue] = {}
        if self.marketplace is not None:
            extra["marketplace"] = self.marketplace.identity()
        if self.entrypoint != "exec":  # absent for exec, so earlier evaluations keep their digest
            extra["entrypoint"] = self.entrypoint
        if self.declared != NO_HOST_PREPARATION:
            from sevro_hosts_codex.declarations import identity

            extra["preparation"] = identity(self.declared)
        return {**base, "configRoot": {AGENT_THREADS_KEY: self.agent_threads}, **extra}

    @property
    def codex_state(self) -> bool:
        """The runtime file's ``codexState`` opt-in applies (to a candidate, never a judge)."""
        return not self.judge and self.runtime is not None and self.runtime.codex_state

    @property
    def unread_instructions(self) -> str | None:
        """Why Codex will not read ``AGENTS.md`` here: ``codexState`` marks the project
        untrusted (so its ``.codex`` stays inert), and Codex then skips the project's
        ``AGENTS.md`` too, so an arm's context there is refused rather than lost."""
        if not self.codex_state:
            return None
        return (
            "codexState marks the project untrusted and Codex does not send an untrusted "
            "project's AGENTS.md"
        )

    @property
    def instrumentation(self) -> tuple[InstrumentationOffer, ...]:
        """What an extension may request (docs/hosts/codex.md#instrumentation): the passive
        observers this configuration runs; a judge runs none."""
        return () if self.judge else passive_offers(PASSIVE_INSTRUMENTATION & self.capabilities)

    def check_case(self, case: Case) -> None:
        """Refuse (exit 64) a candidate fixture that declares a ``.codex`` configuration,
        unless ``codexState`` makes it inert."""
        if self.judge or self.codex_state:
            return
        found = declared_codex_file(case.fixture)
        if found is not None:
            raise InvocationError(
                f"fixture-local Codex configuration {found[0]!r} is refused: a workspace "
                "`.codex` is not inert here (select codexState in the runtime file to accept it "
                "as inert input)",
                source=case.source,
                pointer=join_pointer(case.pointer, "fixture", *found[1]),
            )

    def redacted_isolation(self) -> dict[str, JsonValue]:
        isolation: dict[str, JsonValue] = {
            "sandbox": {
                "permissions": "sevro",
                "network": False,
                "workspace": "read" if self.judge else "write",
                "pidNamespace": bool(self.pid_namespace),
            },
        }
        if self.judge:
            isolation["judge"] = {
                "tools": "none",
                "disabledFeatures": list(JUDGE_DISABLED_FEATURES),
                "overrides": list(JUDGE_OVERRIDES),
                "mcpServers": "none",
                "approvals": "never",
                "fixtureEnvironment": False,
            }
        return isolation

    def trial(self, request: HostRequest) -> CodexTrial:
        if self.entrypoint == "app-server":
            from sevro_hosts_codex.apptrial import AppServerTrial

            return AppServerTrial(self, request)
        return CodexTrial(self, request)


CodexHost.configured = ConfiguredCodexHost


class CodexTrial(AgentCliTrial[ConfiguredCodexHost, Turn]):
    """``codex exec`` for the first prompt, ``codex exec resume <thread>`` for each follow-up."""

    evidence_ids = EvidenceIds(TURNS_OBSERVATION, EVENTS_ARTIFACT, FOLLOW_UP_EVENTS_ARTIFACT)
    completion = "turn.completed"
    installed: tuple[Installed, ...] | None = None
    """The plugins installed in this trial's private home (None: not, or not yet)."""
    invocations: dict[str, Any] | None = None
    """Each invocation receipt's verified mention, found before the first turn."""
    marketplace: Marketplace | None = None
    """The marketplace this trial installed from: the configured one, or the declared one as
    the workspace held it (None: none, or not read yet)."""

    @cached_property
    def layout(self) -> TrialLayout:
        private = self.request.private_root
        return TrialLayout(
            codex_home=private / "codex-home",
            home=private / "home",
            tmp=private / "tmp",
            bin=private / "bin",
        )

    # -- set-up ---------------------------------------------------------------------------

    @cached_property
    def state(self) -> StateLayout | None:
        """The Codex state opt-in's places (None without it, and for a judge)."""
        if not self.host.codex_state:
            return None
        layout = self.layout
        native = self.request.private_root / NATIVE_HOME
        return StateLayout(
            codex_home=layout.codex_home, native_home=native, command_home=layout.home
        )

    def candidate_home(self) -> Path | None:
        return self.layout.home

    def native_transcript_home(self) -> Path | None:
        return self.layout.codex_home

    @property
    def hooks_dir(self) -> Path:
        """Where the passive hook writes: private, outside the workspace, not in the profile
        (so invisible to the agent's commands); Codex runs hooks itself, outside the sandbox."""
        return self.request.private_root / "hooks"

    def private_dirs(self) -> Sequence[Path]:
        layout, state = self.layout, self.state
        native = () if state is None else (state.native_home,)
        dirs = (layout.codex_home, layout.home, layout.tmp, layout.bin, self.hooks_dir, *native)
        hooks = self.plugin_hooks_dir
        return (*dirs, hooks, hooks / "bin", hooks / "log") if self.handlers else dirs

    @property
    def plugin_hooks_dir(self) -> Path:
        """The selected plugin hooks' wrapper scripts (``bin``) and execution records
        (``log``): private, outside every sandbox."""
        return self.request.private_root / "plugin-hooks"

    @cached_property
    def handlers(self) -> tuple[Handler, ...]:
        """The command handlers of the plugins ``hooks.plugins`` selects (a judge: none)."""
        marketplace, selected = self.host.marketplace, self.host.hook_plugins
        if self.judge or marketplace is None:
            return ()
        return tuple(h for p in marketplace.plugins if p.name in selected for h in p.handlers)

    def configure_trial(self) -> None:
        layout, host = self.layout, self.host
        self._refuse_workspace_configuration()
        os.symlink(host.binary.native, layout.bin / SANDBOX_HELPER)
        path = f"{layout.bin}:{DEFAULT_PATH}"
        fixture_bin = self.fixture_bin_dir
        if fixture_bin is not None:
            path = f"{fixture_bin}:{path}"
        # The runtime policy's variables and PATH reach the commands through the generated
        # shell environment (HOME and TMPDIR stay the trial's own); Codex itself keeps sevro's
        # PATH (its sandbox helper is found there).
        prepared = self.role_runtime()
        declared = dict(prepared.environment) if prepared is not None else {}
        base = {"HOME": str(layout.home), "TMPDIR": str(layout.tmp), "LANG": "C.UTF-8"}
        command_path = self.command_path(DEFAULT_PATH)
        command_env = {**declared, **self.fixture_environment, "PATH": command_path, **base}
        state = self.state
        if state is not None:
            try:
                state.prepare()
            except OSError as exc:
                raise HostFailure(f"the Codex state could not be prepared: {exc}") from None
            command_env["CODEX_HOME"] = str(layout.codex_home)
            command_env[AGENT_SKILLS_VARIABLE] = str(state.agent_skills)
        self.env = {
            **declared,
            "PATH": path,
            "HOME": str(layout.home if state is None else state.native_home),
            "CODEX_HOME": str(layout.codex_home),
            "TMPDIR": str(layout.tmp),
            "LANG": "C.UTF-8",
            **self.fixture_environment,
        }
        self._credentials()
        # A judge runs with hooks disabled (no tools to observe); a candidate gets the passive
        # skill-activation hook.
        hook = None if self.judge else hook_command(self.hooks_dir)
        if hook is not None:
            self.hook_log = HookLog(self.hooks_dir)
        try:
            text = render_config_toml(
                host.config,
                model=host.model,
                effort=host.effort,
                layout=layout,
                executable_tree=host.binary.tree,
                denied=self._denied(),
                granted=self._granted(),
                command_env=command_env,
                judge=self.judge,
                hook=hook,
                agent_threads=host.agent_threads,
                plugin_hooks=[
                    Declared(h.event, h.matcher, self._script(n), h.timeout)
                    for n, h in enumerate(self.handlers)
                ],
                state=() if state is None else state.profile(),
                projects=() if state is None else untrusted_project(self.request.workspace),
            )
        except ValueError as exc:
            raise HostFailure(str(exc)) from None
        write_private(layout.codex_home / "config.toml", text.encode())
        self._preflight()
        self._plugins_and_invocations()

    def _granted(self) -> tuple[Sequence[Path], Sequence[Path]]:
        """The runtime policy's grants, and with a marketplace the private plugin cache for
        reading (commands may read installed plugins' files, nothing else of CODEX_HOME)."""
        read, write = self.runtime_grants()
        if not self.host.installs_plugins:
            return read, write
        cache = self.layout.codex_home / "plugins" / "cache"
        cache.mkdir(parents=True, mode=0o700)
        return (*read, cache), write

    def _plugins_and_invocations(self) -> None:
        """Install the marketplace into the private home, then find the explicit mentions the
        receipts verify (before the model is asked anything)."""
        from sevro_hosts_codex.declarations import read_declared
        from sevro_hosts_codex.invocation import find
        from sevro_hosts_codex.plugins import install

        if self.judge:
            return
        request, layout = self.request, self.layout
        prompts, workspace = request.prompts, request.workspace
        marketplace = self.host.marketplace or read_declared(self.host.declared, workspace)
        self.marketplace = marketplace
        found: dict[str, Any] = {REPOSITORY_INVOCATION_OBSERVATION: find(prompts, workspace, None)}
        paths: dict[str, Path] = {}
        if marketplace is not None:
            places = (request.private_root / "marketplace", layout.codex_home, layout.tmp)
            native = self.host.binary.native
            self.installed = install(marketplace, native, places, self.env, request.cancel)
            paths = {p.name: p.path for p in self.installed}
            self._wrap_plugin_hooks(paths)
        found[EXPLICIT_INVOCATION_OBSERVATION] = find(prompts, workspace, paths)
        self.invocations = found
        self._declared_invocation(found)

    def _declared_invocation(self, found: Mapping[str, Any]) -> None:
        """A declared invocation must be the verified mention its receipt records, or the trial
        fails before the model is asked anything (the skill is missing, linked or unnamed)."""
        declared = self.host.declared.invocation
        if declared is None:
            return
        plugin = declared.kind == "codex-plugin"
        ident = EXPLICIT_INVOCATION_OBSERVATION if plugin else REPOSITORY_INVOCATION_OBSERVATION
        mention = found.get(ident)
        skill = declared.skill_name
        token = f"${declared.plugin_name}:{skill}" if plugin else f"${skill}"
        if mention is None or mention.token != token:
            where = "an installed plugin" if plugin else ".agents/skills"
            raise HostFailure(
                f"the declared invocation {token} names no skill of {where} that the prompts "
                "mention (a regular SKILL.md reached through no link)"
            )

    def _script(self, number: int) -> Path:
        return self.plugin_hooks_dir / "bin" / f"handler-{number}.sh"

    def _wrap_plugin_hooks(self, installed: Mapping[str, Path]) -> None:
        """Write each selected handler's wrapper: the handler in the trial's sandbox (role
        ``hooks``), its installed plugin the one extra read grant."""
        isolation = self.request.isolation
        if self.handlers and isolation is None:
            raise HostFailure("plugin hooks need the trial's sandbox, and this request has none")
        for number, handler in enumerate(self.handlers):
            assert isolation is not None
            root = str(installed[handler.plugin])
            data = isolation.home(HOOK_ROLE) / ".plugin-data" / handler.plugin
            data.mkdir(parents=True, exist_ok=True, mode=0o700)
            names = ("PLUGIN_ROOT", "CLAUDE_PLUGIN_ROOT", "PLUGIN_DATA", "CLAUDE_PLUGIN_DATA")
            values = dict(zip(names, (root, root, str(data), str(data)), strict=True))
            try:
                sandboxed = isolation.command_line(
                    ["/bin/sh", "-c", handler.command],
                    role=HOOK_ROLE,
                    read_only=(installed[handler.plugin],),
                    environment=values,
                )
            except IsolationError as exc:
                raise HostFailure(f"plugin hook sandbox: {exc}") from None
            text = wrapper(handler, number, sandboxed, self.plugin_hooks_dir / "log")
            write_private(self._script(number), text.encode())
            os.chmod(self._script(number), 0o700)

    def _refuse_workspace_configuration(self) -> None:
        """A candidate workspace's ``.codex`` (from any fixture kind, a repository's included)
        fails the trial before Codex starts: Codex would read it as project configuration."""
        found = self.request.workspace / CODEX_DIR
        if not self.judge and not self.host.codex_state and os.path.lexists(found):
            raise HostFailure(
                f"fixture-local Codex configuration {found} is refused: a workspace `.codex` "
                "is not inert here (select codexState in the runtime file to accept it as inert "
                "input)"
            )

    def _preflight(self) -> None:
        """The sandbox preflight before this fresh request (see ``preflight``)."""
        from sevro_hosts_codex.preflight import preflight_argv, probe_root, run_preflight

        request, host, layout = self.request, self.host, self.layout
        granted = [p for roots in self.runtime_grants() for p in roots]
        needed = (request.workspace, request.private_root, host.binary.tree, *granted)
        root = probe_root(host.protected_roots, needed)
        argv = preflight_argv(
            host.binary.native,
            request.workspace,
            (layout.tmp, layout.codex_home),
            self.judge,
            root,
            state=self.state is not None,
        )
        run_preflight(
            [*host.pid_namespace, *argv],
            workspace=request.workspace,
            env=self.env,
            timeout_s=host.config.preflight_timeout_s,
            cancel=request.cancel,
        )

    def _credentials(self) -> None:
        """``auth.json`` from the auth file, or the API key in the provider's variable (or in
        an ``auth.json`` of its own when the provider names none)."""
        self.copy_credential_file(self.layout.codex_home / "auth.json")
        key = self.api_key()
        if key is None:
            return
        provider = self.host.config.provider
        if provider is not None and provider.env_key is not None:
            self.env[provider.env_key] = key
        else:
            document = json.dumps({"OPENAI_API_KEY": key}).encode()
            write_private(self.layout.codex_home / "auth.json", document)

    def _denied(self) -> list[Path]:
        """Protected roots the profile must deny explicitly.

        Only the listed paths are visible to commands at all, so every protected root is denied
        by the profile's default. A root inside a tree that *is* visible is also denied
        explicitly (bubblewrap can only mount over a path whose parent exists in the sandbox).
        """
        request, host = self.request, self.host
        granted = [p for roots in self.runtime_grants() for p in roots]
        visible = (*_MINIMAL_TREES, host.binary.tree, request.private_root, *granted)
        return roots_to_hide(
            host.protected_roots,
            needed=(request.workspace, request.private_root, host.binary.tree, *granted),
            exposed=lambda root: any(inside(root.parent, tree) for tree in visible),
        )

    # -- turns ----------------------------------------------------------------------------

    def argv(self, number: int) -> list[str]:
        common = ["--json", "--strict-config", "--skip-git-repo-check", "--ignore-rules"]
        if self.hook_log is not None:
            # sevro wrote the only hook this trial's Codex home holds, so no trust review is
            # wanted: without this flag Codex skips an unreviewed hook.
            common.append("--dangerously-bypass-hook-trust")
        native = str(self.host.binary.native)
        if number == 1:
            # A judge answers one prompt (the skeleton refuses more), so it is never resumed.
            # A candidate's session is kept (in its private home, removed with the trial): the
            # native-call and continuation observations read it.
            restricted = judge_flags() if self.judge else []
            ephemeral = ["--ephemeral"] if self.judge else []
            workspace = ["-C", str(self.request.workspace), "-"]
            return [native, "exec", *common, *restricted, *ephemeral, *workspace]
        assert self.session is not None
        return [native, "exec", "resume", *common, self.session, "-"]

    def parse(self, stream: bytes) -> Turn:
        return parse_turn(stream)

    @cached_property
    def continuation(self) -> ContinuationRecorder:
        return ContinuationRecorder(self.request.workspace, self.layout.codex_home)

    def turn(self, number: int) -> TurnRecord[Turn]:
        """The skeleton's turn; in a candidate's multi-prompt trial the workspace is
        fingerprinted before each prompt and as each turn ends (see ``continuation``)."""
        if self.judge or len(self.request.prompts) == 1:
            return super().turn(number)
        if number == 1:
            self.continuation.first_prompt()
        else:
            self.continuation.resumed_prompt(number, self.session)
        try:
            return super().turn(number)
        finally:
            self.continuation.turn_ended()

    def continuity_error(self, number: int, turn: Turn) -> str | None:
        expected, self.session = self.session, turn.thread_id
        if expected is not None and turn.thread_id != expected:
            return f"turn {number}: codex resumed thread {turn.thread_id}, not {expected}"
        return None

    # -- results --------------------------------------------------------------------------

    def result(
        self,
        records: Sequence[TurnRecord[Turn]],
        failure: HostFailure | None,
        skills: tuple[Sequence[MountedSkill], bool],
        snapshots: tuple[Snapshot, Snapshot],
    ) -> HostResult:
        """The skeleton's result; with the Codex state opt-in, the five state bindings."""
        result = super().result(records, failure, skills, snapshots)
        state = self.state
        return result if state is None else evolve(result, state=state.bindings())

    def observations(
        self,
        parsed: Sequence[TurnRecord[Turn]],
        skills: tuple[Sequence[MountedSkill], bool],
        snapshots: tuple[Snapshot, Snapshot],
    ) -> tuple[Observation, ...]:
        """The shared observations, then the explicit invocation receipts, a candidate's native
        calls (from its root thread's session) and, with more than one prompt, its
        continuation boundaries."""
        from sevro_hosts_codex.invocation import receipt

        base = super().observations(parsed, skills, snapshots)
        if self.judge:
            return base
        completed = {r.number: r.turn.completed for r in parsed if r.turn is not None}
        found, host = self.invocations, self.host.route.host
        ids = [REPOSITORY_INVOCATION_OBSERVATION, EXPLICIT_INVOCATION_OBSERVATION]
        extra = [receipt(i, host, found is not None, (found or {}).get(i), completed) for i in ids]
        if self.host.installs_plugins:
            extra.append(self._hooks_observation())
        return (*base, *extra, *self._native_observations(parsed))

    def _hooks_observation(self) -> Observation:
        """``sevro.host.hooks``: each plugin's digests and selection, and the sandboxed
        executions (unavailable when the plugins were never installed)."""
        marketplace = self.marketplace or self.host.marketplace
        plugins: list[JsonValue] = [
            {
                "name": p.name,
                "sourceDigest": p.digest,
                "effectiveDigest": p.effective,
                "selected": p.name in self.host.hook_plugins,
                "commandHandlers": len(p.handlers),
            }
            for p in (marketplace.plugins if marketplace is not None else ())
        ]
        found: list[JsonValue] = []
        completeness = Completeness.UNAVAILABLE
        if self.installed is not None:
            completeness = Completeness.COMPLETE
            if self.handlers:
                timeouts = {(h.plugin, h.event, n): h.timeout for n, h in enumerate(self.handlers)}
                completeness, found = executions(self.plugin_hooks_dir / "log", timeouts)
        data: dict[str, JsonValue] = {"plugins": plugins, "executions": found}
        return Observation(HOST_HOOKS_OBSERVATION, self.host.route.host, completeness, data)

    def _native_observations(self, parsed: Sequence[TurnRecord[Turn]]) -> list[Observation]:
        """``sevro.codex.native-calls`` and, with more than one prompt, the continuation."""
        source = self.host.route.host
        thread = next((r.turn.thread_id for r in parsed if r.turn is not None), None)
        completeness, data = native_calls(self.layout.codex_home, thread)
        if self.secrets:  # ids the model chose (a call id) could repeat a credential
            data = json.loads(self.scrub(json.dumps(data)))
        found = [Observation(NATIVE_CALLS_OBSERVATION, source, completeness, data)]
        if len(self.request.prompts) > 1:
            completeness, data = self.continuation.observation()
            found.append(Observation(CONTINUATION_OBSERVATION, source, completeness, data))
        return found

    def turn_summary(self, turn: Turn) -> dict[str, JsonValue]:
        warnings: list[JsonValue] = [self.scrub(w)[:500] for w in turn.warnings[:16]]
        return {
            "threadId": turn.thread_id,
            "completed": turn.completed,
            "items": len(turn.items),
            "warnings": warnings,
        }

    def hooked_calls(self, turn: Turn) -> Mapping[str, int]:
        """Codex's hook sees each shell command as a ``Bash`` tool call."""
        return {"Bash": sum(1 for i in turn.items if i.type == "command_execution")}

    def collect(
        self, number: int, turn: Turn, skills: Sequence[MountedSkill], into: TurnEvidence
    ) -> None:
        ran = [
            (i.ordinal, str(i.data["command"])) for i in turn.items if i.type == "command_execution"
        ]
        workdirs = command_workdirs(self.hook_log, number, ran, self.request.workspace)
        for item in (i for i in turn.items if i.type in _TOOL_ITEMS):
            entry = _call(number, item.ordinal, item.type, item.data)
            entry.update(self.call_text(_arguments(item.type, item.data)))
            into.calls.append(entry)
            if item.type != "command_execution":
                continue
            command = str(item.data["command"])
            output = str(item.data.get("aggregated_output", ""))
            code = item.data.get("exit_code")
            status = str(item.data.get("status", ""))
            scrubbed = self.scrub(command)
            into.commands.append(
                command_entry(number, item.ordinal, scrubbed, output, code, status)
            )
            exit_code = code if isinstance(code, int) and not isinstance(code, bool) else None
            # Codex runs every command in a fresh shell: no cwd carries over, but the model may
            # name one per command, which only the hook reports.
            at = (number, item.ordinal)
            into.command(skills, at, (command, output, exit_code), workdirs[item.ordinal])

    def usage(self, turns: Sequence[Turn], all_turns: bool) -> Usage:
        return self._cost(_usage(turns, all_turns))

    def _cost(self, usage: Usage) -> Usage:
        price = self.host.config.prices.get(self.host.route.model)
        if price is None or not usage.complete:
            return usage
        assert usage.input_tokens is not None and usage.output_tokens is not None
        cached = usage.cached_input_tokens or 0
        cost = (
            (usage.input_tokens - cached) * price.input
            + cached * price.cached_input
            + usage.output_tokens * price.output
        ) / 1_000_000
        return Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_input_tokens=usage.cached_input_tokens,
            reasoning_tokens=usage.reasoning_tokens,
            cost_usd=round(cost, 9),
            complete=True,
        )


def entrypoint_of(options: HostOptions) -> str:
    """The entrypoint asked for: ``--codex-entrypoint``, else ``app-server`` when the runtime
    file selects native goals, else ``exec``; an explicit ``exec`` with ``hooks.nativeGoal`` is
    refused (exit 64): exec ends with its first turn, so goals could not continue."""
    given = options.settings.get(ENTRYPOINT_SETTING)
    native_goal = options.runtime is not None and options.runtime.native_goal
    if given is not None and given not in ENTRYPOINTS:
        raise InvocationError(
            f"--codex-entrypoint must be one of {', '.join(ENTRYPOINTS)}, not {given!r}"
        )
    if given == "exec" and native_goal:
        raise InvocationError(
            "--codex-entrypoint exec conflicts with hooks.nativeGoal in the runtime "
            "configuration: native goal turns need --codex-entrypoint app-server"
        )
    if given is None:
        return "app-server" if native_goal else "exec"
    return given


def judge_flags() -> list[str]:
    """What keeps a judge's Codex from offering the model any tool (see ``JUDGE_*``)."""
    flags = [arg for feature in JUDGE_DISABLED_FEATURES for arg in ("--disable", feature)]
    return flags + [arg for override in JUDGE_OVERRIDES for arg in ("-c", override)]


def _call(turn: int, ordinal: int, kind: str, data: Mapping[str, Any]) -> dict[str, JsonValue]:
    entry: dict[str, JsonValue] = {"turn": turn, "ordinal": ordinal, "kind": kind}
    status = data.get("status")
    if isinstance(status, str):
        entry["status"] = status[:64]
    if kind == "mcp_tool_call":
        entry["server"] = str(data.get("server", ""))[:256]
        entry["tool"] = str(data.get("tool", ""))[:256]
    if kind == "file_change":
        paths = [c.get("path") for c in data.get("changes", []) if isinstance(c, dict)]
        entry["paths"] = [str(p)[:1024] for p in paths[:256] if isinstance(p, str)]
    return entry


_RESULT_FIELDS = frozenset(
    {"id", "type", "status", "aggregated_output", "exit_code", "result", "error"}
)


def _arguments(kind: str, data: Mapping[str, Any]) -> object:
    """What the agent asked for, without what it got back: a command's text, or the item's
    other fields (an MCP call's server, tool and arguments; a file change's paths and kinds)."""
    if kind == "command_execution":
        return str(data.get("command", ""))
    return {k: v for k, v in data.items() if k not in _RESULT_FIELDS}


def _usage(turns: Sequence[Turn], all_turns: bool) -> Usage:
    """The thread's usage: Codex reports it cumulatively (a resumed turn includes the earlier
    ones), so the last parsed turn holds the total. Incomplete unless every turn completed."""
    if not turns:
        return Usage()
    last = turns[-1].usage
    return Usage(
        input_tokens=last.input_tokens,
        output_tokens=last.output_tokens,
        cached_input_tokens=last.cached_input_tokens,
        reasoning_tokens=last.reasoning_tokens,
        complete=all_turns and last.complete,
    )


_HOST: Host = CodexHost()


@hookimpl
def sevro_register_hosts(register: Callable[[Host], None]) -> None:
    register(_HOST)


CODEX_DIR = ".codex"
"""A workspace directory Codex would read as project configuration: refused in a fixture."""


def declared_codex_file(fixture: Mapping[str, Any]) -> tuple[str, tuple[str | int, ...]] | None:
    """The first fixture path under ``.codex/`` an inline fixture's ``files`` or a generated
    fixture's commits declare, with its pointer parts below ``/fixture`` (None when none does;
    a repository fixture's files are known only in the workspace, checked there)."""
    places: list[tuple[Any, tuple[str | int, ...]]] = [(fixture.get("files"), ("files",))]
    commits = fixture.get("commits")
    if isinstance(commits, list):
        places += [
            (c.get("files"), ("commits", i, "files"))
            for i, c in enumerate(commits)
            if isinstance(c, dict)
        ]
    for files, parts in places:
        if not isinstance(files, dict):
            continue
        for path in files:
            if isinstance(path, str) and _codex_path(path):
                return path, (*parts, path)
    return None


def _codex_path(path: str) -> bool:
    first = next((p for p in path.split("/") if p not in ("", ".")), "")
    return first == CODEX_DIR
