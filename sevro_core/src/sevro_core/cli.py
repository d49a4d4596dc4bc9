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

import typer
from typer.core import TyperGroup

from sevro_core.entry import interrupted
from sevro_core.limits import (
    DEFAULT_JOBS,
    DEFAULT_STATUS_INTERVAL_SECONDS,
    MAX_JOBS,
    MAX_TRIALS,
)


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
    argv = sys.argv[1:]
    files = []
    for index, arg in enumerate(argv):
        if arg == "--plugin" and index + 1 < len(argv):
            files.append(Path(argv[index + 1]))
        elif arg.startswith("--plugin="):
            files.append(Path(arg.split("=", 1)[1]))
    return files


def _plugin_app(plugin_files: list[Path]) -> typer.Typer | None:
    from sevro_core.plugin.manager import load_plugins, register_commands

    registry = load_plugins(plugin_files)
    extra = typer.Typer(add_completion=False, rich_markup_mode=None)
    register_commands(registry, extra)
    return extra if extra.registered_commands else None


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


def _positive_int(value: int, flag: str, maximum: int) -> int:
    from sevro_core.errors import InvocationError

    if value < 1 or value > maximum:
        raise InvocationError(f"{flag} must be between 1 and {maximum}, not {value}")
    return value


@app.command()
def run(
    cases: Annotated[
        list[Path],
        typer.Argument(
            help="Case files (one case or an array) or directories of *.json case files.",
            show_default=False,
        ),
    ],
    host: Annotated[
        str, typer.Option(help="Host id or short name (scripted, codex, claude).")
    ] = "scripted",
    host_config: Annotated[
        Path | None,
        typer.Option(
            "--host-config", help="Host configuration JSON file (the scripted host's script)."
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model the host should use.")] = None,
    effort: Annotated[
        str | None, typer.Option(help="Reasoning effort the host should use.")
    ] = None,
    codex_bin: Annotated[
        Path | None, typer.Option("--codex-bin", help="Codex CLI binary (default: codex on PATH).")
    ] = None,
    codex_auth_file: Annotated[
        Path | None,
        typer.Option("--codex-auth-file", help="Codex auth.json copied into each trial's home."),
    ] = None,
    codex_api_key_env: Annotated[
        str | None,
        typer.Option(
            "--codex-api-key-env", help="Name of the environment variable holding an API key."
        ),
    ] = None,
    claude_bin: Annotated[
        Path | None,
        typer.Option("--claude-bin", help="Claude Code binary (default: claude on PATH)."),
    ] = None,
    claude_credential_file: Annotated[
        Path | None,
        typer.Option(
            "--claude-credential-file",
            help="Claude Code .credentials.json copied into each trial's config directory.",
        ),
    ] = None,
    claude_api_key_env: Annotated[
        str | None,
        typer.Option(
            "--claude-api-key-env",
            help="Name of the environment variable holding an Anthropic API key.",
        ),
    ] = None,
    trials: Annotated[int, typer.Option(help="Trials per case.")] = 1,
    threshold: Annotated[
        float, typer.Option(help="Share of trials that must pass for a case to pass, in (0, 1].")
    ] = 1.0,
    jobs: Annotated[int, typer.Option(help="Trials run in parallel.")] = DEFAULT_JOBS,
    dry: Annotated[bool, typer.Option("--dry", help="Prepare fixtures only; run no host.")] = False,
    condition: Annotated[str, typer.Option(help="passive or enforced.")] = "passive",
    results_root: Annotated[
        Path, typer.Option("--results-root", help="Where runs are kept.")
    ] = Path("sevro-results"),
    project_root: Annotated[
        Path | None,
        typer.Option(
            "--project-root", help="Project whose revision enters the identity (default: cwd)."
        ),
    ] = None,
    workspace_root: Annotated[
        Path | None,
        typer.Option(
            "--workspace-root", help="Where trial workspaces are made (default: system temp)."
        ),
    ] = None,
    verdict_policy: Annotated[
        str, typer.Option("--verdict-policy", help="Task-verdict policy.")
    ] = "sevro.verdict.default",
    run_state_root: Annotated[
        Path | None,
        typer.Option(
            "--run-state-root",
            help="Where ownership and checkpoints live (default: <results-root>/.sevro-state).",
        ),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Continue the latest interrupted run of this evaluation."),
    ] = False,
    sandbox: Annotated[
        str,
        typer.Option(
            "--sandbox",
            help="Isolation for host commands and shell checks: auto, bwrap, sandbox-exec, or "
            "none (an explicit opt-out, recorded in evidence and identity).",
        ),
    ] = "auto",
    protected_root: Annotated[
        list[Path] | None,
        typer.Option(
            "--protected-root",
            help="Hide this file or directory from sandboxed commands too (repeatable).",
        ),
    ] = None,
    local_http: Annotated[
        bool,
        typer.Option(
            "--local-http",
            help="Let sandboxed commands use loopback (local HTTP test servers); no other network.",
        ),
    ] = False,
    case_source_root: SourceRootOpt = None,
    case_source_map_file: SourceMapOpt = None,
    status_interval: Annotated[
        float,
        typer.Option(
            "--status-interval",
            help="Off a terminal, print a status line every SECONDS (0: never).",
        ),
    ] = DEFAULT_STATUS_INTERVAL_SECONDS,
    as_json: JsonOpt = False,
    plugin: PluginOpt = None,
    log_format: LogFormatOpt = "console",
    verbose: VerboseOpt = 0,
) -> None:
    """Run cases for N trials, grade them and keep the evidence."""
    from sevro_core.errors import InvocationError, SevroError

    try:
        _setup_logging(log_format, verbose)
        _status_interval(status_interval)
        settings = _run_settings(
            host=host,
            host_config=host_config,
            model=model,
            effort=effort,
            host_settings=_host_settings(
                host,
                {
                    "codex.bin": ("--codex-bin", codex_bin),
                    "codex.authFile": ("--codex-auth-file", codex_auth_file),
                    "codex.apiKeyEnv": ("--codex-api-key-env", codex_api_key_env),
                    "claude.bin": ("--claude-bin", claude_bin),
                    "claude.credentialFile": ("--claude-credential-file", claude_credential_file),
                    "claude.apiKeyEnv": ("--claude-api-key-env", claude_api_key_env),
                },
            ),
            trials=trials,
            threshold=threshold,
            jobs=jobs,
            dry=dry,
            condition=condition,
            results_root=results_root,
            project_root=project_root,
            workspace_root=workspace_root,
            verdict_policy=verdict_policy,
            run_state_root=run_state_root,
            sandbox=sandbox,
            protected_roots=protected_root or [],
            local_http=local_http,
            case_source_root=case_source_root,
            case_source_map_file=case_source_map_file,
        )
        from sevro_core.plugin.manager import load_plugins
        from sevro_core.run.runner import prepare

        registry = load_plugins(_plugin_files_from_argv())
        plan = prepare(cases, registry, settings)
    except InvocationError as exc:
        _fail(exc, as_json=as_json)
    try:
        outcome = _execute(
            plan,
            as_json=as_json,
            resume=resume,
            verbose=verbose,
            status_interval=status_interval,
            json_lines=log_format == "json",
        )
    except SevroError as exc:
        _fail(exc, as_json=as_json)
    except Exception as exc:
        _fail(exc, as_json=as_json)
    raise typer.Exit(outcome.exit_code)


def _host_settings(host: str, flags: dict[str, tuple[str, Path | str | None]]) -> dict[str, str]:
    """Host-specific flags, keyed ``<host>.<setting>``; a flag for another host is an error."""
    from sevro_core.errors import InvocationError

    out: dict[str, str] = {}
    for key, (flag, value) in flags.items():
        if value is None:
            continue
        owner = key.split(".", 1)[0]
        if host not in (owner, f"sevro.host.{owner}"):
            raise InvocationError(f"{flag} needs --host {owner}")
        out[key] = str(value.expanduser().resolve()) if isinstance(value, Path) else value
    return out


def _run_settings(
    *,
    host: str,
    host_config: Path | None,
    model: str | None,
    effort: str | None,
    host_settings: dict[str, str],
    trials: int,
    threshold: float,
    jobs: int,
    dry: bool,
    condition: str,
    results_root: Path,
    project_root: Path | None,
    workspace_root: Path | None,
    verdict_policy: str,
    run_state_root: Path | None,
    sandbox: str = "auto",
    protected_roots: list[Path] | None = None,
    local_http: bool = False,
    case_source_root: Path | None = None,
    case_source_map_file: Path | None = None,
) -> Any:
    import math

    from sevro_core.arguments import check_results_root, check_writable_directory
    from sevro_core.errors import InvocationError
    from sevro_core.formats.jsonio import read_json_file
    from sevro_core.limits import MAX_HOST_CONFIG_BYTES
    from sevro_core.plugin.protocols import NETWORK_LOCAL_HTTP, NETWORK_NONE, HostOptions
    from sevro_core.run.planning import CONDITIONS, RunSettings
    from sevro_core.run.sources import load_case_sources

    _positive_int(trials, "--trials", MAX_TRIALS)
    _positive_int(jobs, "--jobs", MAX_JOBS)
    if not math.isfinite(threshold) or not 0 < threshold <= 1:
        raise InvocationError(f"--threshold must be in (0, 1], not {threshold}")
    if condition not in CONDITIONS:
        raise InvocationError(f"--condition must be passive or enforced, not {condition!r}")
    config = None
    if host_config is not None:
        config = read_json_file(host_config, MAX_HOST_CONFIG_BYTES, what="host configuration")
        if not isinstance(config, dict):
            raise InvocationError("host configuration must be a JSON object", source=host_config)
    project = (project_root or Path.cwd()).resolve()
    if not project.is_dir():
        raise InvocationError("--project-root is not a directory", source=project_root)
    if workspace_root is not None:
        check_writable_directory(workspace_root, "--workspace-root")  # read-only: 64, not 70
    if workspace_root is not None and workspace_root.resolve() == Path("/"):
        raise InvocationError(
            "--workspace-root must not be /: it is hidden from sandboxed commands"
        )
    if not sandbox.strip():
        raise InvocationError("--sandbox must be auto, none or a sandbox backend name")
    protected = _protected_roots(protected_roots or [])
    results = results_root.expanduser().resolve()
    check_results_root(results)
    return RunSettings(
        trials=trials,
        threshold=float(threshold),
        jobs=jobs,
        dry=dry,
        condition=condition,
        results_root=results,
        project_root=project,
        host=host,
        host_options=HostOptions(
            config=config,
            config_source=str(host_config) if host_config else None,
            model=model,
            effort=effort,
            settings=host_settings,
            protected_roots=_host_protected_roots(project, results, run_state_root, protected),
        ),
        verdict_policy=verdict_policy,
        workspace_root=workspace_root.resolve() if workspace_root is not None else None,
        run_state_root=run_state_root.expanduser().resolve() if run_state_root else None,
        sandbox=sandbox,
        network=NETWORK_LOCAL_HTTP if local_http else NETWORK_NONE,
        protected_roots=protected,
        case_sources=load_case_sources(case_source_root, case_source_map_file),
    )


def _host_protected_roots(
    project: Path, results: Path, run_state_root: Path | None, extra: tuple[Path, ...]
) -> tuple[Path, ...]:
    """What a host's own permission settings must deny: the engine's roots and the operator's."""
    from sevro_core.isolation.protection import canonical, engine_roots

    roots = engine_roots(project_root=project, results_root=results, run_state_root=run_state_root)
    return tuple(dict.fromkeys([*(canonical(r.path) for r in roots), *extra]))


def _protected_roots(paths: list[Path]) -> tuple[Path, ...]:
    """Canonical, existing, never ``/``: a root that does not exist could appear unprotected."""
    from sevro_core.errors import InvocationError
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


def _status_interval(seconds: float) -> None:
    import math

    from sevro_core.errors import InvocationError

    if not math.isfinite(seconds) or not 0 <= seconds <= 86_400:
        raise InvocationError(f"--status-interval must be between 0 and 86400, not {seconds}")


def _execute(
    plan: Any,
    *,
    as_json: bool,
    resume: bool,
    verbose: int = 0,
    status_interval: float = 0,
    json_lines: bool = False,
) -> Any:
    import json

    from sevro_core.reporting.output import TrialProgress, render_summary
    from sevro_core.run.runner import execute

    total = len(plan.cases) * plan.settings.trials
    with TrialProgress(
        total,
        enabled=not as_json and sys.stderr.isatty(),
        verbose=verbose,
        status_interval=status_interval,
        json_lines=json_lines,
    ) as progress:
        outcome = execute(plan, on_trial=progress.advance, resume=resume)
    if as_json:
        sys.stdout.write(json.dumps(outcome.result) + "\n")
    else:
        sys.stdout.write(render_summary(outcome.result))
    return outcome


@app.command()
def validate(
    files: Annotated[
        list[Path], typer.Argument(help="Case files or directories.", show_default=False)
    ],
    case_source_root: SourceRootOpt = None,
    case_source_map_file: SourceMapOpt = None,
    plugin: PluginOpt = None,
) -> None:
    """Check case files (schema, fixtures, grader configuration) without running anything."""
    from sevro_core.errors import InvocationError

    try:
        from sevro_core.plugin.manager import load_plugins
        from sevro_core.plugin.protocols import FixtureContext
        from sevro_core.run.loading import load_cases
        from sevro_core.run.sources import load_case_sources
        from sevro_core.run.validation import validate_cases

        sources = load_case_sources(case_source_root, case_source_map_file)
        registry = load_plugins(_plugin_files_from_argv())
        cases = load_cases(files)
        validate_cases(cases, registry, FixtureContext(sources=sources))
    except InvocationError as exc:
        _fail(exc, as_json=False)
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
        list[Path],
        typer.Argument(
            help="Result files (from `run --json`), run directories or results roots.",
            show_default=False,
        ),
    ],
    as_json: JsonOpt = False,
    report_format: Annotated[
        str | None,
        typer.Option("--format", help="Reporter format (markdown, json, or a plugin's)."),
    ] = None,
    details: Annotated[
        bool,
        typer.Option("--details", help="Add why each case did not pass (per trial, escaped)."),
    ] = False,
    plugin: PluginOpt = None,
) -> None:
    """Summarise retained runs as Markdown (default) or a sevro.report.v1 JSON document.

    Inputs are result files, run directories or results roots (every finished run in them).
    """
    from sevro_core.errors import InvocationError

    try:
        from sevro_core.plugin.manager import load_plugins
        from sevro_core.reporting.report import build_report, reporter_for

        registry = load_plugins(_plugin_files_from_argv())
        chosen = reporter_for(registry, "json" if as_json else (report_format or "markdown"))
        document = build_report(
            inputs, details=details, on_note=lambda note: sys.stderr.write(f"sevro: {note}\n")
        )
    except InvocationError as exc:
        _fail(exc, as_json=False)
    sys.stdout.write(chosen.render(document))


@app.command()
def doctor(
    host: Annotated[str, typer.Option(help="Host id or short name to check (codex, ...).")],
    codex_bin: Annotated[
        Path | None, typer.Option("--codex-bin", help="Codex CLI binary (default: codex on PATH).")
    ] = None,
    codex_auth_file: Annotated[
        Path | None, typer.Option("--codex-auth-file", help="Codex auth.json to check.")
    ] = None,
    codex_api_key_env: Annotated[
        str | None, typer.Option("--codex-api-key-env", help="Variable holding an API key.")
    ] = None,
    claude_bin: Annotated[
        Path | None, typer.Option("--claude-bin", help="Claude Code binary (default: PATH).")
    ] = None,
    claude_credential_file: Annotated[
        Path | None, typer.Option("--claude-credential-file", help="Credentials to check.")
    ] = None,
    claude_api_key_env: Annotated[
        str | None, typer.Option("--claude-api-key-env", help="Variable holding an API key.")
    ] = None,
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
        from sevro_core.plugin.manager import load_plugins
        from sevro_core.run.planning import resolve_host_id

        registry = load_plugins(_plugin_files_from_argv())
        host_id = resolve_host_id(registry, host)
        settings = _host_settings(
            host,
            {
                "codex.bin": ("--codex-bin", codex_bin),
                "codex.authFile": ("--codex-auth-file", codex_auth_file),
                "codex.apiKeyEnv": ("--codex-api-key-env", codex_api_key_env),
                "claude.bin": ("--claude-bin", claude_bin),
                "claude.credentialFile": ("--claude-credential-file", claude_credential_file),
                "claude.apiKeyEnv": ("--claude-api-key-env", claude_api_key_env),
            },
        )
        check = getattr(registry.get("host", host_id), "doctor", None)
        if check is None:
            raise InvocationError(f"host {host_id} has no doctor checks")
        results = _doctor_results(check, settings, registry, sandbox)
    except InvocationError as exc:
        _fail(exc, as_json=False)
    lines = [f"sevro doctor: {host_id}"]
    for result in results:
        lines.append(f"  {'ok  ' if result.ok else 'FAIL'} {result.name}: {result.detail}")
        if not result.ok and result.fix:
            lines.append(f"       fix: {result.fix}")
    sys.stdout.write("\n".join(lines) + "\n")
    raise typer.Exit(0 if all(r.ok for r in results) else 1)


def _doctor_results(check: Any, settings: dict[str, str], registry: Any, sandbox: str) -> Any:
    """Hosts whose commands run in sevro's sandbox take the registry and ``--sandbox``."""
    import inspect

    from sevro_core.errors import InvocationError

    if "registry" in inspect.signature(check).parameters:
        return check(settings, registry=registry, sandbox=sandbox)
    if sandbox != "auto":
        raise InvocationError("--sandbox applies to hosts that run commands in sevro's sandbox")
    if "request" in inspect.signature(check).parameters:
        from sevro_core.plugin.protocols import DoctorRequest

        return check(DoctorRequest(settings=settings, registry=registry))
    return check(settings)


def main() -> None:
    """Console entry point: turns usage errors into one-line exit-64 diagnostics."""
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
    except KeyboardInterrupt as exc:  # SIGINT, or SIGTERM (sevro_core.entry), outside a run
        interrupted(exc)
    except typer.Abort as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # click wraps it
            interrupted(exc.__cause__)
        sys.stderr.write("sevro: aborted\n")
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


def _main_fail(exc: Exception, as_json: bool) -> NoReturn:
    try:
        _fail(exc, as_json=as_json)
    except typer.Exit as done:
        sys.exit(done.exit_code)
