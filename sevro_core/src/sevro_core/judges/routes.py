"""Judge routes: which installed host, model and effort plays each judge role in a run.

A judge is configured like the candidate's host (the same host-specific settings, such as a
binary or credential file), but with its own role, model, effort and configuration, so a host
can refuse a role it cannot run without tools. Routes enter the evaluation identity through the
run's configuration (``hostConfiguration`` per role) and ``run.json`` ``routes``; a run provides
``sevro.judge.<role>`` to capability negotiation only for the roles it configured, so a check
that needs a judge nobody configured is refused before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from attrs import evolve, field, frozen

from sevro_core.errors import ConfigurationError, InvocationError
from sevro_core.formats.jsonio import JsonValue
from sevro_core.models import Route
from sevro_core.plugin.manager import Registry
from sevro_core.plugin.protocols import ConfiguredHost, Host, HostOptions
from sevro_core.vocabulary import ADVISORY_ROLE, COMPARATOR_ROLE, JUDGE_PREFIX, JUDGE_ROLES


@frozen
class JudgeRouteSpec:
    """A judge route as the operator chose it (``--semantic-host ...`` or the experiment file)."""

    role: str
    host: str
    model: str | None = None
    effort: str | None = None
    config: Mapping[str, JsonValue] | None = None
    """The judge host's configuration (``--<role>-host-config``); None: the candidate's when
    the judge is the candidate's host, else none."""
    config_source: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.role not in JUDGE_ROLES:
            raise ValueError(f"unknown judge role {self.role!r}")


@frozen
class JudgeRoute:
    role: str
    host_plugin: Host
    host: ConfiguredHost

    @property
    def route(self) -> Route:
        route = self.host.route
        return Route(route.host, route.model, route.effort, role=self.role)


@frozen
class JudgeRoutes:
    """The run's configured judges, by role (empty when the run has none)."""

    routes: Mapping[str, JudgeRoute] = field(factory=dict)

    def get(self, role: str) -> JudgeRoute | None:
        return self.routes.get(role)

    @property
    def capabilities(self) -> frozenset[str]:
        """``sevro.judge.<role>`` for every configured role."""
        return frozenset(JUDGE_PREFIX + role for role in self.routes)

    def configuration(self) -> dict[str, JsonValue]:
        """Each judge's redacted configuration by role: part of the evaluation identity."""
        return {
            role: {"route": r.route.to_json(), "host": r.host.redacted_configuration()}
            for role, r in sorted(self.routes.items())
        }

    def route_list(self) -> list[Route]:
        return [self.routes[role].route for role in JUDGE_ROLES if role in self.routes]


NO_JUDGES = JudgeRoutes()


def configure_judges(
    registry: Registry,
    specs: Sequence[JudgeRouteSpec],
    candidate: tuple[str, HostOptions],
) -> JudgeRoutes:
    """Configure every judge route against its host; a refusal is one line, exit 64.

    ``candidate`` is the candidate host's id and options: judges share its host-specific
    settings and protected roots, and its configuration when they run the same host.
    """
    candidate_host, base = candidate
    routes: dict[str, JudgeRoute] = {}
    for spec in specs:
        if spec.role in routes:
            raise InvocationError(f"the {spec.role} judge is configured twice")
        host_id = _resolve(registry, spec)
        config, source = spec.config, spec.config_source
        if config is None and host_id == candidate_host:
            config, source = base.config, base.config_source
        options = evolve(
            base,
            role=spec.role,
            model=spec.model,
            effort=spec.effort,
            config=config,
            config_source=source,
        )
        plugin = registry.hosts()[host_id]
        try:
            configured = plugin.configure(options)
        except ConfigurationError as exc:
            raise InvocationError(
                f"{spec.role} judge {host_id}: {exc.message}", source=source, pointer=exc.pointer
            ) from None
        routes[spec.role] = JudgeRoute(spec.role, plugin, configured)
    return JudgeRoutes(routes)


def _resolve(registry: Registry, spec: JudgeRouteSpec) -> str:
    for candidate in (spec.host, f"sevro.host.{spec.host}"):
        if registry.host(candidate) is not None:
            return candidate
    raise InvocationError(
        f"--{spec.role}-host {spec.host!r} is not installed; available hosts: "
        f"{', '.join(registry.ids('host')) or 'none'}"
    )


DEFAULT_REVIEWER = "sevro.reviewer.advisory"
DEFAULT_RUBRIC = "sevro.rubric.software-engineering"
COMPARE_WHEN = ("both-passed", "both-completed")
"""When the comparator judges a pair: by default only when both trials passed their objective
checks (objective results dominate), or whenever both completed."""


@frozen
class JudgeSettings:
    """What the operator chose about judges for a run (flags or the experiment file)."""

    routes: tuple[JudgeRouteSpec, ...] = ()
    advisory_exclude: tuple[str, ...] = ()
    """Workspace paths the advisory reviewer never sees (``--advisory-exclude``), sorted."""
    reviewer: str = DEFAULT_REVIEWER
    rubric: str = DEFAULT_RUBRIC
    compare_when: str = COMPARE_WHEN[0]
    require_calibrated_judge: Mapping[str, Mapping[str, JsonValue]] = field(factory=dict)
    """The experiment file's ``requireCalibratedJudge`` by judge role (``semantic``,
    ``comparator``; its ``calibration`` path resolved against the file), checked before
    anything runs."""

    def spec(self, role: str) -> JudgeRouteSpec | None:
        return next((s for s in self.routes if s.role == role), None)

    def configuration(self) -> dict[str, JsonValue]:
        """What of these settings enters the configuration digest (beyond the routes)."""
        out: dict[str, JsonValue] = {}
        roles = {s.role for s in self.routes}
        if ADVISORY_ROLE in roles:
            out["advisoryReviewer"] = self.reviewer
            out["advisoryExcludedPaths"] = list(self.advisory_exclude)
        if COMPARATOR_ROLE in roles:
            out["comparatorRubric"] = self.rubric
            out["comparatorWhen"] = self.compare_when
        return out


NO_JUDGE_SETTINGS = JudgeSettings()
