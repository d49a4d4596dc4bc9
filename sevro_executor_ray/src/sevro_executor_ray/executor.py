"""The ``sevro.executor.ray`` executor (``--executor ray``): a run's trials on Ray workers.

The run owner stays the only writer: each trial runs on a worker from a picklable description
(no secret in it), into a private evidence directory, and comes back as a bounded shipment the
owner checks and persists through its own store (``sevro_core.api``'s remote-trial API). Ray is
imported only when this executor starts, so loading the plugin (``sevro --help``) never imports it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sevro_core.api import (
    Executor,
    ExecutorOptions,
    HostSetting,
    InvocationError,
    TrialPool,
    hookimpl,
)
from sevro_executor_ray.limits import RAY_CONNECT_TIMEOUT_S

ADDRESS_KEY = "ray.address"
ADDRESS_SETTING = HostSetting(
    ADDRESS_KEY,
    "--ray-address",
    "The Ray cluster: auto (RAY_ADDRESS or the cluster started on this machine), HOST:PORT "
    "of its head node, or local (a cluster started for this run and stopped after it).",
    "string",
)
_HOST_PORT = re.compile(r"^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}$")


def ray_address(value: str) -> str | None:
    """What ``ray.init(address=...)`` gets for ``--ray-address`` (None: bad input)."""
    if value in ("auto", "local"):
        return value
    if _HOST_PORT.match(value) and 0 < int(value.rsplit(":", 1)[1]) < 65536:
        return value
    return None


def connect(value: str) -> tuple[Any, Path | None]:
    """``ray.init`` for ``--ray-address``, and the temp dir of a cluster started for the run
    (None on an existing cluster); a cluster that cannot be reached is exit 64."""
    address = ray_address(value)
    if address is None:
        raise InvocationError(
            f"--ray-address {value!r} is not auto, local or HOST:PORT of a Ray head node"
        )
    _probe(value, address)
    import logging

    import ray

    # ray.init installs its own SIGTERM handler (sys.exit): the owner's handlers must stay.
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    options: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    temp = None
    if address == "local":
        temp = _local_temp_dir()
        options.update(include_dashboard=False, _temp_dir=str(temp))
    try:
        ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
        raise InvocationError(
            f"cannot reach the Ray cluster (--ray-address {value}): {' '.join(str(exc).split())}"
        ) from None
    finally:
        for sig, handler in handlers.items():
            if handler is not None:
                signal.signal(sig, handler)
    _errors_to_stderr()
    return ray, temp


def _probe(value: str, address: str) -> None:
    """A head node's GCS that does not accept a connection is exit 64 at once: ``ray.init``
    would retry for minutes. (``auto`` without ``RAY_ADDRESS`` is left to Ray, which fails
    fast when no cluster was started on this machine.)"""
    if address == "auto":
        address = os.environ.get("RAY_ADDRESS", "auto")
    if address in ("auto", "local") or ray_address(address) is None:
        return
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host.strip("[]"), int(port)), RAY_CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise InvocationError(
            f"cannot reach the Ray cluster (--ray-address {value}): nothing accepts a "
            f"connection at {address} ({exc.strerror or exc}); start it with ray start --head"
        ) from None


def _local_temp_dir() -> Path:
    """A private, short temp dir for a cluster started for the run (Ray's default is under
    ``$TMPDIR``, where a long path overflows its Unix socket names); removed after the run."""
    short = Path("/tmp")  # noqa: S108 - mkdtemp: a fresh 0700 directory with a random name
    return Path(tempfile.mkdtemp(prefix="sevro-ray-", dir=short if short.is_dir() else None))


def _errors_to_stderr() -> None:
    """Ray's driver prints the cluster's error messages ("a worker died ...") on stdout, which
    is ``sevro run --json``'s document: send them to stderr, where the operator still sees them.
    (Ray 2.60 has no option for it; its private hook is patched only where it exists.)"""
    from ray._private import worker

    printer = getattr(worker, "print_to_stdstream", None)
    if printer is None or getattr(printer, "sevro_stderr", False):
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        printer({**data, "is_err": True}, ignore_prefix)

    to_stderr.sevro_stderr = True  # type: ignore[attr-defined]
    worker.print_to_stdstream = to_stderr


class RayExecutor:
    """Trials on Ray workers of the cluster ``--ray-address`` names, checked node by node
    first."""

    id = "sevro.executor.ray"
    version = "0.1.0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset()
    settings: tuple[HostSetting, ...] = (ADDRESS_SETTING,)
    remote = True
    """The owner checks that the run's trials can be described before it claims the run."""

    def start(self, options: ExecutorOptions) -> TrialPool:
        value = options.settings.get(ADDRESS_KEY, "auto")
        ray, temp = connect(value)
        from sevro_executor_ray.pool import RayPool

        return RayPool(ray, options, temp)


@hookimpl
def sevro_register_executors(register: Callable[[Executor], None]) -> None:
    register(RayExecutor())
