"""The Claude Code host (``sevro.host.claude``): ``claude -p --output-format stream-json``.

Each trial runs Claude Code inside sevro's bubblewrap sandbox with a private
``CLAUDE_CONFIG_DIR``, ``HOME`` and temp directory and an environment built from nothing. The
prompt goes in on stdin; a follow-up prompt resumes the same session with ``--resume``. Every
turn's stream is parsed strictly and retained as an artifact; commands, tool calls, file changes
and skill activations become observations with the same ids and meaning as the Codex host's.
"""

from __future__ import annotations

import re
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.api import (
    DEFAULT_PATH,
    SKILL_ACTIVATIONS_OBSERVATION,
    AgentCliHost,
    AgentCliTrial,
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
    HostRequest,
    JsonValue,
    MountedSkill,
    NativeBinary,
    SkillPlaces,
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
    read_confined,
    roots_to_hide,
    workspace_path,
    write_private,
)
from sevro_hosts_claude import binary as binaries
from sevro_hosts_claude.configuration import (
    CREDENTIALS,
    JUDGE_FLAGS,
    PERMISSION_MODE,
    RUNTIME_TREES,
    SANDBOX_TMP,
    TOOLS,
    ClaudeConfig,
    TrialLayout,
    parse,
    render_settings,
    sandbox_argv,
)
from sevro_hosts_claude.events import ToolUse, Turn, parse_turn
from sevro_hosts_claude.limits import MAX_SETTINGS_CHECK_BYTES

HOST_ID = "sevro.host.claude"
TURNS_OBSERVATION = "sevro.claude.turns"
EVENTS_ARTIFACT = "sevro.claude.events"
FOLLOW_UP_EVENTS_ARTIFACT = "sevro.claude.follow-up-events"
_EXIT_RE = re.compile(r"^Exit code (\d+)")
_FILE_TOOLS = ("Edit", "Write")
PROJECT_SETTINGS = (".claude/settings.json", ".claude/settings.local.json")
_QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
}


class ClaudeHost(AgentCliHost[ClaudeConfig]):
    """Claude Code, run inside sevro's bubblewrap sandbox (so ``bwrap`` is a prerequisite)."""

    id, name = HOST_ID, "claude"
    capabilities = AgentCliHost.turn_capabilities(TURNS_OBSERVATION) | {
        SKILL_ACTIVATIONS_OBSERVATION
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
    parse_config, locate = staticmethod(parse), staticmethod(binaries.locate)
    binary_version = staticmethod(binaries.version)

    def prerequisites(self) -> Mapping[str, Any]:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise ConfigurationError(
                "bwrap (bubblewrap) is not on PATH: the Claude host runs only inside its sandbox "
                "(run `sevro doctor --host claude`)"
            )
        return {"bwrap": str(Path(bwrap).resolve())}

    def doctor_checks(self, binary: NativeBinary, request: DoctorRequest) -> list[DoctorCheck]:
        from sevro_hosts_claude.doctor import sandbox_check, sandbox_tools_check

        return [sandbox_tools_check(), sandbox_check(binary)]


@frozen(kw_only=True)
class ConfiguredClaudeHost(ConfiguredAgentCliHost[ClaudeConfig]):
    bwrap: str

    def redacted_isolation(self) -> dict[str, JsonValue]:
        isolation: dict[str, JsonValue] = {
            "tools": [] if self.judge else list(TOOLS),
            # As root Claude Code refuses bypassPermissions; dontAsk is used for everyone.
            "permissionMode": PERMISSION_MODE,
            "sandbox": {"outer": "bubblewrap", "inner": "claude-code", "commandNetwork": False},
        }
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

    # -- set-up ---------------------------------------------------------------------------

    def candidate_home(self) -> Path | None:
        return self.layout.home

    @property
    def hooks_dir(self) -> Path:
        """Where the passive hook writes: in the config directory, which the agent's tools and
        Bash sandbox are denied; Claude Code runs hooks itself, outside its Bash sandbox."""
        return self.layout.config_dir / "sevro-hooks"

    def private_dirs(self) -> Sequence[Path]:
        layout = self.layout
        return (layout.config_dir, self.hooks_dir, layout.home, layout.tmp)

    def configure_trial(self) -> None:
        request, layout, host = self.request, self.layout, self.host
        workspace = request.workspace
        if inside(host.binary.tree, workspace) or inside(workspace, host.binary.tree):
            raise HostFailure("the Claude Code package and the workspace overlap")
        self.copy_credential_file(layout.config_dir / ".credentials.json")
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
            argv += ["--tools", ",".join(TOOLS), "--allowedTools", ",".join(TOOLS)]
            argv += ["--setting-sources", "project"]
        argv += ["--settings", str(self.layout.settings_file), "--strict-mcp-config"]
        argv += ["--mcp-config", '{"mcpServers":{}}', "--no-chrome"]
        if host.model is not None:
            argv += ["--model", host.model]
        if host.effort is not None:
            argv += ["--effort", host.effort]
        argv += ["--session-id" if number == 1 else "--resume", self.session]
        return [*self.wrapper, *argv]

    def _refuse_project_hooks(self) -> None:
        """Project settings are loaded, and hooks are enabled for sevro's passive hook: a
        workspace whose settings declare hooks (or turn them off) could run its own or silence
        the collector, so such a turn is refused (checked before every turn, since the agent
        may write the file). Unreadable settings are refused too."""
        for name in PROJECT_SETTINGS:
            try:
                data, size = read_confined(self.request.workspace, name, MAX_SETTINGS_CHECK_BYTES)
            except FileNotFoundError:
                continue
            except (OSError, ValueError):
                raise HostFailure(f"the workspace's {name} cannot be checked for hooks") from None
            if b"hooks" in data.lower() or size > len(data):
                raise HostFailure(
                    f"the workspace's {name} mentions hooks (or is too large to check): the "
                    "Claude host runs only its own passive skill-activation hook"
                )

    def parse(self, stream: bytes) -> Turn:
        return parse_turn(stream)

    def continuity_error(self, number: int, turn: Turn) -> str | None:
        if turn.session_id != self.session:
            return f"turn {number}: claude ran session {turn.session_id}, not {self.session}"
        return None

    def failed_turn(self, number: int, turn: Turn, exit_code: int | None) -> str:
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
        return _usage(turns, all_turns)

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


def _usage(turns: Sequence[Turn], all_turns: bool) -> Usage:
    """Each invocation reports its own usage and cost, so turns are summed; unknown unless
    every turn completed and reported every figure."""
    if not turns:
        return Usage()
    known = all_turns and all(t.usage.complete for t in turns)

    def total(name: str) -> Any:
        values = [getattr(t.usage, name) for t in turns]
        if any(v is None for v in values):
            return None
        return sum(values)

    cost = total("cost_usd")
    return Usage(
        input_tokens=total("input_tokens"),
        output_tokens=total("output_tokens"),
        cached_input_tokens=total("cached_input_tokens"),
        reasoning_tokens=total("reasoning_tokens"),
        cost_usd=round(cost, 9) if cost is not None else None,
        complete=known,
    )


_HOST: Host = ClaudeHost()


@hookimpl
def sevro_register_hosts(register: Callable[[Host], None]) -> None:
    register(_HOST)
