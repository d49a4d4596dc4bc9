"""The plugin kinds, as typing protocols.

Every kind has a namespaced ``id``, a ``version``, the ``capabilities`` it provides and the
``requires`` it needs. The planner negotiates these before any trial starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from attrs import field, frozen

from sevro_core.errors import InvocationError
from sevro_core.formats.jsonio import JsonValue
from sevro_core.models import (
    Artifact,
    CancelToken,
    Case,
    CheckOutcome,
    HostRequest,
    HostResult,
    Observation,
    Route,
    TrialView,
)
from sevro_core.plugin.hostruntime import HostRuntime
from sevro_core.plugin.preparation import NO_HOST_PREPARATION, HostPreparation
from sevro_core.prices import PriceTable
from sevro_core.states import Execution, Grading, Verdict

ID_PATTERN = r"^[a-z][a-z0-9]*(?:[.-][a-z0-9]+)+$"
"""Namespaced identifier, as Sevro defines it (``sevro.regex``, ``acme.grader.foo``)."""


@runtime_checkable
class Plugin(Protocol):
    """What every registered object declares."""

    @property
    def id(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def capabilities(self) -> frozenset[str]: ...
    @property
    def requires(self) -> frozenset[str]: ...


@frozen
class HostOptions:
    """Operator-supplied host settings from the command line."""

    config: Mapping[str, JsonValue] | None = None
    config_source: str | None = None
    model: str | None = None
    effort: str | None = None
    settings: Mapping[str, str] = field(factory=dict)
    """Host-specific flags by namespaced key (``acme.bin``); each host reads only its own."""
    protected_roots: tuple[Path, ...] = ()
    """Paths the agent's commands must neither read nor write (project, results, state, home)."""
    role: str = "candidate"
    """The role this configuration plays: ``candidate`` or a judge's (``semantic``, ...). A host
    that cannot run a judge without tools refuses a judge role here (``ConfigurationError``)."""
    runtime: HostRuntime | None = None
    """The operator's runtime configuration (``sevro.json``): the same declared tools and read
    grants for every role; None without a runtime file (the host's fixed PATH applies)."""
    config_root: Path | None = None
    """``--config-root`` (default: the project root), canonical: the directory a host may import
    its own narrowly chosen settings from (the core reads nothing there itself); None when the
    caller has none (``sevro doctor``, library use)."""
    prices: PriceTable | None = None
    """The run's price table (``--prices`` over the built-in one) a call's ``costUsd`` is
    computed from; None: the built-in table."""


class ConfiguredHost(Protocol):
    """A host bound to its configuration for one run."""

    @property
    def route(self) -> Route: ...
    @property
    def capabilities(self) -> frozenset[str]: ...

    def redacted_configuration(self) -> JsonValue:
        """Configuration that enters identity and evidence; secrets only as presence markers."""

    def check_case(self, case: Case) -> None:
        """Refuse (``ConfigurationError``) a case this configuration cannot run."""

    def run(self, request: HostRequest) -> HostResult:
        """Run every turn of one trial; never raises for agent failures."""


SETTING_KINDS = ("path", "string", "switch")
"""``path`` values are expanded (``~``) and resolved to an absolute path; ``string`` as given;
a ``switch`` is a flag without a value (``--acme-strict``), ``"true"`` when given (as a
``--host-setting`` pair its value must be ``true`` or ``false``), absent otherwise."""


@frozen
class CredentialLocations:
    """Where a host's agent CLI keeps credentials outside the workspace.

    sevro's sandbox hides them from every sandboxed command of every run (a candidate must never
    read a credential, whichever host runs it); the host declares them so the core names none.
    """

    home_entries: tuple[str, ...] = ()
    """Paths relative to a home (``.acme``, ``.config/acme``), hidden in ``$HOME`` and in the
    account's home even when the home itself cannot be hidden."""
    home_variables: tuple[str, ...] = ()
    """Environment variables naming the CLI's home elsewhere (``ACME_HOME``); an absolute value
    is hidden too."""


@frozen
class HostSetting:
    """One host-specific setting, declared by the host; sevro builds `--<flag>` and accepts
    `--host-setting KEY=VALUE` from it."""

    key: str
    """Namespaced, like ``acme.bin``; the host reads the value in ``HostOptions.settings``."""
    flag: str
    """The long option sevro adds to ``run`` and ``doctor``, like ``--acme-bin``."""
    help: str
    kind: str
    """One of :data:`SETTING_KINDS`."""
    secret: bool = False
    """Never echoed, never in evidence or a redacted configuration."""
    runtime_seed: str | None = None
    """A deprecated (Sevro) directory setting that stands for a runtime seed: the variable
    (``UV_CACHE_DIR``) that points the candidate's and checks' commands at their private copy
    of the directory; refused with a runtime file, which declares such seeds itself."""
    candidate_only: bool = False
    """Only the candidate reads it (how the agent under test runs): refused (exit 64) unless
    the run's ``--host`` or an arm's host declares it, a judge on that host is not enough."""


@frozen
class DoctorCheck:
    """One line of `sevro doctor`: what was checked, whether it holds, and how to fix it."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None


class PluginLookup(Protocol):
    """Read access to the loaded plugins, as :class:`~sevro_core.plugin.manager.Registry` gives it.

    Declared here so protocols never import the manager (which imports them).
    """

    def host(self, object_id: str) -> Host | None: ...
    def grader(self, object_id: str) -> Grader | None: ...
    def fixture(self, object_id: str) -> FixtureProvider | None: ...
    def sandbox(self, object_id: str) -> Sandbox | None: ...
    def verdict_policy(self, object_id: str) -> VerdictPolicy | None: ...
    def reporter(self, object_id: str) -> Reporter | None: ...
    def reviewer(self, object_id: str) -> Reviewer | None: ...
    def rubric(self, object_id: str) -> Rubric | None: ...
    def sandboxes(self) -> Mapping[str, Sandbox]: ...
    def ids(self, kind: str) -> list[str]: ...


@frozen
class DoctorRequest:
    """What `sevro doctor --host ...` hands a host: its validated settings and the run context."""

    settings: Mapping[str, str]
    """Validated host settings by key (only this host's)."""
    registry: PluginLookup
    """The loaded plugins (for hosts that check the sandbox backend sevro would pick)."""
    sandbox: str = "auto"
    """``--sandbox``, for hosts that run commands in sevro's sandbox."""


@frozen
class SkillPlaces:
    """Where a host's agent CLI discovers skills and instructions in its workspace.

    A host declares this (``skill_places``) to take part in experiments: the engine installs
    each arm's skill bundles at ``<skills_dir>/<name>/`` and its context files as
    ``instructions_file`` before the host starts. A host without it cannot run an arm that
    declares skills or context (refused before anything runs).
    """

    skills_dir: str
    """Workspace-relative POSIX directory, such as ``.agents/skills``."""
    instructions_file: str
    """Workspace-relative file the CLI reads as project instructions, such as ``AGENTS.md``."""
    overrides: tuple[str, ...] = ()
    """Files the CLI reads *instead of* ``instructions_file`` when the workspace has one (such as
    ``AGENTS.override.md``): the context is appended to the first one present, since context
    written to ``instructions_file`` would silently never reach the model."""

    def __attrs_post_init__(self) -> None:
        for value in (self.skills_dir, self.instructions_file, *self.overrides):
            parts = value.split("/")
            if not value or value.startswith("/") or any(p in ("", ".", "..") for p in parts):
                raise ValueError(f"skill place {value!r} must be relative, inside the workspace")


def skill_places_of(host: object) -> SkillPlaces | None:
    """The host's declared :class:`SkillPlaces`, or None when it declares none."""
    places = getattr(host, "skill_places", None)
    return places if isinstance(places, SkillPlaces) else None


def unread_instructions_of(configured: object) -> str | None:
    """Why a configured host's CLI will not read its instructions file in this run (its
    optional ``unread_instructions``), or None: an arm's context mounted there would silently
    never reach the model, so the planner refuses such an arm."""
    reason = getattr(configured, "unread_instructions", None)
    return reason if isinstance(reason, str) and reason else None


class Host(Plugin, Protocol):
    @property
    def settings(self) -> tuple[HostSetting, ...]:
        """The host-specific settings it accepts (flags on ``run`` and ``doctor``)."""

    @property
    def credential_locations(self) -> CredentialLocations:
        """Where its CLI keeps credentials, hidden from every sandboxed command."""

    def configure(self, options: HostOptions) -> ConfiguredHost:
        """Validate options (``ConfigurationError``) and bind them."""

    def doctor(self, request: DoctorRequest) -> Sequence[DoctorCheck]:
        """Checks for `sevro doctor`: whether this host can run here, with one fix each."""


class CompiledCheck(Protocol):
    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        """Assess the check; raise ``GradingError`` when it cannot be assessed."""


@runtime_checkable
class ReadsEvaluator(Protocol):
    """A compiled check that reads named evaluator directories (a judge's reference file):
    the run refuses a name its case does not declare before anything runs (exit 64)."""

    def evaluator_names(self) -> Mapping[str, str]:
        """Each evaluator directory name it reads, with the pointer inside its configuration
        that names it (``{"gold": "/reference"}``)."""


class Grader(Plugin, Protocol):
    @property
    def stage(self) -> int:
        """Grading order: lower stages run first (output 10, shell 20, git 30, semantic 40)."""

    def compile(self, configuration: Mapping[str, JsonValue]) -> CompiledCheck:
        """Validate a check's configuration before any trial (``ConfigurationError``)."""


@frozen
class FixtureReport:
    """What a fixture observed in its workspace after the host: engine-side evidence.

    Observation ids may use the engine's ``sevro.observation.`` namespace (hosts may not);
    artifacts are retained beside the host's. Both are bounded by the engine.
    """

    observations: tuple[Observation, ...] = ()
    artifacts: tuple[Artifact, ...] = ()


class WorkspaceProbe(Protocol):
    """Looks at a materialised workspace right before the host and again after it.

    The engine calls ``baseline`` just before the host's first turn and keeps the result in its
    own memory, outside the workspace, so a candidate cannot rewrite what "before" means; it
    passes that baseline back to ``observe`` once the host has finished (also when the host
    failed). ``observe`` must not raise for anything the candidate did to the workspace: it
    reports such states as observations with completeness ``unavailable``.
    """

    def baseline(self, cancel: CancelToken) -> Mapping[str, JsonValue]:
        """Capture the facts later observations are compared with (JSON values)."""

    def observe(self, baseline: Mapping[str, JsonValue], cancel: CancelToken) -> FixtureReport:
        """Compare the workspace with ``baseline``; return observations and artifacts."""


@frozen
class MaterialisedFixture:
    """Facts about a materialised workspace that hosts and graders may need."""

    bin_dir: Path | None = None
    """Fixture tools; hosts and checks put this directory first on ``PATH``."""
    probe: WorkspaceProbe | None = None
    """How the fixture observes the workspace before and after the host, if it does."""


@frozen
class CaseSources:
    """The declared sources: id → canonical directory or regular file inside ``root``."""

    root: Path
    map_file: Path
    sources: Mapping[str, Path]

    def describe(self) -> str:
        return ", ".join(sorted(self.sources)) or "no sources"


@frozen
class FixtureContext:
    """Run settings fixture providers may need at load time."""

    sources: CaseSources | None = None
    """Repository sources declared with ``--case-source-root``/``--case-source-map-file``."""


NO_FIXTURE_CONTEXT = FixtureContext()


class CompiledFixture(Protocol):
    @property
    def capabilities(self) -> frozenset[str]: ...

    def identity(self) -> JsonValue:
        """The fixture's digest input: everything that determines the workspace's content."""

    def materialise(self, workspace: Path) -> MaterialisedFixture:
        """Populate an empty, private, canonical workspace directory."""


class FixtureProvider(Plugin, Protocol):
    def accepts(self, declaration: Mapping[str, JsonValue]) -> bool:
        """Whether this provider owns the declaration's shape."""

    def compile(
        self, declaration: Mapping[str, JsonValue], context: FixtureContext
    ) -> CompiledFixture:
        """Validate the declaration at load time (``ConfigurationError``)."""


NETWORK_NONE = "none"
NETWORK_LOCAL_HTTP = "localHttp"
"""Network modes: no network at all, or loopback only (for local HTTP test servers)."""


@frozen
class SandboxPolicy:
    """What one sandboxed command may touch. Every path is canonical and exists.

    The workspace, ``home`` and ``tmpdir`` are writable; the rest of the filesystem is
    read-only; ``protected_roots`` (directories or files) are hidden: their contents can be
    neither read nor written. A writable root inside a protected directory stays visible, so
    hiding a whole directory of workspaces and exposing one of them is expressible.
    ``read_only_roots`` are visible read-only even inside a protected root. ``environment`` is
    the command's complete environment; the caller passes it to the wrapped process.
    """

    workspace: Path
    home: Path
    tmpdir: Path
    protected_roots: tuple[Path, ...] = ()
    read_only_roots: tuple[Path, ...] = ()
    network: str = NETWORK_NONE
    environment: Mapping[str, str] = field(factory=dict)
    extra_writable: tuple[Path, ...] = ()
    """Also writable: a role's runtime root and the shared caches it selects."""

    @property
    def writable_roots(self) -> tuple[Path, ...]:
        return (self.workspace, self.home, self.tmpdir, *self.extra_writable)


@frozen
class SandboxProbe:
    """Whether a backend works here, and which version of its tool it found."""

    available: bool
    detail: str
    version: str | None = None


class Sandbox(Plugin, Protocol):
    """A sandbox backend (``sevro.sandbox.bwrap``, ``sevro.sandbox.sandbox-exec``).

    Capabilities it may declare: ``sevro.sandbox.local-http`` (it can offer loopback only)
    and ``sevro.sandbox.pid-namespace`` (nothing the command starts outlives it).
    """

    def probe(self) -> SandboxProbe:
        """Whether the backend really works on this machine, checked by running it."""

    def wrap(self, argv: Sequence[str], policy: SandboxPolicy) -> list[str]:
        """Return an argv running ``argv`` under ``policy``; the caller applies its environment."""


class VerdictPolicy(Plugin, Protocol):
    def verdict(
        self, execution: Execution, grading: Grading, outcomes: Sequence[CheckOutcome]
    ) -> Verdict:
        """Reduce a trial's states and check outcomes to its task verdict."""


@frozen
class JudgedResult:
    """One side of a blinded comparison, or the subject of a review: what a trial left."""

    final_message: str | None
    diff: str | None
    """The workspace change as a unified Git diff (bounded); None when the fixture gives none."""
    diff_truncated: bool = False
    final_message_truncated: bool = False


@frozen
class ComparisonSubject:
    """What a comparator judge sees of one pair, in one order: never arm or skill names."""

    task: tuple[str, ...]
    """The case's rendered prompts, in order."""
    base_files: Mapping[str, str]
    """The fixture's text files before the agent ran (path → text, bounded)."""
    base_files_truncated: bool
    a: JudgedResult
    b: JudgedResult


class Rubric(Plugin, Protocol):
    """A comparator rubric: the prompt for one presentation order and how a reply decides it.

    The core judges every pair twice (AB and BA), maps the BA answer back and counts an outcome
    only when both orders agree; a rubric only writes prompts and reads replies.
    """

    def prompt(self, subject: ComparisonSubject) -> str:
        """The complete judge prompt for ``subject`` (every supplied text is untrusted data)."""

    def decide(self, reply: str) -> str:
        """``"A"``, ``"B"`` or ``"tie"`` from the judge's reply; ``GradingError`` on anything
        malformed (never a guess)."""


@frozen
class ReviewSubject:
    """What the advisory reviewer reads of one trial."""

    case_id: str
    task: tuple[str, ...]
    result: JudgedResult
    line_counts: Mapping[str, int]
    """Lines of each text file in the workspace after the agent (the paths a finding may cite)."""
    questions: tuple[str, ...] = ()
    """Questions the case asks the reviewer (skill-eval ``review_questions``)."""
    expected_output: str | None = None
    """What a good result looks like, in words (skill-creator ``expected_output``)."""


class Reviewer(Plugin, Protocol):
    """An advisory reviewer: its prompt and the parse of its findings. Never changes a verdict."""

    def prompt(self, subject: ReviewSubject) -> str:
        """The complete reviewer prompt (every supplied text is untrusted data)."""

    def review(self, subject: ReviewSubject, reply: str) -> Mapping[str, JsonValue]:
        """The review as JSON (findings that cite a file and lines that exist; the others dropped
        and counted); ``GradingError`` when the reply is malformed."""


class Reporter(Plugin, Protocol):
    @property
    def format(self) -> str:
        """Short name used on the command line (``markdown``, ``json``)."""

    def render(self, report: Mapping[str, JsonValue]) -> str:
        """Render a ``sevro.report.v1`` document."""


class TrialTask(Protocol):
    """One trial the run owner hands its executor: which unit and trial number, and how to run
    it here.

    ``run`` runs the trial in this process end to end (fixture, host, graders, verdict) and
    persists its evidence through the owner's store; what it returns is the owner's record of
    the trial, opaque to the executor, which only hands it back through the future.
    """

    @property
    def unit(self) -> str:
        """The planned unit: a case id, or ``case@arm`` in an experiment."""

    @property
    def trial(self) -> int:
        """The trial (repetition) number, from 1."""

    def run(self) -> Any:
        """Run the trial here and persist its evidence; never raises for agent failures."""


class TrialPool(Protocol):
    """A started executor: where one run's trials go while the run owner admits them.

    The owner (the scheduler) decides what runs and when: it submits at most
    ``ExecutorOptions.workers`` tasks at a time, stops admitting on cancellation or a stop rule,
    and records each result in its own order. The pool only runs what it is given.
    """

    def submit(self, task: TrialTask) -> Future[Any]:
        """Start ``task``; the future resolves to what ``task.run()`` returned, or to the
        exception that stopped it (an internal or persistence failure: the owner stops the run)."""

    def shutdown(self) -> None:
        """Wait until every submitted task has ended, then release the workers. The owner calls
        it exactly once, also when the run fails, so no trial outlives its store."""


@frozen
class ExecutorOptions:
    """What the run owner tells an executor when it starts one for a run."""

    workers: int
    """The most trials in flight at once: ``--jobs``, never more than the trials left to run."""
    cancel: CancelToken
    """The run's cancel token (SIGINT, SIGTERM, a stopped run); trials already see it."""
    settings: Mapping[str, str] = field(factory=dict)
    """The executor's own settings given on the command line, by key (``acme.address``); the
    built-in executor declares none."""


class Executor(Plugin, Protocol):
    """An executor (``sevro.executor.local``): where a run's trials execute.

    The run owner stays the only writer of a run: it plans, claims, admits trials in its fixed
    order, checkpoints each result and writes ``run.json``; the executor decides only where and
    on which worker a submitted trial runs. Which executor ran the trials is recorded in
    ``run.json`` (``executor``) but is not part of the evaluation identity: a run's results are
    the same up to timings whichever executor ran it.

    The built-in ``local`` executor runs ``task.run()`` on a bounded thread pool in this
    process. An executor that runs trials elsewhere (a Ray cluster) cannot call ``task.run()``
    there, since the owner's store, run state and plan live here. It sends
    ``describe_trial(task)`` (a picklable description) to the worker, which runs
    ``run_described_trial(description)`` (the run planned again there, its identity checked,
    the trial run into a private evidence directory) and returns a bounded shipment of the
    trial's files with their digests; ``persist_shipment(task.store, shipment, (task.unit,
    task.trial))`` checks it and persists it through the owner's store exactly as a local
    trial, and the future resolves to that record. A lost worker resolves its future to
    ``lost_trial(task, reason)``, an execution failure with the reason, never to nothing
    (all in ``sevro_core.api``; docs/plugins.md). The run's spend gate stays with the owner: the
    scheduler reserves each candidate call before submitting and settles it from the returned
    record; judge calls reserve during the trial, so ``describe_trial`` refuses judges under a
    spend ceiling. Cancellation must cancel outstanding remote tasks. Such an executor sets
    the optional attribute ``remote = True``: the run owner then refuses, before anything runs
    (exit 64), a run whose trials cannot be described (``check_remote_plan``).
    """

    @property
    def settings(self) -> tuple[HostSetting, ...]:
        """Its own options (optional, like a host's settings): each becomes a ``sevro run``
        flag, given to ``start`` in ``ExecutorOptions.settings`` when this executor is chosen
        (another executor's flag is exit 64); never runtime seeds or candidate-only."""

    def start(self, options: ExecutorOptions) -> TrialPool:
        """Start the workers for one run; refuse what cannot run (``ConfigurationError``)."""


def prepared_host(configured: ConfiguredHost, preparation: HostPreparation) -> ConfiguredHost:
    """``configured`` honouring a case source's host declarations: unchanged without any, else
    what its optional ``prepared(preparation)`` returns; a host without it cannot honour them
    (exit 64, before anything runs)."""
    if preparation == NO_HOST_PREPARATION:
        return configured
    prepare = getattr(configured, "prepared", None)
    if prepare is None:
        raise InvocationError(
            f"host {configured.route.host} cannot honour the case's preparation declarations "
            "(plugins or an explicit skill invocation)"
        )
    prepared: ConfiguredHost = prepare(preparation)
    return prepared
