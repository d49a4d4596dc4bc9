"""The planner (sevro_core.run.planning.plan_run) in-process, with test-scoped plugins: host and
grader resolution, capability negotiation, refusals and identity stability. Every refusal has
its accepted counterpart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError
from sevro_core.models import Case
from sevro_core.plugin.protocols import HostOptions
from sevro_core.run.planning import CONTINUATION_CAPABILITY, ENFORCED_CAPABILITY, plan_run
from sevro_core.testing import ScopedPlugins
from tests.core.run_helpers import StubGrader, StubHost, case, check, plan, settings

NEEDED = "acme.capability.needed"


@pytest.fixture
def plugins(sevro_plugins: ScopedPlugins) -> ScopedPlugins:
    sevro_plugins.register("host", StubHost())
    sevro_plugins.register("grader", StubGrader())
    return sevro_plugins


# -- host resolution ---------------------------------------------------------------------------


def test_a_host_is_found_by_id_and_the_scripted_one_by_short_name(
    plugins: ScopedPlugins, tmp_path: Path
) -> None:
    registry = plugins.registry()
    assert plan(registry, tmp_path).route.host == "acme.host.stub"
    options = HostOptions(config={"format": "sevro.scripted-host.v1", "default": {"turns": [[]]}})
    short = plan(registry, tmp_path, host="scripted", host_options=options)
    full = plan(registry, tmp_path, host="sevro.host.scripted", host_options=options)
    assert short.route.host == full.route.host == "sevro.host.scripted"


def test_an_unknown_host_is_refused_naming_the_installed_ones(
    plugins: ScopedPlugins, tmp_path: Path
) -> None:
    with pytest.raises(InvocationError) as refused:
        plan(plugins.registry(), tmp_path, host="acme.host.absent")
    assert "--host 'acme.host.absent' is not installed" in refused.value.message
    assert (
        "acme.host.stub" in refused.value.message and "sevro.host.scripted" in refused.value.message
    )


def test_a_host_configuration_refusal_names_the_config_source(
    sevro_plugins: ScopedPlugins, tmp_path: Path
) -> None:
    sevro_plugins.register("host", StubHost(refuse="model is not offered"))
    options = HostOptions(config_source="host.json")
    with pytest.raises(InvocationError) as refused:
        plan(sevro_plugins.registry(), tmp_path, host_options=options)
    assert refused.value.one_line() == "host.json#/model: model is not offered"


# -- grader resolution -------------------------------------------------------------------------


def test_checks_resolve_to_their_graders(plugins: ScopedPlugins, tmp_path: Path) -> None:
    planned = plan(plugins.registry(), tmp_path, case(checks=[check("acme.grader.stub")]))
    (only,) = planned.cases[0].checks
    assert only.grader.id == "acme.grader.stub"
    (active,) = planned.graders_active
    assert (active["id"], active["version"]) == ("acme.grader.stub", "1")
    assert active["source"].startswith("test-"), "the test plugin's name is its source"


def test_an_unknown_grader_is_refused_with_its_pointer(
    plugins: ScopedPlugins, tmp_path: Path
) -> None:
    with pytest.raises(InvocationError) as refused:
        plan(plugins.registry(), tmp_path, case(checks=[check("acme.grader.absent")]))
    assert refused.value.pointer == "/checks/0/grader"
    assert "unknown grader 'acme.grader.absent'" in refused.value.message
    assert "acme.grader.stub" in refused.value.message


def test_a_refused_check_configuration_points_into_the_case(
    plugins: ScopedPlugins, tmp_path: Path
) -> None:
    with pytest.raises(InvocationError) as refused:
        plan(plugins.registry(), tmp_path, case(checks=[check("acme.grader.stub", broken=True)]))
    assert (
        refused.value.one_line()
        == "case.json#/checks/0/configuration/broken: broken must not be set"
    )


# -- capability negotiation --------------------------------------------------------------------


def test_a_grader_needing_what_nobody_provides_is_refused(
    sevro_plugins: ScopedPlugins, tmp_path: Path
) -> None:
    sevro_plugins.register("host", StubHost())
    sevro_plugins.register("grader", StubGrader(requires=frozenset({NEEDED})))
    with pytest.raises(InvocationError) as refused:
        plan(sevro_plugins.registry(), tmp_path, case(checks=[check("acme.grader.stub")]))
    assert refused.value.pointer == "/checks/0/grader"
    assert refused.value.message == (
        f"grader acme.grader.stub needs {NEEDED}, which neither host acme.host.stub nor this "
        "fixture provides"
    )


def test_a_grader_needing_what_the_host_provides_is_planned(
    sevro_plugins: ScopedPlugins, tmp_path: Path
) -> None:
    sevro_plugins.register("host", StubHost(capabilities=frozenset({NEEDED})))
    sevro_plugins.register("grader", StubGrader(requires=frozenset({NEEDED})))
    planned = plan(sevro_plugins.registry(), tmp_path, case(checks=[check("acme.grader.stub")]))
    assert len(planned.cases[0].checks) == 1


def test_required_evidence_must_be_produced_by_someone(
    sevro_plugins: ScopedPlugins, tmp_path: Path
) -> None:
    sevro_plugins.register("host", StubHost())
    sevro_plugins.register("grader", StubGrader())
    sevro_plugins.register(
        "grader", StubGrader(grader_id="acme.grader.provider", provides=frozenset({NEEDED}))
    )
    registry = sevro_plugins.registry()
    with pytest.raises(InvocationError) as refused:
        plan(registry, tmp_path, case(requiredEvidence=[NEEDED]))
    assert refused.value.pointer == "/requiredEvidence/0"
    provided = case(checks=[check("acme.grader.provider")], requiredEvidence=[NEEDED])
    assert plan(registry, tmp_path, provided).cases[0].case.required_evidence == (NEEDED,)
    engine = case(requiredEvidence=["sevro.observation.final-message"])
    assert plan(registry, tmp_path, engine).cases  # the engine provides the final message


def test_the_enforced_condition_needs_a_host_that_enforces(
    sevro_plugins: ScopedPlugins, tmp_path: Path
) -> None:
    sevro_plugins.register("host", StubHost())
    sevro_plugins.register(
        "host", StubHost(host_id="acme.host.strict", capabilities=frozenset({ENFORCED_CAPABILITY}))
    )
    registry = sevro_plugins.registry()
    with pytest.raises(InvocationError, match="--condition enforced is not supported by acme"):
        plan(registry, tmp_path, condition="enforced")
    assert plan(registry, tmp_path, condition="enforced", host="acme.host.strict").cases


def test_a_follow_up_prompt_needs_a_host_that_continues(
    sevro_plugins: ScopedPlugins, tmp_path: Path
) -> None:
    sevro_plugins.register("host", StubHost())
    sevro_plugins.register(
        "host",
        StubHost(host_id="acme.host.session", capabilities=frozenset({CONTINUATION_CAPABILITY})),
    )
    registry = sevro_plugins.registry()
    two_turns = case(followUpPrompt="And now?")
    with pytest.raises(InvocationError) as refused:
        plan(registry, tmp_path, two_turns)
    assert refused.value.pointer == "/followUpPrompt"
    assert plan(registry, tmp_path, two_turns, host="acme.host.session").cases


def test_a_check_needing_a_missing_sandbox_becomes_a_grading_error_not_a_refusal(
    plugins: ScopedPlugins, tmp_path: Path
) -> None:
    shell = case(checks=[check("sevro.shell", run="true")])
    only_these = {"SEVRO_LOAD_PLUGINS": "sevro-core,sevro-graders," + _stub_names(plugins)}
    without_backends = plugins.registry(only_these)
    assert without_backends.ids("sandbox") == []
    planned = plan(without_backends, tmp_path, shell, sandbox="auto")
    assert type(planned.cases[0].checks[0].compiled).__name__ == "IsolationUnavailable"
    opted_out = plan(without_backends, tmp_path, shell, sandbox="none")
    assert type(opted_out.cases[0].checks[0].compiled).__name__ == "ShellCheck"


def _stub_names(plugins: ScopedPlugins) -> str:
    return ",".join(
        info.name for info in plugins.registry().plugins if info.name.startswith("test-")
    )


# -- identity ----------------------------------------------------------------------------------


def test_identity_is_stable_across_plans_and_registries(
    plugins: ScopedPlugins, tmp_path: Path
) -> None:
    first = plan(plugins.registry(), tmp_path, case(checks=[check("acme.grader.stub")]))
    again = plan(plugins.registry(), tmp_path, case(checks=[check("acme.grader.stub")]))
    elsewhere = plan(
        plugins.registry(),
        tmp_path,
        case(checks=[check("acme.grader.stub")]),
        results_root=tmp_path / "other-results",
    )
    assert first.identity == again.identity == elsewhere.identity


def test_identity_changes_in_exactly_the_dimension_that_changed(
    sevro_plugins: ScopedPlugins, tmp_path: Path
) -> None:
    sevro_plugins.register("host", StubHost())
    sevro_plugins.register("grader", StubGrader())
    sevro_plugins.register("grader", StubGrader(grader_id="acme.grader.newer", version="2"))
    registry = sevro_plugins.registry()

    def dimensions(*cases: Case, **fields: Any) -> dict[str, object]:
        planned = plan(registry, tmp_path, *cases, **fields)
        return dict(planned.identity["dimensions"])

    reference = dimensions(case(checks=[check("acme.grader.stub")]))

    def changed(other: dict[str, object]) -> set[str]:
        return {key for key in reference if reference[key] != other[key]}

    assert changed(dimensions(case(checks=[check("acme.grader.stub", flag=1)]))) == {"checksDigest"}
    assert changed(dimensions(case(checks=[check("acme.grader.stub")]), trials=3)) == {
        "trialCount",
        "configurationDigest",  # the redacted configuration records the trial count too
    }
    assert changed(
        dimensions(case(checks=[check("acme.grader.stub")]), host_options=HostOptions(model="m2"))
    ) == {"routeDigest", "configurationDigest"}
    assert "graderDigest" in changed(dimensions(case(checks=[check("acme.grader.newer")])))
    assert changed(dimensions(case(checks=[check("acme.grader.stub")]))) == set()  # control


def test_plan_run_refuses_before_touching_the_results_root(
    plugins: ScopedPlugins, tmp_path: Path
) -> None:
    with pytest.raises(InvocationError):
        plan_run(
            [case(checks=[check("acme.grader.absent")])],
            plugins.registry(),
            settings(tmp_path),
        )
    assert not (tmp_path / "results").exists()


# -- experiment arms -----------------------------------------------------------------------------


def _design(tmp_path: Path, *arms: Any) -> Any:
    from sevro_core.experiments.arms import resolve_arms
    from sevro_core.experiments.design import ExperimentDesign
    from sevro_core.experiments.loading import Comparison

    resolved = resolve_arms(arms)
    return ExperimentDesign(resolved, (Comparison(arms[0].id, arms[-1].id),), 2, None)


def _skill_arm(tmp_path: Path, arm_id: str = "candidate", **overrides: Any) -> Any:
    from sevro_core.experiments.loading import Arm
    from sevro_core.experiments.sources import DirectorySource

    bundle = tmp_path / "skills" / "notes"
    bundle.mkdir(parents=True, exist_ok=True)
    (bundle / "SKILL.md").write_text("---\nname: notes\ndescription: Notes.\n---\nBody\n")
    return Arm(arm_id, (DirectorySource(bundle),), None, (), **overrides)


def _empty_arm(arm_id: str = "baseline", **overrides: Any) -> Any:
    from sevro_core.experiments.loading import Arm

    return Arm(arm_id, (), None, (), **overrides)


def test_a_host_without_skill_places_refuses_an_arm_with_skills_not_one_without(
    plugins: ScopedPlugins, tmp_path: Path
) -> None:
    registry = plugins.registry()
    with pytest.raises(InvocationError) as refused:
        plan(registry, tmp_path, experiment=_design(tmp_path, _empty_arm(), _skill_arm(tmp_path)))
    assert "arm 'candidate' mounts skills or context" in refused.value.message
    assert "acme.host.stub declares no place" in refused.value.message
    accepted = plan(
        registry,
        tmp_path,
        experiment=_design(tmp_path, _empty_arm(), _empty_arm("other", model="m2")),
    )
    assert [p.unit for p in accepted.cases] == ["example@baseline", "example@other"]


def test_each_arm_is_planned_on_its_own_route_and_enters_the_configuration(
    plugins: ScopedPlugins, tmp_path: Path
) -> None:
    registry = plugins.registry()
    design = _design(tmp_path, _empty_arm(), _empty_arm("bigger", model="big-model"))
    planned = plan(registry, tmp_path, experiment=design)
    assert [str(r.model) for r in planned.routes] == ["stub-model", "big-model"]
    assert [planned.host_for(p).route.model for p in planned.cases] == ["stub-model", "big-model"]
    assert set(planned.configuration["redacted"]["arms"]) == {"baseline", "bigger"}
    plain = plan(registry, tmp_path)
    assert "arms" not in plain.configuration["redacted"]
    assert (
        plain.identity["dimensions"]["caseDigest"] == planned.identity["dimensions"]["caseDigest"]
    )
    assert plain.identity["digest"] != planned.identity["digest"]
    other = plan(
        registry,
        tmp_path,
        experiment=_design(tmp_path, _empty_arm(), _empty_arm("bigger", model="huge")),
    )
    assert other.identity["digest"] != planned.identity["digest"], "an arm's model is identity"


def test_arms_differing_only_in_id_are_refused_as_twins(tmp_path: Path) -> None:
    with pytest.raises(InvocationError) as refused:
        _design(tmp_path, _skill_arm(tmp_path, "baseline"), _skill_arm(tmp_path, "candidate"))
    assert "byte-identical" in refused.value.message
