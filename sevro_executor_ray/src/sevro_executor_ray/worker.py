"""What runs on the cluster: a trial from its description, each node's doctor, and the owner's
cancel flag. Imported by Ray on every worker (and by the pool, lazily), never by ``sevro --help``.
"""

from __future__ import annotations

import socket
import threading
from importlib import metadata
from typing import Any

import ray
from attrs import frozen

from sevro_core.api import (
    CancelToken,
    DoctorRequest,
    InvocationError,
    TrialDescription,
    TrialShipment,
    load_plugins,
    plan_described_trial,
    run_described_trial,
)
from sevro_executor_ray.limits import RAY_CANCEL_POLL_S

VERSIONED = ("sevro-core", "sevro-executor-ray")
"""Distributions whose versions every node must share with the owner."""


class _CancelFlag:
    """The owner's cancel token as the workers see it, and which trials have started."""

    def __init__(self) -> None:
        self._reason: str | None = None
        self._started: set[str] = set()

    def cancel(self, reason: str) -> None:
        self._reason = self._reason or reason

    def reason(self) -> str | None:
        return self._reason

    def start(self, key: str) -> str | None:
        """Mark ``key`` started; the cancel reason if the run is already cancelled."""
        self._started.add(key)
        return self._reason

    def started(self, key: str) -> bool:
        return key in self._started


def _relay(flag: Any, token: CancelToken, stop: threading.Event) -> None:
    """Cancel ``token`` once the owner cancels (polled: a trial never waits on the owner)."""
    while not stop.wait(RAY_CANCEL_POLL_S):
        try:
            reason = ray.get(flag.reason.remote())
        except ray.exceptions.RayError:
            reason = "sevro.executor.owner-lost"
        if reason is not None:
            token.cancel(reason)
            return


def sevro_trial(description: TrialDescription, flag: Any, key: str) -> TrialShipment:
    """One trial on this worker into a private evidence directory; its bounded shipment back."""
    token = CancelToken()
    reason = ray.get(flag.start.remote(key))
    if reason is not None:
        token.cancel(reason)
    stop = threading.Event()
    relay = threading.Thread(target=_relay, args=(flag, token, stop), daemon=True)
    relay.start()
    try:
        return run_described_trial(description, token)
    finally:
        stop.set()


@frozen
class NodeCheck:
    """One failing or passing doctor line on a node."""

    host: str
    name: str
    ok: bool
    detail: str
    fix: str | None = None


@frozen
class NodeReport:
    """A node's doctor: where it ran and every check."""

    node: str
    checks: tuple[NodeCheck, ...]
    versions: tuple[tuple[str, str], ...]


def versions() -> tuple[tuple[str, str], ...]:
    """The installed versions of :data:`VERSIONED` here."""
    found = []
    for dist in VERSIONED:
        try:
            found.append((dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            found.append((dist, "not installed"))
    return tuple(found)


def _host_checks(description: TrialDescription) -> list[NodeCheck]:
    """The doctor of every host the run may start, with this node's plugins and settings."""
    settings = description.settings
    try:
        registry = load_plugins(description.plugin_files)
    except InvocationError as exc:
        return [NodeCheck("-", "plugins", False, exc.one_line(), "install the same plugins")]
    checks = []
    for name in dict.fromkeys(settings.hosts_used()):
        host_id = next((h for h in (name, f"sevro.host.{name}") if registry.host(h)), None)
        host = registry.host(host_id) if host_id is not None else None
        if host is None or host_id is None:
            checks.append(NodeCheck(name, "installed", False, "host not installed", None))
            continue
        doctor = getattr(host, "doctor", None)
        if doctor is None:
            continue
        keys = {s.key for s in getattr(host, "settings", ())}
        own = {k: v for k, v in settings.host_options.settings.items() if k in keys}
        request = DoctorRequest(settings=own, registry=registry, sandbox=settings.sandbox)
        for c in doctor(request):
            checks.append(NodeCheck(host_id, c.name, c.ok, c.detail, c.fix))
    return checks


def sevro_node_doctor(description: TrialDescription) -> NodeReport:
    """This node's doctor for the run's hosts (binaries, versions, credentials, sandbox)."""
    return NodeReport(socket.gethostname(), tuple(_host_checks(description)), versions())


class SevroWorker:
    """One of the run's trial slots: a Ray worker process kept for the whole run, holding one
    CPU. It plans the run once (``warm``) before its first trial, and each trial is a call on
    it: no worker start, import or scheduling round per trial."""

    def warm(self, description: TrialDescription) -> str:
        """Plan the run here ahead of its trials; this node's name. A node that plans another
        evaluation raises ``RemoteMismatch`` (the owner refuses the run)."""
        return plan_described_trial(description)

    def trial(self, description: TrialDescription, flag: Any, key: str) -> TrialShipment:
        """One trial (:func:`sevro_trial`)."""
        return sevro_trial(description, flag, key)


# Ray's decorators are untyped: applied as calls. A worker running a trial shows as
# ``ray::SevroWorker.trial`` in ps; nothing is retried or restarted by Ray (a lost trial is the
# owner's to judge).
CancelFlag: Any = ray.remote(num_cpus=0)(_CancelFlag)
trial_worker: Any = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(SevroWorker)
node_doctor: Any = ray.remote(max_retries=0)(sevro_node_doctor)
