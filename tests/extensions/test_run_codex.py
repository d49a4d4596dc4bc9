"""``sevro run --host codex --extension-command-file``: the real Codex CLI against the mock
model, the Node reference extension requesting one of the host's instrumentation offers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_hosts_codex.testing import require_codex
from tests.extensions.conftest import REFERENCE
from tests.hosts_codex.helpers import API_KEY, API_KEY_ENV, PROVIDER_KEY_ENV

pytestmark = pytest.mark.slow
OFFER = "sevro.tool-calls"  # a passive observer the Codex candidate offers


def _run(project: SevroProject, node: str, base_url: str, instrument: list[str]) -> Any:
    config = project.write_json(
        "codex.json",
        {
            "format": "sevro.codex-host.v1",
            "modelProvider": {
                "id": "mock",
                "baseUrl": base_url,
                "envKey": PROVIDER_KEY_ENV,
                "requestMaxRetries": 0,
                "streamMaxRetries": 0,
            },
            "turnTimeoutSeconds": 60,
        },
    )
    private = project.write_json("extension/private.json", {"sevro-test.instrument": instrument})
    command = project.write_json("extension/command.json", [node, str(REFERENCE)])
    return project.run(
        *("--host", "codex", "--codex-bin", require_codex(), "--codex-api-key-env", API_KEY_ENV),
        *("--host-config", config, "--model", "mock-model", "--project-root", project.root),
        *("--extension-command-file", command, "--extension-source-file", REFERENCE),
        *("--extension-configuration-file", private),
        *("--extension-redacted-configuration-file", private),
        *("--case-id", "greets"),
        env={API_KEY_ENV: API_KEY},
    )


def test_codex_applies_the_requested_observer_and_the_case_passes(
    sevro_project: SevroProject, node: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([reply(Message("hello"))])
    result = _run(sevro_project, node, server.base_url, [OFFER])
    assert result.exit_code == 0, result.stderr
    run = json.loads(Path(result.json()["evidencePath"]).read_text())
    agreed = [{"id": OFFER, "configuration": {}}]
    assert run["condition"]["requestedInstrumentation"] == agreed
    assert run["condition"]["appliedInstrumentation"] == agreed
    assert run["extension"]["capabilities"] == ["sevro.host.exec", OFFER]
    assert server.remaining == 0


def test_negative_control_an_offer_codex_does_not_make_is_refused(
    sevro_project: SevroProject, node: str, mock_model: Callable[..., Any]
) -> None:
    server = mock_model([])
    result = _run(sevro_project, node, server.base_url, ["sevro.claude.tool-calls"])
    assert result.exit_code == 64, result.stderr
    assert "does not offer" in result.stderr
    assert not server.requests
