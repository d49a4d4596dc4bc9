"""``sevro run``'s flags as one value, and the checked ``RunSettings`` built from them.

The command passes its options here in one piece (:class:`RunFlags`) so that the command itself
stays short; every check below is what ``sevro run`` has always refused with exit 64.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import field, frozen

from sevro_core.errors import InvocationError
from sevro_core.formats.jsonio import JsonValue
from sevro_core.judges.routes import JudgeSettings
from sevro_core.limits import MAX_JOBS, MAX_TRIALS
from sevro_core.models import Case
from sevro_core.plugin.protocols import CredentialLocations, HostOptions
from sevro_core.prices import run_prices
from sevro_core.reporting.ci import CiOutputs
from sevro_core.run.planning import ExecutorChoice, RunSettings, SettingsFileUse
from sevro_core.vocabulary import ADVISORY_ROLE, JUDGE_ROLES, SEMANTIC_ROLE

if TYPE_CHECKING:
    from sevro_core.experiments.design import ExperimentDesign
    from sevro_core.isolation.runtime import RuntimePolicy
    from sevro_core.plugin.casesources import ExtensionFlags
    from sevro_core.plugin.manager import Registry
    from sevro_core.run.provenance import ProvenanceChoice

ADAPTER_JUDGE_ROLES = (SEMANTIC_ROLE, ADVISORY_ROLE)
"""The judge roles Sevro routes through an adapter module (``--semantic-adapter-module``)."""
_MIGRATION = (
    "it still works without a runtime file, is removed no earlier than 0.2.0, and stands for "
    "a runtime file's environment.set and runtime.seedDirectories (docs/runtime.md)"
)
_HEX64 = re.compile(r"[0-9a-f]{64}")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


@frozen
class RunFlags:
    """Every option of ``sevro run`` as Typer converted it (host settings come separately)."""

    cases: list[Path]
    host: str
    host_config: Path | None
    model: str | None
    effort: str | None
    host_setting: list[str] | None
    skill: list[Path] | None
    baseline: str | None
    fail_on_regression: bool
    trials: int | None
    threshold: float
    jobs: int
    dry: bool
    condition: str
    results_root: Path
    project_root: Path | None
    workspace_root: Path | None
    verdict_policy: str
    run_state_root: Path | None
    resume: bool
    sandbox: str
    protected_root: list[Path] | None
    local_http: bool
    case_source_root: Path | None
    case_source_map_file: Path | None
    status_interval: float
    as_json: bool
    plugin: list[Path] | None
    log_format: str
    verbose: int
    group: str | None = None
    variant: str | None = None
    semantic_host: str | None = None
    semantic_model: str | None = None
    semantic_effort: str | None = None
    semantic_host_config: Path | None = None
    advisory_host: str | None = None
    advisory_model: str | None = None
    advisory_effort: str | None = None
    advisory_host_config: Path | None = None
    advisory_exclude: list[str] | None = None
    comparator_host: str | None = None
    comparator_model: str | None = None
    comparator_effort: str | None = None
    comparator_host_config: Path | None = None
    runtime_config_file: Path | None = None
    junit: Path | None = None
    github_summary: bool = False
    runner_checkout_root: Path | None = None
    runner_build_digest: str | None = None
    project_digest: str | None = None
    shell_isolation: bool = False
    toolchain_bin_dir: Path | None = None
    runtime_seeds: tuple[tuple[str, str, str], ...] = ()
    """Host settings standing for runtime seeds: (flag, variable, directory) each."""
    config_root: Path | None = None
    settings_file: SettingsFileUse | None = None
    """The ``--run-settings-file`` whose values some of the above are."""
    extension_command_file: Path | None = None
    extension_source_file: list[Path] | None = None
    extension_configuration_file: Path | None = None
    extension_redacted_configuration_file: Path | None = None
    case_id: str | None = None
    task_verdict_policy: str | None = None
    replace_builtin_grader: list[str] | None = None
    holdout: Path | None = None
    prices: Path | None = None
    """``--prices``: a price table over the built-in one (None: the built-in table)."""
    max_cost_usd: list[str] | None = None
    """``--max-cost-usd [ROLE=]USD``: the run's and roles' spend ceilings (run/spending.py)."""
    max_call_cost_usd: list[str] | None = None
    """``--max-call-cost-usd [ROLE=]USD``: what one call of each role reserves."""
    accept_exposure: bool = False
    executor: str = "local"
    """``--executor``: the executor plugin the trials run on (checked when planning)."""
    executor_settings: Mapping[str, str] = field(factory=dict)
    """The executor flags given, by key (only the chosen executor's: checked by the CLI)."""

    @property
    def ci_outputs(self) -> CiOutputs:
        return CiOutputs(self.junit, self.github_summary)


def positive_int(value: int, flag: str, maximum: int) -> int:
    if value < 1 or value > maximum:
        raise InvocationError(f"{flag} must be between 1 and {maximum}, not {value}")
    return value


def check_status_interval(seconds: float) -> None:
    if not math.isfinite(seconds) or not 0 <= seconds <= 86_400:
        raise InvocationError(f"--status-interval must be between 0 and 86400, not {seconds}")


def run_settings(
    flags: RunFlags, host_settings: Mapping[str, str], credentials: CredentialLocations
) -> RunSettings:
    """Check the flags (exit 64 on the first problem) and build the run's settings;
    ``credentials`` are the installed hosts' credential locations: the host's own permission
    settings deny them too."""
    from sevro_core.arguments import check_results_root
    from sevro_core.run.planning import CONDITIONS
    from sevro_core.run.sources import load_case_sources

    if flags.trials is not None:
        positive_int(flags.trials, "--trials", MAX_TRIALS)
    positive_int(flags.jobs, "--jobs", MAX_JOBS)
    if not math.isfinite(flags.threshold) or not 0 < flags.threshold <= 1:
        raise InvocationError(f"--threshold must be in (0, 1], not {flags.threshold}")
    if flags.condition not in CONDITIONS:
        raise InvocationError(f"--condition must be passive or enforced, not {flags.condition!r}")
    config = host_config(flags.host_config)
    project = (flags.project_root or Path.cwd()).resolve()
    if not project.is_dir():
        raise InvocationError("--project-root is not a directory", source=flags.project_root)
    workspace_root = _workspace_root(flags.workspace_root)
    _check_sandbox(flags)
    protected = _protected_roots(flags.protected_root or [])
    results = flags.results_root.expanduser().resolve()
    check_results_root(results)
    runtime, network = runtime_policy(flags, project, credentials)
    config_root, config_roots = configuration_root(flags.config_root, project)
    return RunSettings(
        trials=flags.trials or 1,
        threshold=float(flags.threshold),
        jobs=flags.jobs,
        dry=flags.dry,
        condition=flags.condition,
        results_root=results,
        project_root=project,
        host=flags.host,
        host_options=_host_options(
            flags,
            config,
            host_settings,
            (project, results, config_root),
            protected,
            credentials,
            runtime,
        ),
        verdict_policy=flags.verdict_policy,
        workspace_root=workspace_root,
        run_state_root=_resolved(flags.run_state_root),
        sandbox=flags.sandbox,
        network=network,
        runtime=runtime,
        protected_roots=protected,
        config_roots=config_roots,
        case_sources=load_case_sources(flags.case_source_root, flags.case_source_map_file),
        judges=judge_settings(flags),
        provenance=provenance_choice(flags),
        settings_file=flags.settings_file,
        extension=extension_flags(flags),
        executor=ExecutorChoice(flags.executor, flags.executor_settings),
    )


def _check_sandbox(flags: RunFlags) -> None:
    if not flags.sandbox.strip():
        raise InvocationError("--sandbox must be auto, none or a sandbox backend name")
    if flags.shell_isolation and flags.sandbox == "none":
        raise InvocationError("--shell-isolation asks for isolation; --sandbox none turns it off")


_EXTENSION_ONLY = (
    ("extension_source_file", "--extension-source-file"),
    ("task_verdict_policy", "--task-verdict-policy"),
    ("extension_configuration_file", "--extension-configuration-file"),
    ("extension_redacted_configuration_file", "--extension-redacted-configuration-file"),
    ("case_id", "--case-id"),
    ("replace_builtin_grader", "--replace-builtin-grader"),
)


def extension_flags(flags: RunFlags) -> ExtensionFlags | None:
    """The extension flags, checked before anything runs (exit 64): extension-only flags need
    ``--extension-command-file``; the two configuration files come together; ``--case-id`` and
    a source file are required; replaced graders are namespaced and unique."""
    from sevro_core.plugin.casesources import ExtensionFlags
    from sevro_core.plugin.protocols import ID_PATTERN

    command = flags.extension_command_file
    if command is None:  # extension-only flags without it were refused (sevro_spellings)
        return None
    configuration = flags.extension_configuration_file
    redacted = flags.extension_redacted_configuration_file
    if (configuration is None) != (redacted is None):
        raise InvocationError(
            "--extension-configuration-file and --extension-redacted-configuration-file "
            "must be given together"
        )
    if not flags.extension_source_file:
        raise InvocationError("--extension-command-file needs at least one --extension-source-file")
    if flags.case_id is None or not flags.case_id.strip():
        raise InvocationError("--extension-command-file needs --case-id")
    replaced = flags.replace_builtin_grader or []
    for grader in replaced:
        if not re.match(ID_PATTERN, grader):
            raise InvocationError(f"--replace-builtin-grader {grader!r} is not a namespaced id")
    if len(set(replaced)) != len(replaced):
        raise InvocationError("--replace-builtin-grader names the same grader twice")
    for path in (command, configuration, redacted, *flags.extension_source_file):
        if path is not None and not path.is_absolute():
            raise InvocationError("extension files must be absolute paths", source=path)
    return ExtensionFlags(
        command_file=command,
        source_files=tuple(flags.extension_source_file),
        configuration_file=configuration,
        redacted_configuration_file=redacted,
        case_id=flags.case_id,
        task_verdict_policy=flags.task_verdict_policy,
        replaced_graders=tuple(replaced),
    )


def _resolved(path: Path | None) -> Path | None:
    return path.expanduser().resolve() if path is not None else None


def provenance_choice(flags: RunFlags) -> ProvenanceChoice:
    """Sevro's provenance flags, checked before anything runs (exit 64): 64-hex digest
    overrides and a checkout that must be the code running."""
    from sevro_core.run.provenance import ProvenanceChoice, check_checkout_root

    for flag, digest in (
        ("--runner-build-digest", flags.runner_build_digest),
        ("--project-digest", flags.project_digest),
    ):
        if digest is not None and not _HEX64.fullmatch(digest):
            raise InvocationError(f"{flag} must be 64 lowercase hex digits (a sha256)")
    checkout = flags.runner_checkout_root
    return ProvenanceChoice(
        checkout_root=check_checkout_root(checkout) if checkout is not None else None,
        build_digest=flags.runner_build_digest,
        project_digest=flags.project_digest,
    )


def sevro_spellings(options: dict[str, Any], registry: Registry) -> dict[str, Any]:
    """Sevro's ``--case-file`` and ``--adapter-module`` as sevro's case arguments and
    ``--host``: each exclusive with what it stands for (exit 64)."""
    options = dict(options)
    case_file, cases = options.pop("case_file"), options["cases"] or []
    if case_file is not None and cases:
        raise InvocationError("--case-file and case arguments are exclusive: give the case once")
    given = [case_file] if case_file is not None else cases
    _case_source(options, given)
    options["cases"] = given
    for prefix in ("", *(f"{role}_" for role in ADAPTER_JUDGE_ROLES)):
        flag = "--" + prefix.replace("_", "-")
        adapter = options.pop(f"{prefix}adapter_module")
        if adapter is not None and options[f"{prefix}host"] is not None:
            raise InvocationError(
                f"{flag}host and {flag}adapter-module are exclusive: choose one host"
            )
        if adapter is not None:
            options[f"{prefix}host"] = adapter_host(adapter, registry, f"{flag}adapter-module")
    options["host"] = options["host"] or "scripted"
    return options


def _case_source(options: Mapping[str, Any], given: list[Path]) -> None:
    """Case files xor ``--extension-command-file``; extension-only flags need the latter."""
    if options.get("extension_command_file") is not None:
        if given:
            raise InvocationError(
                "case files and --extension-command-file are exclusive: the extension "
                "resolves the case"
            )
        return
    extra = next((flag for name, flag in _EXTENSION_ONLY if options.get(name)), None)
    if extra is not None:
        raise InvocationError(f"{extra} needs --extension-command-file")
    if not given:
        raise InvocationError("no case: give case files (or --case-file FILE)")


def adapter_module_file(value: str, flag: str = "--adapter-module") -> Path:
    """The file of ``--adapter-module``: an absolute ``.py`` path, or a dotted module name
    found on ``sys.path`` (operator-chosen code, loaded like ``--plugin FILE.py``)."""
    import importlib.util

    if "/" in value or value.endswith(".py"):
        path = Path(value)
        if not path.is_absolute():
            raise InvocationError(f"{flag} must be an absolute path", source=value)
        return path
    if not _DOTTED.fullmatch(value):
        raise InvocationError(f"{flag} {value!r} is neither a path nor a module name")
    try:
        spec = importlib.util.find_spec(value)
    except (ImportError, ValueError) as exc:
        raise InvocationError(f"{flag} {value}: {exc}") from None
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise InvocationError(f"{flag} {value}: no such Python module")
    return Path(spec.origin)


def adapter_host(value: str, registry: Registry, flag: str = "--adapter-module") -> str:
    """The id of the one host the adapter module registered (refused otherwise, exit 64)."""
    name = f"file:{adapter_module_file(value, flag).expanduser().resolve()}"
    hosts = [
        r.id
        for info in registry.plugins
        if info.name == name
        for r in info.registrations
        if r.kind == "host"
    ]
    if len(hosts) != 1:
        raise InvocationError(f"{flag} {value} must register exactly one host, not {len(hosts)}")
    return hosts[0]


def _workspace_root(given: Path | None) -> Path | None:
    """``--workspace-root``, writable (read-only: 64, not 70) and never ``/``, resolved."""
    from sevro_core.arguments import check_writable_directory

    if given is None:
        return None
    check_writable_directory(given, "--workspace-root")
    if given.resolve() == Path("/"):
        raise InvocationError(
            "--workspace-root must not be /: it is hidden from sandboxed commands"
        )
    return given.resolve()


def configuration_root(given: Path | None, project: Path) -> tuple[Path, tuple[Path, ...]]:
    """``--config-root`` (default: the project root) and what it adds to the protected roots:
    the root and the primary and linked worktrees of its Git repository. Only an explicit root
    adds any; the project root is protected already. Relative, missing or non-directory roots
    are refused (exit 64); an empty value parses as ``.``, which is relative."""
    from sevro_core.isolation.protection import canonical, git_worktrees

    if given is None:
        return project, ()
    if not given.is_absolute():
        raise InvocationError("--config-root must be an absolute directory", source=given)
    root = canonical(given)
    if not root.is_dir():
        raise InvocationError("--config-root is not a directory", source=given)
    if root == Path("/"):
        raise InvocationError("--config-root must not be / (nothing could run)")
    worktrees = [w for w in git_worktrees(root) if w != Path("/")]
    return root, tuple(dict.fromkeys([root, *worktrees]))


def runtime_policy(
    flags: RunFlags, project: Path, credentials: CredentialLocations
) -> tuple[RuntimePolicy | None, str]:
    """The runtime configuration, read once (dry runs too), and the network it and
    ``--local-http`` (its alias) choose; the two disagreeing is refused (exit 64)."""
    from sevro_core.isolation.runtime import load_runtime
    from sevro_core.plugin.protocols import NETWORK_LOCAL_HTTP, NETWORK_NONE

    explicit = flags.runtime_config_file
    if explicit is not None and not explicit.is_absolute():
        raise InvocationError("--runtime-config-file must be an absolute path", source=explicit)
    runtime = load_runtime(project, explicit, credentials)
    runtime = flag_runtime_policy(flags, runtime, credentials) or runtime
    local_http = flags.local_http
    if runtime is not None and runtime.local_http is not None:
        if flags.local_http and not runtime.local_http:
            raise InvocationError(
                "--local-http disagrees with network.localHttp false",
                source=runtime.source,
                pointer="/network/localHttp",
            )
        local_http = runtime.local_http
    return runtime, NETWORK_LOCAL_HTTP if local_http else NETWORK_NONE


def flag_runtime_policy(
    flags: RunFlags, selected: RuntimePolicy | None, credentials: CredentialLocations
) -> RuntimePolicy | None:
    """Sevro's deprecated ``--toolchain-bin-dir`` and seed settings as the runtime policy
    they stand for, with a warning each; beside a runtime file they are refused (exit 64)."""
    from sevro_core.isolation.processes import DEFAULT_PATH
    from sevro_core.isolation.runtime import RUNTIME_PLACEHOLDER, flag_runtime

    toolchain = flags.toolchain_bin_dir
    given = [*(() if toolchain is None else [("--toolchain-bin-dir", "PATH", str(toolchain))])]
    given += flags.runtime_seeds
    if not given:
        return None
    if selected is not None:
        raise InvocationError(
            f"{given[0][0]} is deprecated and cannot be combined with a runtime file: "
            "declare it in the file (docs/runtime.md)",
            source=selected.source,
        )
    document: dict[str, Any] = {"format": "sevro.runtime.v1", "environment": {"set": {}}}
    seeds = []
    for flag, variable, directory in given:
        if not Path(directory).is_absolute():
            raise InvocationError(f"{flag} must be an absolute path", source=directory)
        sys.stderr.write(f"sevro: warning: {flag} is deprecated; {_MIGRATION}\n")
        if variable == "PATH":
            document["environment"]["set"]["PATH"] = f"{directory}:{DEFAULT_PATH}"
            continue
        target = variable.lower().replace("_", "-")
        seeds.append({"source": directory, "target": target, "roles": ["candidate", "checks"]})
        document["environment"]["set"][variable] = f"{RUNTIME_PLACEHOLDER}/{target}"
    if seeds:
        document["runtime"] = {"seedDirectories": seeds}
    return flag_runtime(document, " ".join(g[0] for g in given), credentials)


def judge_settings(flags: RunFlags) -> JudgeSettings:
    """The judge routes and options the flags choose; a judge option without its judge's
    ``--<role>-host`` is refused (exit 64)."""
    from sevro_core.judges.routes import JudgeRouteSpec

    specs = []
    for role in JUDGE_ROLES:
        host = getattr(flags, f"{role}_host")
        extras = [
            f"--{role}-{what.replace('_', '-')}"
            for what in ("model", "effort", "host_config")
            if getattr(flags, f"{role}_{what}") is not None
        ]
        if host is None:
            if extras:
                raise InvocationError(f"{extras[0]} needs --{role}-host")
            continue
        if not host.strip():
            raise InvocationError(f"--{role}-host must name an installed host")
        config_path: Path | None = getattr(flags, f"{role}_host_config")
        specs.append(
            JudgeRouteSpec(
                role=role,
                host=host,
                model=getattr(flags, f"{role}_model"),
                effort=getattr(flags, f"{role}_effort"),
                config=host_config(config_path),
                config_source=str(config_path) if config_path is not None else None,
            )
        )
    return JudgeSettings(
        routes=tuple(specs), advisory_exclude=_advisory_exclude(flags.advisory_exclude or [])
    )


def _advisory_exclude(paths: list[str]) -> tuple[str, ...]:
    """Workspace-relative POSIX paths, sorted and unique."""
    for path in paths:
        parts = path.split("/")
        if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise InvocationError(
                f"--advisory-exclude {path!r} must be a relative path inside the workspace"
            )
    return tuple(sorted(set(paths)))


def run_inputs(flags: RunFlags, settings: RunSettings) -> tuple[RunSettings, list[Case]]:
    """The cases to run and, for an experiment (a file, or ``--skill``), its design.

    Everything is read and checked here, before anything runs (exit 64 on the first problem).
    """
    from attrs import evolve

    from sevro_core.run.experiment import experiment_file, load_experiment, quick_experiment
    from sevro_core.run.loading import load_cases
    from sevro_core.run.skilleval import skilleval_file

    if flags.extension_command_file is not None:
        _refuse_experiment_flags(flags)
        return settings, []
    path = experiment_file(flags.cases)
    definition = skilleval_file(flags.cases) if path is None else None
    design: ExperimentDesign | None
    if definition is None and (flags.group is not None or flags.variant is not None):
        raise InvocationError("--group and --variant select from a skill-eval definition")
    imported = _imported_inputs(flags, definition) if path is None else None
    if imported is not None:
        design, cases = imported
    elif path is not None:
        if flags.skill or flags.baseline is not None:
            raise InvocationError(
                "--skill and --baseline build an experiment from case files; "
                f"{path} already declares its arms"
            )
        design, cases = load_experiment(path, flags.trials)
    else:
        design = quick_experiment(flags.skill or [], flags.baseline, flags.trials)
        cases = load_cases(flags.cases)
    if design is None:
        if flags.fail_on_regression:
            raise InvocationError("--fail-on-regression needs an experiment (a file or --skill)")
        return settings, cases
    return (
        evolve(
            settings,
            trials=design.repetitions,
            experiment=design,
            fail_on_regression=flags.fail_on_regression,
            judges=merged_judges(settings.judges, design.judges, design.source),
        ),
        cases,
    )


def _refuse_experiment_flags(flags: RunFlags) -> None:
    """An extension gives one case, never an experiment's arms (exit 64)."""
    for flag, value in (
        ("--skill", flags.skill),
        ("--baseline", flags.baseline),
        ("--group", flags.group),
        ("--variant", flags.variant),
        ("--fail-on-regression", flags.fail_on_regression),
    ):
        if value:
            raise InvocationError(f"{flag} cannot be combined with --extension-command-file")


def _imported_inputs(
    flags: RunFlags, definition: Path | None
) -> tuple[ExperimentDesign, list[Case]] | None:
    """Another tool's eval file made an experiment: a skill-eval definition, a skill-creator
    trigger eval set or a skill-creator ``evals/evals.json``; None for sevro's own files."""
    from sevro_core.run.evalset import eval_set_file, load_eval_experiment
    from sevro_core.run.skilleval import load_skilleval
    from sevro_core.run.triggerset import load_trigger_experiment, trigger_set_file

    if definition is not None:
        if flags.skill or flags.baseline is not None:
            raise InvocationError(f"--skill and --baseline: {definition} declares its variants")
        return load_skilleval(definition, flags)
    triggers = trigger_set_file(flags.cases)
    if triggers is not None:
        return load_trigger_experiment(triggers, flags.skill or [], flags.baseline, flags.trials)
    evals = eval_set_file(flags.cases)
    return load_eval_experiment(evals, flags) if evals is not None else None


def merged_judges(
    flags: JudgeSettings, file: JudgeSettings | None, source: str | None
) -> JudgeSettings:
    """The experiment file's judges with the flags' added; a role set by both is refused
    (exit 64) rather than one silently winning."""
    if file is None:
        return flags
    from attrs import evolve

    both = sorted({s.role for s in flags.routes} & {s.role for s in file.routes})
    if both:
        raise InvocationError(
            f"the {both[0]} judge is set both by --{both[0]}-host and in the experiment file",
            source=source,
            pointer=f"/judges/{both[0]}",
        )
    return evolve(
        file,
        routes=file.routes + flags.routes,
        advisory_exclude=tuple(sorted({*file.advisory_exclude, *flags.advisory_exclude})),
    )


def host_config(path: Path | None) -> Mapping[str, JsonValue] | None:
    """A ``--host-config`` (or judge's ``--<role>-host-config``) file: one JSON object, bounded."""
    from sevro_core.formats.jsonio import read_json_file
    from sevro_core.limits import MAX_HOST_CONFIG_BYTES

    if path is None:
        return None
    config = read_json_file(path, MAX_HOST_CONFIG_BYTES, what="host configuration")
    if not isinstance(config, dict):
        raise InvocationError("host configuration must be a JSON object", source=path)
    return config


def _host_options(
    flags: RunFlags,
    config: Mapping[str, JsonValue] | None,
    host_settings: Mapping[str, str],
    places: tuple[Path, Path, Path],
    protected: tuple[Path, ...],
    credentials: CredentialLocations,
    runtime: RuntimePolicy | None,
) -> HostOptions:
    """Every role's options start here (judges' routes evolve them), so every role gets the
    same runtime policy and price table. ``places`` are the project, results and
    configuration roots."""
    project, results, config_root = places
    return HostOptions(
        config=config,
        config_source=str(flags.host_config) if flags.host_config else None,
        model=flags.model,
        effort=flags.effort,
        settings=dict(host_settings),
        protected_roots=_host_protected_roots(
            project, results, flags.run_state_root, protected, credentials
        ),
        runtime=runtime.host_runtime() if runtime is not None else None,
        config_root=config_root,
        prices=run_prices(flags.prices),
    )


def _host_protected_roots(
    project: Path,
    results: Path,
    run_state_root: Path | None,
    extra: tuple[Path, ...],
    credentials: CredentialLocations,
) -> tuple[Path, ...]:
    """What a host's own permission settings must deny: the engine's roots and the operator's."""
    from sevro_core.isolation.protection import canonical, engine_roots

    roots = engine_roots(
        project_root=project,
        results_root=results,
        run_state_root=run_state_root,
        credentials=credentials,
    )
    return tuple(dict.fromkeys([*(canonical(r.path) for r in roots), *extra]))


def _protected_roots(paths: list[Path]) -> tuple[Path, ...]:
    """Canonical, existing, never ``/``: a root that does not exist could appear unprotected."""
    from sevro_core.isolation.protection import canonical
    from sevro_core.limits import MAX_PROTECTED_ROOTS

    if len(paths) > MAX_PROTECTED_ROOTS:
        raise InvocationError(f"more than {MAX_PROTECTED_ROOTS} --protected-root flags")
    out: dict[Path, None] = {}
    for path in paths:
        resolved = canonical(path.expanduser())
        if not resolved.exists():
            raise InvocationError("--protected-root does not exist", source=path)
        if resolved == Path("/"):
            raise InvocationError("--protected-root must not be / (nothing could run)")
        out.setdefault(resolved, None)
    return tuple(out)


SETTINGS_FILE_FLAG = "--run-settings-file"
_FILE_KEYS = {
    "host": "host",
    "hostConfig": "host_config",
    "model": "model",
    "effort": "effort",
    "trials": "trials",
    "jobs": "jobs",
    "executor": "executor",
    "threshold": "threshold",
    "condition": "condition",
    "sandbox": "sandbox",
    "localHttp": "local_http",
    "resultsRoot": "results_root",
    "runtimeConfigFile": "runtime_config_file",
    "verdictPolicy": "verdict_policy",
    "statusInterval": "status_interval",
    "extensionCommandFile": "extension_command_file",
    "extensionSourceFiles": "extension_source_file",
    "extensionConfigurationFile": "extension_configuration_file",
    "extensionRedactedConfigurationFile": "extension_redacted_configuration_file",
    "taskVerdictPolicy": "task_verdict_policy",
    "replaceBuiltinGraders": "replace_builtin_grader",
}
"""A run settings file's top-level keys and the ``sevro run`` options they stand for."""
_JUDGE_KEYS = {"host": "host", "model": "model", "effort": "effort", "hostConfig": "host_config"}
_EXISTING_FILES = {"host_config", "runtime_config_file", *(f"{r}_host_config" for r in JUDGE_ROLES)}
_EXISTING_FILES |= {
    "extension_command_file",
    "extension_configuration_file",
    "extension_redacted_configuration_file",
}
_PATHS = {*_EXISTING_FILES, "results_root"}
_PATH_LISTS = {"extension_source_file"}
_STANDS_IN = {"host": "adapter_module", "semantic_host": "semantic_adapter_module"}
_STANDS_IN["advisory_host"] = "advisory_adapter_module"


@frozen
class SettingsFile:
    """A checked ``sevro.run-settings.v1`` document: option values (paths absolute) by
    ``sevro run`` parameter name, and its ``hostSettings``."""

    source: Path
    digest: str
    values: Mapping[str, Any]
    host_settings: Mapping[str, str]


def load_settings_file(path: Path) -> SettingsFile:
    """Read and check a run settings file (exit 64 on the first problem, naming the file and
    the key); relative paths resolve against its directory and must exist where a file is
    read."""
    from sevro_core.formats.canonical import sha256_hex
    from sevro_core.formats.jsonio import parse_json_text, read_bounded
    from sevro_core.formats.schemas import validate_input
    from sevro_core.limits import MAX_RUN_SETTINGS_BYTES

    source = path.expanduser().resolve()
    data = read_bounded(source, MAX_RUN_SETTINGS_BYTES, what="run settings")
    document = parse_json_text(data, source=path)
    validate_input("run-settings.v1", document, source=path)
    if not isinstance(document, dict):  # the schema says it is: this keeps the type checker sure
        raise InvocationError("run settings must be a JSON object", source=path)
    pointers = {name: f"/{key}" for key, name in _FILE_KEYS.items() if key in document}
    values = {name: document[key[1:]] for name, key in pointers.items()}
    for role, judge in dict(document.get("judges", {})).items():
        for key, what in _JUDGE_KEYS.items():
            if key in judge:
                values[f"{role}_{what}"] = judge[key]
                pointers[f"{role}_{what}"] = f"/judges/{role}/{key}"
        if "exclude" in judge:
            values["advisory_exclude"] = list(judge["exclude"])
            pointers["advisory_exclude"] = "/judges/advisory/exclude"
    for name in _PATHS & set(values):
        values[name] = source.parent / Path(values[name]).expanduser()
        if name in _EXISTING_FILES and not values[name].is_file():
            raise InvocationError("no such file", source=path, pointer=pointers[name])
    for name in _PATH_LISTS & set(values):
        values[name] = [source.parent / Path(item).expanduser() for item in values[name]]
        for index, item in enumerate(values[name]):
            if not item.is_file():
                raise InvocationError(
                    "no such file", source=path, pointer=f"{pointers[name]}/{index}"
                )
    return SettingsFile(
        source=source,
        digest=sha256_hex(data),
        values=values,
        host_settings=dict(document.get("hostSettings", {})),
    )


def apply_settings_file(
    options: dict[str, Any], given: Callable[[str], bool], file: SettingsFile
) -> tuple[dict[str, Any], list[str], list[str]]:
    """The options with the file's values where the command line gave none (``given`` says
    whether it did); the flags the file applied and the ones the command line beat."""
    options = dict(options)
    applied: list[str] = []
    overridden: list[str] = []
    for name, value in file.values.items():
        flag = "--" + name.replace("_", "-")
        if given(name) or (name in _STANDS_IN and given(_STANDS_IN[name])):
            overridden.append(flag)
            continue
        options[name] = value
        applied.append(flag)
    return options, applied, overridden


def settings_file_note(use: SettingsFileUse) -> str:
    """The one stderr line that says what a settings file decided (dry runs too)."""
    applied = ", ".join(use.applied) or "nothing"
    line = f"sevro: run settings {use.source} (sha256 {use.digest[:12]}): {applied}"
    if use.overridden:
        line += f"; the command line gave {', '.join(use.overridden)}"
    return line + "\n"
