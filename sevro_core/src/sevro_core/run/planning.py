"""The planner: resolves plugins for a run, negotiates capabilities, computes identity.

It is the only place that knows which plugins exist; the engine receives resolved objects. Every
refusal here happens before any trial starts and exits 64.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import evolve, field, frozen

from sevro_core.errors import ConfigurationError, GradingError, InvocationError, join_pointer
from sevro_core.experiments.arms import ResolvedArm
from sevro_core.experiments.design import ExperimentDesign
from sevro_core.formats.canonical import hash_json
from sevro_core.formats.jsonio import JsonValue
from sevro_core.isolation.protection import (
    CONFIG_ROOT,
    EVALUATOR_ROOT,
    OPERATOR,
    ProtectedRoot,
    credential_locations,
    default_workspace_roots,
    engine_roots,
    existing_canonical,
)
from sevro_core.isolation.runtime import RuntimePolicy, refuse_overlaps
from sevro_core.isolation.sandbox import (
    SandboxSelection,
    announce,
    select_sandbox,
)
from sevro_core.judges.calibrated import CalibrationStatus, judge_calibrations
from sevro_core.judges.routes import (
    NO_JUDGE_SETTINGS,
    NO_JUDGES,
    JudgeRoutes,
    JudgeSettings,
    configure_judges,
)
from sevro_core.models import (
    CancelToken,
    Case,
    CheckDeclaration,
    CheckOutcome,
    Route,
    TrialView,
    unit_key,
)
from sevro_core.plugin.casesources import (
    EXTENSION_CASE_SOURCE,
    CaseSourceRequest,
    ExtensionFlags,
    OpenedCaseSource,
)
from sevro_core.plugin.hostsettings import EXECUTOR_PREFIX, executor_short_name
from sevro_core.plugin.instrumentation import host_capabilities_of, instrumentation_of
from sevro_core.plugin.manager import Registry
from sevro_core.plugin.protocols import (
    NETWORK_NONE,
    CaseSources,
    CompiledCheck,
    CompiledFixture,
    ConfiguredHost,
    Executor,
    FixtureContext,
    Grader,
    Host,
    HostOptions,
    ReadsEvaluator,
    SkillPlaces,
    VerdictPolicy,
    prepared_host,
    skill_places_of,
    unread_instructions_of,
)
from sevro_core.run.identity import (
    IDENTITY_ALGORITHM,
    PROVENANCE_ONLY,
    IdentityInputs,
    evaluation_identity,
)
from sevro_core.run.provenance import ProvenanceChoice
from sevro_core.store.spendgate import SpendCeilings
from sevro_core.vocabulary import (
    ADVISORY_ROLE,
    COMPARATOR_ROLE,
    CONTINUATION_CAPABILITY,
    ENFORCED_CAPABILITY,
    FINAL_MESSAGE_OBSERVATION,
    JUDGE_PREFIX,
    NATIVE_GOAL_OBSERVATION,
    NATIVE_TRANSCRIPTS_OBSERVATION,
    SANDBOX_CAPABILITY,
)

ENGINE_PROVIDES = frozenset({FINAL_MESSAGE_OBSERVATION})
DEFAULT_POLICY = "sevro.verdict.default"
CONDITIONS = ("passive", "enforced")


@frozen
class SettingsFileUse:
    """What a ``--run-settings-file`` gave: recorded so a run says which values came from a
    file (by digest) and which flags beat it."""

    source: Path
    digest: str
    applied: tuple[str, ...]
    """The flags (and ``hostSettings.KEY``) whose value came from the file."""
    overridden: tuple[str, ...]
    """The ones the file set but the command line gave again (the command line won)."""

    def configuration(self) -> dict[str, Any]:
        return {
            "format": "sevro.run-settings.v1",
            "digest": self.digest,
            "applied": list(self.applied),
            "overridden": list(self.overridden),
        }


@frozen
class ExecutorChoice:
    """``--executor`` as given (a short name or an id) and its settings by key."""

    name: str = "local"
    settings: Mapping[str, str] = field(factory=dict)


@frozen
class RunSettings:
    """Everything the operator chose for a run, validated by the CLI."""

    trials: int
    threshold: float
    jobs: int
    dry: bool
    condition: str
    results_root: Path
    project_root: Path
    host: str
    host_options: HostOptions
    verdict_policy: str = "sevro.verdict.default"
    workspace_root: Path | None = None
    run_state_root: Path | None = None
    sandbox: str = "auto"
    """``auto``, ``none`` (an explicit opt-out) or a backend name or id."""
    network: str = NETWORK_NONE
    protected_roots: tuple[Path, ...] = ()
    """``--protected-root``: canonical, existing paths hidden in addition to the engine's."""
    config_roots: tuple[Path, ...] = ()
    """``--config-root`` and its repository's worktrees: canonical, hidden from candidates and
    checks (empty without the flag: the project root is protected anyway)."""
    case_sources: CaseSources | None = None
    experiment: ExperimentDesign | None = None
    """The arms to compare (``trials`` is then the repetitions per arm and case)."""
    fail_on_regression: bool = False
    """Exit 1 when a comparison regressed (and the run would otherwise exit 0)."""
    judges: JudgeSettings = NO_JUDGE_SETTINGS
    """Judge routes (``--semantic-host`` ...) and what the advisory and comparator judges use."""
    runtime: RuntimePolicy | None = None
    """The runtime configuration (``sevro.json`` or ``--runtime-config-file``), read once."""
    provenance: ProvenanceChoice = field(factory=ProvenanceChoice)
    """Sevro's ``--runner-checkout-root`` and digest overrides (identity inputs)."""
    settings_file: SettingsFileUse | None = None
    """The ``--run-settings-file`` the values above partly came from."""
    extension: ExtensionFlags | None = None
    """``--extension-command-file`` and its flags: the case comes from the extension."""
    holdout: Mapping[str, Any] | None = None
    """The holdout plan that authorised the run and its consumption (run.json ``holdout``)."""
    spend: SpendCeilings | None = None
    """``--max-cost-usd``/``--max-call-cost-usd``: each call reserves its ceiling in the run's
    spend journal before it starts (None: no ceiling, no journal)."""
    executor: ExecutorChoice = field(factory=ExecutorChoice)
    """``--executor`` and its settings: where the trials run; not part of the identity."""

    def hosts_used(self) -> list[str]:
        """Every host the run may start, as named: ``--host``, arms' and judges' hosts."""
        arms = self.experiment.arms if self.experiment is not None else ()
        used = [self.host, *(a.arm.host for a in arms if a.arm.host is not None)]
        return used + [spec.host for spec in self.judges.routes]

    def candidate_hosts(self) -> list[str]:
        """The hosts a candidate runs on, as named: ``--host`` and the arms' hosts."""
        arms = self.experiment.arms if self.experiment is not None else ()
        return [self.host, *(a.arm.host for a in arms if a.arm.host is not None)]


@frozen
class PlannedArm:
    """An arm bound to its host: where the engine mounts its skills, and who runs it."""

    resolved: ResolvedArm
    host_plugin: Host
    host: ConfiguredHost
    places: SkillPlaces | None

    @property
    def id(self) -> str:
        return self.resolved.id


@frozen
class PlannedCheck:
    declaration: CheckDeclaration
    grader: Grader
    compiled: CompiledCheck
    extension: bool = False
    """Graded by the case source's evaluator after the built-in checks, never compiled."""


@frozen
class PlannedCase:
    case: Case
    fixture_provider: str
    fixture: CompiledFixture
    checks: tuple[PlannedCheck, ...]
    digests: Mapping[str, str]
    arm: PlannedArm | None = None

    @property
    def unit(self) -> str:
        """The key of this case's trials in the run: the case id, or ``case@arm``."""
        return unit_key(self.case.id, self.arm.id if self.arm is not None else None)

    @property
    def graded_checks(self) -> tuple[PlannedCheck, ...]:
        """Checks in grading order (stage, then declaration order)."""
        return tuple(sorted(self.checks, key=lambda c: c.grader.stage))


@frozen
class RunPlan:
    settings: RunSettings
    cases: tuple[PlannedCase, ...]
    host_plugin: Host
    host: ConfiguredHost
    verdict_policy: VerdictPolicy
    executor: Executor
    """Where the trials run (``--executor``): recorded in run.json, not part of the identity."""
    registry: Registry
    identity: Mapping[str, Any]
    configuration: Mapping[str, Any]
    runner: Mapping[str, Any]
    project: Mapping[str, Any]
    graders_active: tuple[Mapping[str, str], ...]
    sandbox: SandboxSelection
    arms: tuple[PlannedArm, ...] = ()
    judges: JudgeRoutes = NO_JUDGES
    calibrations: tuple[CalibrationStatus, ...] = ()
    """Whether each configured semantic or comparator judge was calibrated, and how well."""
    case_source: OpenedCaseSource | None = None
    """The opened extension the cases came from (its preparations and evaluator)."""

    @property
    def route(self) -> Route:
        return self.host.route

    @property
    def routes(self) -> list[Route]:
        """Every distinct route the run uses (one per arm host, model and effort), then its
        judges' (one per role)."""
        routes = [self.host.route] if not self.arms else [a.host.route for a in self.arms]
        return list(dict.fromkeys(routes)) + self.judges.route_list()

    def host_for(self, planned: PlannedCase) -> ConfiguredHost:
        return planned.arm.host if planned.arm is not None else self.host


def resolve_host_id(registry: Registry, name: str) -> str:
    """``scripted`` and ``sevro.host.scripted`` both name the scripted host."""
    for candidate in (name, f"sevro.host.{name}"):
        if registry.host(candidate) is not None:
            return candidate
    raise InvocationError(
        f"--host {name!r} is not installed; available hosts: "
        f"{', '.join(registry.ids('host')) or 'none'}"
    )


def plan_run(cases: Sequence[Case], registry: Registry, settings: RunSettings) -> RunPlan:
    """Resolve the run's plugins and compile its cases; refuse what cannot run (exit 64)."""
    executor = resolve_executor(registry, settings.executor.name)
    candidate = evolve(settings, host_options=_candidate_options(settings, cases))
    host_plugin, host = _configure_host(registry, settings, settings.host, candidate.host_options)
    source = _open_case_source(registry, settings, host)
    if source is not None:
        cases, host = source.cases, _prepared(host, source)
    config_source = settings.host_options.config_source or "--host-config"
    arms = _plan_arms(registry, candidate)
    judges, calibrations = _plan_judges(registry, settings, host_plugin.id)
    for configured in (host, *(a.host for a in arms)):
        _refuse_unsupported(settings, configured)
    policy = _verdict_policy(registry, _policy_id(registry, settings))
    sandbox = _select_sandbox(registry, settings, cases)
    context = FixtureContext(sources=settings.case_sources)
    around = _Surroundings(sandbox, context, judges, source)
    planned = tuple(
        unit
        for case in cases
        for unit in _plan_units(case, registry, host, arms, config_source, around)
    )
    graders_active = _graders_active(registry, planned, source)
    configuration = _configuration(settings, host, policy, sandbox, arms, judges, source)
    runner, project = _provenance(registry, settings)
    identity = evaluation_identity(
        IdentityInputs(
            runner_build_digest=runner["buildDigest"],
            project_digest=project["digest"],
            configuration_digest=configuration["digest"],
            case_digests=[p.digests for p in planned if p.arm is None or p.arm == arms[0]],
            evaluator=_evaluator(policy, source),
            graders_active=graders_active,
            route=host.route,
            condition=settings.condition,
            trials=settings.trials,
            threshold=settings.threshold,
            extension=source.identity if source is not None else None,
        )
    )
    announce(sandbox)
    return RunPlan(
        settings=settings,
        cases=planned,
        host_plugin=host_plugin,
        host=host,
        verdict_policy=policy,
        executor=executor,
        registry=registry,
        identity=identity,
        configuration=configuration,
        runner=runner,
        project=project,
        graders_active=graders_active,
        sandbox=sandbox,
        arms=arms,
        judges=judges,
        calibrations=calibrations,
        case_source=source,
    )


def _open_case_source(
    registry: Registry, settings: RunSettings, host: ConfiguredHost
) -> OpenedCaseSource | None:
    """Open the extension behind ``--extension-command-file`` before any trial (describe,
    negotiate, resolve, prepare), with the candidate host's capabilities; None without one."""
    flags = settings.extension
    if flags is None:
        return None
    plugin = registry.case_source(EXTENSION_CASE_SOURCE)
    if plugin is None:
        raise InvocationError(
            "--extension-command-file needs the extension protocol: install sevro-extensions"
        )
    if settings.experiment is not None:
        raise InvocationError("an extension case cannot run as an experiment's arms")
    _refuse_unsupported(settings, host)  # bad input is refused before any extension process
    python_policy = registry.verdict_policy(flags.task_verdict_policy or "") is not None
    route = host.route
    request = CaseSourceRequest(
        command_file=flags.command_file,
        source_files=flags.source_files,
        configuration_file=flags.configuration_file,
        redacted_configuration_file=flags.redacted_configuration_file,
        case_id=flags.case_id,
        task_verdict_policy=None if python_policy else flags.task_verdict_policy,
        replaced_graders=flags.replaced_graders,
        project_root=settings.project_root,
        condition=settings.condition,
        host_id=route.host,
        model=route.model,
        effort=route.effort,
        host_capabilities=frozenset(),
        case_sources=settings.case_sources,
    )
    try:  # a host's malformed offers are its plugin's bug, named before anything runs
        capabilities, offers = host_capabilities_of(host), instrumentation_of(host)
        request = evolve(request, host_capabilities=capabilities, instrumentation=offers)
    except ConfigurationError as exc:
        raise InvocationError(f"host {route.host}: {exc.message}") from None
    return plugin.open(request, CancelToken())


def _prepared(host: ConfiguredHost, source: OpenedCaseSource) -> ConfiguredHost:
    """The candidate host honouring the declarations of the (one) prepared case."""
    for preparation in source.preparations.values():
        host = prepared_host(host, preparation.host)
    return host


def _policy_id(registry: Registry, settings: RunSettings) -> str:
    """The Python verdict policy of the run: ``--task-verdict-policy`` when it names a
    registered one (it wins over the extension's), else ``--verdict-policy``."""
    chosen = settings.extension.task_verdict_policy if settings.extension else None
    if chosen is None or registry.verdict_policy(chosen) is None:
        return settings.verdict_policy
    if settings.verdict_policy not in (DEFAULT_POLICY, chosen):
        raise InvocationError("--task-verdict-policy and --verdict-policy name different policies")
    return chosen


def _refuse_unsupported(settings: RunSettings, configured: ConfiguredHost) -> None:
    """Refuse (exit 64) what a candidate host cannot honour: ``--condition enforced`` on a
    passive host, and a runtime-file selection (``nativeTranscripts``, ``hooks.nativeGoal``)
    its host has no capability for: ignoring it would report a run nobody asked for."""
    host = configured.route.host
    if settings.condition == "enforced" and ENFORCED_CAPABILITY not in configured.capabilities:
        raise InvocationError(
            f"--condition enforced is not supported by {host}, which runs passive only"
        )
    runtime = settings.runtime
    if runtime is None:
        return
    selections = (
        (
            runtime.native_transcripts,
            NATIVE_TRANSCRIPTS_OBSERVATION,
            "/nativeTranscripts",
            f"nativeTranscripts is not supported by {host}, which keeps no native transcripts; "
            "remove it from the runtime configuration",
        ),
        (
            runtime.native_goal,
            NATIVE_GOAL_OBSERVATION,
            "/hooks/nativeGoal",
            f"hooks.nativeGoal is selected, but host {host} has no native goal it can run here",
        ),
    )
    for selected, capability, pointer, message in selections:
        if selected and capability not in configured.capabilities:
            raise InvocationError(message, source=runtime.source, pointer=pointer)


def _candidate_options(settings: RunSettings, cases: Sequence[Case]) -> HostOptions:
    """The candidate's host denies the evaluator directories and the configuration root's
    worktrees in its own sandbox settings too: one under a tree an agent CLI shows its commands
    (``/opt``, ``/usr``) would otherwise be readable by the agent. Judges keep the run's
    options: they may read what checks read."""
    options = settings.host_options
    evaluator = [e.path for case in cases for e in case.evaluator]
    if not evaluator and not settings.config_roots:
        return options
    roots = tuple(dict.fromkeys([*options.protected_roots, *evaluator, *settings.config_roots]))
    return evolve(options, protected_roots=roots)


def _select_sandbox(
    registry: Registry, settings: RunSettings, cases: Sequence[Case]
) -> SandboxSelection:
    """The run's sandbox with its protected roots and the runtime policy, whose read grants
    may not overlap those roots (exit 64)."""
    roots = protected_roots(settings, cases, registry)
    if settings.runtime is not None:
        hidden = [*default_workspace_roots(), *filter(None, [settings.workspace_root])]
        refuse_overlaps(settings.runtime, roots, credential_locations(registry.hosts()), hidden)
    return select_sandbox(registry, settings.sandbox, settings.network, roots, settings.runtime)


@frozen
class _Surroundings:
    """What every case is planned against besides its host: the sandbox, the fixture context
    and the judges the run configured."""

    sandbox: SandboxSelection
    context: FixtureContext
    judges: JudgeRoutes
    source: OpenedCaseSource | None = None


def _plan_judges(
    registry: Registry, run: RunSettings, host_id: str
) -> tuple[JudgeRoutes, tuple[CalibrationStatus, ...]]:
    """Configure the judge routes; judge options need their judge, and name an installed
    reviewer and rubric, and a required calibration holds for the configured judge (exit 64)."""
    judges = configure_judges(registry, run.judges.routes, (host_id, run.host_options))
    settings = run.judges
    if settings.advisory_exclude and judges.get(ADVISORY_ROLE) is None:
        raise InvocationError("--advisory-exclude needs an advisory judge (--advisory-host)")
    if judges.get(ADVISORY_ROLE) is not None and registry.reviewer(settings.reviewer) is None:
        raise InvocationError(
            f"advisory reviewer {settings.reviewer!r} is not installed; installed reviewers: "
            f"{', '.join(registry.ids('reviewer')) or 'none'}"
        )
    if judges.get(COMPARATOR_ROLE) is not None:
        if run.experiment is None:
            raise InvocationError(
                "a comparator judge compares the arms of an experiment; this run has none "
                "(pass --skill and --baseline, or an experiment file)"
            )
        if registry.rubric(settings.rubric) is None:
            raise InvocationError(
                f"comparator rubric {settings.rubric!r} is not installed; installed rubrics: "
                f"{', '.join(registry.ids('rubric')) or 'none'}"
            )
    source = run.experiment.source if run.experiment is not None else None
    return judges, judge_calibrations(settings, judges, source=source or "--comparator-host")


def _configure_host(
    registry: Registry, settings: RunSettings, name: str, options: HostOptions
) -> tuple[Host, ConfiguredHost]:
    host_plugin = registry.hosts()[resolve_host_id(registry, name)]
    try:
        return host_plugin, host_plugin.configure(options)
    except ConfigurationError as exc:
        source = options.config_source or "--host-config"
        raise InvocationError(exc.message, source=source, pointer=exc.pointer) from None


def _plan_arms(registry: Registry, settings: RunSettings) -> tuple[PlannedArm, ...]:
    """Bind each arm to its host (its own host, model or effort when it declares them)."""
    if settings.experiment is None:
        return ()
    arms = []
    for resolved in settings.experiment.arms:
        arm = resolved.arm
        options = evolve(
            settings.host_options,
            model=arm.model or settings.host_options.model,
            effort=arm.effort or settings.host_options.effort,
        )
        host_plugin, host = _configure_host(registry, settings, arm.host or settings.host, options)
        places = skill_places_of(host_plugin)
        if places is None and resolved.mounts_anything:
            raise InvocationError(
                f"arm {arm.id!r} mounts skills or context, but host {host_plugin.id} declares "
                "no place where its CLI finds them (skill_places)"
            )
        unread = unread_instructions_of(host)
        if places is not None and unread is not None and resolved.mounts_context:
            raise InvocationError(
                f"arm {arm.id!r} mounts context into {places.instructions_file}, but {unread}: "
                "the context would never reach the model"
            )
        arms.append(PlannedArm(resolved, host_plugin, host, places))
    return tuple(arms)


def _plan_units(
    case: Case,
    registry: Registry,
    host: ConfiguredHost,
    arms: Sequence[PlannedArm],
    config_source: str,
    around: _Surroundings,
) -> list[PlannedCase]:
    """The case planned once per arm (its own host), or once when there are no arms."""
    _check_arm_names(case, arms)
    if not arms:
        return [_plan_case(case, registry, host, config_source, around)]
    units = []
    for arm in arms:
        planned = _plan_case(case, registry, arm.host, config_source, around)
        checks = tuple(c for c in planned.checks if c.declaration.arm in (None, arm.id))
        units.append(evolve(planned, arm=arm, checks=checks))
    return units


def _check_arm_names(case: Case, arms: Sequence[PlannedArm]) -> None:
    """A check that names an arm needs an experiment with that arm."""
    names = [a.id for a in arms]
    for index, check in enumerate(case.checks):
        if check.arm is None or check.arm in names:
            continue
        reason = (
            f"names arm {check.arm!r}, but this run compares no arms"
            if not names
            else f"names arm {check.arm!r}, which the experiment does not have "
            f"(arms: {', '.join(names)})"
        )
        raise _refusal(case, f"check {check.id!r} {reason}", "checks", index, "arm")


def protected_roots(
    settings: RunSettings, cases: Sequence[Case], registry: Registry
) -> tuple[ProtectedRoot, ...]:
    """The engine's roots for this run (with every installed host's credential locations),
    then the operator's ``--protected-root`` paths."""
    inputs = [Path(case.source).resolve() for case in cases if case.source]
    if settings.host_options.config_source:
        inputs.append(Path(settings.host_options.config_source).resolve())
    inputs += [Path(s.config_source).resolve() for s in settings.judges.routes if s.config_source]
    if settings.experiment is not None:
        inputs.extend(settings.experiment.input_paths())
    if settings.runtime is not None:
        inputs.append(Path(settings.runtime.source).resolve())
    if settings.settings_file is not None:
        inputs.append(settings.settings_file.source)
    if settings.extension is not None:  # the private configuration above all
        inputs.extend(settings.extension.files())
    roots = engine_roots(
        project_root=settings.project_root,
        results_root=settings.results_root,
        run_state_root=settings.run_state_root,
        case_source_roots=(settings.case_sources.root, settings.case_sources.map_file)
        if settings.case_sources is not None
        else (),
        input_files=dict.fromkeys(inputs),
        credentials=credential_locations(registry.hosts()),
    )
    _refuse_wide_evaluators(settings, cases, roots)
    evaluator = dict.fromkeys(e.path for case in cases for e in case.evaluator)
    roots += tuple(ProtectedRoot(EVALUATOR_ROOT, p) for p in evaluator)
    roots += tuple(ProtectedRoot(CONFIG_ROOT, p) for p in settings.config_roots)
    return roots + tuple(ProtectedRoot(OPERATOR, p) for p in settings.protected_roots)


_FILES_OF_THE_RUN = frozenset({"input-file", "case-source-root"})


def _refuse_wide_evaluators(
    settings: RunSettings, cases: Sequence[Case], roots: Sequence[ProtectedRoot]
) -> None:
    """An evaluator directory is mounted read-only for checks, so it must not hold what even
    checks must not read: the project, results, run state, a home or a credential location,
    the workspace root or a temp directory (where other trials' workspaces live)."""
    guarded = [r.path for r in roots if r.label not in _FILES_OF_THE_RUN]
    guarded += [*default_workspace_roots(), *filter(None, [settings.workspace_root])]
    held = existing_canonical(guarded)
    for case in cases:
        for directory in case.evaluator:
            inside = next((p for p in held if p.is_relative_to(directory.path)), None)
            if inside is not None:
                raise InvocationError(
                    f"evaluator directory {directory.name!r} holds {inside}, which checks "
                    "must not read; keep verifier files in a directory of their own",
                    source=case.source,
                    pointer=join_pointer(case.pointer, "evaluator", directory.name),
                )


@frozen
class IsolationUnavailable:
    """Stands in for a check that needs a sandbox when none works: grading error, never a pass."""

    grader: str
    reason: str

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        raise GradingError(f"{self.grader} needs a sandbox: {self.reason}")


def _evaluator(policy: VerdictPolicy, source: OpenedCaseSource | None) -> dict[str, Any]:
    """The identity's evaluator: the verdict policy and an extension's own evaluator."""
    return {
        "verdictPolicy": {"id": policy.id, "version": str(policy.version)},
        "extension": source.identity["evaluator"] if source is not None else None,
    }


def resolve_executor(registry: Registry, name: str) -> Executor:
    """``local`` and ``sevro.executor.local`` both name the built-in executor; an unknown name
    is one line listing the installed ones (exit 64)."""
    for candidate in (name, f"{EXECUTOR_PREFIX}{name}"):
        found = registry.executor(candidate)
        if found is not None:
            return found
    installed = [executor_short_name(i) for i in registry.ids("executor")]
    raise InvocationError(
        f"--executor {name[:64]!r} is not installed; installed: {', '.join(installed) or 'none'}"
    )


def _verdict_policy(registry: Registry, policy_id: str) -> VerdictPolicy:
    policy = registry.verdict_policy(policy_id)
    if policy is None:
        raise InvocationError(
            f"--verdict-policy {policy_id!r} is not installed; available: "
            f"{', '.join(registry.ids('verdict-policy'))}"
        )
    return policy


def _graders_active(
    registry: Registry, planned: Sequence[PlannedCase], source: OpenedCaseSource | None = None
) -> tuple[Mapping[str, str], ...]:
    """Every grader the cases use, once, sorted: part of the identity and of ``run.json``
    (replaced built-in graders are not used; an extension's graders are its own)."""
    graders = {(c.grader.id, str(c.grader.version)) for p in planned for c in p.checks}
    return tuple(
        {
            "id": gid,
            "source": "extension"
            if source is not None and gid in source.graders
            else _plugin_source(registry, "grader", gid),
            "version": version,
        }
        for gid, version in sorted(graders)
    )


def _plugin_source(registry: Registry, kind: str, object_id: str) -> str:
    for info in registry.plugins:
        if any(r.kind == kind and r.id == object_id for r in info.registrations):
            return info.distribution or info.name
    return "unknown"


def _refusal(case: Case, message: str, *parts: str | int) -> InvocationError:
    return InvocationError(message, source=case.source, pointer=join_pointer(case.pointer, *parts))


def compile_fixture(
    case: Case, registry: Registry, context: FixtureContext
) -> tuple[str, CompiledFixture]:
    """Find the provider that owns the case's fixture shape and validate it."""
    provider = next((p for p in registry.fixtures().values() if p.accepts(case.fixture)), None)
    if provider is None:
        raise _refusal(case, "no installed fixture provider accepts this fixture", "fixture")
    try:
        return provider.id, provider.compile(case.fixture, context)
    except ConfigurationError as exc:
        raise InvocationError(
            exc.message, source=case.source, pointer=case.pointer + "/fixture" + exc.pointer
        ) from None


def compile_checks(
    case: Case, registry: Registry, source: OpenedCaseSource | None = None
) -> list[PlannedCheck]:
    """Resolve each check's grader and validate its configuration; a case source's own
    graders are left to its evaluator."""
    checks = []
    for index, declaration in enumerate(case.checks):
        if source is not None and declaration.grader in source.graders:
            stand_in = ExtensionGrader(declaration.grader, source.version)
            checks.append(PlannedCheck(declaration, stand_in, stand_in, extension=True))
            continue
        grader = registry.grader(declaration.grader)
        if grader is None:
            raise _refusal(
                case,
                f"unknown grader {declaration.grader!r}; installed graders: "
                f"{', '.join(registry.ids('grader')) or 'none'}",
                "checks",
                index,
                "grader",
            )
        try:
            compiled = grader.compile(declaration.configuration)
        except ConfigurationError as exc:
            raise InvocationError(
                exc.message,
                source=case.source,
                pointer=join_pointer(case.pointer, "checks", index, "configuration") + exc.pointer,
            ) from None
        checks.append(PlannedCheck(declaration, grader, compiled))
    return checks


def _plan_case(
    case: Case,
    registry: Registry,
    host: ConfiguredHost,
    config_source: str,
    around: _Surroundings,
) -> PlannedCase:
    sandbox = around.sandbox
    provider_id, fixture = compile_fixture(case, registry, around.context)
    if len(case.prompts) > 1 and CONTINUATION_CAPABILITY not in host.capabilities:
        key = "turns" if case.turns else "followUpPrompt"
        raise _refusal(
            case,
            f"host {host.route.host} cannot continue a session, so it cannot run {key}",
            key,
        )
    provided = (
        ENGINE_PROVIDES
        | host.capabilities
        | fixture.capabilities
        | sandbox.capabilities
        | around.judges.capabilities
    )
    compiled = _replaced(case, compile_checks(case, registry, around.source), around.source)
    checks = _negotiate_checks(case, compiled, provided, host, sandbox)
    _refuse_unknown_evaluators(case, checks)
    try:
        host.check_case(case)
    except ConfigurationError as exc:
        raise InvocationError(exc.message, source=config_source, pointer=exc.pointer) from None
    preparation = around.source.preparations.get(case.id) if around.source else None
    fixture_identity = {"provider": provider_id, "declaration": fixture.identity()}
    if preparation is not None:
        fixture_identity["preparation"] = dict(preparation.record)
    digests = {
        "case": hash_json(_case_identity(case)),
        "fixture": hash_json(fixture_identity),
        "checks": _checks_digest(case),
        "requiredEvidence": hash_json(list(case.required_evidence)),
    }
    digests["identity"] = hash_json(dict(digests))
    return PlannedCase(
        case=case,
        fixture_provider=provider_id,
        fixture=fixture,
        checks=tuple(checks),
        digests=digests,
    )


def _case_identity(case: Case) -> dict[str, JsonValue]:
    """The case digest's input: the declaration, plus the host profile only when there is one
    (cases without one keep the identities they always had)."""
    declared = case.declaration()
    if case.host_profile is not None:
        declared["hostProfile"] = case.host_profile.to_json()
    return declared


@frozen
class ExtensionGrader:
    """Stands in for a check a case source grades itself (its ``evaluate``), after the
    built-in checks; it is never graded here."""

    id: str
    version: str
    stage: int = 1_000
    requires: frozenset[str] = frozenset()
    capabilities: frozenset[str] = frozenset()

    def compile(self, configuration: Mapping[str, Any]) -> ExtensionGrader:
        return self

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        raise GradingError(f"check {check_id} is graded by the extension, not by sevro")


def _replaced(
    case: Case, checks: list[PlannedCheck], source: OpenedCaseSource | None
) -> list[PlannedCheck]:
    """The checks without those of ``--replace-builtin-grader`` graders (validated above, never
    run); each replaced grader is one the case declares, and an extension check remains."""
    replaced = source.replaced_graders if source is not None else ()
    if not replaced:
        return checks
    declared = {c.declaration.grader for c in checks if not c.extension}
    for grader in replaced:
        if grader not in declared:
            raise _refusal(
                case, f"--replace-builtin-grader {grader}: the case declares no such check"
            )
    if not any(c.extension for c in checks):
        raise _refusal(
            case, "--replace-builtin-grader needs at least one extension check in the case"
        )
    return [c for c in checks if c.declaration.grader not in replaced]


def _refuse_unknown_evaluators(case: Case, checks: Sequence[PlannedCheck]) -> None:
    """A check that reads an evaluator directory the case (with its experiment's) does not
    declare is refused before anything runs, never a grading error in every trial."""
    declared = {directory.name for directory in case.evaluator}
    for check in checks:
        if not isinstance(check.compiled, ReadsEvaluator):
            continue
        for name, pointer in check.compiled.evaluator_names().items():
            if name not in declared:
                index = case.checks.index(check.declaration)
                shown = ", ".join(sorted(declared)) or "none"
                raise InvocationError(
                    f"check {check.declaration.id!r} reads evaluator directory {name!r}, which "
                    f"the case does not declare (declared: {shown})",
                    source=case.source,
                    pointer=join_pointer(case.pointer, "checks", index, "configuration") + pointer,
                )


def _checks_digest(case: Case) -> str:
    """The checks as written, with the fingerprints of the evaluator directories they read
    when the case declares any (so a changed verifier script changes the identity)."""
    checks = [c.to_json() for c in case.checks]
    if not case.evaluator:
        return hash_json(checks)
    return hash_json({"checks": checks, "evaluator": [e.to_json() for e in case.evaluator]})


def _negotiate_checks(
    case: Case,
    checks: list[PlannedCheck],
    provided: frozenset[str] | set[str],
    host: ConfiguredHost,
    sandbox: SandboxSelection,
) -> list[PlannedCheck]:
    """Refuse a check (or required evidence) nothing in this run can produce; a check that
    needs the sandbox when none works becomes a grading error instead (exit 3)."""
    provided = set(provided)
    for index, check in enumerate(checks):
        past = check.declaration.turn is not None and check.declaration.turn < len(case.prompts)
        if past and SANDBOX_CAPABILITY in check.grader.requires:
            raise _refusal(
                case,
                f"grader {check.grader.id} runs commands in the live workspace, so it cannot "
                f"grade turn {check.declaration.turn} of {len(case.prompts)}",
                "checks",
                index,
                "turn",
            )
        missing = sorted(set(check.grader.requires) - provided)
        if missing == [SANDBOX_CAPABILITY] and sandbox.problem is not None:
            # Deliberately not a refusal: the run goes ahead and this check is a grading error
            # (exit 3), so missing isolation is reported where it matters and never passes.
            checks[index] = PlannedCheck(
                check.declaration,
                check.grader,
                IsolationUnavailable(check.grader.id, sandbox.problem),
            )
            continue
        judges = [m.removeprefix(JUDGE_PREFIX) for m in missing]
        if missing and all(m.startswith(JUDGE_PREFIX) for m in missing):
            raise _refusal(
                case,
                f"grader {check.grader.id} needs a {' and a '.join(judges)} judge, and this run "
                f"has none: pass {' and '.join(f'--{j}-host' for j in judges)} "
                "(see docs/judges.md)",
                "checks",
                index,
                "grader",
            )
        if missing:
            raise _refusal(
                case,
                f"grader {check.grader.id} needs {', '.join(missing)}, which "
                f"neither host {host.route.host} nor this fixture provides",
                "checks",
                index,
                "grader",
            )
        provided |= set(getattr(check.grader, "provides", ()))
    for index, evidence_id in enumerate(case.required_evidence):
        if evidence_id not in provided:
            raise _refusal(
                case,
                f"required evidence {evidence_id!r} is produced by neither "
                f"host {host.route.host}, this fixture, nor any declared check",
                "requiredEvidence",
                index,
            )
    return checks


def _configuration(
    settings: RunSettings,
    host: ConfiguredHost,
    policy: VerdictPolicy,
    sandbox: SandboxSelection,
    arms: Sequence[PlannedArm],
    judges: JudgeRoutes,
    source: OpenedCaseSource | None = None,
) -> dict[str, Any]:
    redacted: dict[str, Any] = {
        "condition": settings.condition,
        "executionMode": "dry" if settings.dry else "executed",
        "trialCount": settings.trials,
        "passThreshold": settings.threshold,
        "jobs": settings.jobs,
        "verdictPolicy": policy.id,
        "hostConfiguration": {"candidate": host.redacted_configuration()},
        "sandbox": sandbox.configuration(),
    }
    if settings.runtime is not None:
        redacted["runtimePolicy"] = settings.runtime.configuration()
    if source is not None:  # the redacted record only: the private configuration never
        redacted["extension"] = dict(source.configuration)
    if settings.settings_file is not None:
        redacted["runSettings"] = settings.settings_file.configuration()
    if judges.routes:
        redacted["judges"] = {
            **judges.configuration(),
            "settings": settings.judges.configuration(),
        }
    if arms:
        # what each arm evaluates (its fingerprint) and how (its host's configuration): the
        # arm is part of the configuration, so runs of different arms differ only here
        redacted["arms"] = {
            arm.id: {
                "fingerprint": arm.resolved.fingerprint,
                "hostConfiguration": arm.host.redacted_configuration(),
            }
            for arm in arms
        }
    return {"digest": hash_json(_evaluated(redacted)), "redacted": redacted}


def _evaluated(redacted: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in redacted.items() if key not in PROVENANCE_ONLY}


def _provenance(registry: Registry, settings: RunSettings) -> tuple[dict[str, Any], dict[str, Any]]:
    from sevro_core import __version__
    from sevro_core.run.provenance import (
        checkout_runner,
        project_provenance,
        runner_build_digest,
    )

    modules = [sys.modules["sevro_core"]]
    for info in registry.plugins:
        module = registry.manager.get_plugin(info.name)
        if module is not None and hasattr(module, "__name__"):
            modules.append(module)
    choice = settings.provenance
    build = choice.build_digest or runner_build_digest(modules)
    runner: dict[str, Any] = {
        "source": "package",
        "packageName": "sevro-core",
        "version": __version__,
        "buildDigest": build,
    }
    if choice.checkout_root is not None:
        runner = checkout_runner(choice.checkout_root, build)
    project = project_provenance(settings.project_root, [settings.results_root])
    if choice.project_digest is not None:
        project["digest"] = choice.project_digest
    return runner, project


__all__ = [
    "IDENTITY_ALGORITHM",
    "PlannedCase",
    "RunPlan",
    "RunSettings",
    "SettingsFileUse",
    "plan_run",
]
