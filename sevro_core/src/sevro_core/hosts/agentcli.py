"""The agent-CLI host skeleton: a host that runs a coding-agent CLI once per turn of a trial.

:class:`AgentCliHost` is the plugin (configure, doctor), :class:`ConfiguredAgentCliHost` the
host bound to one run, :class:`AgentCliTrial` one trial. The base owns the flow every agent
CLI shares: a private trial layout with credentials copied privately and their secrets kept for
scrubbing; each turn run with the prompt on stdin, bounded stdout and stderr, a stall and a
turn timeout, cancellation and a process-group kill (inside a PID namespace when the host asks
for one); the turn's stream parsed strictly; and the result: the shared observations (commands,
tool calls, files changed, skills, turns), usage, the event streams as artifacts, and failure
reasons that end with the scrubbed stderr tail. A subclass supplies only what is its own:
the argv, the stream parser, the configuration it renders and the binary rules.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from attrs import field, frozen

from sevro_core.errors import ConfigurationError, InvocationError
from sevro_core.fixtures.changes import Snapshot, changes, snapshot
from sevro_core.formats.jsonio import JsonValue
from sevro_core.hosts.activations import HookLog, activations_observation
from sevro_core.hosts.binaries import (
    BinaryError,
    NativeBinary,
    binary_version,
    candidate_binary,
    is_native_executable,
)
from sevro_core.hosts.credentials import (
    ENV_NAME,
    REDACTED,
    CredentialFlags,
    Credentials,
    auth_check,
    credential_settings,
    read_credential_file,
    require_credential,
    scrub,
    secret_strings,
    write_private,
)
from sevro_core.hosts.nativetranscripts import NativeTree, capture
from sevro_core.hosts.pidns import pid_namespace_argv, pid_namespace_prefix
from sevro_core.hosts.reads import (
    CommandReads,
    FileRead,
    ReadLog,
    WorkspaceFiles,
    command_reads,
    instructions_file,
)
from sevro_core.hosts.skills import (
    SKILLS_DIR,
    MountedSkill,
    discover_skills,
    skill_files,
    skill_touches,
)
from sevro_core.hosts.skills import skills_data as make_skills_data
from sevro_core.isolation.processes import run_bounded
from sevro_core.isolation.seeds import RuntimeUnavailable
from sevro_core.limits import (
    DEFAULT_HOST_STALL_SECONDS,
    DEFAULT_HOST_TURN_TIMEOUT_SECONDS,
    MAX_DIAGNOSTIC_CHARS,
    MAX_HOST_EVENT_STREAM_BYTES,
    MAX_HOST_STDERR_BYTES,
    MAX_HOST_STDERR_TAIL_CHARS,
    MAX_HOST_STDERR_TAIL_LINES,
    MAX_HOST_TURN_TIMEOUT_SECONDS,
    MAX_TOOL_CALL_TEXT_CHARS,
    MAX_TOOL_CALL_TEXT_TOTAL_CHARS,
)
from sevro_core.models import (
    Artifact,
    Case,
    HostRequest,
    HostResult,
    Observation,
    ProcessOutcome,
    Route,
    Usage,
)
from sevro_core.plugin.hostruntime import HostRuntime, RoleRuntime
from sevro_core.plugin.protocols import (
    CredentialLocations,
    DoctorCheck,
    DoctorRequest,
    HostOptions,
    HostSetting,
    SkillPlaces,
)
from sevro_core.prices import PriceTable, builtin_prices
from sevro_core.reporting.failures import escape_controls
from sevro_core.states import Completeness
from sevro_core.vocabulary import (
    COMMANDS_OBSERVATION,
    CONTINUATION_CAPABILITY,
    FILE_READS_OBSERVATION,
    FILES_CHANGED_OBSERVATION,
    JUDGE_ROLES,
    NATIVE_TRANSCRIPTS_OBSERVATION,
    SKILL_ACTIVATIONS_OBSERVATION,
    SKILLS_OBSERVATION,
    TOOL_CALLS_OBSERVATION,
)

CANDIDATE = "candidate"
"""The role of the agent under test; every other role is a judge's (``JUDGE_ROLES``)."""

__all__ = [
    "COMMANDS_OBSERVATION",
    "CONTINUATION_CAPABILITY",
    "ENV_NAME",
    "FILES_CHANGED_OBSERVATION",
    "REDACTED",
    "SKILLS_OBSERVATION",
    "TOOL_CALLS_OBSERVATION",
    "AgentCliConfig",
    "AgentCliHost",
    "AgentCliTrial",
    "BinaryError",
    "ConfiguredAgentCliHost",
    "CredentialFlags",
    "Credentials",
    "DoctorCheck",
    "EvidenceIds",
    "HostFailure",
    "NativeBinary",
    "ParsedTurn",
    "TurnEvidence",
    "TurnRecord",
    "auth_check",
    "binary_version",
    "candidate_binary",
    "command_entry",
    "credential_settings",
    "inside",
    "is_native_executable",
    "pid_namespace_argv",
    "protected_executable",
    "read_credential_file",
    "require_credential",
    "roots_to_hide",
    "scrub",
    "seconds_setting",
    "secret_strings",
    "stderr_tail",
    "turn_limits",
    "write_private",
]


# -- helpers every agent-CLI host uses --------------------------------------------------------


class HostFailure(Exception):
    """Ends a trial early with a message; ``cancelled`` when the run was cancelled."""

    def __init__(self, message: str, *, cancelled: bool = False, records: tuple[Any, ...] = ()):
        super().__init__(message)
        self.message = message
        self.cancelled = cancelled
        self.records = records


def inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def stderr_tail(stderr: bytes, secrets: Sequence[str]) -> str:
    """The last lines of a CLI's stderr for a failure reason: scrubbed, escaped, bounded.

    Secrets are removed before anything is cut, so a bound can never leave half a secret behind;
    control characters are escaped so the reason stays one line a terminal shows as it is.
    """
    text = scrub(stderr.decode("utf-8", "replace"), list(secrets))
    lines = [line.strip() for line in text.splitlines() if line.strip()][
        -MAX_HOST_STDERR_TAIL_LINES:
    ]
    escaped = " | ".join(escape_controls(line) for line in lines)
    if len(escaped) > MAX_HOST_STDERR_TAIL_CHARS:
        escaped = "..." + escaped[-MAX_HOST_STDERR_TAIL_CHARS:]
    return escaped or "(empty)"


def seconds_setting(config: Mapping[str, Any], key: str, default: float, maximum: float) -> float:
    """A positive number of seconds from a host configuration (``ConfigurationError`` if not)."""
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= maximum:
        raise ConfigurationError(f"must be a number in (0, {maximum:g}]", f"/{key}")
    return float(value)


def roots_to_hide(
    roots: Sequence[Path], *, needed: Sequence[Path], exposed: Callable[[Path], bool]
) -> list[Path]:
    """Protected roots a sandbox must cover explicitly: existing, holding nothing the CLI
    needs, and ``exposed`` by a tree the sandbox otherwise shows."""
    return [
        root
        for root in roots
        if root.exists() and not any(inside(path, root) for path in needed) and exposed(root)
    ]


def protected_executable(
    executables: Sequence[Path], roots: Sequence[Path]
) -> tuple[Path, Path] | None:
    """The first executable lying inside a protected root, and that root (None when none does).

    A CLI's sandbox must show its commands the executable's install tree, so one inside a
    protected root would expose part of that root: refused. A home itself does not count (an
    install under ``~`` is ordinary and the sandbox shows only its tree), its credential
    locations do, the same rule as for the runtime's read grants."""
    from sevro_core.isolation.protection import canonical, operator_homes

    homes = operator_homes()
    for executable in executables:
        path = canonical(executable)
        for root in roots:
            held = canonical(root)
            if held not in homes and inside(path, held):
                return executable, root
    return None


def turn_limits(config: Mapping[str, Any]) -> tuple[float, float]:
    """A host configuration's ``turnTimeoutSeconds`` and ``stallTimeoutSeconds``."""
    maximum = MAX_HOST_TURN_TIMEOUT_SECONDS
    timeout = seconds_setting(
        config, "turnTimeoutSeconds", DEFAULT_HOST_TURN_TIMEOUT_SECONDS, maximum
    )
    stall = seconds_setting(config, "stallTimeoutSeconds", DEFAULT_HOST_STALL_SECONDS, maximum)
    return timeout, stall


def command_entry(
    turn: int, ordinal: int, command: str, output: str, code: Any, status: str
) -> dict[str, JsonValue]:
    """One ``sevro.commands`` entry (the command still to be scrubbed by the caller)."""
    data = output.encode("utf-8", "surrogatepass")
    return {
        "turn": turn,
        "ordinal": ordinal,
        "command": command,
        "exitCode": code,
        "timedOut": False,
        "outputSha256": hashlib.sha256(data).hexdigest(),
        "outputByteLength": len(data),
        "outputTruncated": False,
        "durationMs": None,
        "status": status,
    }


# -- what the skeleton needs from a subclass's own types ------------------------------------


@frozen(kw_only=True)
class AgentCliConfig:
    """What every agent-CLI host's configuration holds; a host subclasses it with its own."""

    turn_timeout_s: float
    stall_timeout_s: float
    bin: str | None
    """``<host>.bin``: the CLI to run (default: its command on PATH)."""
    credentials: Credentials
    raw: Mapping[str, JsonValue]
    """``--host-config`` as given (it enters the redacted configuration)."""

    @staticmethod
    def common(
        config: Mapping[str, Any], settings: Mapping[str, str], host: str, flags: CredentialFlags
    ) -> dict[str, Any]:
        """The shared fields, validated: turn and stall timeouts, ``<host>.bin``, credential."""
        timeout, stall = turn_limits(config)
        return {
            "turn_timeout_s": timeout,
            "stall_timeout_s": stall,
            "bin": settings.get(f"{host}.bin"),
            "credentials": flags.parse(settings),
            "raw": config,
        }


class ParsedTurn(Protocol):
    """One turn as the host's stream parser returns it, as far as the skeleton reads it."""

    @property
    def completed(self) -> bool: ...
    @property
    def final_message(self) -> str | None: ...
    @property
    def failure(self) -> str | None: ...
    @property
    def usage(self) -> Usage: ...


ConfigT = TypeVar("ConfigT", bound=AgentCliConfig)
TurnT = TypeVar("TurnT", bound=ParsedTurn)
HostT = TypeVar("HostT", bound="ConfiguredAgentCliHost[Any]")


@frozen
class EvidenceIds:
    """The ids of a host's own evidence: its turns observation and event-stream artifacts."""

    turns: str
    """The observation summarising each turn (``acme.cli.turns``)."""
    events: str
    """The first turn's event stream (``acme.cli.events``)."""
    follow_up_events: str
    """The second turn's event stream (``acme.cli.follow-up-events``); turn N > 2 has
    ``acme.cli.follow-up-events.N``, so every turn's stream is kept under an id of its own."""

    def events_of(self, number: int) -> str:
        """The artifact id of turn ``number``'s event stream."""
        if number == 1:
            return self.events
        return self.follow_up_events if number == 2 else f"{self.follow_up_events}.{number}"


@frozen
class TurnRecord(Generic[TurnT]):
    """One turn's raw stream and, when it parsed, the parsed turn."""

    number: int
    turn: TurnT | None
    stream: bytes


@frozen
class TurnEvidence:
    """What a trial's turns showed, collected turn by turn by :meth:`AgentCliTrial.collect`."""

    commands: list[JsonValue] = field(factory=list)
    calls: list[JsonValue] = field(factory=list)
    reads: list[dict[str, JsonValue]] = field(factory=list)
    turns: list[JsonValue] = field(factory=list)
    files: WorkspaceFiles | None = None
    """The workspace's files (mounted skills as they were at the start), to check reads."""
    file_reads: ReadLog = field(factory=ReadLog)

    def read(self, skill: MountedSkill, turn: int, ordinal: int, status: str | None) -> None:
        """Record a touch of a mounted skill (``read`` or ``partial``); ``None`` is no touch."""
        if status is not None:
            entry: dict[str, JsonValue] = {"skill": skill.name, "turn": turn}
            self.reads.append({**entry, "ordinal": ordinal, "status": status})

    def command(
        self,
        skills: Sequence[MountedSkill],
        at: tuple[int, int],
        command: tuple[str, str, int | None],
        cwd: str | None = ".",
    ) -> CommandReads:
        """Record the files a command (text, output, exit code) read at (turn, ordinal), and
        the skills it touched; the directory it ended in is returned for hosts whose shell
        keeps it."""
        assert self.files is not None
        found = command_reads(*command, self.files, cwd)
        self.record(skills, at, found)
        return found

    def record(
        self, skills: Sequence[MountedSkill], at: tuple[int, int], found: CommandReads
    ) -> None:
        """Record reads found by a host's own rules (a tool that reads files)."""
        turn, ordinal = at
        self.file_reads.add(turn, ordinal, found)
        for skill, status in skill_touches(skills, found.reads):
            self.read(skill, turn, ordinal, status)

    def tool_read(
        self, skills: Sequence[MountedSkill], at: tuple[int, int], read: FileRead
    ) -> None:
        self.record(skills, at, CommandReads((read,), False, None))


# -- the plugin -----------------------------------------------------------------------------


class AgentCliHost(Generic[ConfigT]):
    """The registered host: validates options into a configured host, and runs the doctor.

    A subclass sets the class attributes and implements :meth:`parse_config`, :meth:`locate`,
    :meth:`binary_version` and :meth:`doctor_checks`; :meth:`prerequisites` is optional.
    """

    id: ClassVar[str]
    version: ClassVar[str] = "1.0.0"
    capabilities: ClassVar[frozenset[str]]
    requires: ClassVar[frozenset[str]] = frozenset()
    name: ClassVar[str]
    """The short name (``--host acme``), also how failure reasons name the CLI."""
    package: ClassVar[str]
    """The npm package that installs the CLI."""
    tested_version: ClassVar[str]
    credential_flags: ClassVar[CredentialFlags]
    setting_help: ClassVar[tuple[str, str, str]]
    """Help for the three settings: the binary, the credential file, the API-key variable."""
    uses_pid_namespace: ClassVar[bool] = False
    credential_locations: ClassVar[CredentialLocations]
    """Where the CLI keeps credentials on a machine (its home directory, the variable that moves
    it): hidden from every sandboxed command of every run."""
    """Run each turn as PID 1 of a PID namespace of its own (Linux)."""
    configured: ClassVar[type[ConfiguredAgentCliHost[Any]]]
    skill_places: ClassVar[SkillPlaces] = SkillPlaces(SKILLS_DIR, "AGENTS.md")
    """Where the CLI discovers project skills and instructions (the open agent-skills layout
    unless the CLI reads elsewhere): experiments mount an arm's skills and context there, and
    the trial's ``sevro.skills`` evidence discovers skills in the same directory."""
    native_transcript_tree: ClassVar[str | None] = None
    """The subtree of the trial's private CLI home that holds the CLI's own session transcripts
    (None: the host keeps none, and the runtime key ``nativeTranscripts`` is refused)."""

    @staticmethod
    def turn_capabilities(turns_observation: str) -> frozenset[str]:
        """What every agent-CLI host provides, plus its own turns observation."""
        return frozenset(
            {
                CONTINUATION_CAPABILITY,
                COMMANDS_OBSERVATION,
                TOOL_CALLS_OBSERVATION,
                FILES_CHANGED_OBSERVATION,
                SKILLS_OBSERVATION,
                FILE_READS_OBSERVATION,
                turns_observation,
            }
        )

    @property
    def display(self) -> str:
        """The CLI's name in prose (``Acme``)."""
        return self.name.capitalize()

    @property
    def bin_flag(self) -> str:
        return f"--{self.name}-bin"

    @property
    def settings(self) -> tuple[HostSetting, ...]:
        """``<name>.bin`` and the two exclusive credential settings, as flags."""
        flags, (bin_help, file_help, key_help) = self.credential_flags, self.setting_help
        return (
            HostSetting(f"{self.name}.bin", self.bin_flag, bin_help, "path"),
            HostSetting(flags.file_key, flags.file_flag, file_help, "path"),
            HostSetting(flags.env_key, flags.env_flag, key_help, "string"),
        )

    def parse_config(
        self, config: Mapping[str, Any] | None, settings: Mapping[str, str]
    ) -> ConfigT:
        """Validate ``--host-config`` and the host's settings (``ConfigurationError``)."""
        raise NotImplementedError

    def locate(self, configured: str | None) -> NativeBinary:
        """The CLI's native executable (``BinaryError`` with a fix)."""
        raise NotImplementedError

    def binary_version(self, binary: NativeBinary) -> str:
        """``<cli> --version`` (``BinaryError`` when it does not answer)."""
        raise NotImplementedError

    def prerequisites(self) -> Mapping[str, Any]:
        """Check what a run needs besides the CLI (``ConfigurationError``); the values become
        fields of the configured host."""
        return {}

    def doctor_checks(self, binary: NativeBinary, request: DoctorRequest) -> list[DoctorCheck]:
        """The host's own doctor checks, after binary, version, auth (and pid-namespace)."""
        raise NotImplementedError

    def credential_check(self, config: ConfigT) -> DoctorCheck:
        return self.credential_flags.check(config.credentials)

    def configure(self, options: HostOptions) -> ConfiguredAgentCliHost[ConfigT]:
        if options.role != CANDIDATE and options.role not in JUDGE_ROLES:
            raise ConfigurationError(
                f"unknown role {options.role!r} (one of {', '.join((CANDIDATE, *JUDGE_ROLES))})"
            )
        config = self.parse_config(options.config, options.settings)
        try:
            binary = self.locate(config.bin)
        except BinaryError as exc:
            raise ConfigurationError(f"{exc} (run `sevro doctor --host {self.name}`)") from None
        extra = self.prerequisites()
        # A run without a usable credential would only fail or retry in every trial: refuse it
        # now, with the doctor's own reason (no network involved).
        require_credential(self.credential_check(config), self.name)
        if config.credentials.file is not None:  # fail before any trial, never later
            read_credential_file(config.credentials.file, self.credential_flags.file_flag)
        pid_namespace = (
            pid_namespace_prefix(self.display, self.name) if self.uses_pid_namespace else ()
        )
        route = Route(
            host=self.id,
            model=options.model or f"{self.name}-default",
            effort=options.effort or "default",
        )
        return self.configured(
            plugin=self,
            route=route,
            config=config,
            binary=binary,
            model=options.model,
            effort=options.effort,
            protected_roots=tuple(p.resolve() for p in options.protected_roots),
            pid_namespace=pid_namespace,
            capabilities=self.capabilities | self._native_transcripts(options),
            role=options.role,
            runtime=options.runtime,
            prices=options.prices,
            **extra,
        )

    def _native_transcripts(self, options: HostOptions) -> frozenset[str]:
        """The capability to retain the candidate's native transcripts, when the runtime
        configuration selects it and this host keeps them (the planner refuses it otherwise)."""
        runtime = options.runtime
        selected = runtime is not None and runtime.native_transcripts
        if selected and options.role == CANDIDATE and self.native_transcript_tree is not None:
            return frozenset({NATIVE_TRANSCRIPTS_OBSERVATION})
        return frozenset()

    def doctor(self, request: DoctorRequest) -> Sequence[DoctorCheck]:
        """Checks for `sevro doctor --host <name>` (each failure with a fix)."""
        if request.sandbox != "auto":  # the CLI runs the agent's commands in its own sandbox
            raise InvocationError("--sandbox applies to hosts that run commands in sevro's sandbox")
        try:
            config = self.parse_config(None, request.settings)
        except ConfigurationError as exc:
            return [
                DoctorCheck("settings", False, exc.message, f"correct the {self.display} flags")
            ]
        try:
            binary = self.locate(config.bin)
        except BinaryError as exc:
            fix = f"npm install -g {self.package} (or pass {self.bin_flag} /path/to/{self.name})"
            return [DoctorCheck("binary", False, str(exc), fix)]
        checks = [DoctorCheck("binary", True, str(binary.native)), self._version_check(binary)]
        checks.append(self.credential_check(config))
        if self.uses_pid_namespace:
            from sevro_core.hosts.checks import pid_namespace_check

            checks.append(pid_namespace_check(self.name))
        checks += self.doctor_checks(binary, request)
        return checks

    def _version_check(self, binary: NativeBinary) -> DoctorCheck:
        try:
            found = self.binary_version(binary)
        except BinaryError as exc:
            return DoctorCheck("version", False, str(exc), f"reinstall {self.package}")
        same = found == self.tested_version
        note = "" if same else f" (sevro is tested with {self.tested_version})"
        return DoctorCheck("version", True, found + note)


# -- the host bound to one run ----------------------------------------------------------------


@frozen(kw_only=True)
class ConfiguredAgentCliHost(Generic[ConfigT]):
    """A host bound to its configuration; :meth:`trial` makes the host's trial for a request."""

    plugin: AgentCliHost[ConfigT]
    route: Route
    config: ConfigT
    binary: NativeBinary
    model: str | None
    effort: str | None
    protected_roots: tuple[Path, ...]
    pid_namespace: tuple[str, ...] = ()
    """Prefix that runs each turn in its own PID namespace (empty when not asked for)."""
    capabilities: frozenset[str]
    role: str = CANDIDATE
    """``candidate``, or the judge role this configuration plays: a judge's CLI gets no tools,
    no MCP servers, no skills and nothing writable but its private home (each host applies
    that in its own argv and configuration, and records it in :meth:`redacted_isolation`)."""
    runtime: HostRuntime | None = None
    """The operator's runtime configuration, the same for every role (None without one)."""
    prices: PriceTable | None = None
    """The run's price table (None: the built-in one); a cost the host already computed from
    its own configuration's prices wins."""

    @property
    def judge(self) -> bool:
        return self.role != CANDIDATE

    @property
    def skill_places(self) -> SkillPlaces:
        """The plugin's :attr:`AgentCliHost.skill_places` (one declaration, never two)."""
        return self.plugin.skill_places

    def redacted_configuration(self) -> JsonValue:
        credentials = self.config.credentials
        return {
            "hostConfig": dict(self.config.raw),
            "binary": str(self.binary.native),
            self.plugin.credential_flags.file_setting: {"present": credentials.file is not None},
            "apiKeyEnv": (
                {"name": credentials.api_key_env, "present": True}
                if credentials.api_key_env is not None
                else None
            ),
            "protectedRoots": [str(p) for p in self.protected_roots],
            # Only a judge names its role: a candidate's configuration (and identity) is as it
            # was before judges existed.
            **({"role": self.role} if self.judge else {}),
            **self.redacted_isolation(),
        }

    def redacted_isolation(self) -> dict[str, JsonValue]:
        """The host's own isolation settings for evidence (no secrets)."""
        raise NotImplementedError

    def check_case(self, case: Case) -> None:
        return None  # every case shape is runnable; isolation is checked per trial

    def trial(self, request: HostRequest) -> AgentCliTrial[Any, Any]:
        raise NotImplementedError

    def run(self, request: HostRequest) -> HostResult:
        return self.trial(request).run()


# -- one trial ------------------------------------------------------------------------------


class AgentCliTrial(Generic[HostT, TurnT]):
    """One trial: prepare, run each turn, parse it, and report observations and artifacts.

    A subclass implements :meth:`private_dirs`, :meth:`configure_trial`, :meth:`argv`,
    :meth:`parse`, :meth:`continuity_error`, :meth:`turn_summary`, :meth:`collect` and
    :meth:`usage`; :meth:`failed_turn` and :meth:`offered_skills` have defaults.
    """

    evidence_ids: ClassVar[EvidenceIds]
    completion: ClassVar[str]
    """How a failure reason names a successful turn's end (``turn.completed``)."""

    def __init__(self, host: HostT, request: HostRequest) -> None:
        self.host = host
        self.request = request
        self.secrets: list[str] = []
        self.env: dict[str, str] = {}
        self.session: str | None = None
        """The session (thread) the turns continue; set by the subclass."""
        self.instructions: str | None = None
        """The instructions file the CLI read at the start (where context is mounted)."""
        self.text_budget = MAX_TOOL_CALL_TEXT_TOTAL_CHARS
        self._role_runtime: RoleRuntime | None = None
        self.hook_log: HookLog | None = None
        """Where the trial's passive tool hook writes (set by a host that configures one)."""

    @property
    def name(self) -> str:
        return self.host.plugin.name

    @property
    def judge(self) -> bool:
        """Whether this trial is a judge's call (no tools, passive, read-only workspace)."""
        return self.host.judge

    @property
    def fixture_environment(self) -> Mapping[str, str]:
        """The fixture's environment for the CLI; a judge gets none of the candidate's."""
        return {} if self.judge else self.request.environment

    @property
    def fixture_bin_dir(self) -> Path | None:
        """The fixture's tools directory for PATH; a judge gets none of the candidate's."""
        return None if self.judge else self.request.fixture_bin_dir

    def role_runtime(self) -> RoleRuntime | None:
        """This role's runtime (``{{sevro.runtime}}`` is ``<private root>/<role>``, prepared
        once per trial with the role's seeds and shared caches); None without a runtime file.
        A root that cannot be prepared fails the trial (``HostFailure``), never runs it."""
        runtime = self.host.runtime
        if runtime is None:
            return None
        if self._role_runtime is None:
            role = self.host.role
            try:
                self._role_runtime = runtime.role_runtime(role, self.request.private_root / role)
            except RuntimeUnavailable as exc:
                raise HostFailure(str(exc)) from None
        return self._role_runtime

    def command_path(self, default: str) -> str:
        """The agent's commands' PATH: the fixture's tools, then the declared PATH (else
        ``default``), as sevro's own sandbox orders them."""
        runtime = self.role_runtime()
        path = (runtime.path if runtime is not None else None) or default
        fixture_bin = self.fixture_bin_dir
        return f"{fixture_bin}:{path}" if fixture_bin is not None else path

    def runtime_grants(self) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
        """The directories the runtime grants the agent's commands: (read-only, writable);
        none for a judge, which runs no command."""
        runtime = self.role_runtime()
        if runtime is None or self.judge:
            return (), ()
        return runtime.read_roots, runtime.writable_roots

    @property
    def skills_dir(self) -> str:
        """Where ``sevro.skills`` discovers skills: the host's declared place, so the skills an
        experiment mounts are the skills the evidence reports."""
        return self.host.plugin.skill_places.skills_dir

    # -- hooks ----------------------------------------------------------------------------

    def private_dirs(self) -> Sequence[Path]:
        """Directories under the private root to create (0700) before anything else."""
        raise NotImplementedError

    def configure_trial(self) -> None:
        """Write the trial's configuration and credentials; set ``env`` and the session."""
        raise NotImplementedError

    def candidate_home(self) -> Path | None:
        """The ``HOME`` the CLI and its commands get, for the candidate's artifact directories
        (None: this host names none, and declared artifact directories are a grading error)."""
        return None

    def native_transcript_home(self) -> Path | None:
        """The trial's private CLI home holding :attr:`AgentCliHost.native_transcript_tree`."""
        return None

    def argv(self, number: int) -> list[str]:
        """The command for turn ``number`` (the PID-namespace prefix is added by the base)."""
        raise NotImplementedError

    def parse(self, stream: bytes) -> TurnT:
        """The turn's stream, parsed strictly (``StreamError`` for anything untrustworthy)."""
        raise NotImplementedError

    def continuity_error(self, number: int, turn: TurnT) -> str | None:
        """Why the turn does not continue the trial's session, if it does not."""
        raise NotImplementedError

    def collect(
        self, number: int, turn: TurnT, skills: Sequence[MountedSkill], into: TurnEvidence
    ) -> None:
        """Add one parsed turn's commands, tool calls and skill reads to ``into``."""
        raise NotImplementedError

    def turn_summary(self, turn: TurnT) -> dict[str, JsonValue]:
        """The turn's entry in the host's turns observation (after its ``turn`` number)."""
        raise NotImplementedError

    def hooked_calls(self, turn: TurnT) -> Mapping[str, int]:
        """How many of the turn's tool calls, by the hook's tool name, the host's passive hook
        must have recorded."""
        return {}

    def usage(self, turns: Sequence[TurnT], all_turns: bool) -> Usage:
        """The trial's usage from its parsed turns; incomplete unless ``all_turns``."""
        raise NotImplementedError

    def failed_turn(self, number: int, turn: TurnT, exit_code: int | None) -> str:
        """The reason for a turn the stream says failed (the stderr tail is appended)."""
        return f"turn {number} failed: {turn.failure}"

    def offered_skills(
        self, skills: Sequence[MountedSkill], parsed: Sequence[TurnRecord[TurnT]]
    ) -> tuple[Sequence[MountedSkill], bool]:
        """The skills the CLI offered, and whether that is known (with a complete listing)."""
        return skills, True

    # -- helpers for subclasses -------------------------------------------------------------

    def copy_credential_file(self, target: Path) -> None:
        """Copy the configured credential file to ``target`` (0600); remember its secrets."""
        file = self.host.config.credentials.file
        if file is not None:
            data = read_credential_file(file, self.host.plugin.credential_flags.file_flag)
            write_private(target, data)
            self.secrets += secret_strings(data)

    def api_key(self) -> str | None:
        """The API key from the configured variable (a set-up failure when it is empty)."""
        name = self.host.config.credentials.api_key_env
        if name is None:
            return None
        key = os.environ.get(name, "")
        if not key:
            raise HostFailure(f"{self.host.plugin.credential_flags.env_flag} {name} is not set")
        self.secrets.append(key)
        return key

    def scrub(self, text: str) -> str:
        return scrub(text, self.secrets)

    def call_text(self, arguments: object) -> dict[str, JsonValue]:
        """A tool call's arguments as the ``text`` of its ``sevro.tool-calls`` entry: a string
        as it is, anything else as compact JSON with sorted keys; scrubbed, then cut at
        ``MAX_TOOL_CALL_TEXT_CHARS`` and within the trial's ``MAX_TOOL_CALL_TEXT_TOTAL_CHARS``
        (``textTruncated`` says so: a filter the cut part could decide is then unknown)."""
        import json

        if isinstance(arguments, str):
            text = arguments
        else:
            text = json.dumps(
                arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str
            )
        text = self.scrub(text)
        kept = text[: min(MAX_TOOL_CALL_TEXT_CHARS, self.text_budget)]
        self.text_budget -= len(kept)
        return {"text": kept, "textTruncated": len(kept) < len(text)}

    def tail(self, stderr: bytes) -> str:
        return stderr_tail(stderr, self.secrets)

    # -- the flow -------------------------------------------------------------------------

    def prepare(self) -> None:
        """The private layout, checked against the protected roots, then the host's files."""
        self.check_role()
        for directory in self.private_dirs():
            directory.mkdir(mode=0o700, exist_ok=True)
        request = self.request
        for root in self.host.protected_roots:
            if inside(root, request.workspace) or inside(root, request.private_root):
                raise HostFailure(f"protected root {root} lies inside the trial's own directories")
        self.configure_trial()

    def check_role(self) -> None:
        """Refuse a request for another role than the host was configured for (a candidate's
        configuration never answers as a judge, nor a judge's as a candidate), and a judge
        request that is not exactly one prompt (a judge keeps no session to resume)."""
        request, role = self.request, self.host.role
        if request.role != role:
            raise HostFailure(
                f"{self.name} host configured for role {role!r} was asked to run as "
                f"{request.role!r}"
            )
        if self.judge and len(request.prompts) != 1:
            raise HostFailure(f"the {role} judge answers one prompt, not {len(request.prompts)}")

    def command(self, number: int) -> list[str]:
        return [*self.host.pid_namespace, *self.argv(number)]

    def run(self) -> HostResult:
        request = self.request
        skills, skills_complete = discover_skills(request.workspace, self.skills_dir)
        self.instructions = instructions_file(request.workspace, self.host.plugin.skill_places)
        before = snapshot(request.workspace)
        records: list[TurnRecord[TurnT]] = []
        failure: HostFailure | None = None
        try:
            self.prepare()
            for number in range(1, len(request.prompts) + 1):
                record = self.turn(number)
                records.append(record)
                if self.hook_log is not None and record.turn is not None:
                    self.hook_log.harvest(number, self.hooked_calls(record.turn))
                reply = record.turn.final_message if record.turn is not None else None
                request.settle(number, self.scrub(reply) if reply is not None else None)
        except HostFailure as exc:
            failure = exc
            records.extend(exc.records)
            if self.hook_log is not None:  # what the failed turn returned is not known
                self.hook_log.fail(f"turn {len(records)} did not complete")
        except OSError as exc:
            failure = HostFailure(f"{self.name} host set-up failed: {exc.strerror or exc}")
            if self.hook_log is not None:
                self.hook_log.fail("the host's set-up failed")
        after = snapshot(request.workspace)
        return self.result(records, failure, (skills, skills_complete), (before, after))

    def turn(self, number: int) -> TurnRecord[TurnT]:
        """Run turn ``number``; ``HostFailure`` (holding what was streamed) when it failed."""
        config = self.host.config
        outcome = run_bounded(
            self.command(number),
            cwd=self.request.workspace,
            env=self.env,
            timeout_s=config.turn_timeout_s,
            cancel=self.request.cancel,
            output_limit=MAX_HOST_EVENT_STREAM_BYTES,
            stdin=self.request.prompts[number - 1].encode("utf-8", "surrogatepass"),
            stderr="capture",
            stderr_limit=MAX_HOST_STDERR_BYTES,
            kill_on_overflow=True,
            stall_s=config.stall_timeout_s,
        )
        record: TurnRecord[TurnT] = TurnRecord(number, None, outcome.output)
        if outcome.cancelled:
            raise HostFailure("run cancelled", cancelled=True, records=(record,))
        problem = self._process_problem(number, outcome)
        if problem is not None:
            raise HostFailure(problem, records=(record,))
        from sevro_core.hosts.streams import StreamError

        try:
            turn = self.parse(outcome.output)
        except StreamError as exc:
            raise HostFailure(
                f"turn {number}: malformed {self.name} event stream: {exc}; exit code "
                f"{outcome.exit_code}; stderr: {self.tail(outcome.stderr)}",
                records=(record,),
            ) from None
        record = TurnRecord(number, turn, outcome.output)
        problem = self._turn_problem(number, turn, outcome)
        if problem is not None:
            raise HostFailure(problem, records=(record,))
        return record

    def _process_problem(self, number: int, outcome: ProcessOutcome) -> str | None:
        """Why the process itself failed: a stall, the turn timeout, an oversized stream."""
        config, tail = self.host.config, self.tail(outcome.stderr)
        if outcome.stalled:
            return (
                f"turn {number}: {self.name} stalled: no event for {config.stall_timeout_s:g} s "
                f"(stallTimeoutSeconds; process group killed); stderr: {tail}"
            )
        if outcome.timed_out:
            return (
                f"turn {number}: {self.name} did not finish within {config.turn_timeout_s:g} s "
                f"(process group killed); stderr: {tail}"
            )
        if outcome.overflowed:
            return (
                f"turn {number}: event stream exceeded {MAX_HOST_EVENT_STREAM_BYTES} bytes "
                "(process group killed)"
            )
        return None

    def _turn_problem(self, number: int, turn: TurnT, outcome: ProcessOutcome) -> str | None:
        """Why a parsed turn is not a success: another session, a failed turn, a bad exit."""
        continuity = self.continuity_error(number, turn)
        if continuity is not None:
            return continuity
        if not turn.completed:
            reason = self.failed_turn(number, turn, outcome.exit_code)
            return f"{reason}; stderr: {self.tail(outcome.stderr)}"
        if outcome.exit_code != 0:
            return (
                f"turn {number}: {self.name} exited {outcome.exit_code} after {self.completion}; "
                f"stderr: {self.tail(outcome.stderr)}"
            )
        return None

    # -- the result -----------------------------------------------------------------------

    def result(
        self,
        records: Sequence[TurnRecord[TurnT]],
        failure: HostFailure | None,
        skills: tuple[Sequence[MountedSkill], bool],
        snapshots: tuple[Snapshot, Snapshot],
    ) -> HostResult:
        parsed = [r for r in records if r.turn is not None]
        turns = [r.turn for r in parsed if r.turn is not None]
        completed = [t for t in turns if t.completed]
        final = completed[-1].final_message if failure is None and completed else None
        error = None
        if failure is not None and not failure.cancelled:
            error = self.scrub(failure.message)[:MAX_DIAGNOSTIC_CHARS]
        native = self.native_transcripts(failure is None and final is not None)
        return HostResult(
            final_message=self.scrub(final) if final is not None else None,
            complete=failure is None and final is not None,
            execution_failed=failure is not None and not failure.cancelled,
            error=error,
            cancelled=failure is not None and failure.cancelled,
            observations=(*self.observations(parsed, skills, snapshots), *native[0]),
            artifacts=(*self.artifacts(records), *native[1]),
            usage=self.priced(self.usage(turns, failure is None)),
            turns_completed=len(completed),
            home=self.candidate_home() if not self.judge else None,
        )

    def priced(self, usage: Usage) -> Usage:
        """The call's cost from the run's price table, for the model asked for (``--model``):
        without one the CLI picks its own default, which sevro does not guess, so it stays
        unknown."""
        model = self.host.model
        if model is None:
            return usage
        return (self.host.prices or builtin_prices()).priced(model, usage)

    def artifacts(self, records: Sequence[TurnRecord[TurnT]]) -> tuple[Artifact, ...]:
        """Every turn's event stream as it came (scrubbed when there are secrets)."""
        return tuple(
            Artifact(
                self.evidence_ids.events_of(r.number),
                self.scrub(r.stream.decode("utf-8", "replace")).encode()
                if self.secrets
                else r.stream,
            )
            for r in records
        )

    def native_transcripts(
        self, whole: bool
    ) -> tuple[tuple[Observation, ...], tuple[Artifact, ...]]:
        """``sevro.host.native-transcripts`` and the bundle, when this candidate's host was asked
        to retain its native transcripts (nothing otherwise); known secrets are scrubbed."""
        tree, home = self.host.plugin.native_transcript_tree, self.native_transcript_home()
        if NATIVE_TRANSCRIPTS_OBSERVATION not in self.host.capabilities or self.judge:
            return (), ()
        if tree is None or home is None:
            return (), ()
        secrets = list(self.secrets)

        def scrubbed(data: bytes) -> bytes:
            text = data.decode("utf-8", "surrogateescape")
            return scrub(text, secrets).encode("utf-8", "surrogateescape")

        where = NativeTree(self.name, home, tree)
        found = capture(where, whole=whole, scrub=scrubbed if secrets else None)
        observation = Observation(
            NATIVE_TRANSCRIPTS_OBSERVATION, self.host.route.host, found.completeness, found.data
        )
        return (observation,), (() if found.artifact is None else (found.artifact,))

    def _activations(
        self, offered: Sequence[MountedSkill]
    ) -> tuple[tuple[Observation, ...], list[dict[str, JsonValue]] | None]:
        """The hook observation (none without a hook) and its activations (None unless it is
        complete)."""
        if self.hook_log is None:
            return (), None
        state, data = activations_observation(offered, self.hook_log, self.request.workspace)
        found = data.get("activations")
        activated: list[dict[str, JsonValue]] | None = None
        if state == "complete" and isinstance(found, list):
            activated = [dict(e) for e in found if isinstance(e, dict)]
        host = self.host.route.host
        observation = Observation(SKILL_ACTIVATIONS_OBSERVATION, host, Completeness(state), data)
        return (observation,), activated

    def observations(
        self,
        parsed: Sequence[TurnRecord[TurnT]],
        skills: tuple[Sequence[MountedSkill], bool],
        snapshots: tuple[Snapshot, Snapshot],
    ) -> tuple[Observation, ...]:
        mounted, listing_complete = skills
        evidence = TurnEvidence(files=WorkspaceFiles(self.request.workspace, skill_files(mounted)))
        for record in parsed:
            assert record.turn is not None
            evidence.turns.append({"turn": record.number, **self.turn_summary(record.turn)})
            self.collect(record.number, record.turn, mounted, evidence)
        offered, known = self.offered_skills(mounted, parsed)
        before, after = snapshots
        host, complete, partial = self.host.route.host, Completeness.COMPLETE, Completeness.PARTIAL
        hooked, activated = self._activations(offered)
        return (
            *hooked,
            Observation(COMMANDS_OBSERVATION, host, complete, {"commands": evidence.commands}),
            Observation(TOOL_CALLS_OBSERVATION, host, complete, {"calls": evidence.calls}),
            Observation(
                FILES_CHANGED_OBSERVATION,
                host,
                complete if before.complete and after.complete else partial,
                changes(before, after),
            ),
            Observation(
                SKILLS_OBSERVATION,
                host,
                complete if listing_complete and known else partial,
                make_skills_data(offered, evidence.reads, activated or (), activated is not None),
            ),
            Observation(
                FILE_READS_OBSERVATION,
                host,
                partial if evidence.file_reads.overflowed else complete,
                evidence.file_reads.data(self.instructions),
            ),
            Observation(self.evidence_ids.turns, host, complete, {"turns": evidence.turns}),
        )
