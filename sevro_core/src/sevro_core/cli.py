"""The ``sevro`` command line (Typer).

Importing this module loads no plugin, no JSON Schema library and no rich: each command imports
what it needs when it runs, so ``sevro --help`` stays fast. Every user error prints one line and
exits 64; with ``--json`` it is one ``sevro.cli-result.v1`` document on stdout instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import click
import typer
from typer.core import TyperCommand, TyperGroup

from sevro_core.limits import DEFAULT_JOBS, DEFAULT_STATUS_INTERVAL_SECONDS
from sevro_core.vocabulary import ADVISORY_ROLE, COMPARATOR_ROLE, SEMANTIC_ROLE


class _PluginCommandGroup(TyperGroup):
    """Resolves commands that plugins add only when such a command is asked for."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = super().get_command(ctx, cmd_name)
        if found is not None or cmd_name.startswith("-"):
            return found
        extra = _plugin_app(_plugin_files_from_argv())
        if extra is None:
            return None
        group = typer.main.get_group(extra)
        return group.get_command(ctx, cmd_name)


app = typer.Typer(
    name="sevro",
    cls=_PluginCommandGroup,
    help="Evaluate agent skills by running real agent CLIs on fresh fixtures, with evidence.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

PluginOpt = Annotated[
    list[Path] | None,
    typer.Option("--plugin", help="Load a local plugin file (repeatable) for this invocation."),
]
LogFormatOpt = Annotated[
    str, typer.Option("--log-format", help="Diagnostics on stderr: console or json.")
]
VerboseOpt = Annotated[int, typer.Option("-v", "--verbose", count=True, help="More diagnostics.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Write exactly one JSON document to stdout.")]
SourceRootOpt = Annotated[
    Path | None,
    typer.Option(
        "--case-source-root", help="Directory holding the repositories repository fixtures clone."
    ),
]
SourceMapOpt = Annotated[
    Path | None,
    typer.Option(
        "--case-source-map-file",
        help="JSON object of source id -> file:/// URL inside --case-source-root.",
    ),
]


def _show_version(value: bool) -> None:
    if value:
        from sevro_core.versions import render_versions

        sys.stdout.write(render_versions())
        raise typer.Exit(0)


@app.callback()
def _global_options(
    plugin: PluginOpt = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            is_eager=True,
            callback=_show_version,
            help="Print the versions of sevro and its installed plugins, then exit.",
        ),
    ] = False,
) -> None:
    """Evaluate agent skills by running real agent CLIs on fresh fixtures, with evidence.

    `--plugin FILE.py` before the command also loads plugins that add commands.
    """


def _plugin_files_from_argv() -> list[Path]:
    """``--plugin`` files, and the ``--adapter-module`` (Sevro's host module) loaded alike."""
    argv = sys.argv[1:]
    files = []
    adapters = ("--adapter-module", "--semantic-adapter-module", "--advisory-adapter-module")
    for flag in ("--plugin", *adapters):
        for index, arg in enumerate(argv):
            value = argv[index + 1] if arg == flag and index + 1 < len(argv) else None
            if arg.startswith(f"{flag}="):
                value = arg.split("=", 1)[1]
            if value is not None and flag in adapters:
                from sevro_core.runflags import adapter_module_file

                files.append(adapter_module_file(value, flag))
            elif value is not None:
                files.append(Path(value))
    return files


def _plugin_app(plugin_files: list[Path]) -> typer.Typer | None:
    from sevro_core.plugin.manager import load_plugins, register_commands

    registry = load_plugins(plugin_files)
    extra = typer.Typer(add_completion=False, rich_markup_mode=None)
    register_commands(registry, extra)
    return extra if extra.registered_commands or extra.registered_groups else None


def _setup_logging(log_format: str, verbose: int) -> None:
    from sevro_core.errors import InvocationError
    from sevro_core.logs import configure

    if log_format not in ("console", "json"):
        raise InvocationError(f"--log-format must be console or json, not {log_format!r}")
    configure(log_format, verbose)


def _fail(exc: Exception, *, as_json: bool) -> NoReturn:
    from sevro_core.errors import InvocationError, SevroError
    from sevro_core.run.results import pre_run_failure
    from sevro_core.states import ExitCode

    if isinstance(exc, InvocationError):
        code, message, exit_code = exc.code, exc.one_line(), ExitCode.INVOCATION
    elif isinstance(exc, SevroError):
        code, message, exit_code = exc.code, " ".join(str(exc).split()), ExitCode.INTERNAL
    else:
        code = "sevro.runner.error"
        message = " ".join(f"internal error: {type(exc).__name__}: {exc}".split())
        exit_code = ExitCode.INTERNAL
    if as_json:
        import json

        sys.stdout.write(json.dumps(pre_run_failure(code, message, exit_code)) + "\n")
    sys.stderr.write(f"sevro: error: {message}\n")
    raise typer.Exit(int(exit_code))


HostOpt = Annotated[
    str, typer.Option(help="Host id or short name (`sevro plugins` lists the installed hosts).")
]
HostConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--host-config", help="Host configuration JSON file (the scripted host's script)."
    ),
]
ModelOpt = Annotated[str | None, typer.Option(help="Model the host should use.")]
EffortOpt = Annotated[str | None, typer.Option(help="Reasoning effort the host should use.")]
HostSettingOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--host-setting",
        metavar="KEY=VALUE",
        help="Set one of the host's settings by key (repeatable); each also has its own flag.",
    ),
]
TrialsOpt = Annotated[
    int | None,
    typer.Option(
        help="Trials per case (default 1); in an experiment, repetitions per arm and case "
        "(default: the file's, or 5).",
        show_default=False,
    ),
]
SkillOpt = Annotated[
    list[Path] | None,
    typer.Option(
        help="Experiment quick form: a skill bundle (a directory with SKILL.md) the candidate "
        "arm mounts; repeatable, the first is the target.",
        show_default=False,
    ),
]
BaselineOpt = Annotated[
    str | None,
    typer.Option(
        help="Experiment quick form: what the candidate is compared with: none, a directory "
        "holding an older copy of the skill, git:REF or git:REF:PATH.",
        show_default=False,
    ),
]
GroupOpt = Annotated[
    str | None,
    typer.Option(
        help="skill-eval suite: run one group, by id or one-based position.", show_default=False
    ),
]
VariantOpt = Annotated[
    str | None,
    typer.Option(help="skill-eval definition: run one variant, baseline or candidate."),
]
FailOnRegressionOpt = Annotated[
    bool,
    typer.Option("--fail-on-regression", help="Exit 1 when a comparison's verdict is regressed."),
]


def _judge_opt(role: str, what: str) -> Any:
    """One judge-route option (``--semantic-host``, ``--advisory-model``, ...)."""
    help_text = {
        "host": f"Host that plays the {role} judge (docs/judges.md); any installed host.",
        "model": f"Model of the {role} judge.",
        "effort": f"Reasoning effort of the {role} judge.",
        "host-config": f"Configuration JSON of the {role} judge's host (default: --host-config "
        "when it is the candidate's host).",
    }[what]
    return typer.Option(f"--{role}-{what}", help=help_text, show_default=False)


def _judge_adapter_opt(role: str) -> Any:
    """Sevro's ``--<role>-adapter-module``: the judge's host from a module."""
    return typer.Option(
        f"--{role}-adapter-module",
        help=f"A Python module registering one host that plays the {role} judge, loaded like "
        f"--plugin (exclusive with --{role}-host).",
        show_default=False,
    )


SemanticAdapterOpt = Annotated[str | None, _judge_adapter_opt(SEMANTIC_ROLE)]
AdvisoryAdapterOpt = Annotated[str | None, _judge_adapter_opt(ADVISORY_ROLE)]
SemanticHostOpt = Annotated[str | None, _judge_opt(SEMANTIC_ROLE, "host")]
SemanticModelOpt = Annotated[str | None, _judge_opt(SEMANTIC_ROLE, "model")]
SemanticEffortOpt = Annotated[str | None, _judge_opt(SEMANTIC_ROLE, "effort")]
SemanticConfigOpt = Annotated[Path | None, _judge_opt(SEMANTIC_ROLE, "host-config")]
AdvisoryHostOpt = Annotated[str | None, _judge_opt(ADVISORY_ROLE, "host")]
AdvisoryModelOpt = Annotated[str | None, _judge_opt(ADVISORY_ROLE, "model")]
AdvisoryEffortOpt = Annotated[str | None, _judge_opt(ADVISORY_ROLE, "effort")]
AdvisoryConfigOpt = Annotated[Path | None, _judge_opt(ADVISORY_ROLE, "host-config")]
AdvisoryExcludeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--advisory-exclude",
        metavar="REL",
        help="Workspace path the advisory reviewer never sees (repeatable).",
        show_default=False,
    ),
]
ComparatorHostOpt = Annotated[str | None, _judge_opt(COMPARATOR_ROLE, "host")]
ComparatorModelOpt = Annotated[str | None, _judge_opt(COMPARATOR_ROLE, "model")]
ComparatorEffortOpt = Annotated[str | None, _judge_opt(COMPARATOR_ROLE, "effort")]
ComparatorConfigOpt = Annotated[Path | None, _judge_opt(COMPARATOR_ROLE, "host-config")]
ThresholdOpt = Annotated[
    float, typer.Option(help="Share of trials that must pass for a case to pass, in (0, 1].")
]
JobsOpt = Annotated[int, typer.Option(help="Trials run in parallel.")]
ExecutorOpt = Annotated[
    str,
    typer.Option(
        "--executor",
        help="Where the trials run: an executor plugin (`sevro plugins` lists them); local runs "
        "them here, at most --jobs at once. Not part of the evaluation identity.",
    ),
]
DryOpt = Annotated[bool, typer.Option("--dry", help="Prepare fixtures only; run no host.")]
ConditionOpt = Annotated[str, typer.Option(help="passive or enforced.")]
ResultsRootOpt = Annotated[Path, typer.Option("--results-root", help="Where runs are kept.")]
ProjectRootOpt = Annotated[
    Path | None,
    typer.Option(
        "--project-root", help="Project whose revision enters the identity (default: cwd)."
    ),
]
WorkspaceRootOpt = Annotated[
    Path | None,
    typer.Option(
        "--workspace-root", help="Where trial workspaces are made (default: system temp)."
    ),
]
VerdictPolicyOpt = Annotated[str, typer.Option("--verdict-policy", help="Task-verdict policy.")]
RunStateRootOpt = Annotated[
    Path | None,
    typer.Option(
        "--run-state-root",
        help="Where ownership and checkpoints live (default: <results-root>/.sevro-state).",
    ),
]
ResumeOpt = Annotated[
    bool, typer.Option("--resume", help="Continue the latest interrupted run of this evaluation.")
]
HoldoutOpt = Annotated[
    Path | None,
    typer.Option(
        "--holdout",
        help="Run a plan sealed by `sevro holdout seal`, once, exactly as sealed.",
        show_default=False,
    ),
]
MaxCostOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--max-cost-usd",
        metavar="[ROLE=]USD",
        help="Stop the run before a call would take its spend past USD (bare: every role "
        "together; ROLE=USD: candidate, semantic, advisory or comparator calls). Repeatable; "
        "needs --max-call-cost-usd. See docs/spend.md.",
        show_default=False,
    ),
]
MaxCallCostOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--max-call-cost-usd",
        metavar="[ROLE=]USD",
        help="What one call may cost, reserved before it starts and passed to a CLI that can "
        "stop itself (bare: every role not named). Repeatable. See docs/spend.md.",
        show_default=False,
    ),
]
AcceptExposureOpt = Annotated[
    bool,
    typer.Option(
        "--accept-exposure",
        help="Run even though the worst case (calls x per-call ceilings) passes a ceiling: "
        "the ceiling then stops the run (exit 5).",
    ),
]
SandboxOpt = Annotated[
    str,
    typer.Option(
        "--sandbox",
        help="Isolation for host commands and shell checks: auto, bwrap, sandbox-exec, or "
        "none (an explicit opt-out, recorded in evidence and identity).",
    ),
]
ProtectedRootOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--protected-root",
        help="Hide this file or directory from sandboxed commands too (repeatable).",
    ),
]
LocalHttpOpt = Annotated[
    bool,
    typer.Option(
        "--local-http",
        help="Let sandboxed commands use loopback (local HTTP test servers); no other network.",
    ),
]
ConfigRootOpt = Annotated[
    Path | None,
    typer.Option(
        "--config-root",
        help="Absolute directory hosts may import their one allowed setting from (default: "
        "the project root); it and its Git worktrees are hidden from candidates and checks.",
    ),
]
RuntimeConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--runtime-config-file",
        help="Read the runtime configuration (sevro.runtime.v1) from FILE instead of "
        "<project-root>/sevro.json; see docs/runtime.md.",
    ),
]
PricesOpt = Annotated[
    Path | None,
    typer.Option(
        "--prices",
        help="A price table (sevro.prices.v1) whose models replace or add to the built-in "
        "prices each call's costUsd is computed from; see docs/spend.md.",
    ),
]
RunSettingsFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--run-settings-file",
        help="Read recurring selections (sevro.run-settings.v1: host, model, trials, judges, "
        "host settings ...) from FILE; a flag given here beats the file. See docs/running.md.",
    ),
]
JudgeRuntimeConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--runtime-config-file",
        help="Give the judge the runtime configuration (sevro.runtime.v1) in FILE: its "
        "variables reach the judge's process; see docs/runtime.md.",
    ),
]
StatusIntervalOpt = Annotated[
    float,
    typer.Option(
        "--status-interval", help="Off a terminal, print a status line every SECONDS (0: never)."
    ),
]
JunitOpt = Annotated[
    Path | None,
    typer.Option(
        "--junit",
        help="Also write the outcome as JUnit XML to FILE (one testcase per case, or per case "
        "and arm), for CI dashboards; see docs/ci.md.",
        metavar="FILE",
        show_default=False,
    ),
]
GithubSummaryOpt = Annotated[
    bool,
    typer.Option(
        "--github-summary",
        help="Append a Markdown summary to $GITHUB_STEP_SUMMARY (GitHub Actions); without "
        "it set, say so on stderr and do nothing.",
    ),
]
CasesArg = Annotated[
    list[Path],
    typer.Argument(
        help="Case files (one case or an array) or directories of *.json case files.",
        show_default=False,
    ),
]
RunCasesArg = Annotated[
    list[Path] | None,
    typer.Argument(
        help="Case files (one case or an array) or directories of *.json case files.",
        show_default=False,
    ),
]
RunHostOpt = Annotated[
    str | None,
    typer.Option(
        help="Host id or short name (default scripted; `sevro plugins` lists the installed hosts).",
        show_default=False,
    ),
]
CaseFileOpt = Annotated[
    Path | None,
    typer.Option("--case-file", help="Sevro's spelling of one case argument.", show_default=False),
]
AdapterModuleOpt = Annotated[
    str | None,
    typer.Option(
        "--adapter-module",
        help="A Python module (absolute .py path or dotted name) that registers one host, "
        "loaded like --plugin; the run's host (exclusive with --host).",
        show_default=False,
    ),
]
CheckoutRootOpt = Annotated[
    Path | None,
    typer.Option(
        "--runner-checkout-root",
        help="The sevro checkout running: record its revision and dirty patch.",
        show_default=False,
    ),
]
BuildDigestOpt = Annotated[
    str | None,
    typer.Option("--runner-build-digest", help="Override the runner build digest (64 hex; tests)."),
]
ProjectDigestOpt = Annotated[
    str | None,
    typer.Option("--project-digest", help="Override the project digest (64 hex; tests)."),
]
ToolchainBinDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--toolchain-bin-dir",
        help="Deprecated (Sevro): put DIR first on the PATH of host and check commands; "
        "declare environment.set.PATH in a runtime file instead.",
        show_default=False,
    ),
]
ShellIsolationOpt = Annotated[
    bool,
    typer.Option(
        "--shell-isolation",
        help="Sevro's flag: require isolation for shell checks (sevro's default; refused "
        "with --sandbox none).",
    ),
]


ExtensionCommandOpt = Annotated[
    Path | None,
    typer.Option(
        "--extension-command-file",
        help="Take the case from an extension: FILE is its argv as a JSON array (exclusive "
        "with case files); see docs/extensions.md.",
        show_default=False,
    ),
]
ExtensionSourceOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--extension-source-file",
        help="A file the extension's behaviour depends on (repeatable, at least one): digested "
        "into the identity and checked before and after every call.",
        show_default=False,
    ),
]
ExtensionConfigurationOpt = Annotated[
    Path | None,
    typer.Option(
        "--extension-configuration-file",
        help="The extension's private configuration (a JSON object): sent in every request, "
        "never kept in evidence; needs --extension-redacted-configuration-file.",
        show_default=False,
    ),
]
ExtensionRedactedOpt = Annotated[
    Path | None,
    typer.Option(
        "--extension-redacted-configuration-file",
        help="What evidence and identity keep of the extension's configuration (a JSON object).",
        show_default=False,
    ),
]
CaseIdOpt = Annotated[
    str | None,
    typer.Option("--case-id", help="The extension case to run.", show_default=False),
]
TaskVerdictPolicyOpt = Annotated[
    str | None,
    typer.Option(
        "--task-verdict-policy",
        help="Decide verdicts by this policy: a registered verdict policy, or one the "
        "extension advertises (its recommendation becomes the verdict).",
        show_default=False,
    ),
]
ReplaceGraderOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--replace-builtin-grader",
        help="Do not run the case's checks of this built-in grader; the extension grades "
        "instead (repeatable).",
        show_default=False,
    ),
]


class _HostSettingsCommand(TyperCommand):
    """``run`` and ``doctor``: they also take the flags the installed hosts declare.

    The registry is loaded only when such a command is parsed or its help shown (``sevro
    --help`` loads no plugin); the flags' values go to ``_host_settings``, not to the callback.
    """

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params = super().get_params(ctx)
        if "sevro.host-options" not in ctx.meta:
            registry = _registry(ctx)
            from sevro_core.plugin.hostsettings import click_options, executor_click_options

            ctx.meta["sevro.host-options"] = (
                [] if registry is None else click_options(registry.hosts())
            )
            if registry is not None and self.name in ("run", "seal"):  # they plan and run trials
                ctx.meta["sevro.host-options"] += executor_click_options(registry.executors())
        return [*params, *ctx.meta["sevro.host-options"]]

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if _registry(ctx) is None and not {"-h", "--help"} & set(args):
            _loaded_registry(ctx)  # raises why the plugins did not load (exit 64)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        from sevro_core.plugin.hostsettings import EXECUTOR_OPTION_PREFIX, OPTION_PREFIX

        for prefix, key in ((OPTION_PREFIX, "host"), (EXECUTOR_OPTION_PREFIX, "executor")):
            given = {k: v for k, v in ctx.params.items() if k.startswith(prefix)}
            ctx.meta[f"sevro.{key}-flags"] = given
            ctx.params = {k: v for k, v in ctx.params.items() if k not in given}
        return super().invoke(ctx)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                sections.setdefault(_help_section(param), []).append(record)
        for title in ("Arguments", "Options", "Host settings", "Executor settings"):
            if sections.get(title):
                with formatter.section(title):
                    formatter.write_dl(sections[title])


def _help_section(param: click.Parameter) -> str:
    if param.param_type_name == "argument":
        return "Arguments"
    name = param.name or ""
    if name.startswith("executor_setting"):
        return "Executor settings"
    return "Host settings" if name.startswith("host_setting") else "Options"


def _registry(ctx: click.Context) -> Any:
    """The plugins of this invocation, loaded once (None if they failed to load)."""
    if "sevro.registry" not in ctx.meta:
        from sevro_core.errors import InvocationError
        from sevro_core.plugin.manager import load_plugins

        try:
            ctx.meta["sevro.registry"] = load_plugins(_plugin_files_from_argv())
        except InvocationError as exc:
            ctx.meta["sevro.registry"] = exc
    found = ctx.meta["sevro.registry"]
    return None if isinstance(found, Exception) else found


def _loaded_registry(ctx: click.Context | None = None) -> Any:
    """The plugins of this invocation; raises the ``InvocationError`` that stopped them."""
    ctx = ctx or click.get_current_context()
    registry = _registry(ctx)
    if registry is None:
        raise ctx.meta["sevro.registry"]
    return registry


def _host_settings(registry: Any, host: str | None, pairs: list[str] | None) -> dict[str, str]:
    """The host flags and ``--host-setting`` pairs given, by key, checked against ``--host``
    (None: against every installed host, for a run whose arms and judges are not known yet)."""
    from sevro_core.plugin.hostsettings import resolve_settings

    flags = click.get_current_context().meta.get("sevro.host-flags", {})
    return resolve_settings(registry.hosts(), host, flags, pairs or [])


@app.command(cls=_HostSettingsCommand)
def run(
    cases: RunCasesArg = None,
    case_file: CaseFileOpt = None,
    extension_command_file: ExtensionCommandOpt = None,
    extension_source_file: ExtensionSourceOpt = None,
    extension_configuration_file: ExtensionConfigurationOpt = None,
    extension_redacted_configuration_file: ExtensionRedactedOpt = None,
    case_id: CaseIdOpt = None,
    task_verdict_policy: TaskVerdictPolicyOpt = None,
    replace_builtin_grader: ReplaceGraderOpt = None,
    host: RunHostOpt = None,
    adapter_module: AdapterModuleOpt = None,
    host_config: HostConfigOpt = None,
    model: ModelOpt = None,
    effort: EffortOpt = None,
    host_setting: HostSettingOpt = None,
    skill: SkillOpt = None,
    baseline: BaselineOpt = None,
    group: GroupOpt = None,
    variant: VariantOpt = None,
    fail_on_regression: FailOnRegressionOpt = False,
    semantic_host: SemanticHostOpt = None,
    semantic_adapter_module: SemanticAdapterOpt = None,
    semantic_model: SemanticModelOpt = None,
    semantic_effort: SemanticEffortOpt = None,
    semantic_host_config: SemanticConfigOpt = None,
    advisory_host: AdvisoryHostOpt = None,
    advisory_adapter_module: AdvisoryAdapterOpt = None,
    advisory_model: AdvisoryModelOpt = None,
    advisory_effort: AdvisoryEffortOpt = None,
    advisory_host_config: AdvisoryConfigOpt = None,
    advisory_exclude: AdvisoryExcludeOpt = None,
    comparator_host: ComparatorHostOpt = None,
    comparator_model: ComparatorModelOpt = None,
    comparator_effort: ComparatorEffortOpt = None,
    comparator_host_config: ComparatorConfigOpt = None,
    trials: TrialsOpt = None,
    threshold: ThresholdOpt = 1.0,
    jobs: JobsOpt = DEFAULT_JOBS,
    executor: ExecutorOpt = "local",
    dry: DryOpt = False,
    condition: ConditionOpt = "passive",
    results_root: ResultsRootOpt = Path("sevro-results"),
    project_root: ProjectRootOpt = None,
    config_root: ConfigRootOpt = None,
    workspace_root: WorkspaceRootOpt = None,
    verdict_policy: VerdictPolicyOpt = "sevro.verdict.default",
    run_state_root: RunStateRootOpt = None,
    resume: ResumeOpt = False,
    holdout: HoldoutOpt = None,
    sandbox: SandboxOpt = "auto",
    protected_root: ProtectedRootOpt = None,
    local_http: LocalHttpOpt = False,
    runtime_config_file: RuntimeConfigOpt = None,
    prices: PricesOpt = None,
    max_cost_usd: MaxCostOpt = None,
    max_call_cost_usd: MaxCallCostOpt = None,
    accept_exposure: AcceptExposureOpt = False,
    run_settings_file: RunSettingsFileOpt = None,
    case_source_root: SourceRootOpt = None,
    case_source_map_file: SourceMapOpt = None,
    status_interval: StatusIntervalOpt = DEFAULT_STATUS_INTERVAL_SECONDS,
    junit: JunitOpt = None,
    github_summary: GithubSummaryOpt = False,
    runner_checkout_root: CheckoutRootOpt = None,
    runner_build_digest: BuildDigestOpt = None,
    project_digest: ProjectDigestOpt = None,
    shell_isolation: ShellIsolationOpt = False,
    toolchain_bin_dir: ToolchainBinDirOpt = None,
    as_json: JsonOpt = False,
    plugin: PluginOpt = None,
    log_format: LogFormatOpt = "console",
    verbose: VerboseOpt = 0,
) -> None:
    """Run cases for N trials, grade them and keep the evidence."""
    options = dict(locals())  # first statement: exactly the options above, as Typer converted them
    from sevro_core.errors import SevroError

    try:
        from sevro_core.isolation.protection import credential_locations
        from sevro_core.plugin.hostsettings import check_settings_used
        from sevro_core.reporting.ci import check_ci_outputs
        from sevro_core.run.planning import plan_run
        from sevro_core.runflags import check_status_interval, run_inputs, run_settings

        _setup_logging(log_format, verbose)
        registry = _loaded_registry()
        flags, host_flags = _run_flags(options, registry)
        sealed = _holdout_before(flags)
        check_status_interval(flags.status_interval)
        check_ci_outputs(flags.ci_outputs)
        settings = run_settings(flags, host_flags, credential_locations(registry.hosts()))
        settings, loaded = run_inputs(flags, settings)
        check_settings_used(
            registry.hosts(), host_flags, settings.hosts_used(), settings.candidate_hosts()
        )
        plan = _with_spend(plan_run(loaded, registry, settings), flags)
        if sealed is not None:
            plan = _holdout_claim(plan, sealed)
    except SevroError as exc:  # bad input (64) or an extension failing before any trial (70)
        _fail(exc, as_json=as_json)
    try:
        outcome = _execute(plan, flags)
    except SevroError as exc:
        _fail(exc, as_json=as_json)
    except Exception as exc:
        _fail(exc, as_json=as_json)
    raise typer.Exit(_ci_after_run(outcome, flags.ci_outputs, registry))


def _run_flags(options: dict[str, Any], registry: Any) -> tuple[Any, dict[str, str]]:
    """The run's flags and host settings: a ``--run-settings-file``'s values where the command
    line gave none, then Sevro's spellings. The file's use is recorded and told on stderr."""
    from attrs import evolve

    from sevro_core.plugin.hostsettings import resolve_executor_settings, runtime_seed_settings
    from sevro_core.run.planning import SettingsFileUse
    from sevro_core.runflags import (
        RunFlags,
        apply_settings_file,
        load_settings_file,
        settings_file_note,
        sevro_spellings,
    )

    options = dict(options)
    path = options.pop("run_settings_file")
    file = load_settings_file(path) if path is not None else None
    applied: list[str] = []
    overridden: list[str] = []
    if file is not None:
        options, applied, overridden = apply_settings_file(options, _given_flag, file)
    flags = RunFlags(**sevro_spellings(options, registry))
    host_flags = _host_settings(registry, None, flags.host_setting)  # checked once hosts known
    if file is not None:
        from_file = _file_host_settings(registry, file)
        applied += [f"hostSettings.{k}" for k in from_file if k not in host_flags]
        overridden += [f"hostSettings.{k}" for k in from_file if k in host_flags]
        host_flags = {**from_file, **host_flags}
        use = SettingsFileUse(file.source, file.digest, tuple(applied), tuple(overridden))
        sys.stderr.write(settings_file_note(use))
        flags = evolve(flags, settings_file=use)
    seeds = runtime_seed_settings(registry.hosts(), host_flags)
    executor_flags = click.get_current_context().meta.get("sevro.executor-flags", {})
    executor = resolve_executor_settings(registry.executors(), flags.executor, executor_flags)
    return evolve(flags, runtime_seeds=seeds, executor_settings=executor), host_flags


def _with_spend(plan: Any, flags: Any) -> Any:
    """The plan with its spend ceilings for the roles it runs (the candidate, then each
    configured judge); a ceiling that cannot work is refused here (exit 64)."""
    from attrs import evolve

    from sevro_core.run.spending import spend_ceilings
    from sevro_core.store.spendgate import CANDIDATE_ROLE

    roles = [CANDIDATE_ROLE, *plan.judges.routes]
    ceilings = spend_ceilings(
        flags.max_cost_usd or [], flags.max_call_cost_usd or [], flags.accept_exposure, roles
    )
    return evolve(plan, settings=evolve(plan.settings, spend=ceilings))


def _holdout_before(flags: Any) -> Any:
    """``--holdout PLAN``: the plan read strictly, its flags and a consumed plan refused
    before anything is planned (exit 64); None without ``--holdout``."""
    if flags.holdout is None:
        return None
    from sevro_core.run.holdout import read_plan, refuse_consumed, refuse_flags

    refuse_flags(flags, "--holdout")
    use = read_plan(flags.holdout)
    refuse_consumed(use)
    return use


def _holdout_claim(plan: Any, use: Any) -> Any:
    """Every binding recomputed and compared, then the plan consumed once (``O_EXCL``) before
    the first trial; the plan with the consumption recorded for run.json."""
    from attrs import evolve

    from sevro_core.run.holdout import check_bindings, consume, recheck_plan

    check_bindings(use, plan)
    recheck_plan(use)
    claimed = consume(use)
    sys.stderr.write(f"sevro: holdout plan {claimed.plan_id} consumed ({claimed.consumption})\n")
    return evolve(plan, settings=evolve(plan.settings, holdout=claimed.to_json()))


def _given_flag(name: str) -> bool:
    """Whether the command line (or its environment) gave option ``name``, not its default."""
    from click.core import ParameterSource

    source = click.get_current_context().get_parameter_source(name)
    return source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def _file_host_settings(registry: Any, file: Any) -> dict[str, str]:
    """A settings file's ``hostSettings``, checked like ``--host-setting`` pairs (exit 64)."""
    from sevro_core.errors import InvocationError
    from sevro_core.plugin.hostsettings import file_pairs, resolve_settings

    hosts = registry.hosts()
    pairs = file_pairs(hosts, file.host_settings, file.source.parent)
    try:
        return resolve_settings(hosts, None, {}, pairs)
    except InvocationError as exc:
        message = exc.message.replace("--host-setting ", "hostSettings ", 1)
        raise InvocationError(message, source=file.source, pointer="/hostSettings") from None


def _ci_after_run(outcome: Any, outputs: Any, registry: Any) -> int:
    """Write the run's CI outputs from its retained evidence; the run's exit code, or 70 when
    they could not be written after a run that would have exited 0 (CI must not go green)."""
    from sevro_core.errors import SevroError
    from sevro_core.reporting.ci import run_ci_outputs
    from sevro_core.reporting.report import reporter_for
    from sevro_core.states import ExitCode

    evidence = outcome.result.get("evidencePath")
    if not outputs.wanted:
        return int(outcome.exit_code)
    if evidence is None:
        sys.stderr.write("sevro: no evidence was kept, so no CI outputs were written\n")
        return int(outcome.exit_code)
    try:
        markdown = reporter_for(registry, "markdown")
        run_ci_outputs(outputs, Path(evidence), markdown.render, _note)
    except (SevroError, OSError) as exc:
        message = " ".join(str(exc).split())
        sys.stderr.write(f"sevro: error: CI outputs not written: {message}\n")
        return int(outcome.exit_code) or int(ExitCode.INTERNAL)
    return int(outcome.exit_code)


def _report_ci_outputs(outputs: Any, document: Any, markdown: Any) -> None:
    """``sevro report``'s CI outputs; a file that cannot be written after all exits 70."""
    from sevro_core.reporting.ci import write_ci_outputs
    from sevro_core.states import ExitCode

    try:
        write_ci_outputs(outputs, document, markdown.render, _note)
    except OSError as exc:
        sys.stderr.write(f"sevro: error: CI outputs not written: {' '.join(str(exc).split())}\n")
        raise typer.Exit(int(ExitCode.INTERNAL)) from None


def _note(note: str) -> None:
    sys.stderr.write(f"sevro: {note}\n")


def _notice(line: str) -> None:
    """What the operator must see before dispatch (the worst-case spend), on stderr."""
    sys.stderr.write(f"sevro: {line}\n")


def _execute(plan: Any, flags: Any) -> Any:
    import json

    from sevro_core.reporting.output import TrialProgress, live_terminal, render_summary
    from sevro_core.run.runner import execute
    from sevro_core.vocabulary import ADVISORY_ROLE

    total = len(plan.cases) * plan.settings.trials
    arms: dict[str | None, int] = {}
    for planned in plan.cases:
        arm = planned.arm.id if planned.arm is not None else None
        arms[arm] = arms.get(arm, 0) + plan.settings.trials
    with TrialProgress(
        total,
        enabled=not flags.as_json and live_terminal(sys.stderr),
        verbose=flags.verbose,
        status_interval=flags.status_interval,
        json_lines=flags.log_format == "json",
        arms=arms,
    ) as progress:
        outcome = execute(
            plan,
            on_trial=progress.advance,
            resume=flags.resume,
            on_reused=progress.reused,
            on_notice=_notice,
        )
    if flags.as_json:
        sys.stdout.write(json.dumps(outcome.result) + "\n")
    else:
        experiment = plan.settings.experiment
        origin = experiment.origin if experiment is not None else None
        advisory = plan.judges.get(ADVISORY_ROLE) is not None
        sys.stdout.write(
            render_summary(outcome.result, outcome.statistics, origin, advisory=advisory)
        )
        if outcome.spend is not None:
            from sevro_core.reporting.output import spend_line

            sys.stdout.write(spend_line(outcome.spend))
    return outcome


@app.command()
def validate(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="Case files or directories, or one experiment file.", show_default=False
        ),
    ],
    case_source_root: SourceRootOpt = None,
    case_source_map_file: SourceMapOpt = None,
    plugin: PluginOpt = None,
) -> None:
    """Check case files or an experiment file (schema, sources, skill bundles, fixtures, grader
    configuration) without running anything."""
    from sevro_core.errors import InvocationError

    try:
        from sevro_core.plugin.manager import load_plugins
        from sevro_core.plugin.protocols import FixtureContext
        from sevro_core.run.experiment import experiment_file, load_experiment
        from sevro_core.run.loading import load_cases
        from sevro_core.run.sources import load_case_sources
        from sevro_core.run.validation import validate_cases

        sources = load_case_sources(case_source_root, case_source_map_file)
        registry = load_plugins(_plugin_files_from_argv())
        from sevro_core.run.evalset import eval_set_file, eval_set_summary
        from sevro_core.run.skilleval import load_skilleval, skilleval_file
        from sevro_core.run.triggerset import trigger_set_file, trigger_set_summary

        path = experiment_file(files)
        definition = skilleval_file(files) if path is None else None
        triggers = trigger_set_file(files) if path is None and definition is None else None
        if triggers is not None:  # its cases are made by sevro; the set is what can be wrong
            typer.echo(trigger_set_summary(triggers))
            return
        evals = eval_set_file(files) if path is None and definition is None else None
        if evals is not None:  # the same: the set and its input files are what can be wrong
            typer.echo(eval_set_summary(evals, files[0]))
            return
        design: Any
        if definition is not None:
            design, cases = load_skilleval(definition, None)
        else:
            design, cases = load_experiment(path, None) if path else (None, load_cases(files))
        validate_cases(cases, registry, FixtureContext(sources=sources))
    except InvocationError as exc:
        _fail(exc, as_json=False)
    if design is not None:
        typer.echo(
            f"experiment valid: {len(design.arms)} arm(s), {len(design.comparisons)} "
            f"comparison(s), {design.repetitions} repetition(s)"
        )
    typer.echo(f"{len(cases)} case(s) valid")


@app.command()
def plugins(
    as_json: JsonOpt = False,
    plugin: PluginOpt = None,
) -> None:
    """List installed plugins, what they register and the capabilities they declare."""
    from sevro_core.errors import InvocationError

    try:
        from sevro_core.plugin.manager import load_plugins, register_commands

        registry = load_plugins(_plugin_files_from_argv())
        register_commands(registry, typer.Typer(add_completion=False))
    except InvocationError as exc:
        _fail(exc, as_json=False)
    from sevro_core.reporting.output import render_plugins

    if as_json:
        import json

        document = {
            "format": "sevro.plugins.v1",
            "plugins": [p.to_json() for p in registry.plugins],
        }
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        sys.stdout.write(render_plugins(registry.plugins))


@app.command()
def runs(
    results_root: Annotated[
        Path, typer.Option("--results-root", help="Results root whose runs to list.")
    ] = Path("sevro-results"),
    run_state_root: Annotated[
        Path | None,
        typer.Option("--run-state-root", help="Default: <results-root>/.sevro-state."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List runs: id, evaluation, status, trials done / total, verdict; interrupted ones resume."""
    from sevro_core.errors import SevroError

    try:
        from sevro_core.reporting.runlist import list_runs

        listed = list_runs(results_root.expanduser().resolve(), run_state_root)
    except SevroError as exc:
        _fail(exc, as_json=False)
    if as_json:
        import json

        sys.stdout.write(json.dumps({"format": "sevro.runs.v1", "runs": listed}, indent=2) + "\n")
    else:
        from sevro_core.reporting.runlist import render_runs

        sys.stdout.write(render_runs(listed))


@app.command()
def report(
    inputs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Result files (from `run --json`), run directories or results roots.",
            show_default=False,
        ),
    ] = None,
    result_file: Annotated[
        list[Path] | None,
        typer.Option(
            "--result-file",
            help="Sevro's spelling of one result-file argument (repeatable).",
            show_default=False,
        ),
    ] = None,
    as_json: JsonOpt = False,
    report_format: Annotated[
        str | None,
        typer.Option("--format", help="Reporter format (markdown, json, or a plugin's)."),
    ] = None,
    details: Annotated[
        bool,
        typer.Option("--details", help="Add why each case did not pass (per trial, escaped)."),
    ] = False,
    compare: Annotated[
        bool,
        typer.Option(
            "--compare", help="Compare run A (control) with run B (treatment) as two arms."
        ),
    ] = False,
    fail_on_regression: FailOnRegressionOpt = False,
    junit: JunitOpt = None,
    github_summary: GithubSummaryOpt = False,
    plugin: PluginOpt = None,
) -> None:
    """Summarise retained runs as Markdown (default) or a sevro.report.v1 JSON document.

    Inputs are result files, run directories or results roots (every finished run in them).
    An experiment run's report carries its statistics; `--compare A B` compares two runs of
    the same cases that differ only in their arm.
    """
    from sevro_core.errors import InvocationError

    try:
        from sevro_core.plugin.manager import load_plugins
        from sevro_core.reporting.ci import CiOutputs, check_ci_outputs
        from sevro_core.reporting.report import build_report, reporter_for

        outputs = CiOutputs(junit, github_summary)
        check_ci_outputs(outputs)
        registry = load_plugins(_plugin_files_from_argv())
        chosen = reporter_for(registry, "json" if as_json else (report_format or "markdown"))
        if not inputs and not result_file:
            raise InvocationError("no input: give result files (or --result-file FILE)")
        document = build_report(
            [*(inputs or []), *(result_file or [])],
            details=details,
            compare=compare,
            on_note=_note,
        )
    except InvocationError as exc:
        _fail(exc, as_json=False)
    if outputs.wanted:
        _report_ci_outputs(outputs, document, reporter_for(registry, "markdown"))
    sys.stdout.write(chosen.render(document))
    if fail_on_regression:
        from sevro_core.experiments.comparison import regressed

        if any(regressed(e["statistics"]) for e in document.get("experiments", [])):
            raise typer.Exit(1)


@app.command()
def view(
    inputs: Annotated[
        list[Path],
        typer.Argument(help="Run directories (each holding run.json).", show_default=False),
    ],
    out: Annotated[Path, typer.Option("--out", help="Directory to write index.html into.")] = Path(
        "sevro-view"
    ),
    serve: Annotated[
        bool, typer.Option("--serve", help="Serve --out on 127.0.0.1 until Ctrl-C.")
    ] = False,
    port: Annotated[
        int, typer.Option("--port", help="Port for --serve (0: a free one).", min=0, max=65535)
    ] = 0,
) -> None:
    """Write a self-contained HTML report of runs: cases, trials, experiments (docs/viewer.md).

    Every input is verified as `sevro report` verifies it; nothing on the page loads from the
    network, and agent output, file names and diffs are shown escaped.
    """
    from sevro_core.errors import InvocationError

    try:
        from sevro_core.reporting.viewer.page import build_page
        from sevro_core.reporting.viewer.render import render_page, write_page

        written = write_page(render_page(build_page(inputs)), out.expanduser())
    except InvocationError as exc:
        _fail(exc, as_json=False)
    sys.stdout.write(f"{written}\n")
    if serve:
        from sevro_core.reporting.viewer.serve import serve as serve_page

        def ready(url: str) -> None:
            sys.stdout.write(f"serving {url} (Ctrl-C stops)\n")
            sys.stdout.flush()

        serve_page(written.parent, port, ready)


@app.command(cls=_HostSettingsCommand)
def doctor(
    host: Annotated[
        str, typer.Option(help="Host id or short name to check (`sevro plugins` lists them).")
    ],
    host_setting: HostSettingOpt = None,
    sandbox: Annotated[
        str,
        typer.Option(
            "--sandbox", help="Sandbox to check for hosts that use sevro's (scripted): auto, ..."
        ),
    ] = "auto",
    plugin: PluginOpt = None,
) -> None:
    """Check that a host can run here: binary, version, credentials, sandbox; one fix each."""
    from sevro_core.errors import InvocationError

    try:
        from sevro_core.plugin.protocols import DoctorRequest
        from sevro_core.run.planning import resolve_host_id

        registry = _loaded_registry()
        host_id = resolve_host_id(registry, host)
        settings = _host_settings(registry, host, host_setting)
        check = getattr(registry.host(host_id), "doctor", None)
        if check is None:
            raise InvocationError(f"host {host_id} has no doctor checks")
        results = list(check(DoctorRequest(settings=settings, registry=registry, sandbox=sandbox)))
    except InvocationError as exc:
        _fail(exc, as_json=False)
    sys.stdout.write(_doctor_lines(host_id, results))
    raise typer.Exit(0 if all(r.ok for r in results) else 1)


@app.command(cls=_HostSettingsCommand)
def calibrate(
    cases: CasesArg,
    host_setting: HostSettingOpt = None,
    semantic_host: SemanticHostOpt = None,
    semantic_model: SemanticModelOpt = None,
    semantic_effort: SemanticEffortOpt = None,
    semantic_host_config: SemanticConfigOpt = None,
    jobs: JobsOpt = DEFAULT_JOBS,
    results_root: ResultsRootOpt = Path("sevro-results"),
    project_root: ProjectRootOpt = None,
    workspace_root: WorkspaceRootOpt = None,
    verdict_policy: VerdictPolicyOpt = "sevro.verdict.default",
    run_state_root: RunStateRootOpt = None,
    sandbox: SandboxOpt = "auto",
    protected_root: ProtectedRootOpt = None,
    local_http: LocalHttpOpt = False,
    case_source_root: SourceRootOpt = None,
    case_source_map_file: SourceMapOpt = None,
    plugin: PluginOpt = None,
    log_format: LogFormatOpt = "console",
    verbose: VerboseOpt = 0,
) -> None:
    """Run each case's calibration variants (known-good, known-bad and adversarial reference
    results) on the scripted host and check that each gets the verdict it expects. Exit 0 when
    all do, 1 when one does not (a weak or too strict oracle), 64 on bad input, 70 on a failure;
    2, 3 or 4 when a variant could not be assessed (docs/oracle-calibration.md)."""
    options = dict(locals())
    from sevro_core.errors import InvocationError

    try:
        _setup_logging(log_format, verbose)
        plan, calibration = _calibration_plan(options)
    except InvocationError as exc:
        _fail(exc, as_json=False)
    try:
        from sevro_core.run.runner import execute

        outcome = execute(plan)
    except Exception as exc:  # InvocationError 64, anything else 70: one line either way
        _fail(exc, as_json=False)
    from sevro_core.reporting.oraclecalibration import render_calibration
    from sevro_core.run.oraclecalibration import calibration_exit, compare

    outcomes = compare(calibration, outcome.result)
    sys.stdout.write(render_calibration(outcomes, outcome.run_dir))
    raise typer.Exit(calibration_exit(outcomes, outcome.exit_code))


def _calibration_plan(options: dict[str, Any]) -> tuple[Any, Any]:
    """``sevro run``'s checks and planning, with the scripted host running every variant."""
    from attrs import evolve

    from sevro_core.errors import InvocationError
    from sevro_core.isolation.protection import credential_locations
    from sevro_core.plugin.hostsettings import check_settings_used
    from sevro_core.run.loading import load_cases
    from sevro_core.run.oraclecalibration import CONFIG_SOURCE, calibration_plan, traced
    from sevro_core.run.planning import plan_run
    from sevro_core.runflags import RunFlags, run_settings

    flags = RunFlags(
        **options, host="scripted", host_config=None, model=None, effort=None, skill=None,
        baseline=None, fail_on_regression=False, trials=None, threshold=1.0, dry=False,
        condition="passive", resume=False, status_interval=0.0, as_json=False,
    )  # fmt: skip
    registry = _loaded_registry()
    host_flags = _host_settings(registry, None, flags.host_setting)
    settings = run_settings(flags, host_flags, credential_locations(registry.hosts()))
    calibration = calibration_plan(load_cases(flags.cases))
    host_options = evolve(
        settings.host_options,
        config=calibration.host_config,
        config_source=CONFIG_SOURCE,
    )
    settings = evolve(settings, host_options=host_options)
    check_settings_used(
        registry.hosts(), host_flags, settings.hosts_used(), settings.candidate_hosts()
    )
    try:
        return plan_run(list(calibration.cases), registry, settings), calibration
    except InvocationError as exc:
        raise traced(calibration, exc) from None


judge_app = typer.Typer(
    name="judge",
    help="Judges: calibrate a judge against labelled items.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
app.add_typer(judge_app)


@judge_app.command("calibrate", cls=_HostSettingsCommand)
def judge_calibrate(
    corpus: Annotated[
        Path | None,
        typer.Argument(
            help="A sevro.judge-corpus.v1 file (default: the small corpus sevro ships).",
            show_default=False,
        ),
    ] = None,
    host: HostOpt = "scripted",
    host_config: HostConfigOpt = None,
    model: ModelOpt = None,
    effort: EffortOpt = None,
    host_setting: HostSettingOpt = None,
    rubric: Annotated[
        str | None,
        typer.Option(help="The comparator rubric for pairs (default: the one installed)."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(help="Write the sevro.judge-calibration.v1 record here."),
    ] = None,
    sandbox: SandboxOpt = "auto",
    runtime_config_file: JudgeRuntimeConfigOpt = None,
    as_json: JsonOpt = False,
    plugin: PluginOpt = None,
    log_format: LogFormatOpt = "console",
    verbose: VerboseOpt = 0,
) -> None:
    """Run a judge over a labelled corpus and report how far it agrees with the gold labels:
    agreement, balanced accuracy, Cohen's kappa, order disagreement, injection and length probes.
    Exit 0 when it ran (the figures are information), 64 on bad input, 70 on a failure."""
    from sevro_core.errors import InvocationError

    try:
        from sevro_core.judges.calibrationsetup import CalibrationChoices, prepare_calibration
        from sevro_core.plugin.protocols import HostOptions
        from sevro_core.runflags import host_config as read_host_config

        _setup_logging(log_format, verbose)
        registry = _loaded_registry()
        options = HostOptions(
            config=read_host_config(host_config),
            config_source=str(host_config) if host_config else None,
            model=model,
            effort=effort,
            settings=_host_settings(registry, host, host_setting),
            runtime=_judge_runtime(registry, runtime_config_file),
        )
        _check_output(output)
        choices = CalibrationChoices(corpus, host, options, rubric, sandbox, output)
        setup = prepare_calibration(registry, choices)
    except InvocationError as exc:
        _fail(exc, as_json=as_json)
    try:
        document = _calibrate(setup, output)
    except Exception as exc:  # InvocationError 64, anything else 70: one line either way
        _fail(exc, as_json=as_json)
    if as_json:
        import json

        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        from sevro_core.reporting.calibration import render_calibration

        sys.stdout.write(render_calibration(document))


def _judge_runtime(registry: Any, explicit: Path | None) -> Any:
    """The judge's runtime value from ``--runtime-config-file`` (only an explicit file: the
    command has no project root whose ``sevro.json`` would apply), or None."""
    from sevro_core.errors import InvocationError
    from sevro_core.isolation.protection import credential_locations
    from sevro_core.isolation.runtime import load_runtime

    if explicit is None:
        return None
    if not explicit.is_absolute():
        raise InvocationError("--runtime-config-file must be an absolute path", source=explicit)
    policy = load_runtime(Path.cwd(), explicit, credential_locations(registry.hosts()))
    if policy is not None and policy.native_transcripts:
        raise InvocationError(
            "nativeTranscripts retains a candidate's native transcripts; judge calibration "
            "runs no candidate: remove it from the runtime configuration",
            source=explicit,
            pointer="/nativeTranscripts",
        )
    return policy.host_runtime() if policy is not None else None


def _check_output(output: Path | None) -> None:
    """``--output`` names a file to (re)write in an existing directory: refused before running."""
    from sevro_core.errors import InvocationError

    if output is None:
        return
    if output.is_dir() or not output.parent.is_dir():
        raise InvocationError(
            "--output must name a file in an existing directory", source=str(output)
        )


def _calibrate(setup: Any, output: Path | None) -> Any:
    from sevro_core.formats.jsonio import write_json_atomic
    from sevro_core.judges.calibrationsetup import run_calibration
    from sevro_core.versions import core_version

    document = run_calibration(setup, core_version())
    if output is not None:
        write_json_atomic(output, document)
    return document


def _doctor_lines(host_id: str, results: list[Any]) -> str:
    """One line per check, a fix under each failure; a host without checks says so."""
    lines = [f"sevro doctor: {host_id}"]
    if not results:
        lines.append(f"  {host_id} declares no doctor checks: nothing was verified")
    for result in results:
        lines.append(f"  {'ok  ' if result.ok else 'FAIL'} {result.name}: {result.detail}")
        if not result.ok and result.fix:
            lines.append(f"       fix: {result.fix}")
    return "\n".join(lines) + "\n"


holdout_app = typer.Typer(
    name="holdout",
    help="Holdout plans: seal an experiment, then run it once with `sevro run --holdout`.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
app.add_typer(holdout_app)

SealOutputOpt = Annotated[
    Path,
    typer.Option(
        "--output",
        help="The new plan file (outside the project; never replaced).",
        show_default=False,
    ),
]
SealSeedOpt = Annotated[
    int | None,
    typer.Option(
        "--seed", help="The seed sealed with the plan (default: random).", show_default=False
    ),
]


def holdout_seal(output: Path, seed: int | None, **options: Any) -> None:
    """Plan an experiment as `sevro run` would and seal it: cases with their task fingerprints,
    arms with their source digests, host, model, effort, judges, repetitions and a seed."""
    from sevro_core.errors import SevroError

    as_json = bool(options["as_json"])
    try:
        plan, flags = _planned_for_seal(dict(options, holdout=None))
        document, path = _seal_plan(plan, flags, output, seed)
    except SevroError as exc:
        _fail(exc, as_json=as_json)
    if as_json:
        import json

        sys.stdout.write(json.dumps({"plan": str(path), **document}) + "\n")
    else:
        tasks = document["distinctTasks"]
        sys.stdout.write(f"sealed holdout plan {document['planId']} ({tasks} tasks): {path}\n")


def _planned_for_seal(options: dict[str, Any]) -> tuple[Any, Any]:
    """The run ``sevro run`` would plan from these options (nothing runs)."""
    from sevro_core.isolation.protection import credential_locations
    from sevro_core.plugin.hostsettings import check_settings_used
    from sevro_core.run.holdout import refuse_flags
    from sevro_core.run.planning import plan_run
    from sevro_core.runflags import run_inputs, run_settings

    _setup_logging(options["log_format"], options["verbose"])
    registry = _loaded_registry()
    flags, host_flags = _run_flags(options, registry)
    refuse_flags(flags, "sevro holdout seal")
    settings = run_settings(flags, host_flags, credential_locations(registry.hosts()))
    settings, loaded = run_inputs(flags, settings)
    check_settings_used(
        registry.hosts(), host_flags, settings.hosts_used(), settings.candidate_hosts()
    )
    return plan_run(loaded, registry, settings), flags


def _seal_plan(plan: Any, flags: Any, output: Path, seed: int | None) -> tuple[Any, Path]:
    """Write the plan outside the project and every case file's directory, read it back
    strictly and check it binds this very run; a plan that does not is removed again."""
    from sevro_core.run.holdout import check_bindings, check_outside, plan_document, read_plan
    from sevro_core.run.holdout import seal as write_plan

    document = plan_document(plan, seed)
    suites = (Path(c) if Path(c).is_dir() else Path(c).parent for c in flags.cases)
    roots = [plan.settings.project_root, *suites]
    path = check_outside(output, [Path(root) for root in roots])
    write_plan(path, document)
    try:
        check_bindings(read_plan(path), plan)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return document, path


def _seal_command() -> None:
    """``holdout seal`` takes every ``sevro run`` option but ``--holdout`` (so it plans the run
    exactly as ``sevro run`` will), plus ``--output`` and ``--seed``."""
    import inspect

    run_signature = inspect.signature(run, eval_str=True)
    parameters = [
        inspect.Parameter("output", inspect.Parameter.KEYWORD_ONLY, annotation=SealOutputOpt),
        inspect.Parameter(
            "seed", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=SealSeedOpt
        ),
        *(
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for name, p in run_signature.parameters.items()
            if name != "holdout"
        ),
    ]
    annotations = {p.name: p.annotation for p in parameters}
    holdout_seal.__signature__ = run_signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    holdout_seal.__annotations__ = {**annotations, "return": None}
    holdout_app.command("seal", cls=_HostSettingsCommand)(holdout_seal)


_seal_command()


def main() -> None:
    """The CLI: turns usage errors into one-line exit-64 diagnostics.

    SIGINT and SIGTERM outside a run (a ``KeyboardInterrupt``) propagate to
    :func:`sevro_core.entry.main`, the console entry point, which ends them with one line.
    """
    from click.exceptions import ClickException, NoArgsIsHelpError, UsageError

    from sevro_core.errors import SevroError

    os.environ.setdefault("_TYPER_STANDARD_TRACEBACK", "1")
    as_json = "--json" in sys.argv[1:]
    try:
        from sevro_core.arguments import check_arguments

        check_arguments(sys.argv[1:])  # empty values, multi-line --model: before any command
        code = app(prog_name="sevro", standalone_mode=False)
    except NoArgsIsHelpError as exc:
        sys.stdout.write(exc.format_message() + "\n")
        sys.exit(0)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except UsageError as exc:
        from sevro_core.errors import InvocationError

        _main_fail(InvocationError(exc.format_message()), as_json)
    except SevroError as exc:  # from check_arguments
        _main_fail(exc, as_json)
    except ClickException as exc:
        from sevro_core.errors import InvocationError

        _main_fail(InvocationError(exc.format_message()), as_json)
    except typer.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # click wraps it; entry.main reports it
            raise exc.__cause__ from None
        sys.stderr.write("sevro: aborted\n")
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


def _main_fail(exc: Exception, as_json: bool) -> NoReturn:
    try:
        _fail(exc, as_json=as_json)
    except typer.Exit as done:
        sys.exit(done.exit_code)
