"""Instrumentation requests: offered by the host, negotiated by the extension, refused under
``passive`` when they would change execution; requested and applied retained apart.

The hosts' declarations are checked on the real configured Codex and Claude hosts, and a real
run of each (against the mock model) shows every offer it makes applied: the observation the
offer names is there. Negative controls: a judge offers nothing, an offer not applied in a
trial is found, and every refusal below has its accepted twin.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from sevro_core.api import (
    ENFORCED_CAPABILITY,
    HOST_HOOKS_OBSERVATION,
    SKILL_ACTIVATIONS_OBSERVATION,
    TOOL_CALLS_OBSERVATION,
    Completeness,
    ConfigurationError,
    InstrumentationOffer,
    InvocationError,
    Observation,
    hash_json,
    host_capabilities_of,
    instrumentation_of,
)
from sevro_core.testing.mockmodel import Message, reply
from sevro_extensions import limits
from sevro_extensions.instrumentation import (
    NO_INSTRUMENTATION,
    InstrumentationAgreement,
    InstrumentationRequest,
    negotiate_instrumentation,
)

PREPARE_RESPONSE = (
    resources.files("sevro_extensions")
    .joinpath("schemas")
    .joinpath("extension-prepare-response.v1.schema.json")
)

PROBE = InstrumentationOffer("acme.probe.reads", changes_execution=False)
GUARD = InstrumentationOffer("acme.guard.skill", changes_execution=True)
OFFERED = (PROBE, GUARD)
BOTH = ("acme.probe.reads", "acme.guard.skill")


def ask(*ids: str, **configuration: Any) -> list[dict[str, Any]]:
    return [{"id": ident, "configuration": dict(configuration)} for ident in ids]


# ---- negotiation --------------------------------------------------------------------------------


def test_a_passive_observer_is_accepted_under_passive_and_retained_twice() -> None:
    agreed = negotiate_instrumentation(
        ask("acme.probe.reads", depth=2), OFFERED, "passive", negotiated=BOTH
    )
    assert agreed.record() == {
        "requested": [{"id": "acme.probe.reads", "configuration": {"depth": 2}}],
        "applied": [{"id": "acme.probe.reads", "configuration": {"depth": 2}}],
    }
    assert agreed.condition == "passive"


def test_an_execution_changing_request_is_refused_under_passive_only() -> None:
    with pytest.raises(InvocationError) as refused:
        negotiate_instrumentation(ask("acme.guard.skill"), OFFERED, "passive", negotiated=BOTH)
    assert str(refused.value) == (
        "extension requests instrumentation acme.guard.skill, which would change execution "
        "under --condition passive"
    )
    assert refused.value.exit_code == 64
    # Positive control: the same request under enforced is agreed.
    agreed = negotiate_instrumentation(
        ask("acme.guard.skill"), OFFERED, "enforced", negotiated=BOTH
    )
    assert [item.id for item in agreed.applied] == ["acme.guard.skill"]


def test_nothing_requested_agrees_to_nothing() -> None:
    agreed = negotiate_instrumentation([], OFFERED, "passive", negotiated=())
    assert agreed.record() == {"requested": [], "applied": []} == NO_INSTRUMENTATION.record()
    # The identity dimension of a run without instrumentation, as the engine computes it today.
    assert agreed.digest() == hash_json({"requested": [], "applied": []})


def test_the_digest_is_sevros_requested_with_applied_as_requested() -> None:
    asked = ask("acme.probe.reads", depth=1)
    agreed = negotiate_instrumentation(asked, OFFERED, "passive", negotiated=BOTH)
    assert agreed.digest() == hash_json({"requested": asked, "applied": asked})
    other = negotiate_instrumentation(
        ask("acme.probe.reads", depth=2), OFFERED, "passive", negotiated=BOTH
    )
    assert other.digest() != agreed.digest()  # the configuration is part of it


@pytest.mark.parametrize(
    ("requested", "offered", "negotiated", "message"),
    [
        (
            ask("acme.probe.other"),
            OFFERED,
            BOTH,
            "extension requests instrumentation acme.probe.other, which the host does not "
            "offer (it offers: acme.guard.skill, acme.probe.reads)",
        ),
        (
            ask("acme.probe.reads"),
            (),
            BOTH,
            "extension requests instrumentation acme.probe.reads, which the host does not "
            "offer (it offers: none)",
        ),
        (
            ask("acme.probe.reads"),
            OFFERED,
            ("acme.guard.skill",),
            "extension requests instrumentation acme.probe.reads without negotiating it: list "
            "it in describe's requiredCapabilities or optionalCapabilities",
        ),
        (
            ask("acme.probe.reads", "acme.probe.reads"),
            OFFERED,
            BOTH,
            "extension requests instrumentation acme.probe.reads twice",
        ),
        (
            [{"id": "acme.probe.reads", "configuration": [1]}],
            OFFERED,
            BOTH,
            "instrumentation acme.probe.reads configuration must be a JSON object, not [1]",
        ),
        (
            [{"id": "acme.probe.reads", "configuration": {"x": float("nan")}}],
            OFFERED,
            BOTH,
            "instrumentation acme.probe.reads configuration is not JSON: NaN is not a JSON number",
        ),
        (
            [{"id": "acme.probe.reads", "configuration": {1: "one"}}],
            OFFERED,
            BOTH,
            "instrumentation acme.probe.reads configuration has a key that is no string",
        ),
        (
            [{"id": "acme.probe.reads\n", "configuration": {}}],
            OFFERED,
            BOTH,
            'prepare requestedInstrumentation id "acme.probe.reads\\n" is not a namespaced id',
        ),
        (
            [{"id": "acme.probe.reads"}],
            OFFERED,
            BOTH,
            "prepare requestedInstrumentation item 0 must be an object with exactly id and "
            "configuration",
        ),
        (
            [{"id": "Acme", "configuration": {}}],
            OFFERED,
            BOTH,
            'prepare requestedInstrumentation id "Acme" is not a namespaced id',
        ),
        (
            "acme.probe.reads",
            OFFERED,
            BOTH,
            "prepare requestedInstrumentation is not a list",
        ),
        (
            ask("acme.probe.reads"),
            (PROBE, PROBE),
            BOTH,
            "the host offers instrumentation acme.probe.reads twice",
        ),
    ],
)
def test_a_bad_request_is_refused_in_one_line(
    requested: Any, offered: Any, negotiated: Any, message: str
) -> None:
    with pytest.raises(InvocationError) as refused:
        negotiate_instrumentation(requested, offered, "passive", negotiated=negotiated)
    assert str(refused.value) == message
    assert "\n" not in str(refused.value)


def test_a_configuration_is_bounded() -> None:
    room = limits.MAX_INSTRUMENTATION_CONFIGURATION_BYTES - len('{"v":""}')
    fits = [{"id": "acme.probe.reads", "configuration": {"v": "x" * room}}]
    agreed = negotiate_instrumentation(fits, OFFERED, "passive", negotiated=BOTH)
    assert agreed.requested[0].configuration == {"v": "x" * room}
    over = [{"id": "acme.probe.reads", "configuration": {"v": "x" * (room + 1)}}]
    with pytest.raises(InvocationError, match="larger than 65536 bytes of JSON"):
        negotiate_instrumentation(over, OFFERED, "passive", negotiated=BOTH)


def test_the_number_of_requests_is_bounded_like_the_schema() -> None:
    schema = json.loads(PREPARE_RESPONSE.read_text("utf-8"))
    items = schema["properties"]["result"]["properties"]["requestedInstrumentation"]
    assert items["maxItems"] == limits.MAX_INSTRUMENTATION_REQUESTS
    many = [InstrumentationOffer(f"acme.probe.p{i}", changes_execution=False) for i in range(65)]
    ids = [offer.id for offer in many]
    agreed = negotiate_instrumentation(ask(*ids[:64]), many, "passive", negotiated=ids)
    assert len(agreed.applied) == 64
    with pytest.raises(InvocationError, match="has 65 items; at most 64"):
        negotiate_instrumentation(ask(*ids), many, "passive", negotiated=ids)


def test_the_retained_record_is_a_copy_the_extension_cannot_change_later() -> None:
    configuration: dict[str, Any] = {"paths": ["a"]}
    agreed = negotiate_instrumentation(
        [{"id": "acme.probe.reads", "configuration": configuration}],
        OFFERED,
        "passive",
        negotiated=BOTH,
    )
    configuration["paths"].append("b")
    assert agreed.record()["requested"] == [
        {"id": "acme.probe.reads", "configuration": {"paths": ["a"]}}
    ]
    json.dumps(agreed.record())  # plain JSON


def test_an_unknown_condition_is_refused() -> None:
    with pytest.raises(InvocationError, match="passive or enforced, not 'loud'"):
        negotiate_instrumentation([], OFFERED, "loud", negotiated=())


# ---- applied in a trial -------------------------------------------------------------------------


def observed(ident: str, completeness: Completeness) -> dict[str, Observation]:
    return {ident: Observation(ident, "sevro.host.acme", completeness, {})}


def test_a_trial_without_the_requested_observation_did_not_apply_it() -> None:
    agreed = negotiate_instrumentation(ask("acme.probe.reads"), OFFERED, "passive", negotiated=BOTH)
    assert agreed.unapplied(observed("acme.probe.reads", Completeness.COMPLETE)) == ()
    assert agreed.unapplied(observed("acme.probe.reads", Completeness.PARTIAL)) == ()
    assert agreed.unapplied(observed("acme.probe.reads", Completeness.UNAVAILABLE)) == (
        "acme.probe.reads",
    )
    assert agreed.unapplied(observed("acme.other", Completeness.COMPLETE)) == ("acme.probe.reads",)
    assert NO_INSTRUMENTATION.unapplied({}) == ()


# ---- the core declaration -----------------------------------------------------------------------


class Declaring:
    capabilities = frozenset({"acme.host.turns"})

    def __init__(self, instrumentation: object) -> None:
        self.instrumentation = instrumentation


def test_a_host_without_a_declaration_offers_nothing() -> None:
    class Silent:
        capabilities = frozenset({"acme.host.turns"})

    assert instrumentation_of(Silent()) == ()
    assert host_capabilities_of(Silent()) == {"acme.host.turns"}  # type: ignore[arg-type]
    host = Declaring((PROBE,))
    assert instrumentation_of(host) == (PROBE,)
    assert host_capabilities_of(host) == {"acme.host.turns", "acme.probe.reads"}  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ([PROBE], "not a tuple of InstrumentationOffer"),
        ((PROBE, "acme.probe.other"), "not a tuple of InstrumentationOffer"),
        ((PROBE, PROBE), "offers instrumentation acme.probe.reads twice"),
    ],
)
def test_a_malformed_declaration_is_a_host_bug_not_an_empty_offer(
    declared: object, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        instrumentation_of(Declaring(declared))


def test_an_offer_id_is_namespaced() -> None:
    for bad in ("Probe", "acme.probe\n", "a" * 123 + ".probe"):
        with pytest.raises(ValueError, match="not a namespaced id"):
            InstrumentationOffer(bad, changes_execution=False)
    assert InstrumentationOffer("acme.probe", changes_execution=False).id == "acme.probe"


# ---- the real hosts -----------------------------------------------------------------------------


def codex_host(role: str, base_url: str = "http://127.0.0.1:9/v1") -> Any:
    from sevro_hosts_codex.testing import require_codex
    from tests.hosts_codex.helpers import API_KEY, API_KEY_ENV
    from tests.hosts_codex.test_judge_real_cli import configure

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(API_KEY_ENV, API_KEY)
        return configure(require_codex(), base_url, role)


def claude_host(role: str, origin: str = "http://127.0.0.1:9") -> Any:
    from sevro_hosts_claude.testing import require_claude
    from tests.hosts_claude.helpers import API_KEY, API_KEY_ENV
    from tests.hosts_claude.test_judge_real_cli import configure

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(API_KEY_ENV, API_KEY)
        return configure(require_claude(), origin, role)


CANDIDATE_OFFERS = {
    "codex": {SKILL_ACTIVATIONS_OBSERVATION, TOOL_CALLS_OBSERVATION, "sevro.codex.native-calls"},
    "claude": {SKILL_ACTIVATIONS_OBSERVATION, TOOL_CALLS_OBSERVATION, "sevro.claude.nested-skills"},
}
HOSTS: dict[str, Callable[..., Any]] = {"codex": codex_host, "claude": claude_host}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTS))
def test_a_real_candidate_offers_only_passive_observers_it_advertises(name: str) -> None:
    host = HOSTS[name]("candidate")
    offers = instrumentation_of(host)
    assert {offer.id for offer in offers} == CANDIDATE_OFFERS[name]
    # Consistent with its capabilities: every offer is one, so the host capabilities an
    # extension negotiates against are unchanged; none changes execution (the host runs
    # passive only, so an execution-changing offer could never be applied).
    assert {offer.id for offer in offers} <= host.capabilities
    assert host_capabilities_of(host) == host.capabilities
    assert not any(offer.changes_execution for offer in offers)
    assert ENFORCED_CAPABILITY not in host.capabilities
    # Every offer can be requested under passive; a capability that is no offer cannot.
    ids = sorted(CANDIDATE_OFFERS[name])
    agreed = negotiate_instrumentation(ask(*ids), offers, "passive", negotiated=ids)
    assert [item.id for item in agreed.applied] == ids
    other = sorted(host.capabilities - CANDIDATE_OFFERS[name])[0]
    with pytest.raises(InvocationError, match=f"{other}, which the host does not offer"):
        negotiate_instrumentation(ask(other), offers, "passive", negotiated=[other])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTS))
def test_negative_control_a_real_judge_offers_nothing(name: str) -> None:
    judge = HOSTS[name]("semantic")
    assert instrumentation_of(judge) == ()
    with pytest.raises(InvocationError, match="it offers: none"):
        negotiate_instrumentation(
            ask(TOOL_CALLS_OBSERVATION), (), "passive", negotiated=[TOOL_CALLS_OBSERVATION]
        )


def _request(tmp_path: Path, prompt: str) -> Any:
    from sevro_core.api import CancelToken, HostRequest

    workspace, private = tmp_path / "workspace", tmp_path / "private"
    workspace.mkdir()
    private.mkdir(mode=0o700)
    return HostRequest(
        case_id="instrumented",
        trial=1,
        prompts=(prompt,),
        workspace=workspace,
        condition="passive",
        cancel=CancelToken(),
        private_root=private,
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTS))
def test_a_real_candidate_run_applies_every_offer(
    name: str, mock_model: Callable[..., Any], tmp_path: Path
) -> None:
    """Through the real CLI: each offered observer's observation is in the trial, so the
    agreement to all of them finds nothing unapplied; one the trial lacks is found."""
    if name == "codex":
        from tests.hosts_codex.helpers import API_KEY, API_KEY_ENV, shell

        server = mock_model([reply(shell("echo hi")), reply(Message("done"))])
        env, host = (API_KEY_ENV, API_KEY), codex_host("candidate", server.base_url)
    else:
        from tests.hosts_claude.helpers import API_KEY, API_KEY_ENV, PROTOCOLS, bash

        server = mock_model([reply(bash("echo hi")), reply(Message("done"))], protocols=PROTOCOLS)
        env, host = (API_KEY_ENV, API_KEY), claude_host("candidate", server.origin)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(*env)
        result = host.run(_request(tmp_path, "Say hi."))
    assert result.complete, result.error
    assert len(server.requests) == 2  # the real CLI asked the model twice: a call, a reply
    observations = {o.id: o for o in result.observations}
    offers = instrumentation_of(host)
    ids = [offer.id for offer in offers]
    agreed = negotiate_instrumentation(ask(*ids), offers, "passive", negotiated=ids)
    assert agreed.unapplied(observations) == ()
    assert "echo hi" in json.dumps(observations[TOOL_CALLS_OBSERVATION].data)
    # Negative control: an agreement to an observer this trial did not run is a mismatch.
    extra = InstrumentationRequest("acme.probe.absent", {})
    absent = InstrumentationAgreement("passive", agreed.requested, (*agreed.applied, extra))
    assert absent.unapplied(observations) == ("acme.probe.absent",)


@pytest.mark.slow
def test_the_hooks_observer_is_offered_only_where_the_host_records_hooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude records ``sevro.host.hooks`` only with ``hooks.nativeGoal``: offered then, not
    otherwise (the candidate test above is the control without it)."""
    from sevro_core.api import HostOptions
    from sevro_core.isolation.runtime import load_runtime
    from sevro_hosts_claude.host import ClaudeHost
    from sevro_hosts_claude.testing import require_claude
    from tests.hosts_claude.helpers import API_KEY, API_KEY_ENV

    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    runtime = tmp_path / "runtime.json"
    runtime.write_text(json.dumps({"format": "sevro.runtime.v1", "hooks": {"nativeGoal": True}}))
    policy = load_runtime(tmp_path, runtime, ClaudeHost.credential_locations)
    assert policy is not None
    options = HostOptions(
        config={"format": "sevro.claude-host.v1", "baseUrl": "http://127.0.0.1:9"},
        settings={"claude.bin": require_claude(), "claude.apiKeyEnv": API_KEY_ENV},
        runtime=policy.host_runtime(),
    )
    host = ClaudeHost().configure(options)
    offers = {offer.id: offer for offer in instrumentation_of(host)}
    assert set(offers) == {*CANDIDATE_OFFERS["claude"], HOST_HOOKS_OBSERVATION}
    assert set(offers) <= host.capabilities
    assert not offers[HOST_HOOKS_OBSERVATION].changes_execution
    assert HOST_HOOKS_OBSERVATION not in {
        offer.id for offer in instrumentation_of(claude_host("candidate"))
    }


# ---- a real extension process against a real configured host -----------------------------------

ENGINE = ("sevro.case.host-route", "sevro.fixture.setup", "sevro.host.exec")
CASE = {
    "id": "instrumented",
    "prompt": "Say hi.",
    "fixture": {"kind": "inline", "files": {}},
    "checks": [],
    "requiredEvidence": [],
    "extensionData": {},
}


def through_extension(
    node: str, tmp_path: Path, host: Any, spec: dict[str, Any], condition: str = "passive"
) -> InstrumentationAgreement:
    """describe (negotiated against the host's capabilities with its instrumentation ids),
    prepare, then the instrumentation the answer requests, as the engine does once per run."""
    from sevro_extensions.client import Capabilities, call_method, discover
    from sevro_extensions.sources import source_closure
    from tests.extensions.conftest import HERE, options

    argv = [node, str(HERE / "instrumented.js"), json.dumps(spec)]
    closure = source_closure(argv[0], [argv[1]])
    capabilities = sorted(host_capabilities_of(host))
    found = discover(argv, closure, Capabilities(ENGINE, tuple(capabilities)), options(tmp_path))
    params = {
        "case": CASE,
        "host": {"id": host.route.host, "capabilities": capabilities},
        "condition": condition,
        "configuration": {},
    }
    prepared = call_method(argv, found.closure, "prepare", params, options(tmp_path))
    assert isinstance(prepared.result, dict)
    return negotiate_instrumentation(
        prepared.result["requestedInstrumentation"],
        instrumentation_of(host),
        condition,
        negotiated=found.negotiated.capabilities,
    )


@pytest.mark.slow
def test_a_real_extension_gets_what_it_negotiated_and_the_host_offers(
    node: str, tmp_path: Path
) -> None:
    host = codex_host("candidate")
    asked = [{"id": TOOL_CALLS_OBSERVATION, "configuration": {"limit": 5}}]
    spec = {"optional": [TOOL_CALLS_OBSERVATION, "acme.not.offered"], "requested": asked}
    agreed = through_extension(node, tmp_path, host, spec)
    assert agreed.record() == {"requested": asked, "applied": asked}
    # Negative controls through the same process: a request it did not negotiate, and one
    # for a host capability that is no instrumentation.
    with pytest.raises(InvocationError, match="without negotiating it"):
        through_extension(node, tmp_path, host, {"optional": [], "requested": asked})
    invocation = "sevro.codex.repository-invocation"
    assert invocation in host.capabilities
    overreach = {"optional": [invocation], "requested": [{"id": invocation, "configuration": {}}]}
    with pytest.raises(InvocationError, match=f"{invocation}, which the host does not offer"):
        through_extension(node, tmp_path, host, overreach)
