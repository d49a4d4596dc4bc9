"""Capability negotiation: required within engine and host, optional kept when supported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sevro_extensions.client import Capabilities, discover
from sevro_extensions.errors import NegotiationError
from sevro_extensions.negotiation import (
    Description,
    describe_params,
    description,
    negotiate,
)
from sevro_extensions.sources import source_closure
from tests.extensions.conftest import REFERENCE, options, run

ENGINE = ["sevro.host.exec", "sevro.fixture.setup", "sevro.case.host-route"]
HOST = ["sevro.codex.skill-reads", "sevro.host.runtime"]


def _described(**changes: Any) -> Description:
    result: dict[str, Any] = {
        "extension": {"id": "acme.skills", "version": "2.0.0"},
        "protocols": ["sevro.extension.v1"],
        "requiredCapabilities": ["sevro.host.exec", "sevro.codex.skill-reads"],
        "optionalCapabilities": ["sevro.claude.tool-calls", "sevro.host.runtime"],
        "graders": ["acme.skills.selected"],
        "taskVerdictPolicies": ["acme.skills.strict"],
    }
    result.update(changes)
    return description(result)


def test_required_come_from_engine_or_host_and_supported_optional_are_kept() -> None:
    agreed = negotiate(_described(), engine_capabilities=ENGINE, host_capabilities=HOST)
    assert agreed.protocol == "sevro.extension.v1"
    assert agreed.capabilities == (
        "sevro.codex.skill-reads",
        "sevro.host.exec",
        "sevro.host.runtime",
    )
    assert "sevro.claude.tool-calls" not in agreed.capabilities
    assert agreed.task_verdict_policy is None


def test_a_required_capability_nobody_offers_fails() -> None:
    with pytest.raises(NegotiationError) as caught:
        negotiate(_described(), engine_capabilities=ENGINE, host_capabilities=[])
    assert str(caught.value) == (
        "extension acme.skills requires capability sevro.codex.skill-reads, which neither "
        "the engine nor the host offers"
    )


def test_an_extension_without_protocol_v1_fails() -> None:
    with pytest.raises(
        NegotiationError,
        match=r"does not offer sevro.extension.v1 \(offers "
        r"sevro.extension.v2\)",
    ):
        negotiate(
            _described(protocols=["sevro.extension.v2"]),
            engine_capabilities=ENGINE,
            host_capabilities=HOST,
        )


def test_v1_among_other_protocols_is_chosen() -> None:
    described = _described(protocols=["sevro.extension.v2", "sevro.extension.v1"])
    agreed = negotiate(described, engine_capabilities=ENGINE, host_capabilities=HOST)
    assert agreed.protocol == "sevro.extension.v1"


def test_a_selected_policy_must_be_advertised() -> None:
    agreed = negotiate(
        _described(),
        engine_capabilities=ENGINE,
        host_capabilities=HOST,
        task_verdict_policy="acme.skills.strict",
    )
    assert agreed.task_verdict_policy == "acme.skills.strict"
    with pytest.raises(
        NegotiationError, match=r"does not advertise task-verdict policy acme\.skills\.lenient$"
    ):
        negotiate(
            _described(),
            engine_capabilities=ENGINE,
            host_capabilities=HOST,
            task_verdict_policy="acme.skills.lenient",
        )


def test_a_capability_both_required_and_optional_is_refused() -> None:
    with pytest.raises(NegotiationError, match="both a required and an optional"):
        _described(optionalCapabilities=["sevro.host.exec"])


def test_describe_params_are_sorted_and_unique() -> None:
    assert describe_params(["b.x", "a.y", "b.x"], ["c.z"]) == {
        "protocols": ["sevro.extension.v1"],
        "engineCapabilities": ["a.y", "b.x"],
        "hostCapabilities": ["c.z"],
    }


def test_the_reference_extension_negotiates_end_to_end(node: str, tmp_path: Path) -> None:
    answer = run([node, str(REFERENCE)], "describe", describe_params(ENGINE, HOST), tmp_path)
    agreed = negotiate(
        description(answer.result),
        engine_capabilities=ENGINE,
        host_capabilities=HOST,
        task_verdict_policy="sevro-test.reference.strict",
    )
    assert agreed.description.extension_id == "sevro-test.reference"
    assert agreed.capabilities == ("sevro.codex.skill-reads", "sevro.host.exec")


def test_discover_describes_and_negotiates_with_the_closure_checked(
    node: str, tmp_path: Path
) -> None:
    closure = source_closure(node, [str(REFERENCE)])
    offered = Capabilities(engine=tuple(ENGINE), host=tuple(HOST))
    found = discover([node, str(REFERENCE)], closure, offered, options(tmp_path))
    assert found.negotiated.description.version == "1.0.0"
    assert found.closure.digest == closure.digest
    refused = Capabilities(engine=(), host=tuple(HOST))
    with pytest.raises(NegotiationError, match=r"requires capability sevro\.host\.exec,"):
        discover([node, str(REFERENCE)], closure, refused, options(tmp_path))
    policy = Capabilities(engine=tuple(ENGINE), host=(), task_verdict_policy="acme.other")
    with pytest.raises(NegotiationError, match="does not advertise task-verdict policy"):
        discover([node, str(REFERENCE)], closure, policy, options(tmp_path))
