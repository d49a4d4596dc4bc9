"""The Codex CLI host (``sevro.host.codex``): ``codex exec --json`` in the trial workspace.

Each trial gets a private ``CODEX_HOME`` (generated ``config.toml``, copied credentials), a
private ``HOME`` and temp directory, and an environment built from nothing. The prompt goes in on
stdin; a follow-up prompt resumes the same thread with ``codex exec resume``. Every turn's JSONL
stream is parsed strictly and retained as an artifact; commands, tool calls, file changes and
skill reads become observations any grader can use.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.errors import ConfigurationError
from sevro_core.fixtures.changes import FILES_CHANGED_OBSERVATION, changes, snapshot
from sevro_core.formats.jsonio import JsonValue
from sevro_core.hosts.agentcli import (
    HostFailure,
    inside,
    pid_namespace_argv,
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
from sevro_core.models import (
    Artifact,
    Case,
    HostRequest,
    HostResult,
    Observation,
    Route,
    Usage,
)
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
from sevro_hosts_codex.binary import BinaryError, CodexBinary, locate
from sevro_hosts_codex.configuration import (
    CodexConfig,
    TrialLayout,
    credential_check,
    parse,
    render_config_toml,
)
from sevro_hosts_codex.events import StreamError, Turn, parse_turn

HOST_ID = "sevro.host.codex"
COMMANDS_OBSERVATION = "sevro.commands"
TOOL_CALLS_OBSERVATION = "sevro.tool-calls"
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


class CodexHost:
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
            key="codex.bin",
            flag="--codex-bin",
            help="Codex CLI binary (default: codex on PATH).",
            kind="path",
        ),
        HostSetting(
            key="codex.authFile",
            flag="--codex-auth-file",
            help="Codex auth.json copied into each trial's home.",
            kind="path",
        ),
        HostSetting(
            key="codex.apiKeyEnv",
            flag="--codex-api-key-env",
            help="Name of the environment variable holding an API key.",
            kind="string",
        ),
    )

    def doctor(self, request: DoctorRequest) -> list[DoctorCheck]:
        """Checks for `sevro doctor --host codex`: binary, version, credentials, sandbox."""
        from sevro_core.isolation.doctor import refuse_sandbox_choice
        from sevro_hosts_codex.doctor import diagnose

        refuse_sandbox_choice(request.sandbox)  # Codex runs commands in its own sandbox
        return list(diagnose(request.settings))

    def configure(self, options: HostOptions) -> ConfiguredHost:
        config = parse(options.config, options.settings)
        try:
            binary = locate(config.bin)
        except BinaryError as exc:
            raise ConfigurationError(f"{exc} (run `sevro doctor --host codex`)") from None
        # A run without a usable credential would only reconnect until it times out: refuse it
        # now, with the doctor's own reason (no network involved).
        require_credential(credential_check(config), "codex")
        if config.auth_file is not None:
            _read_credential_file(config.auth_file)  # fail before any trial, never later
        pid_namespace = _pid_namespace()
        route = Route(
            host=HOST_ID,
            model=options.model or "codex-default",
            effort=options.effort or "default",
        )
        return ConfiguredCodexHost(
            route=route,
            config=config,
            binary=binary,
            model=options.model,
            effort=options.effort,
            protected_roots=tuple(p.resolve() for p in options.protected_roots),
            pid_namespace=pid_namespace,
        )


def _pid_namespace() -> tuple[str, ...]:
    """The PID-namespace prefix every Codex turn runs under (Linux; util-linux ``unshare``)."""
    if platform.system() != "Linux":
        return ()
    unshare = shutil.which("unshare")
    if unshare is None:
        raise ConfigurationError(
            "unshare (util-linux) is not on PATH: each Codex turn runs in a PID namespace of its "
            "own so nothing it starts outlives the trial (run `sevro doctor --host codex`)"
        )
    return tuple(pid_namespace_argv(str(Path(unshare).resolve())))


def _read_credential_file(path: Path) -> bytes:
    return read_credential_file(path, "--codex-auth-file")


@frozen
class ConfiguredCodexHost:
    route: Route
    config: CodexConfig
    binary: CodexBinary
    model: str | None
    effort: str | None
    protected_roots: tuple[Path, ...]
    pid_namespace: tuple[str, ...] = ()
    """Prefix that runs each turn in its own PID namespace (empty off Linux)."""
    capabilities: frozenset[str] = CodexHost.capabilities

    def redacted_configuration(self) -> JsonValue:
        return {
            "hostConfig": dict(self.config.raw),
            "binary": str(self.binary.native),
            "authFile": {"present": self.config.auth_file is not None},
            "apiKeyEnv": (
                {"name": self.config.api_key_env, "present": True}
                if self.config.api_key_env is not None
                else None
            ),
            "protectedRoots": [str(p) for p in self.protected_roots],
            "sandbox": {
                "permissions": "sevro",
                "network": False,
                "workspace": "write",
                "pidNamespace": bool(self.pid_namespace),
            },
        }

    def check_case(self, case: Case) -> None:
        return None  # every case shape is runnable; isolation is checked per trial

    def run(self, request: HostRequest) -> HostResult:
        return _Trial(self, request).run()


@frozen
class _TurnRecord:
    number: int
    turn: Turn | None
    stream: bytes


_Failure = HostFailure


class _Trial:
    def __init__(self, host: ConfiguredCodexHost, request: HostRequest) -> None:
        self.host = host
        self.request = request
        private = request.private_root
        self.layout = TrialLayout(
            codex_home=private / "codex-home",
            home=private / "home",
            tmp=private / "tmp",
            bin=private / "bin",
        )
        self.secrets: list[str] = []
        self.env: dict[str, str] = {}

    # -- set-up ---------------------------------------------------------------------------

    def _prepare(self) -> None:
        request, layout, host = self.request, self.layout, self.host
        for directory in (layout.codex_home, layout.home, layout.tmp, layout.bin):
            directory.mkdir(mode=0o700, exist_ok=True)
        workspace = request.workspace
        for root in host.protected_roots:
            if inside(root, workspace) or inside(root, request.private_root):
                raise _Failure(f"protected root {root} lies inside the trial's own directories")
        os.symlink(host.binary.native, layout.bin / SANDBOX_HELPER)
        path = f"{layout.bin}:{DEFAULT_PATH}"
        command_path = DEFAULT_PATH
        if request.fixture_bin_dir is not None:
            path = f"{request.fixture_bin_dir}:{path}"
            command_path = f"{request.fixture_bin_dir}:{command_path}"
        command_env = {
            "PATH": command_path,
            "HOME": str(layout.home),
            "TMPDIR": str(layout.tmp),
            "LANG": "C.UTF-8",
            **request.environment,
        }
        self.env = {
            "PATH": path,
            "HOME": str(layout.home),
            "CODEX_HOME": str(layout.codex_home),
            "TMPDIR": str(layout.tmp),
            "LANG": "C.UTF-8",
            **request.environment,
        }
        config = host.config
        if config.auth_file is not None:
            data = _read_credential_file(config.auth_file)
            write_private(layout.codex_home / "auth.json", data)
            self.secrets += secret_strings(data)
        if config.api_key_env is not None:
            key = os.environ.get(config.api_key_env, "")
            if not key:
                raise _Failure(f"--codex-api-key-env {config.api_key_env} is not set")
            self.secrets.append(key)
            if config.provider is not None and config.provider.env_key is not None:
                self.env[config.provider.env_key] = key
            else:
                document = json.dumps({"OPENAI_API_KEY": key}).encode()
                write_private(layout.codex_home / "auth.json", document)
        # Only the listed paths are visible to commands at all, so every protected root is
        # denied by the profile's default. A root inside a tree that *is* visible is also denied
        # explicitly (bubblewrap can only mount over a path whose parent exists in the sandbox).
        needed = (workspace, request.private_root, host.binary.tree)
        visible = (*_MINIMAL_TREES, host.binary.tree, request.private_root)
        denied = [
            root
            for root in host.protected_roots
            if root.exists()
            and not any(inside(path, root) for path in needed)
            and any(inside(root.parent, tree) for tree in visible)
        ]
        try:
            text = render_config_toml(
                config,
                model=host.model,
                effort=host.effort,
                layout=layout,
                executable_tree=host.binary.tree,
                denied=denied,
                command_env=command_env,
            )
        except ValueError as exc:
            raise _Failure(str(exc)) from None
        write_private(layout.codex_home / "config.toml", text.encode())

    # -- turns ----------------------------------------------------------------------------

    def _argv(self, number: int, thread_id: str | None) -> list[str]:
        common = ["--json", "--strict-config", "--skip-git-repo-check", "--ignore-rules"]
        native = [*self.host.pid_namespace, str(self.host.binary.native)]
        if number == 1:
            ephemeral = ["--ephemeral"] if len(self.request.prompts) == 1 else []
            return [*native, "exec", *common, *ephemeral, "-C", str(self.request.workspace), "-"]
        assert thread_id is not None
        return [*native, "exec", "resume", *common, thread_id, "-"]

    def _turn(self, number: int, thread_id: str | None) -> _TurnRecord:
        request = self.request
        outcome = run_bounded(
            self._argv(number, thread_id),
            cwd=request.workspace,
            env=self.env,
            timeout_s=self.host.config.turn_timeout_s,
            cancel=request.cancel,
            output_limit=MAX_HOST_EVENT_STREAM_BYTES,
            stdin=request.prompts[number - 1].encode("utf-8", "surrogatepass"),
            stderr="capture",
            stderr_limit=MAX_HOST_STDERR_BYTES,
            kill_on_overflow=True,
            stall_s=self.host.config.stall_timeout_s,
        )
        stream = outcome.output
        if outcome.cancelled:
            raise _Failure(
                "run cancelled", cancelled=True, records=(_TurnRecord(number, None, stream),)
            )
        record = _TurnRecord(number, None, stream)
        if outcome.stalled:
            raise _Failure(
                f"turn {number}: codex stalled: no event for "
                f"{self.host.config.stall_timeout_s:g} s (stallTimeoutSeconds; process group "
                f"killed); stderr: {self._tail(outcome.stderr)}",
                records=(record,),
            )
        if outcome.timed_out:
            raise _Failure(
                f"turn {number}: codex did not finish within {self.host.config.turn_timeout_s:g} s "
                f"(process group killed); stderr: {self._tail(outcome.stderr)}",
                records=(record,),
            )
        if outcome.overflowed:
            raise _Failure(
                f"turn {number}: event stream exceeded {MAX_HOST_EVENT_STREAM_BYTES} bytes "
                "(process group killed)",
                records=(record,),
            )
        try:
            turn = parse_turn(stream)
        except StreamError as exc:
            raise _Failure(
                f"turn {number}: malformed codex event stream: {exc}; exit code "
                f"{outcome.exit_code}; stderr: {self._tail(outcome.stderr)}",
                records=(record,),
            ) from None
        record = _TurnRecord(number, turn, stream)
        if thread_id is not None and turn.thread_id != thread_id:
            raise _Failure(
                f"turn {number}: codex resumed thread {turn.thread_id}, not {thread_id}",
                records=(record,),
            )
        if not turn.completed:
            raise _Failure(
                f"turn {number} failed: {turn.failure}; stderr: {self._tail(outcome.stderr)}",
                records=(record,),
            )
        if outcome.exit_code != 0:
            raise _Failure(
                f"turn {number}: codex exited {outcome.exit_code} after turn.completed; "
                f"stderr: {self._tail(outcome.stderr)}",
                records=(record,),
            )
        return record

    def run(self) -> HostResult:
        request = self.request
        skills, skills_complete = discover_skills(request.workspace)
        before = snapshot(request.workspace)
        records: list[_TurnRecord] = []
        failure: _Failure | None = None
        try:
            self._prepare()
            thread_id: str | None = None
            for number in range(1, len(request.prompts) + 1):
                record = self._turn(number, thread_id)
                records.append(record)
                assert record.turn is not None
                thread_id = record.turn.thread_id
        except _Failure as exc:
            failure = exc
            records.extend(exc.records)
        except OSError as exc:
            failure = _Failure(f"codex host set-up failed: {exc.strerror or exc}")
        after = snapshot(request.workspace)
        return self._result(records, failure, skills, skills_complete, before, after)

    # -- results --------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        return scrub(text, self.secrets)

    def _tail(self, stderr: bytes) -> str:
        return stderr_tail(stderr, self.secrets)

    def _result(
        self,
        records: Sequence[_TurnRecord],
        failure: _Failure | None,
        skills: Sequence[MountedSkill],
        skills_complete: bool,
        before: Any,
        after: Any,
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
        observations = self._observations(parsed, skills, skills_complete, before, after)
        usage = _usage([r.turn for r in parsed if r.turn is not None], failure is None)
        usage = self._cost(usage)
        error = None
        if failure is not None and not failure.cancelled:
            error = self._scrub(failure.message)[:MAX_DIAGNOSTIC_CHARS]
        return HostResult(
            final_message=self._scrub(final) if final is not None else None,
            complete=failure is None and final is not None,
            execution_failed=failure is not None and not failure.cancelled,
            error=error,
            cancelled=failure is not None and failure.cancelled,
            observations=observations,
            artifacts=artifacts,
            usage=usage,
            turns_completed=len(completed),
        )

    def _observations(
        self,
        parsed: Sequence[_TurnRecord],
        skills: Sequence[MountedSkill],
        skills_complete: bool,
        before: Any,
        after: Any,
    ) -> tuple[Observation, ...]:
        commands: list[JsonValue] = []
        calls: list[JsonValue] = []
        reads: list[dict[str, JsonValue]] = []
        turns: list[JsonValue] = []
        for record in parsed:
            turn = record.turn
            assert turn is not None
            turns.append(
                {
                    "turn": record.number,
                    "threadId": turn.thread_id,
                    "completed": turn.completed,
                    "items": len(turn.items),
                    "warnings": [self._scrub(w)[:500] for w in turn.warnings[:16]],
                }
            )
            for item in turn.items:
                if item.type not in _TOOL_ITEMS:
                    continue
                calls.append(_call(record.number, item.ordinal, item.type, item.data))
                if item.type != "command_execution":
                    continue
                command = str(item.data["command"])
                output = str(item.data.get("aggregated_output", ""))
                code = item.data.get("exit_code")
                data = output.encode("utf-8", "surrogatepass")
                commands.append(
                    {
                        "turn": record.number,
                        "ordinal": item.ordinal,
                        "command": self._scrub(command),
                        "exitCode": code,
                        "timedOut": False,
                        "outputSha256": hashlib.sha256(data).hexdigest(),
                        "outputByteLength": len(data),
                        "outputTruncated": False,
                        "durationMs": None,
                        "status": str(item.data.get("status", "")),
                    }
                )
                for skill in skills:
                    status = classify_read(skill, self.request.workspace, command, output, code)
                    if status is not None:
                        reads.append(
                            {
                                "skill": skill.name,
                                "turn": record.number,
                                "ordinal": item.ordinal,
                                "status": status,
                            }
                        )
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
                complete if skills_complete else Completeness.PARTIAL,
                make_skills_data(skills, reads),
            ),
            Observation(TURNS_OBSERVATION, HOST_ID, complete, {"turns": turns}),
        )

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
