"""One real two-node Ray cluster (head + a worker node, each its own ``ray start``) per module,
with the test Codex credential set on its nodes (as an operator sets a secret on a cluster)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sevro_executor_ray.testing import LocalRayCluster, local_ray_cluster
from tests.hosts_codex.helpers import API_KEY, API_KEY_ENV


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[LocalRayCluster]:
    with local_ray_cluster(env={API_KEY_ENV: API_KEY}) as cluster:
        yield cluster
