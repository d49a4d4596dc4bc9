"""Case sources: plugins that give a run its cases instead of case files (the extension protocol).

``sevro run --extension-command-file`` asks the case source ``sevro.extension`` (installed by
``sevro-extensions``) to open the extension before any trial: describe, negotiate, resolve and
prepare. What it returns (:class:`OpenedCaseSource`) is everything the engine needs: the cases,
their identity and redacted configuration, one :class:`CasePreparation` per case (installed in
each trial's workspace before the host starts) and the :class:`TrialEvaluator` that grades each
trial after the built-in checks. The core names no extension and runs no process itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Protocol

from attrs import field, frozen

from sevro_core.formats.jsonio import JsonValue
from sevro_core.models import CancelToken, Case, CheckOutcome, Observation
from sevro_core.plugin.preparation import HostPreparation
from sevro_core.plugin.protocols import CaseSources, Plugin
from sevro_core.states import Execution

EXTENSION_CASE_SOURCE: Final = "sevro.extension"
"""The case source ``--extension-command-file`` opens."""
RECOMMENDATIONS: Final = ("passed", "failed", "not_assessed")


@frozen
class ExtensionFlags:
    """``sevro run``'s extension flags, checked (paths absolute; ids namespaced and unique)."""

    command_file: Path
    source_files: tuple[Path, ...]
    configuration_file: Path | None
    redacted_configuration_file: Path | None
    case_id: str
    task_verdict_policy: str | None
    replaced_graders: tuple[str, ...]

    def files(self) -> tuple[Path, ...]:
        """The files candidates must never read: the command, sources and configurations."""
        given = [self.command_file, *self.source_files]
        optional = (self.configuration_file, self.redacted_configuration_file)
        return (*given, *(path for path in optional if path is not None))


@frozen
class CaseSourceRequest:
    """What the run asks of a case source: the operator's extension flags and the candidate
    host it will run on."""

    command_file: Path
    source_files: tuple[Path, ...]
    configuration_file: Path | None
    redacted_configuration_file: Path | None
    case_id: str
    task_verdict_policy: str | None
    """The extension policy to select (None: none, or a registered Python policy won)."""
    replaced_graders: tuple[str, ...]
    project_root: Path
    condition: str
    host_id: str
    model: str
    effort: str
    host_capabilities: frozenset[str]
    instrumentation: tuple[Any, ...] = ()
    """The host's instrumentation offers (none yet)."""
    case_sources: CaseSources | None = None


@frozen
class EvaluationArtifact:
    """A prepared artifact as installed in the trial's workspace."""

    id: str
    path: Path
    sha256: str
    git_exclude: bool = False
    executable: bool = False


@frozen
class EvaluationInput:
    """One trial, as the evaluator sees it after built-in grading."""

    case_id: str
    execution: Execution
    error_code: str | None
    observations: Mapping[str, Observation]
    builtin: tuple[CheckOutcome, ...]
    """Built-in outcomes (replaced checks are never run, so never here)."""
    artifacts: tuple[EvaluationArtifact, ...]
    final_message: str | None
    """The final message's text, when complete (only evaluators see it)."""
    cancel: CancelToken | None = None
    """The run's cancellation: an evaluator's call ends when the run is interrupted."""


@frozen
class EvaluationResult:
    """What the evaluator established for one trial; ``error`` set means a grading error."""

    outcomes: tuple[CheckOutcome, ...] = ()
    """One outcome per extension check, ``id`` the extension's check id."""
    metrics: tuple[Mapping[str, JsonValue], ...] = ()
    domain_outcomes: tuple[Mapping[str, JsonValue], ...] = ()
    recommendation: str | None = None
    """``passed``, ``failed`` or ``not_assessed`` (with a selected extension policy only)."""
    error: str | None = None
    """One line: the call failed or its answer broke a rule. Never a pass."""
    record: Mapping[str, JsonValue] = field(factory=dict)
    """The exchange as retained in evidence (never the configuration)."""


class CasePreparation(Protocol):
    """A case's preparation, made once per run and installed in every trial's workspace."""

    @property
    def host(self) -> HostPreparation: ...
    @property
    def record(self) -> Mapping[str, JsonValue]: ...

    def install(
        self,
        workspace: Path,
        *,
        git: bool,
        fixture_bin_dir: Path | None,
        project_root: Path,
        cancel: CancelToken,
    ) -> None:
        """Write the artifacts and run the fixture setup; raise with a one-line reason (the
        trial's fixture failed, its host never starts)."""

    def artifacts(self, workspace: Path) -> tuple[EvaluationArtifact, ...]:
        """The installed artifacts in ``workspace``, for the evaluator."""


class TrialEvaluator(Protocol):
    def evaluate(self, trial: EvaluationInput) -> EvaluationResult:
        """Grade one trial; extension faults come back as ``error``, never raised."""


@frozen
class OpenedCaseSource:
    """A case source ready for the run: everything was asked before any trial."""

    cases: tuple[Case, ...]
    identity: Mapping[str, JsonValue]
    """``extensionDigest``, ``extensionProtocol``, ``configurationDigest`` and the negotiated
    ``evaluator`` identity."""
    configuration: Mapping[str, JsonValue]
    """The redacted record for the run configuration and ``run.json``'s ``extension``."""
    preparations: Mapping[str, CasePreparation]
    evaluator: TrialEvaluator
    task_verdict_policy: str | None
    replaced_graders: tuple[str, ...]
    graders: tuple[str, ...] = ()
    """The check graders the source grades itself (the extension's advertised graders)."""
    version: str = ""
    """The source's version (the extension's), recorded beside its graders."""


class CaseSource(Plugin, Protocol):
    """A registered case source (``sevro.extension``)."""

    def open(self, request: CaseSourceRequest, cancel: CancelToken) -> OpenedCaseSource:
        """Everything before the first trial; bad input is an ``InvocationError`` (exit 64)."""
