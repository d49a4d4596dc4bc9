"""The stable surface for plugin authors: everything a host, grader, fixture, sandbox, verdict
policy or reporter needs, from one import.

``from sevro_core.api import hookimpl, CheckOutcome, CheckStatus, ...``. What is listed in
``__all__`` keeps its name and meaning across minor versions; every other ``sevro_core`` module is
the core's own business and may move. sevro's first-party plugins (``sevro_graders``,
``sevro_sandbox``, the host distributions and ``sevro_core.builtins``) import from here only,
like a third party would (``tests/test_api.py`` keeps it so). ``docs/plugins.md`` shows a
grader, a host and a reporter written against it.

Importing this module costs what loading the built-in plugins costs anyway; it is never imported
by ``sevro --help``.
"""

from __future__ import annotations

from sevro_core import limits
from sevro_core.errors import (
    ConfigurationError,
    GradingError,
    InvocationError,
    SevroError,
    join_pointer,
)
from sevro_core.fixtures.changes import Snapshot, changes, snapshot
from sevro_core.fixtures.git import (
    FIXTURE_BRANCH,
    FIXTURE_EMAIL,
    FIXTURE_NAME,
    Git,
    GitError,
    find_git,
)
from sevro_core.fixtures.overlay import (
    GitOverlay,
    commit_paths,
    compile_overlay,
    write_files,
    write_identity,
)
from sevro_core.fixtures.paths import check_collisions, check_git_path, check_relative_path
from sevro_core.fixtures.probe import GIT_FIXTURE_CAPABILITIES, GitProbe
from sevro_core.fixtures.workspace import (
    WorkspaceEscapeError,
    list_confined,
    open_directory,
    read_confined,
    write_confined,
)
from sevro_core.formats.canonical import hash_json
from sevro_core.formats.jsonio import JsonValue, parse_json_text, read_json_file
from sevro_core.formats.schemas import describe_first_error, validator
from sevro_core.hosts.activations import (
    HOOK_EVENTS,
    HookLog,
    activations_observation,
    hook_command,
)
from sevro_core.hosts.agentcli import (
    AgentCliConfig,
    AgentCliHost,
    AgentCliTrial,
    ConfiguredAgentCliHost,
    EvidenceIds,
    HostFailure,
    TurnEvidence,
    TurnRecord,
    command_entry,
    inside,
    protected_executable,
    roots_to_hide,
    seconds_setting,
)
from sevro_core.hosts.binaries import (
    BinaryError,
    NativeBinary,
    binary_version,
    candidate_binary,
    is_native_executable,
)
from sevro_core.hosts.checks import Probe, sandbox_probe, tools_check
from sevro_core.hosts.credentials import (
    ENV_NAME,
    CredentialFlags,
    Credentials,
    read_credential_file,
    secret_strings,
    write_private,
)
from sevro_core.hosts.reads import (
    FileRead,
    ReadLog,
    WorkspaceFiles,
    command_reads,
    denumbered,
    front_matter_removed,
    instructions_file,
    line_count,
    workspace_path,
)
from sevro_core.hosts.skills import (
    MountedSkill,
    classify_read,
    discover_skills,
    skill_files,
    skill_touches,
    skills_data,
)
from sevro_core.hosts.streams import StreamError, decode_event, stream_lines
from sevro_core.isolation.doctor import sandbox_check
from sevro_core.isolation.processes import DEFAULT_PATH, run_bounded
from sevro_core.isolation.runtime import RuntimePolicy
from sevro_core.isolation.sandbox import Isolation, IsolationError
from sevro_core.isolation.seeds import RUNTIME_ROLES, RoleRuntime, RuntimeUnavailable
from sevro_core.judges.comparator import PairJudgement, judge_pair
from sevro_core.models import (
    UNKNOWN_USAGE,
    Artifact,
    CancelToken,
    Case,
    CheckDeclaration,
    CheckOutcome,
    CheckPart,
    ExtensionBundle,
    HostProfile,
    HostRequest,
    HostResult,
    JudgeReply,
    Observation,
    ProcessOutcome,
    Route,
    RuntimeProfile,
    StateBinding,
    TrialIsolation,
    TrialJudges,
    TrialView,
    Usage,
    unit_key,
)
from sevro_core.plugin.casesources import (
    EXTENSION_CASE_SOURCE,
    CasePreparation,
    CaseSource,
    CaseSourceRequest,
    EvaluationArtifact,
    EvaluationInput,
    EvaluationResult,
    OpenedCaseSource,
    TrialEvaluator,
)
from sevro_core.plugin.hookspecs import hookimpl
from sevro_core.plugin.hostruntime import HostRuntime
from sevro_core.plugin.instrumentation import (
    InstrumentationOffer,
    host_capabilities_of,
    instrumentation_of,
    passive_offers,
)
from sevro_core.plugin.manager import Registry, load_plugins
from sevro_core.plugin.preparation import (
    NO_HOST_PREPARATION,
    CodexMarketplace,
    HostPreparation,
    SkillInvocation,
)
from sevro_core.plugin.protocols import (
    ID_PATTERN,
    NETWORK_LOCAL_HTTP,
    NETWORK_NONE,
    NO_FIXTURE_CONTEXT,
    CaseSources,
    ComparisonSubject,
    CompiledCheck,
    CompiledFixture,
    ConfiguredHost,
    CredentialLocations,
    DoctorCheck,
    DoctorRequest,
    FixtureContext,
    FixtureProvider,
    FixtureReport,
    Grader,
    Host,
    HostOptions,
    HostSetting,
    JudgedResult,
    MaterialisedFixture,
    Plugin,
    PluginLookup,
    ReadsEvaluator,
    Reporter,
    Reviewer,
    ReviewSubject,
    Rubric,
    Sandbox,
    SandboxPolicy,
    SandboxProbe,
    SkillPlaces,
    VerdictPolicy,
    WorkspaceProbe,
    prepared_host,
)
from sevro_core.plugin.runinfo import RunInfo
from sevro_core.prices import Price, PriceTable, builtin_prices
from sevro_core.reporting.calibration import render_judge_calibration
from sevro_core.reporting.experiment import render_experiment_statistics
from sevro_core.reporting.failures import trial_ranges
from sevro_core.reporting.skilleval import render_skilleval
from sevro_core.run.loading import load_case
from sevro_core.run.sources import load_case_sources
from sevro_core.states import CheckStatus, Completeness, Execution, Grading, Verdict
from sevro_core.vocabulary import (
    ADVISORY_ROLE,
    COMMANDS_OBSERVATION,
    COMPARATOR_ROLE,
    CONTEXT_OBSERVATION,
    CONTINUATION_CAPABILITY,
    DIFF_ARTIFACT,
    ENFORCED_CAPABILITY,
    ENGINE_OBSERVATION_PREFIX,
    FILE_READS_OBSERVATION,
    FILES_CAPABILITY,
    FILES_CHANGED_OBSERVATION,
    FILES_DIFF_ARTIFACT,
    FILES_DIFF_OBSERVATION,
    FINAL_MESSAGE_OBSERVATION,
    GIT_CAPABILITY,
    GIT_HEAD_OBSERVATION,
    HOST_HOOKS_OBSERVATION,
    HOST_RUNTIME_OBSERVATION,
    JUDGE_PREFIX,
    JUDGE_ROLES,
    LOCAL_HTTP_CAPABILITY,
    NATIVE_GOAL_OBSERVATION,
    NATIVE_TRANSCRIPTS_ARTIFACT,
    NATIVE_TRANSCRIPTS_OBSERVATION,
    PID_NAMESPACE_CAPABILITY,
    RUNTIME_PROFILE_OBSERVATION,
    SANDBOX_CAPABILITY,
    SEMANTIC_JUDGE_CAPABILITY,
    SEMANTIC_ROLE,
    SKILL_ACTIVATIONS_OBSERVATION,
    SKILLS_OBSERVATION,
    TOOL_CALLS_OBSERVATION,
    TURNS_OBSERVATION,
    WORKSPACE_OBSERVATION,
)

__all__ = [  # noqa: RUF022 - grouped by what an author is doing, sorted within groups
    # ---- registration: pluggy marker for the `sevro_register_*` and lifecycle hooks
    "ID_PATTERN",
    "PluginLookup",
    "Registry",
    "RunInfo",
    "hookimpl",
    "load_plugins",
    # ---- the plugin kinds (typing protocols)
    "CompiledCheck",
    "CompiledFixture",
    "ConfiguredHost",
    "FixtureProvider",
    "Grader",
    "Host",
    "Plugin",
    "ReadsEvaluator",
    "Reporter",
    "Reviewer",
    "Rubric",
    "Sandbox",
    "VerdictPolicy",
    "WorkspaceProbe",
    # ---- case sources (the extension protocol's engine side)
    "EXTENSION_CASE_SOURCE",
    "CasePreparation",
    "CaseSource",
    "CaseSourceRequest",
    "EvaluationArtifact",
    "EvaluationInput",
    "EvaluationResult",
    "OpenedCaseSource",
    "TrialEvaluator",
    # ---- host preparation declared by a case source
    "NO_HOST_PREPARATION",
    "CodexMarketplace",
    "HostPreparation",
    "SkillInvocation",
    "prepared_host",
    # ---- values plugins receive and return
    "UNKNOWN_USAGE",
    "Artifact",
    "CancelToken",
    "Case",
    "CaseSources",
    "CheckDeclaration",
    "CheckOutcome",
    "CheckPart",
    "FixtureContext",
    "FixtureReport",
    "HostOptions",
    "HostRuntime",
    "HostSetting",
    "HostRequest",
    "HostProfile",
    "RuntimeProfile",
    "ExtensionBundle",
    "JudgeReply",
    "JudgedResult",
    "ComparisonSubject",
    "ReviewSubject",
    "HostResult",
    "StateBinding",
    "JsonValue",
    "MaterialisedFixture",
    "NO_FIXTURE_CONTEXT",
    "NETWORK_LOCAL_HTTP",
    "NETWORK_NONE",
    "Observation",
    "Route",
    "SandboxPolicy",
    "SandboxProbe",
    "TrialJudges",
    "TrialView",
    "Usage",
    # ---- instrumentation: what a configured host offers an extension (its `instrumentation`)
    "InstrumentationOffer",
    "host_capabilities_of",
    "instrumentation_of",
    "passive_offers",
    # ---- states
    "CheckStatus",
    "Completeness",
    "Execution",
    "Grading",
    "Verdict",
    # ---- errors: refuse a configuration, fail to grade, fail to isolate
    "ConfigurationError",
    "GradingError",
    "IsolationError",
    "WorkspaceEscapeError",
    # ---- vocabulary: shared observation, artifact and capability ids
    "ADVISORY_ROLE",
    "COMMANDS_OBSERVATION",
    "COMPARATOR_ROLE",
    "CONTINUATION_CAPABILITY",
    "DIFF_ARTIFACT",
    "ENFORCED_CAPABILITY",
    "ENGINE_OBSERVATION_PREFIX",
    "FILES_CAPABILITY",
    "FILES_DIFF_ARTIFACT",
    "FILES_DIFF_OBSERVATION",
    "FILES_CHANGED_OBSERVATION",
    "FILE_READS_OBSERVATION",
    "FINAL_MESSAGE_OBSERVATION",
    "GIT_CAPABILITY",
    "GIT_HEAD_OBSERVATION",
    "LOCAL_HTTP_CAPABILITY",
    "JUDGE_PREFIX",
    "JUDGE_ROLES",
    "PID_NAMESPACE_CAPABILITY",
    "SANDBOX_CAPABILITY",
    "SEMANTIC_JUDGE_CAPABILITY",
    "SEMANTIC_ROLE",
    "SKILL_ACTIVATIONS_OBSERVATION",
    "SKILLS_OBSERVATION",
    "TOOL_CALLS_OBSERVATION",
    "HOST_RUNTIME_OBSERVATION",
    "NATIVE_TRANSCRIPTS_ARTIFACT",
    "NATIVE_TRANSCRIPTS_OBSERVATION",
    "NATIVE_GOAL_OBSERVATION",
    "HOST_HOOKS_OBSERVATION",
    "CONTEXT_OBSERVATION",
    "RUNTIME_PROFILE_OBSERVATION",
    "TURNS_OBSERVATION",
    "WORKSPACE_OBSERVATION",
    # ---- configuration: RFC 6901 pointers and JSON Schema validation of declarations
    "describe_first_error",
    "join_pointer",
    "validator",
    # ---- strict JSON: the parser for untrusted JSON files (raises InvocationError, with a pointer)
    "InvocationError",
    "SevroError",
    "parse_json_text",
    "read_json_file",
    "load_case",
    "load_case_sources",
    # ---- digests: sha256 of RFC 8785 canonical JSON (Sevro's hashJson), for identities
    "hash_json",
    # ---- bounds: every documented limit (docs/limits.md), as `limits.MAX_...`
    "limits",
    # ---- commands: bounded processes and the trial's sandbox
    "DEFAULT_PATH",
    "Isolation",
    "RoleRuntime",
    "RuntimePolicy",
    "RuntimeUnavailable",
    "RUNTIME_ROLES",
    "ProcessOutcome",
    "TrialIsolation",
    "run_bounded",
    # ---- workspaces: confined reads and writes, declared paths, change detection
    "Snapshot",
    "changes",
    "check_collisions",
    "check_git_path",
    "check_relative_path",
    "list_confined",
    "open_directory",
    "read_confined",
    "snapshot",
    "write_confined",
    # ---- skills mounted in a workspace (hosts report `sevro.skills` by one rule)
    "MountedSkill",
    "classify_read",
    "discover_skills",
    "skill_files",
    "skill_touches",
    "skills_data",
    # ---- skill activation from passive tool hooks (`sevro.host.skill-activations`, one rule)
    "HOOK_EVENTS",
    "HookLog",
    "activations_observation",
    "hook_command",
    # ---- which workspace files a command or tool call read (`sevro.file-reads`, one rule)
    "FileRead",
    "ReadLog",
    "WorkspaceFiles",
    "command_reads",
    "denumbered",
    "front_matter_removed",
    "instructions_file",
    "line_count",
    "workspace_path",
    # ---- Git fixtures: the runner, history and overlay building, the workspace probe
    "FIXTURE_BRANCH",
    "FIXTURE_EMAIL",
    "FIXTURE_NAME",
    "GIT_FIXTURE_CAPABILITIES",
    "Git",
    "GitError",
    "GitOverlay",
    "GitProbe",
    "commit_paths",
    "compile_overlay",
    "find_git",
    "write_files",
    "write_identity",
    # ---- judges: the blinded AB/BA pairwise comparator (calibration drives it directly)
    "PairJudgement",
    "judge_pair",
    # ---- doctor and reports
    "CredentialLocations",
    "SkillPlaces",
    "DoctorCheck",
    "DoctorRequest",
    "sandbox_check",
    "trial_ranges",
    "render_experiment_statistics",
    "render_judge_calibration",
    "render_skilleval",
    "unit_key",
    # ---- agent-CLI hosts: the skeleton a host that drives a coding-agent CLI subclasses
    "AgentCliConfig",
    "AgentCliHost",
    "AgentCliTrial",
    "ConfiguredAgentCliHost",
    "EvidenceIds",
    "HostFailure",
    "TurnEvidence",
    "TurnRecord",
    "command_entry",
    "inside",
    "protected_executable",
    "roots_to_hide",
    "seconds_setting",
    "BinaryError",
    "NativeBinary",
    "binary_version",
    "candidate_binary",
    "is_native_executable",
    "Probe",
    "sandbox_probe",
    "tools_check",
    "ENV_NAME",
    "CredentialFlags",
    "write_private",
    "Credentials",
    "read_credential_file",
    "secret_strings",
    "StreamError",
    "decode_event",
    "stream_lines",
    # ---- prices: the run's price table (``HostOptions.prices``), a call's cost (docs/spend.md)
    "Price",
    "PriceTable",
    "builtin_prices",
]
