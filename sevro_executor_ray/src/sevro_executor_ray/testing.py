"""A real Ray cluster for tests: a head node and a second worker node, each its own ``ray start``
process on 127.0.0.1, tiny (2 CPUs each, a 100 MB object store, no dashboard), in a private temp
dir, and stopped (every process it started, nothing else) when the test ends.

``ray stop`` would stop every Ray process of the user on the machine, other people's clusters
too; instead each node runs ``ray start --block`` in its own process group and teardown ends
exactly those groups and any process whose command line names this cluster's temp dir.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from attrs import frozen

from sevro_core.testing import require_tool

NODE_CPUS = 2
OBJECT_STORE_BYTES = 100 * 1024 * 1024
START_TIMEOUT_S = 90.0
CLUSTER_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
"""Every node's and driver's: no usage stats, and no token authentication (Ray 2.60 turns it on
when ``~/.ray/auth_token`` exists, which a ``ray.init()`` local cluster creates: a test cluster
must not depend on what else ran as this user)."""
START_ATTEMPTS = 2
"""A node that times out starting on a loaded machine (Ray's own startup wait) is retried once,
on fresh ports and a fresh temp dir."""


def require_ray() -> str:
    """The ``ray`` CLI next to this interpreter (``sevro[ray]`` installs it); skip when missing
    locally, fail when ``CI=true``."""
    import sys

    beside = Path(sys.executable).parent / "ray"
    if beside.is_file():
        return str(beside)
    return require_tool("ray")


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 right now."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@frozen
class RayNode:
    """One ``ray start --block`` process (its own process group) and its log."""

    process: subprocess.Popen[bytes]
    log: Path
    node_manager_port: int


class LocalRayCluster:
    """A head node and ``workers`` worker nodes, each a separate ``ray start`` process."""

    def __init__(
        self,
        ray: str,
        root: Path,
        worker_env: Mapping[str, str] | None = None,
        node_cpus: int = NODE_CPUS,
        env: Mapping[str, str] | None = None,
        head_cpus: int | None = None,
    ) -> None:
        self.ray = ray
        self.head_cpus = node_cpus if head_cpus is None else head_cpus
        self.root = root
        self.node_cpus = node_cpus
        self.env = dict(env or {})
        self.worker_env = dict(worker_env or {})
        self.nodes: list[RayNode] = []
        port, client = free_ports(2)
        self.address = f"127.0.0.1:{port}"
        self._client_port = client

    def start(self, workers: int = 1) -> None:
        head = [
            "--head",
            "--port",
            self.address.rsplit(":", 1)[1],
            "--ray-client-server-port",
            str(self._client_port),
            "--include-dashboard",
            "false",
        ]
        self._start_node(head, "head", cpus=self.head_cpus)
        for n in range(workers):
            self._start_node(["--address", self.address], f"worker{n + 1}", self.worker_env)
        self.wait_for_nodes(1 + workers)

    def add_worker(self, env: Mapping[str, str] | None = None) -> None:
        """One more worker node joining the running cluster (with ``env`` added to the worker
        nodes' environment); back once the cluster has it."""
        name = f"worker{len(self.nodes)}"
        self._start_node(["--address", self.address], name, {**self.worker_env, **(env or {})})
        self.wait_for_nodes(len(self.nodes))

    def _start_node(
        self,
        role: list[str],
        name: str,
        extra_env: Mapping[str, str] | None = None,
        cpus: int | None = None,
    ) -> None:
        ports = free_ports(7)
        argv = [
            self.ray, "start", *role, "--block", "--node-ip-address", "127.0.0.1",
            "--num-cpus", str(self.node_cpus if cpus is None else cpus),
            "--object-store-memory", str(OBJECT_STORE_BYTES),
            "--disable-usage-stats",
            "--temp-dir", str(self.root / name),
            "--node-manager-port", str(ports[0]), "--object-manager-port", str(ports[1]),
            "--dashboard-agent-listen-port", str(ports[2]),
            "--dashboard-agent-grpc-port", str(ports[3]),
            "--metrics-export-port", str(ports[4]), "--runtime-env-agent-port", str(ports[5]),
            "--min-worker-port", "0", "--max-worker-port", "0",
        ]  # fmt: skip
        log = self.root / f"{name}.log"
        env = {**os.environ, **CLUSTER_ENV, **self.env, **(extra_env or {})}
        env.pop("RAY_ADDRESS", None)
        with log.open("wb") as out:
            process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        self.nodes.append(RayNode(process, log, ports[0]))

    def wait_for_nodes(self, count: int) -> None:
        """Block until ``count`` nodes are alive (``ray status`` is slow: ask the GCS)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        script = (
            "import ray,sys;ray.init(address=sys.argv[1],logging_level='ERROR',"
            "log_to_driver=False);print(sum(n['Alive'] for n in ray.nodes()))"
        )
        python = str(Path(self.ray).parent / "python")
        env = {**os.environ, **CLUSTER_ENV}
        while time.monotonic() < deadline:
            for node in self.nodes:
                if node.process.poll() is not None:
                    raise RuntimeError(f"ray node exited: {node.log.read_text()[-2000:]}")
            try:
                done = subprocess.run(
                    [python, "-c", script, self.address],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=False,
                    timeout=max(1.0, min(30.0, deadline - time.monotonic())),
                )
            except subprocess.TimeoutExpired:
                continue  # the GCS is not answering yet (a loaded machine): ask again
            if done.returncode == 0 and done.stdout.strip().splitlines()[-1:] == [str(count)]:
                return
            time.sleep(0.5)
        raise RuntimeError(f"the Ray cluster did not reach {count} nodes")

    def processes(self) -> list[int]:
        """Every live process this cluster started: descendants of its ``ray start`` processes
        (Ray's workers start their own sessions, so process groups are not enough) and any
        process whose command line names its temp dir."""
        parents: dict[int, int] = {}
        named: set[int] = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            if str(self.root).encode() in cmdline:
                named.add(int(entry.name))
        found = {n.process.pid for n in self.nodes if n.process.poll() is None} | named
        grew = True
        while grew:
            more = {pid for pid, parent in parents.items() if parent in found} - found
            found |= more
            grew = bool(more)
        return sorted(p for p in found if p in parents)

    def stop(self) -> None:
        """Stop every node: SIGTERM each ``ray start --block`` (it stops its node), then kill
        whatever of this cluster is left."""
        for node in self.nodes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for node in self.nodes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                node.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        for _ in range(20):
            left = [p for p in self.processes() if p != os.getpid()]
            if not left:
                return
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.25)


@contextlib.contextmanager
def local_ray_cluster(
    workers: int = 1,
    worker_env: Mapping[str, str] | None = None,
    node_cpus: int = NODE_CPUS,
    env: Mapping[str, str] | None = None,
    head_cpus: int | None = None,
) -> Iterator[LocalRayCluster]:
    """A started head plus ``workers`` worker nodes, each offering ``node_cpus`` logical CPUs
    (the head ``head_cpus`` when given: 0 keeps trials off it); ``env`` is added to every
    node's environment (a credential set on the cluster) and ``worker_env`` to the worker
    nodes'; stopped and removed on exit. While it runs, this process's environment has
    :data:`CLUSTER_ENV` too, so the drivers it starts (``sevro run``) match the cluster."""
    ray = require_ray()
    with pytest.MonkeyPatch.context() as patch:
        for name, value in CLUSTER_ENV.items():
            patch.setenv(name, value)
        yield from _started(ray, workers, worker_env, node_cpus, (env, head_cpus))


def _started(
    ray: str,
    workers: int,
    worker_env: Mapping[str, str] | None,
    node_cpus: int,
    env_head: tuple[Mapping[str, str] | None, int | None],
) -> Iterator[LocalRayCluster]:
    for attempt in range(START_ATTEMPTS):
        root = Path(tempfile.mkdtemp(prefix="sray", dir="/tmp"))  # short: Ray's socket paths
        cluster = LocalRayCluster(ray, root, worker_env, node_cpus, *env_head)
        try:
            cluster.start(workers)
        except BaseException as exc:  # whatever stopped the start: nothing of it is left
            cluster.stop()
            shutil.rmtree(root, ignore_errors=True)
            if not isinstance(exc, RuntimeError) or attempt + 1 == START_ATTEMPTS:
                raise
            continue
        try:
            yield cluster
        finally:
            cluster.stop()
            shutil.rmtree(root, ignore_errors=True)
        return


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[LocalRayCluster]:
    """One real two-node cluster for a test module."""
    with local_ray_cluster() as cluster:
        yield cluster
