"""The real Codex CLI against the mock model, its trials on a real two-node Ray cluster: the
credential the nodes have in their environment reaches the model's request header (the owner's
variable, which planning checks, holds another value that never travels), and neither value is
in the cluster's files (logs, spilled objects, session data) or in the run's evidence."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sevro_core.testing import SevroProject
from sevro_core.testing.mockmodel import Message, reply
from sevro_executor_ray.testing import LocalRayCluster
from sevro_hosts_codex.testing import require_codex
from tests.e2e.helpers import assert_valid_evidence
from tests.hosts_codex.helpers import API_KEY, API_KEY_ENV, host_config

pytestmark = pytest.mark.slow

OWNER_KEY = "sk-sevro-owner-fedcba9876543210"
"""The owner's value of the variable: planning only checks that it is set."""
READY = {"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "^ready$"}}


def _files_holding(root: Path, needle: bytes) -> list[str]:
    found = []
    for path in root.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink() and needle in path.read_bytes():
                found.append(str(path))
        except OSError:
            continue
    return found


def test_codex_on_the_cluster_reads_the_credential_on_the_node_only(
    sevro_project: SevroProject, ray_cluster: LocalRayCluster, mock_model: Callable[..., Any]
) -> None:
    codex = require_codex()
    server = mock_model([reply(Message("ready")), reply(Message("ready"))])
    case = sevro_project.case(checks=[READY])
    config = host_config(sevro_project, server)
    args = (case, "--host", "codex", "--host-config", config, "--model", "mock-model")
    args += ("--codex-bin", codex, "--codex-api-key-env", API_KEY_ENV, "--trials", "2")
    args += ("--jobs", "2", "--executor", "ray", "--ray-address", ray_cluster.address)
    assert API_KEY_ENV not in os.environ
    done = sevro_project.run(*args, env={API_KEY_ENV: OWNER_KEY}, timeout=300)
    assert done.exit_code == 0, done.stdout + done.stderr
    result = done.json()
    assert_valid_evidence(result)
    assert [c["passedTrials"] for c in result["cases"]] == [2]
    # positive control: the nodes' key reached the model, read on the node
    assert len(server.requests) == 2
    assert all(API_KEY in r.headers.get("authorization", "") for r in server.requests)
    assert not any(OWNER_KEY in r.headers.get("authorization", "") for r in server.requests)
    needle = API_KEY.encode()
    for secret in (needle, OWNER_KEY.encode()):
        assert _files_holding(ray_cluster.root, secret) == []
        assert _files_holding(sevro_project.results, secret) == []
    # the grep can see: the key planted in a file under the cluster's root is found
    planted = ray_cluster.root / "planted-control"
    planted.write_bytes(b"x" + needle + b"y")
    assert _files_holding(ray_cluster.root, needle) == [str(planted)]
    planted.unlink()
