"""The Claude Code host (``sevro.host.claude``): ``claude -p --output-format stream-json``.

Each trial runs Claude Code inside sevro's bubblewrap sandbox with a private
``CLAUDE_CONFIG_DIR``, ``HOME`` and temp directory and an environment built from nothing. The
prompt goes in on stdin; a follow-up prompt resumes the same session with ``--resume``. Every
turn's stream is parsed strictly and retained as an artifact; commands, tool calls, file changes
and skill activations become observations with the same ids and meaning as the Codex host's.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.errors import ConfigurationError
from sevro_core.fixtures.changes import FILES_CHANGED_OBSERVATION, Snapshot, changes, snapshot
from sevro_core.formats.jsonio import JsonValue
from sevro_core.hosts.agentcli import (
    HostFailure,
    inside,
    read_credential_file,
    require_credential,
    scrub,
    secret_strings,
    stderr_tail,
    write_private,
)
from sevro_core.hosts.skills import SKILLS_OBSERVATION, MountedSkill, classify_read, discover_skills
from sevro_core.hosts.skills import skills_data as make_skills_data
from sevro_core.isolation.processes import DEFAULT_PATH, run_bounded
from sevro_core.limits import (
    MAX_DIAGNOSTIC_CHARS,
    MAX_HOST_EVENT_STREAM_BYTES,
    MAX_HOST_STDERR_BYTES,
)
from sevro_core.models import Artifact, Case, HostRequest, HostResult, Observation, Route, Usage
from sevro_core.plugin.hookspecs import hookimpl
from sevro_core.plugin.protocols import (
    ConfiguredHost,
    DoctorCheck,
    DoctorRequest,
    Host,
    HostOptions,
    HostSetting,
)
from sevro_core.states import Completeness
from sevro_hosts_claude.binary import BinaryError, ClaudeBinary, locate
from sevro_hosts_claude.configuration import (
    PERMISSION_MODE,
    RUNTIME_TREES,
    TOOLS,
    ClaudeConfig,
    TrialLayout,
    credential_check,
    parse,
    render_settings,
    sandbox_argv,
)
from sevro_hosts_claude.events import StreamError, ToolUse, Turn, parse_turn

HOST_ID = "sevro.host.claude"
COMMANDS_OBSERVATION = "sevro.commands"
TOOL_CALLS_OBSERVATION = "sevro.tool-calls"
TURNS_OBSERVATION = "sevro.claude.turns"
EVENTS_ARTIFACT = "sevro.claude.events"
FOLLOW_UP_EVENTS_ARTIFACT = "sevro.claude.follow-up-events"
CLAUDE_SKILLS_DIR = ".claude/skills"
_EXIT_RE = re.compile(r"^Exit code (\d+)")
_FILE_TOOLS = ("Edit", "Write")
_QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
}


class ClaudeHost:
    id = HOST_ID
    version = "1.0.0"
    capabilities = frozenset(
        {
            "sevro.host.continuation",
            COMMANDS_OBSERVATION,
            TOOL_CALLS_OBSERVATION,
            FILES_CHANGED_OBSERVATION,
            SKILLS_OBSERVATION,
            TURNS_OBSERVATION,
        }
    )
    requires: frozenset[str] = frozenset()

    settings = (
        HostSetting(
            key="claude.bin",
            flag="--claude-bin",
            help="Claude Code binary (default: claude on PATH).",
            kind="path",
        ),
        HostSetting(
            key="claude.credentialFile",
            flag="--claude-credential-file",
            help="Claude Code .credentials.json copied into each trial's config directory.",
            kind="path",
        ),
        HostSetting(
            key="claude.apiKeyEnv",
            flag="--claude-api-key-env",
            help="Name of the environment variable holding an Anthropic API key.",
            kind="string",
        ),
    )

    def doctor(self, request: DoctorRequest) -> list[DoctorCheck]:
        """Checks for `sevro doctor --host claude`: binary, version, credentials, sandbox."""
        from sevro_core.isolation.doctor import refuse_sandbox_choice
        from sevro_hosts_claude.doctor import diagnose

        refuse_sandbox_choice(request.sandbox)  # Claude runs commands in its own sandbox
        return list(diagnose(request.settings))

    def configure(self, options: HostOptions) -> ConfiguredHost:
        config = parse(options.config, options.settings)
        try:
            binary = locate(config.bin)
        except BinaryError as exc:
            raise ConfigurationError(f"{exc} (run `sevro doctor --host claude`)") from None
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise ConfigurationError(
                "bwrap (bubblewrap) is not on PATH: the Claude host runs only inside its sandbox "
                "(run `sevro doctor --host claude`)"
            )
        # A run without a usable credential would only fail or retry in every trial: refuse it
        # now, with the doctor's own reason (no network involved).
        require_credential(credential_check(config), "claude")
        if config.credential_file is not None:
            read_credential_file(config.credential_file, "--claude-credential-file")
        route = Route(
            host=HOST_ID,
            model=options.model or "claude-default",
            effort=options.effort or "default",
        )
        return ConfiguredClaudeHost(
            route=route,
            config=config,
            binary=binary,
            bwrap=str(Path(bwrap).resolve()),
            model=options.model,
            effort=options.effort,
            protected_roots=tuple(p.resolve() for p in options.protected_roots),
        )


@frozen
class ConfiguredClaudeHost:
    route: Route
    config: ClaudeConfig
    binary: ClaudeBinary
    bwrap: str
    model: str | None
    effort: str | None
    protected_roots: tuple[Path, ...]
    capabilities: frozenset[str] = ClaudeHost.capabilities

    def redacted_configuration(self) -> JsonValue:
        return {
            "hostConfig": dict(self.config.raw),
            "binary": str(self.binary.native),
            "credentialFile": {"present": self.config.credential_file is not None},
            "apiKeyEnv": (
                {"name": self.config.api_key_env, "present": True}
                if self.config.api_key_env is not None
                else None
            ),
            "protectedRoots": [str(p) for p in self.protected_roots],
            "tools": list(TOOLS),
            # As root Claude Code refuses bypassPermissions; dontAsk is used for everyone.
            "permissionMode": PERMISSION_MODE,
            "sandbox": {"outer": "bubblewrap", "inner": "claude-code", "commandNetwork": False},
        }

    def check_case(self, case: Case) -> None:
        return None

    def run(self, request: HostRequest) -> HostResult:
        return _Trial(self, request).run()


@frozen
class _TurnRecord:
    number: int
    turn: Turn | None
    stream: bytes


class _Trial:
    def __init__(self, host: ConfiguredClaudeHost, request: HostRequest) -> None:
        self.host = host
        self.request = request
        self.layout = TrialLayout.under(request.private_root)
        self.secrets: list[str] = []
        self.env: dict[str, str] = {}
        self.wrapper: list[str] = []

    def _prepare(self) -> None:
        request, layout, host = self.request, self.layout, self.host
        for directory in (layout.config_dir, layout.home, layout.tmp):
            directory.mkdir(mode=0o700, exist_ok=True)
        workspace = request.workspace
        for root in host.protected_roots:
            if inside(root, workspace) or inside(root, request.private_root):
                raise HostFailure(f"protected root {root} lies inside the trial's own directories")
        if inside(host.binary.tree, workspace) or inside(workspace, host.binary.tree):
            raise HostFailure("the Claude Code package and the workspace overlap")
        config = host.config
        if config.credential_file is not None:
            data = read_credential_file(config.credential_file, "--claude-credential-file")
            write_private(layout.config_dir / ".credentials.json", data)
            self.secrets += secret_strings(data)
        api_key = False
        if config.api_key_env is not None:
            key = os.environ.get(config.api_key_env, "")
            if not key:
                raise HostFailure(f"--claude-api-key-env {config.api_key_env} is not set")
            write_private(layout.api_key_file, key.encode())
            self.secrets.append(key)
            api_key = True
        text = render_settings(layout, workspace, api_key=api_key)
        write_private(layout.settings_file, text.encode())
        path = DEFAULT_PATH
        extra_read: list[Path] = []
        if request.fixture_bin_dir is not None:
            path = f"{request.fixture_bin_dir}:{path}"
            extra_read.append(request.fixture_bin_dir)
        self.env = {
            "PATH": path,
            "HOME": str(layout.home),
            "TMPDIR": str(layout.tmp),
            "CLAUDE_CONFIG_DIR": str(layout.config_dir),
            "LANG": "C.UTF-8",
            "SHELL": "/bin/bash",
            **_QUIET_ENV,
            **request.environment,
        }
        if config.base_url is not None:
            self.env["ANTHROPIC_BASE_URL"] = config.base_url
        if config.max_retries is not None:
            self.env["CLAUDE_CODE_MAX_RETRIES"] = str(config.max_retries)
        mounted = (*(Path(t) for t in RUNTIME_TREES), host.binary.tree, *extra_read)
        hidden = [
            root
            for root in host.protected_roots
            if root.exists()
            and not any(inside(tree, root) for tree in mounted)
            and any(inside(root, tree) for tree in mounted)
        ]
        self.wrapper = sandbox_argv(
            host.bwrap,
            workspace=workspace,
            layout=layout,
            executable_tree=host.binary.tree,
            extra_read=extra_read,
            hidden=hidden,
        )

    def _argv(self, number: int, session_id: str) -> list[str]:
        host = self.host
        argv = [str(host.binary.native), "-p", "--output-format", "stream-json", "--verbose"]
        argv += ["--permission-mode", PERMISSION_MODE, "--tools", ",".join(TOOLS)]
        argv += ["--allowedTools", ",".join(TOOLS), "--setting-sources", "project"]
        argv += ["--settings", str(self.layout.settings_file), "--strict-mcp-config"]
        argv += ["--mcp-config", '{"mcpServers":{}}', "--no-chrome"]
        if host.model is not None:
            argv += ["--model", host.model]
        if host.effort is not None:
            argv += ["--effort", host.effort]
        argv += ["--session-id" if number == 1 else "--resume", session_id]
        return [*self.wrapper, *argv]

    def _turn(self, number: int, session_id: str) -> _TurnRecord:
        request, timeout = self.request, self.host.config.turn_timeout_s
        outcome = run_bounded(
            self._argv(number, session_id),
            cwd=request.workspace,
            env=self.env,
            timeout_s=timeout,
            cancel=request.cancel,
            output_limit=MAX_HOST_EVENT_STREAM_BYTES,
            stdin=request.prompts[number - 1].encode("utf-8", "surrogatepass"),
            stderr="capture",
            stderr_limit=MAX_HOST_STDERR_BYTES,
            kill_on_overflow=True,
            stall_s=self.host.config.stall_timeout_s,
        )
        record = _TurnRecord(number, None, outcome.output)
        if outcome.cancelled:
            raise HostFailure("run cancelled", cancelled=True, records=(record,))
        if outcome.stalled:
            raise HostFailure(
                f"turn {number}: claude stalled: no event for "
                f"{self.host.config.stall_timeout_s:g} s (stallTimeoutSeconds; process group "
                f"killed); stderr: {self._tail(outcome.stderr)}",
                records=(record,),
            )
        if outcome.timed_out:
            raise HostFailure(
                f"turn {number}: claude did not finish within {timeout:g} s (process group "
                f"killed); stderr: {self._tail(outcome.stderr)}",
                records=(record,),
            )
        if outcome.overflowed:
            raise HostFailure(
                f"turn {number}: event stream exceeded {MAX_HOST_EVENT_STREAM_BYTES} bytes "
                "(process group killed)",
                records=(record,),
            )
        try:
            turn = parse_turn(outcome.output)
        except StreamError as exc:
            raise HostFailure(
                f"turn {number}: malformed claude event stream: {exc}; exit code "
                f"{outcome.exit_code}; stderr: {self._tail(outcome.stderr)}",
                records=(record,),
            ) from None
        record = _TurnRecord(number, turn, outcome.output)
        if turn.session_id != session_id:
            raise HostFailure(
                f"turn {number}: claude ran session {turn.session_id}, not {session_id}",
                records=(record,),
            )
        if not turn.completed:
            raise HostFailure(
                f"turn {number} failed (claude exited {outcome.exit_code}): {turn.failure}; "
                f"stderr: {self._tail(outcome.stderr)}",
                records=(record,),
            )
        if outcome.exit_code != 0:
            raise HostFailure(
                f"turn {number}: claude exited {outcome.exit_code} after a successful result; "
                f"stderr: {self._tail(outcome.stderr)}",
                records=(record,),
            )
        return record

    def _tail(self, stderr: bytes) -> str:
        return stderr_tail(stderr, self.secrets)

    def run(self) -> HostResult:
        request = self.request
        skills, skills_complete = discover_skills(request.workspace, CLAUDE_SKILLS_DIR)
        before = snapshot(request.workspace)
        records: list[_TurnRecord] = []
        failure: HostFailure | None = None
        try:
            self._prepare()
            session_id = str(uuid.uuid4())
            for number in range(1, len(request.prompts) + 1):
                records.append(self._turn(number, session_id))
        except HostFailure as exc:
            failure = exc
            records.extend(exc.records)
        except OSError as exc:
            failure = HostFailure(f"claude host set-up failed: {exc.strerror or exc}")
        after = snapshot(request.workspace)
        return self._result(records, failure, skills, skills_complete, before, after)

    def _scrub(self, text: str) -> str:
        return scrub(text, self.secrets)

    def _result(
        self,
        records: Sequence[_TurnRecord],
        failure: HostFailure | None,
        skills: Sequence[MountedSkill],
        skills_complete: bool,
        before: Snapshot,
        after: Snapshot,
    ) -> HostResult:
        parsed = [r for r in records if r.turn is not None]
        completed = [r for r in parsed if r.turn is not None and r.turn.completed]
        final: str | None = None
        if failure is None and completed:
            last = completed[-1].turn
            assert last is not None
            final = last.final_message
        artifacts = tuple(
            Artifact(
                EVENTS_ARTIFACT if r.number == 1 else FOLLOW_UP_EVENTS_ARTIFACT,
                self._scrub(r.stream.decode("utf-8", "replace")).encode()
                if self.secrets
                else r.stream,
            )
            for r in records
        )
        error = None
        if failure is not None and not failure.cancelled:
            error = self._scrub(failure.message)[:MAX_DIAGNOSTIC_CHARS]
        turns = [r.turn for r in parsed if r.turn is not None]
        return HostResult(
            final_message=self._scrub(final) if final is not None else None,
            complete=failure is None and final is not None,
            execution_failed=failure is not None and not failure.cancelled,
            error=error,
            cancelled=failure is not None and failure.cancelled,
            observations=self._observations(parsed, skills, skills_complete, before, after),
            artifacts=artifacts,
            usage=_usage(turns, failure is None),
            turns_completed=len(completed),
        )

    def _observations(
        self,
        parsed: Sequence[_TurnRecord],
        skills: Sequence[MountedSkill],
        skills_complete: bool,
        before: Snapshot,
        after: Snapshot,
    ) -> tuple[Observation, ...]:
        commands: list[JsonValue] = []
        calls: list[JsonValue] = []
        reads: list[dict[str, JsonValue]] = []
        turns: list[JsonValue] = []
        offered_names: set[str] = set()
        for record in parsed:
            turn = record.turn
            assert turn is not None
            offered_names.update(turn.skills)
            turns.append(
                {
                    "turn": record.number,
                    "sessionId": turn.session_id,
                    "completed": turn.completed,
                    "model": turn.model,
                    "permissionMode": turn.permission_mode,
                    "tools": list(turn.tools[:64]),
                    "toolCalls": len(turn.calls),
                    "numTurns": turn.num_turns,
                    "permissionDenials": turn.permission_denials,
                }
            )
            for call in turn.calls:
                calls.append(self._call(record.number, call))
                if call.name == "Bash":
                    commands.append(self._command(record.number, call))
                for skill in skills:
                    if skill.name not in turn.skills:
                        continue  # Claude Code did not offer it under this name
                    status = self._activation(skill, call)
                    if status is not None:
                        reads.append(
                            {
                                "skill": skill.name,
                                "turn": record.number,
                                "ordinal": call.ordinal,
                                "status": status,
                            }
                        )
        offered = [s for s in skills if s.name in offered_names] if parsed else list(skills)
        complete = Completeness.COMPLETE
        return (
            Observation(COMMANDS_OBSERVATION, HOST_ID, complete, {"commands": commands}),
            Observation(TOOL_CALLS_OBSERVATION, HOST_ID, complete, {"calls": calls}),
            Observation(
                FILES_CHANGED_OBSERVATION,
                HOST_ID,
                complete if before.complete and after.complete else Completeness.PARTIAL,
                changes(before, after),
            ),
            Observation(
                SKILLS_OBSERVATION,
                HOST_ID,
                complete if skills_complete and parsed else Completeness.PARTIAL,
                make_skills_data(offered, reads),
            ),
            Observation(TURNS_OBSERVATION, HOST_ID, complete, {"turns": turns}),
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
            entry["paths"] = [self._scrub(str(call.input["file_path"]))[:1024]]
        if call.name == "Skill" and isinstance(call.input.get("skill"), str):
            entry["skill"] = str(call.input["skill"])[:256]
        return entry

    def _command(self, turn: int, call: ToolUse) -> dict[str, JsonValue]:
        command = str(call.input.get("command", ""))
        output = call.result_text or ""
        code: int | None = None
        if call.is_error is False:
            code = 0
        elif call.is_error and (match := _EXIT_RE.match(output)):
            code = int(match.group(1))
        data = output.encode("utf-8", "surrogatepass")
        return {
            "turn": turn,
            "ordinal": call.ordinal,
            "command": self._scrub(command),
            "exitCode": code,
            "timedOut": False,
            "outputSha256": hashlib.sha256(data).hexdigest(),
            "outputByteLength": len(data),
            "outputTruncated": False,
            "durationMs": None,
            "status": "failed" if call.is_error else "completed",
        }

    def _activation(self, skill: MountedSkill, call: ToolUse) -> str | None:
        """``read`` for a Skill call or a whole, direct read of the mounted SKILL.md."""
        workspace = self.request.workspace
        if call.name == "Skill":
            if call.input.get("skill") != skill.name:
                return None
            return "read" if call.is_error is False else "partial"
        if call.name == "Bash":
            command = str(call.input.get("command", ""))
            code = 0 if call.is_error is False else None
            return classify_read(skill, workspace, command, call.result_text or "", code)
        if call.name != "Read" or not isinstance(call.input.get("file_path"), str):
            return None
        target = Path(str(call.input["file_path"]))
        target = target if target.is_absolute() else workspace / target
        if Path(os.path.normpath(target)) != workspace / skill.path:
            return None  # a copy elsewhere is not the mounted skill
        data = call.result_data
        file = data.get("file") if isinstance(data, dict) else None
        whole = (
            call.is_error is False
            and "offset" not in call.input
            and "limit" not in call.input
            and isinstance(file, dict)
            and skill.body is not None
            and file.get("content") == skill.body
        )
        return "read" if whole else "partial"


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
