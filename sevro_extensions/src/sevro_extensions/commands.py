"""``sevro extension check``: the conformance suite, added to the CLI through the commands hook.

The command's work is in :mod:`sevro_extensions.conformance`, imported only when it runs, so
``sevro --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from sevro_core.api import hookimpl
from sevro_extensions.limits import EXTENSION_TIMEOUT_MS


@hookimpl
def sevro_register_commands(app: Any) -> None:
    """Add the ``extension`` command group with its ``check`` command."""
    group = typer.Typer(
        help="Work with extensions (protocol v1, docs/extensions.md).",
        no_args_is_help=True,
        add_completion=False,
        rich_markup_mode=None,
    )

    @group.command("check")
    def check(
        command_file: Annotated[
            Path,
            typer.Option("--extension-command-file", help="JSON argv of the extension."),
        ],
        source_files: Annotated[
            list[Path] | None,
            typer.Option(
                "--extension-source-file", help="A file of the extension's code (repeatable)."
            ),
        ] = None,
        configuration_file: Annotated[
            Path | None,
            typer.Option(
                "--extension-configuration-file", help="JSON object sent in every request."
            ),
        ] = None,
        case_id: Annotated[
            str | None, typer.Option("--case-id", help="The case to resolve and prepare.")
        ] = None,
        host: Annotated[
            str, typer.Option("--host", help="Negotiate and prepare against this host.")
        ] = "scripted",
        timeout_ms: Annotated[
            int, typer.Option("--timeout-ms", help="Time one call may take.")
        ] = EXTENSION_TIMEOUT_MS,
        source_root: Annotated[
            Path | None,
            typer.Option("--case-source-root", help="Root of the files sourceRef artifacts name."),
        ] = None,
        source_map: Annotated[
            Path | None,
            typer.Option("--case-source-map-file", help="JSON map of source id to file URL."),
        ] = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="Write exactly one JSON document to stdout.")
        ] = False,
    ) -> None:
        """Run an extension through every method and check its answers obey protocol v1.

        Exit 0 when every check holds, 1 when one fails, 64 for bad input.
        """
        import sys

        from sevro_core.api import load_case_sources, load_plugins
        from sevro_extensions import conformance

        def find_host(name: str) -> tuple[str, tuple[str, ...]] | None:
            registry = load_plugins()
            # the short name `sevro run --host` takes (codex) names the same host
            for host_id in (name, f"sevro.host.{name}"):
                found = registry.host(host_id)
                if found is not None:
                    return host_id, tuple(sorted(found.capabilities))
            return None

        request = conformance.check_request(
            command_file=command_file,
            source_files=source_files or [],
            configuration_file=configuration_file,
            case_id=case_id,
            host_id=host,
            find_host=find_host,
            project_root=Path.cwd(),
            timeout_ms=timeout_ms,
            case_sources=load_case_sources(source_root, source_map),
        )
        report = conformance.run_check(request)
        out = conformance.report_json(report) if as_json else report.text()
        sys.stdout.write(out)
        raise typer.Exit(report.exit_code)

    app.add_typer(group, name="extension")
