"""The pi host (``sevro.host.pi``): ``node cli.js --mode json``, one pi process per turn.

Each trial runs pi inside sevro's bubblewrap sandbox with no network (``--unshare-net``), a
private ``HOME``, agent directory (``PI_CODING_AGENT_DIR``) and temp directory, and an
environment built from nothing. The model is reached only through sevro's bridge, which adds
the credential outside the sandbox. The prompt goes in on stdin; every turn names the same
session file under the private root, so a follow-up continues the session. Every turn's stream
is parsed strictly and retained; commands, tool calls, file changes and skill activations
become observations with the same ids and meaning as the Codex and Claude hosts'. A case's host
profile (declared tools, skill-eval runtime, context observation) is applied and recorded.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import evolve, frozen

from sevro_core.api import (
    CONTEXT_OBSERVATION,
    DEFAULT_PATH,
    RUNTIME_PROFILE_OBSERVATION,
    TOOL_CALLS_OBSERVATION,
    AgentCliHost,
    AgentCliTrial,
    Artifact,
    BinaryError,
    Case,
    Completeness,
    ConfigurationError,
    ConfiguredAgentCliHost,
    CredentialLocations,
    DoctorCheck,
    DoctorRequest,
    EvidenceIds,
    FileRead,
    Host,
    HostFailure,
    HostOptions,
    HostProfile,
    HostRequest,
    HostResult,
    HostSetting,
    InstrumentationOffer,
    InvocationError,
    JsonValue,
    MountedSkill,
    NativeBinary,
    Observation,
    ProcessOutcome,
    RuntimeProfile,
    SkillPlaces,
    Snapshot,
    StreamError,
    TurnEvidence,
    TurnRecord,
    Usage,
    command_entry,
    hookimpl,
    inside,
    passive_offers,
    roots_to_hide,
    secret_strings,
    workspace_path,
    write_private,
)
from sevro_hosts_pi import binary as binaries
from sevro_hosts_pi import bridge as bridges
from sevro_hosts_pi import credentials, events, observer, profiles
from sevro_hosts_pi.configuration import (
    API,
    APIS,
    BASE_URL,
    FIXED_FLAGS,
    NODE,
    PROVIDER,
    QUIET_ENV,
    RUNTIME_TREES,
    SANDBOX_BRIDGE_DIR,
    THINKING_LEVELS,
    PiConfig,
    SandboxMounts,
    TrialLayout,
    check_tools,
    models_json,
    parse,
    sandbox_argv,
    settings_json,
)
from sevro_hosts_pi.limits import MAX_SESSION_FILE_BYTES

HOST_ID = "sevro.host.pi"
TURNS_OBSERVATION = "sevro.pi.turns"
EVENTS_ARTIFACT = "sevro.pi.events"
FOLLOW_UP_EVENTS_ARTIFACT = "sevro.pi.follow-up-events"
SESSION_ARTIFACT = "sevro.pi.session"
"""pi's session file, retained only when the runtime profile asks for the session."""
PASSIVE_INSTRUMENTATION = frozenset({TOOL_CALLS_OBSERVATION})
"""Observers a candidate offers as instrumentation: the tool calls are read from the stream,
so offering them changes nothing pi does."""
JUDGE_FLAGS = ("--no-tools", "--no-skills", "--no-context-files", "--no-session")
"""A judge's pi: no tool, no skill, no AGENTS.md, no session file."""
EVENTS_FILTER = Path(events.__file__).with_name("events_filter.mjs")
"""A preload printing pi's update events as place-holding stubs: the stream then grows with
the reply, not with its square (the final message and results arrive whole anyway)."""
_EXIT_RE = re.compile(r"Command exited with code (\d+)\s*$")
_FILE_TOOLS = ("edit", "write")
_EXTENSION_ERROR = b"Extension error"
PROMPT_FILES = (".pi/SYSTEM.md", ".pi/APPEND_SYSTEM.md")
"""Workspace files pi 0.73.1 builds its system prompt from whatever its flags (refused)."""
_SOCKET = "model.sock"


class PiHost(AgentCliHost[PiConfig]):
    """pi, run inside sevro's bubblewrap sandbox (so ``bwrap`` is a prerequisite)."""

    id, name = HOST_ID, "pi"
    capabilities = AgentCliHost.turn_capabilities(TURNS_OBSERVATION) | {
        CONTEXT_OBSERVATION,
        RUNTIME_PROFILE_OBSERVATION,
    }
    package, tested_version = binaries.PACKAGE, binaries.TESTED_VERSION
    credential_flags = credentials.CREDENTIALS
    setting_help = (
        "pi's dist/cli.js or the .bin/pi link to it (default: pi on PATH).",
        "File holding the model provider's API key (handed only to sevro's model bridge).",
        "Name of the environment variable holding the model provider's API key.",
    )
    credential_locations = CredentialLocations(
        home_entries=(".pi",), home_variables=("PI_CODING_AGENT_DIR",)
    )
    # pi discovers project skills in `.agents/skills/<name>/SKILL.md` (and `.pi/skills`) in the
    # working directory and its ancestors, and reads AGENTS.md as project context (pi's
    # docs/skills.md; PI-RESEARCH r3, r11). Only the workspace is mounted, so no ancestor
    # contributes; tests/hosts_pi/test_pi_host.py proves the listing reaches the model.
    skill_places = SkillPlaces(".agents/skills", "AGENTS.md")
    # pi keeps the trial's session (its native transcript) in `<private root>/sessions/`; the
    # agent directory beside it (models.json, auth.json) is never retained.
    native_transcript_tree = "sessions"
    parse_config = staticmethod(parse)

    @property
    def settings(self) -> tuple[HostSetting, ...]:
        """The shared three, and node, the wire API and the upstream model endpoint."""
        return (
            *super().settings,
            HostSetting(
                NODE, "--pi-node", "Node.js (>= 20.6) that runs pi (default: node).", "path"
            ),
            HostSetting(
                API,
                "--pi-api",
                f"The model's wire API: {' | '.join(APIS)} (default: {APIS[0]}).",
                "string",
            ),
            HostSetting(
                BASE_URL,
                "--pi-base-url",
                "The upstream model endpoint sevro's bridge forwards pi's requests to.",
                "string",
            ),
        )

    def locate(self, configured: str | None) -> NativeBinary:
        """pi's cli.js; node is settled in :meth:`configure` (``--pi-node``)."""
        return binaries.locate(configured, None, need_node=False)

    def binary_version(self, binary: NativeBinary) -> str:
        assert isinstance(binary, binaries.PiBinary)
        return binaries.version(binary)

    def prerequisites(self) -> Mapping[str, Any]:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise ConfigurationError(
                "bwrap (bubblewrap) is not on PATH: the pi host runs only inside its sandbox "
                "(run `sevro doctor --host pi`)"
            )
        return {"bwrap": str(Path(bwrap).resolve())}

    def configure(self, options: HostOptions) -> ConfiguredPiHost:
        """The configured host, with node settled (``--pi-node`` or PATH, at least 20.6)."""
        configured = super().configure(options)
        assert isinstance(configured, ConfiguredPiHost)
        # Flag errors, not --host-config ones: InvocationError keeps the file prefix off.
        if options.model is None:
            raise InvocationError("the pi host needs --model (the model behind --pi-base-url)")
        if options.effort is not None and options.effort not in THINKING_LEVELS:
            raise InvocationError(
                f"--effort must be one of pi's thinking levels ({', '.join(THINKING_LEVELS)}), "
                f"not {options.effort!r}"
            )
        try:
            binary = binaries.locate(configured.config.bin, configured.config.node)
            binaries.node_version(binary)
        except BinaryError as exc:
            raise ConfigurationError(f"{exc} (run `sevro doctor --host pi`)") from None
        return evolve(configured, binary=binary)

    def doctor_checks(self, binary: NativeBinary, request: DoctorRequest) -> list[DoctorCheck]:
        from sevro_hosts_pi.doctor import doctor_checks

        config = parse(None, request.settings)
        try:
            located = binaries.locate(config.bin, config.node)
        except BinaryError as exc:
            return [DoctorCheck("node", False, str(exc), "install Node.js >= 20.6 or --pi-node")]
        return doctor_checks(located, request, config)


@frozen(kw_only=True)
class ConfiguredPiHost(ConfiguredAgentCliHost[PiConfig]):
    bwrap: str

    @property
    def instrumentation(self) -> tuple[InstrumentationOffer, ...]:
        """What an extension may request: the passive observers; a judge runs none."""
        return () if self.judge else passive_offers(PASSIVE_INSTRUMENTATION & self.capabilities)

    @property
    def pi(self) -> binaries.PiBinary:
        assert isinstance(self.binary, binaries.PiBinary)
        return self.binary

    def check_case(self, case: Case) -> None:
        """A host profile pi cannot honour is refused before anything runs (exit 64)."""
        try:
            check_profile(case.host_profile, judge=self.judge)
        except ValueError as exc:
            raise InvocationError(str(exc), source=case.source, pointer=case.pointer) from None

    def redacted_isolation(self) -> dict[str, JsonValue]:
        config = self.config
        isolation: dict[str, JsonValue] = {
            "sandbox": {"outer": "bubblewrap", "network": "model-bridge-only"},
            "api": config.api,
            "upstream": config.base_url,
            "flags": [*FIXED_FLAGS, *(JUDGE_FLAGS if self.judge else ())],
            "node": str(self.pi.node),
            "script": str(self.pi.script),
        }
        if self.judge:
            isolation["judge"] = {"tools": "none", "workspace": "read", "session": "none"}
        return isolation

    def trial(self, request: HostRequest) -> PiTrial:
        return PiTrial(self, request)


PiHost.configured = ConfiguredPiHost


class PiTrial(AgentCliTrial[ConfiguredPiHost, events.Turn]):
    """``node cli.js --mode json`` in sevro's sandbox; follow-ups name the same session file."""

    evidence_ids = EvidenceIds(TURNS_OBSERVATION, EVENTS_ARTIFACT, FOLLOW_UP_EVENTS_ARTIFACT)
    completion = "a completed agent run"

    def __init__(self, host: ConfiguredPiHost, request: HostRequest) -> None:
        super().__init__(host, request)
        self.layout = TrialLayout.under(request.private_root)
        self.profile: HostProfile = request.profile or HostProfile()
        self.wrapper: list[str] = []
        self.tools: tuple[str, ...] = ()
        self.extensions: list[Path] = []
        self.bridge: bridges.ModelBridge | None = None
        self.bridge_dir: Path | None = None
        self.cut_before = 0
        """Event-stream replies the bridge saw cut before the current turn."""
        self.observed: dict[int, observer.TurnObservation | None] = {}
        self.session_bytes: bytes | None = None

    @property
    def runtime(self) -> RuntimeProfile | None:
        """The case's skill-eval runtime profile (None without one)."""
        return self.profile.runtime

    # -- set-up ---------------------------------------------------------------------------

    def candidate_home(self) -> Path | None:
        return self.layout.home

    def native_transcript_home(self) -> Path | None:
        return self.layout.root

    def private_dirs(self) -> Sequence[Path]:
        return self.layout.directories

    def configure_trial(self) -> None:
        request, layout, host = self.request, self.layout, self.host
        pi, config = host.pi, host.config
        if inside(pi.tree, request.workspace) or inside(request.workspace, pi.tree):
            raise HostFailure("the pi package tree and the workspace overlap")
        key = self._key()
        bundles = len(self.runtime.extensions) if self.runtime is not None else 0
        try:
            self.tools = () if self.judge else check_tools(self.profile.tools, bundles=bundles)
        except ValueError as exc:
            raise HostFailure(str(exc)) from None
        assert host.model is not None
        reasoning = host.effort not in (None, "off")
        document = models_json(config, host.model, bridges.BRIDGE_PORT, reasoning=reasoning)
        write_private(layout.models_file, document.encode())
        write_private(layout.settings_file, settings_json().encode())
        for source in (bridges.preload_path(), EVENTS_FILTER, observer.observer_source()):
            write_private(layout.sevro / source.name, source.read_bytes())
        self.extensions = profiles.copy_bundles(self.runtime, layout.bundles)
        self.env = self._environment()
        read_roots, writable = self.runtime_grants()
        extra_read = [*read_roots]
        if self.fixture_bin_dir is not None:
            extra_read.append(self.fixture_bin_dir)
        needed = [pi.node_prefix, pi.tree, *extra_read]
        self.bridge_dir = Path(tempfile.mkdtemp(prefix="sevro-pi-"))
        self.bridge = bridges.ModelBridge(
            self.bridge_dir / _SOCKET,
            config.base_url,
            credentials.auth_header(config.api, key),
            paths=bridges.api_paths(config.api, config.base_url),  # the model call only
            stream_end=bridges.STREAM_ENDS[config.api],  # a cut reply pi would take as whole
        )
        self.bridge.start()
        self.wrapper = sandbox_argv(
            host.bwrap,
            workspace=request.workspace,
            layout=layout,
            bridge_dir=self.bridge_dir,
            mounts=SandboxMounts(
                read=needed,
                write=[p for p in writable if not inside(p, layout.root)],
                hidden=self._hidden(needed),
            ),
            judge=self.judge,
        )

    def _key(self) -> str:
        """The credential, remembered as a secret to scrub from everything retained."""
        config = self.host.config
        key = credentials.api_key(config.credentials)
        self.secrets.append(key)
        if config.credentials.file is not None:
            self.secrets += secret_strings(key.encode())
        return key

    def _environment(self) -> dict[str, str]:
        """pi's whole environment (its bash tool inherits it): built from nothing."""
        layout = self.layout
        prepared = self.role_runtime()
        env = {
            **(prepared.environment if prepared is not None else {}),
            "PATH": self.command_path(DEFAULT_PATH),
            "HOME": str(layout.home),
            "TMPDIR": str(layout.tmp),
            "PI_CODING_AGENT_DIR": str(layout.agent_dir),
            "LANG": "C.UTF-8",
            "SHELL": "/bin/bash",
            **QUIET_ENV,
            **self.fixture_environment,
        }
        found = profiles.environment(self.runtime, os.environ)
        self.secrets += [found[name] for name in self.runtime.inherit] if self.runtime else []
        env.update(found)
        env[bridges.SOCKET_VARIABLE] = str(SANDBOX_BRIDGE_DIR / _SOCKET)
        env[bridges.PORT_VARIABLE] = str(bridges.BRIDGE_PORT)
        if self.profile.observe_context:
            env[observer.OBSERVE_CONTEXT_ENV] = "1"
        return env

    def _hidden(self, mounted: Sequence[Path]) -> list[Path]:
        """Protected roots inside a mounted tree (covered in the sandbox)."""
        trees = (*(Path(t) for t in RUNTIME_TREES), *mounted)
        return roots_to_hide(
            self.host.protected_roots,
            needed=trees,
            exposed=lambda root: any(inside(root, tree) for tree in trees),
        )

    # -- turns ----------------------------------------------------------------------------

    def argv(self, number: int) -> list[str]:
        layout, host = self.layout, self.host
        self.env[observer.OBSERVE_ENV] = str(layout.observe_file(number))
        argv = [str(host.pi.node), "--import", str(layout.sevro / bridges.preload_path().name)]
        argv += ["--import", str(layout.sevro / EVENTS_FILTER.name)]
        argv += [str(host.pi.script), "--mode", "json", "--provider", PROVIDER]
        argv += ["--model", str(host.model), *FIXED_FLAGS]
        if host.effort is not None:
            argv += ["--thinking", host.effort]
        if self.judge:
            argv += JUDGE_FLAGS
        else:
            argv += ["--session-dir", str(layout.sessions), "--session", str(layout.session_file)]
            argv += ["--tools", ",".join(self.tools)]
            for entry in self.extensions:
                argv += ["-e", str(entry)]
        argv += ["-e", str(layout.sevro / observer.observer_source().name)]  # always last
        return [*self.wrapper, *argv]

    def parse(self, stream: bytes) -> events.Turn:
        turn = events.parse_turn(stream, session_id=self.session)
        if self.session is None:
            self.session = turn.session_id
        return turn

    def turn(self, number: int) -> TurnRecord[events.Turn]:
        """A turn, then what the observer recorded during it: trusted only when it recorded
        exactly as many model requests as passed through the bridge (outside the sandbox, so
        out of the agent's reach) during the turn."""
        self._refuse_prompt_files(number)
        before = self.bridge.requests if self.bridge is not None else None
        self.cut_before = self.bridge.incomplete if self.bridge is not None else 0
        try:
            return super().turn(number)
        finally:
            seen = self._observation(number)
            sent = None if before is None or self.bridge is None else self.bridge.requests - before
            if seen is not None and len(seen.offered_tools) != sent:
                seen = None  # a record missing or added: unavailable, never believed
            self.observed[number] = seen

    def _refuse_prompt_files(self, number: int) -> None:
        """pi replaces its system prompt with the workspace's ``.pi/SYSTEM.md`` and appends
        ``.pi/APPEND_SYSTEM.md`` whatever flags it gets: a fixture (or the agent, between turns)
        would rewrite the instructions under test, so the turn fails before pi could read them,
        as the Claude host refuses project settings it was not asked to load."""
        for name in PROMPT_FILES:
            if os.path.lexists(self.request.workspace / name):
                raise HostFailure(
                    f"the workspace holds {name} before turn {number}: pi would replace or "
                    "extend its system prompt with it, so the pi host refuses to run the turn"
                )

    def _observation(self, number: int) -> observer.TurnObservation | None:
        try:
            return observer.read_observations(self.layout.observe_file(number))
        except (StreamError, OSError):
            return None

    def _turn_problem(self, number: int, turn: events.Turn, outcome: ProcessOutcome) -> str | None:
        """The skeleton's reasons, and an extension error pi reported only on stderr (it goes
        on without the extension, so the run is not what was asked for)."""
        problem = super()._turn_problem(number, turn, outcome)
        cut = self.bridge.incomplete - self.cut_before if self.bridge is not None else 0
        if problem is None and cut:
            problem = (
                f"turn {number}: {cut} of the model's streamed replies ended before their "
                "closing event (cut); pi would take a cut reply for a whole one"
            )
        if problem is None and _EXTENSION_ERROR in outcome.stderr:
            tail = self.tail(outcome.stderr)
            problem = f"turn {number}: pi reported an extension error; stderr: {tail}"
        return problem

    def continuity_error(self, number: int, turn: events.Turn) -> str | None:
        if turn.session_id != self.session:
            return f"turn {number}: pi ran session {turn.session_id}, not {self.session}"
        return None

    def failed_turn(self, number: int, turn: events.Turn, exit_code: int | None) -> str:
        bridge = "; ".join(self.bridge.errors) if self.bridge is not None else ""
        where = f"; model bridge: {self.scrub(bridge)}" if bridge else ""
        return f"turn {number} failed (pi exited {exit_code}): {turn.failure}{where}"

    def run(self) -> HostResult:
        """The skeleton's run, then the bridge closed and the session kept or discarded."""
        try:
            return super().run()
        finally:
            if self.bridge is not None:
                self.bridge.close()
            if self.bridge_dir is not None:
                shutil.rmtree(self.bridge_dir, ignore_errors=True)
            if self.runtime is None or not self.runtime.session:
                self.layout.session_file.unlink(missing_ok=True)

    # -- results --------------------------------------------------------------------------

    def offered_skills(
        self, skills: Sequence[MountedSkill], parsed: Sequence[TurnRecord[events.Turn]]
    ) -> tuple[Sequence[MountedSkill], bool]:
        """pi lists skills only when its ``read`` tool is offered (and a judge's none)."""
        if self.judge or "read" not in self.tools:
            return [], True
        return skills, True

    def turn_summary(self, turn: events.Turn) -> dict[str, JsonValue]:
        return {
            "sessionId": turn.session_id,
            "completed": turn.completed,
            "requests": turn.requests,
            "toolCalls": len(turn.tools),
            "tools": list(self.tools),
        }

    def collect(
        self, number: int, turn: events.Turn, skills: Sequence[MountedSkill], into: TurnEvidence
    ) -> None:
        offered = self.offered_skills(skills, [])[0]
        for call in turn.tools:
            into.calls.append(self._call(number, call))
            at = (number, _ordinal(call))
            if call.name == "bash":
                entry = self._command(number, call)
                into.commands.append(entry)
                command = str(call.arguments.get("command", ""))
                code = entry["exitCode"]
                output = call.result_text or ""
                into.command(
                    offered, at, (command, output, code if isinstance(code, int) else None)
                )
            elif call.name == "read":
                read = self._read_tool(call, into)
                if read is not None:
                    into.tool_read(offered, at, read)

    def usage(self, turns: Sequence[events.Turn], all_turns: bool) -> Usage:
        return Usage.summed([t.usage for t in turns], all_turns)

    def observations(
        self,
        parsed: Sequence[TurnRecord[events.Turn]],
        skills: tuple[Sequence[MountedSkill], bool],
        snapshots: tuple[Snapshot, Snapshot],
    ) -> tuple[Observation, ...]:
        """The shared observations, then the context and runtime-profile receipts."""
        extra: list[Observation] = []
        host = self.host.route.host
        if self.profile.observe_context and not self.judge:
            state, data = self._context()
            extra.append(Observation(CONTEXT_OBSERVATION, host, state, data))
        if self.runtime is not None and not self.judge:
            reports = [
                profiles.bundle_report(bundle, profiles.bundle_root(self.layout.bundles, index))
                for index, bundle in enumerate(self.runtime.extensions)
            ]
            offers = [
                profiles.TurnOffer(n, o.offered_tools if o is not None else None)
                for n, o in sorted(self.observed.items())
            ]
            state, data = profiles.runtime_observation_data(
                self.profile, offers, reports, len(self.request.prompts)
            )
            extra.append(Observation(RUNTIME_PROFILE_OBSERVATION, host, state, data))
        return (*super().observations(parsed, skills, snapshots), *extra)

    def _context(self) -> tuple[Completeness, dict[str, JsonValue]]:
        """``sevro.host.context``: per observed turn the system prompt and each request's
        provider context (scrubbed); partial when a turn was not observed or text was cut."""
        turns: list[JsonValue] = []
        complete = len(self.observed) == len(self.request.prompts)
        for number, seen in sorted(self.observed.items()):
            if seen is None:
                complete = False
                continue
            complete = complete and not seen.truncated
            prompt = seen.system_prompt
            requests: list[JsonValue] = [
                {"request": index + 1, "text": self.scrub(text)}
                for index, text in enumerate(seen.contexts)
            ]
            turns.append(
                {
                    "turn": number,
                    "systemPrompt": self.scrub(prompt) if prompt is not None else None,
                    "requests": requests,
                }
            )
        return (Completeness.COMPLETE if complete else Completeness.PARTIAL), {"turns": turns}

    def artifacts(self, records: Sequence[TurnRecord[events.Turn]]) -> tuple[Artifact, ...]:
        """Every turn's stream and, when the runtime profile keeps the session, pi's session
        file (scrubbed; a file over ``MAX_SESSION_FILE_BYTES`` is not kept)."""
        kept = super().artifacts(records)
        if self.runtime is None or not self.runtime.session or self.judge:
            return kept
        path = self.layout.session_file
        try:
            if path.is_symlink() or path.stat().st_size > MAX_SESSION_FILE_BYTES:
                return kept
            data = path.read_bytes()
        except OSError:
            return kept
        text = self.scrub(data.decode("utf-8", "replace"))
        return (*kept, Artifact(SESSION_ARTIFACT, text.encode()))

    def _call(self, turn: int, call: events.ToolExecution) -> dict[str, JsonValue]:
        kind = {"bash": "command_execution", "edit": "file_change", "write": "file_change"}
        entry: dict[str, JsonValue] = {
            "turn": turn,
            "ordinal": _ordinal(call),
            "kind": kind.get(call.name, "tool_call"),
            "tool": call.name[:256],
            "status": "failed" if call.is_error else "completed",
        }
        path = call.arguments.get("path")
        if call.name in _FILE_TOOLS and isinstance(path, str):
            entry["paths"] = [self.scrub(path)[:1024]]
        entry.update(self.call_text(dict(call.arguments)))
        return entry

    def _command(self, turn: int, call: events.ToolExecution) -> dict[str, JsonValue]:
        """A bash call: exit 0 when it succeeded, the code pi appends to a failed one's output
        (``Command exited with code N``), else unknown (timed out, aborted)."""
        command = str(call.arguments.get("command", ""))
        output = call.result_text or ""
        code: int | None = None
        if not call.is_error:
            code = 0
        elif match := _EXIT_RE.search(output):
            code = int(match.group(1))
        status = "failed" if call.is_error else "completed"
        return command_entry(turn, _ordinal(call), self.scrub(command), output, code, status)

    def _read_tool(self, call: events.ToolExecution, into: TurnEvidence) -> FileRead | None:
        """A ``read`` of a workspace file: complete when it succeeded, started at the first
        line and returned the file's exact text (pi appends a continuation note to anything
        cut by ``limit`` or by its 2000-line / 50 KB caps, so a partial read never matches)."""
        raw = call.arguments.get("path")
        if isinstance(raw, str) and raw.startswith("@"):
            raw = raw[1:]  # pi drops one leading "@" (a file mention) before resolving
        path = workspace_path(self.request.workspace, raw) if isinstance(raw, str) else None
        if path is None or path == "." or into.files is None:
            return None
        text = into.files.text(path)
        starts = call.arguments.get("offset") in (None, 0, 1)
        exact = text is not None and call.result_text == text
        return FileRead(path, not call.is_error and starts and exact, "read")


def _ordinal(call: events.ToolExecution) -> int:
    """The call's place in its turn counted from 1, as the Codex and Claude hosts count it (the
    parser counts from 0)."""
    return call.ordinal + 1


def check_profile(profile: HostProfile | None, *, judge: bool) -> None:
    """``ValueError`` for a profile pi cannot honour: an unknown tool (pi would silently drop
    it), another runtime host, a judge asked to run one."""
    if profile is None:
        return
    runtime = profile.runtime
    if runtime is not None and runtime.host != "pi":
        raise ValueError(f"runtime host {runtime.host!r} is not pi")
    if judge and (runtime is not None or profile.tools is not None):
        raise ValueError("a judge runs with no tools and no runtime profile")
    check_tools(profile.tools, bundles=len(runtime.extensions) if runtime else 0)


_HOST: Host = PiHost()


@hookimpl
def sevro_register_hosts(register: Callable[[Host], None]) -> None:
    register(_HOST)
