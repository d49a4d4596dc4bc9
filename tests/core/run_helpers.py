"""Small plugins and settings for the planner and engine unit tests (driven through the kit)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sevro_core.errors import ConfigurationError
from sevro_core.models import Case, CheckOutcome, HostRequest, HostResult, Route, TrialView
from sevro_core.plugin.manager import Registry
from sevro_core.plugin.protocols import HostOptions
from sevro_core.run.loading import load_case
from sevro_core.run.planning import RunPlan, RunSettings, plan_run
from sevro_core.states import CheckStatus

HostBehaviour = Callable[[HostRequest], HostResult]


def replying(text: str = "ok", **fields: Any) -> HostBehaviour:
    """A host behaviour that answers ``text`` at once (completely, unless ``fields`` say)."""
    values = {"final_message": text, "complete": True, **fields}
    return lambda request: HostResult(**values)


class StubHost:
    """A host plugin whose trials do what ``behaviour`` says (no process, no model)."""

    version = "1"
    requires: frozenset[str] = frozenset()

    def __init__(
        self,
        behaviour: HostBehaviour | None = None,
        *,
        host_id: str = "acme.host.stub",
        capabilities: frozenset[str] = frozenset(),
        refuse: str | None = None,
    ) -> None:
        self.id = host_id
        self.capabilities = capabilities
        self.behaviour = behaviour or replying()
        self.refuse = refuse

    def configure(self, options: HostOptions) -> StubHost.Configured:
        if self.refuse is not None:
            raise ConfigurationError(self.refuse, "/model")
        return StubHost.Configured(self, options.model or "stub-model")

    class Configured:
        def __init__(self, host: StubHost, model: str) -> None:
            self.host = host
            self.route = Route(host=host.id, model=model, effort="none")
            self.capabilities = host.capabilities

        def redacted_configuration(self) -> Any:
            return {"model": self.route.model}

        def check_case(self, case: Case) -> None:
            return None

        def run(self, request: HostRequest) -> HostResult:
            return self.host.behaviour(request)


class StubGrader:
    """A grader whose checks assess with ``assess(view) -> CheckStatus`` (or raise)."""

    version = "1"
    stage = 10

    def __init__(
        self,
        assess: Callable[[TrialView], CheckStatus] | None = None,
        *,
        grader_id: str = "acme.grader.stub",
        requires: frozenset[str] = frozenset(),
        provides: frozenset[str] = frozenset(),
        version: str = "1",
    ) -> None:
        self.id = grader_id
        self.version = version
        self.capabilities: frozenset[str] = frozenset()
        self.requires = requires
        self.provides = provides
        self.assess = assess or (lambda view: CheckStatus.PASSED)

    def compile(self, configuration: Mapping[str, Any]) -> StubGrader.Compiled:
        if configuration.get("broken"):
            raise ConfigurationError("broken must not be set", "/broken")
        return StubGrader.Compiled(self)

    class Compiled:
        def __init__(self, grader: StubGrader) -> None:
            self.grader = grader

        def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
            return CheckOutcome(check_id, self.grader.id, self.grader.assess(view))


def failing_grader(exc: Exception) -> Callable[[TrialView], CheckStatus]:
    def assess(view: TrialView) -> CheckStatus:
        raise exc

    return assess


def case(
    *,
    checks: list[dict[str, Any]] | None = None,
    case_id: str = "example",
    **fields: Any,
) -> Case:
    """A case as ``sevro run`` would load it from ``case.json``."""
    document = {
        "id": case_id,
        "prompt": "Return ok.",
        "fixture": {"files": {"a.txt": "a\n"}},
        "checks": checks or [],
        "requiredEvidence": [],
        **fields,
    }
    return load_case(document, source="case.json")


def check(grader: str, check_id: str = "c", **configuration: Any) -> dict[str, Any]:
    return {"id": check_id, "grader": grader, "configuration": configuration}


def settings(tmp_path: Path, host: str = "acme.host.stub", **fields: Any) -> RunSettings:
    """Run settings as the CLI builds them, with ``--sandbox none`` unless told otherwise."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    options = fields.pop("host_options", HostOptions())
    values: dict[str, Any] = {
        "trials": 1,
        "threshold": 1.0,
        "jobs": 1,
        "dry": False,
        "condition": "passive",
        "results_root": tmp_path / "results",
        "project_root": project,
        "host": host,
        "host_options": options,
        "sandbox": "none",
        "workspace_root": _workspaces(tmp_path),
    }
    values.update(fields)
    return RunSettings(**values)


def _workspaces(tmp_path: Path) -> Path:
    path = tmp_path / "workspaces"
    path.mkdir(exist_ok=True)
    return path


def plan(registry: Registry, tmp_path: Path, *cases: Case, **fields: Any) -> RunPlan:
    return plan_run(list(cases) or [case()], registry, settings(tmp_path, **fields))
