"""Hook specifications of the ``sevro`` plugin system (pluggy project name ``sevro``).

Registration hooks take a ``register`` callback, in the style of llm and tox; a plugin calls it
once per object it provides. Lifecycle hooks let observers follow a run; their return values are
ignored and an exception in one is logged, never fatal to the evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from sevro_core.plugin.casesources import CaseSource
    from sevro_core.plugin.protocols import (
        Executor,
        FixtureProvider,
        Grader,
        Host,
        Reporter,
        Reviewer,
        Rubric,
        Sandbox,
        VerdictPolicy,
    )
    from sevro_core.plugin.runinfo import RunInfo

PROJECT = "sevro"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def sevro_register_hosts(register: Callable[[Host], None]) -> None:
    """Register agent hosts (``sevro.host.scripted``, ``acme.host.foo``, ...)."""


@hookspec
def sevro_register_graders(register: Callable[[Grader], None]) -> None:
    """Register graders (``sevro.regex``, ``sevro.shell``, ...)."""


@hookspec
def sevro_register_fixtures(register: Callable[[FixtureProvider], None]) -> None:
    """Register fixture providers (inline files, generated Git history, repositories)."""


@hookspec
def sevro_register_sandboxes(register: Callable[[Sandbox], None]) -> None:
    """Register sandbox backends (bubblewrap, sandbox-exec)."""


@hookspec
def sevro_register_verdict_policies(register: Callable[[VerdictPolicy], None]) -> None:
    """Register task-verdict policies (``sevro.verdict.default``)."""


@hookspec
def sevro_register_reporters(register: Callable[[Reporter], None]) -> None:
    """Register report renderers (``sevro.report.markdown``, ``sevro.report.json``)."""


@hookspec
def sevro_register_reviewers(register: Callable[[Reviewer], None]) -> None:
    """Register advisory reviewers (``sevro.reviewer.advisory``): a judge's prompt and the
    parse of its findings about one trial's change. Reviews never change a verdict."""


@hookspec
def sevro_register_rubrics(register: Callable[[Rubric], None]) -> None:
    """Register comparator rubrics (``sevro.rubric.software-engineering``): what a blinded
    pairwise judge weighs between two results labelled A and B, and how its reply decides."""


@hookspec
def sevro_register_case_sources(register: Callable[[CaseSource], None]) -> None:
    """Register case sources (``sevro.extension``): what gives ``sevro run`` its cases, checks
    and evaluation instead of case files."""


@hookspec
def sevro_register_executors(register: Callable[[Executor], None]) -> None:
    """Register trial executors (``sevro.executor.local``): where a run's trials execute while
    the run owner admits them and persists their evidence."""


@hookspec
def sevro_register_commands(app: Any) -> None:
    """Add commands to the ``sevro`` Typer application (loaded only when a command needs it)."""


@hookspec
def sevro_run_started(run: RunInfo) -> None:
    """A run has been planned and claimed; no trial has started yet."""


@hookspec
def sevro_trial_finished(run: RunInfo, trial: Mapping[str, Any]) -> None:
    """A trial's evidence (``sevro.trial-evidence.v1``) has been persisted."""


@hookspec
def sevro_run_finished(run: RunInfo, result: Mapping[str, Any]) -> None:
    """``run.json`` has been written; ``result`` is the ``sevro.cli-result.v1`` document."""
