"""One run's trials on a Ray cluster: the owner's side.

Each submitted trial becomes a Ray task on a worker; a collector thread waits for the tasks and
persists each shipment through the owner's store (digests and bounds checked on arrival), or
records a lost worker's trial as an execution failure. The owner's cancel token is relayed to
the workers, which end their trials ``cancelled`` as a local run does; a worker that does not
stop within the grace is killed and its trial is lost.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any, cast

from attrs import define

from sevro_core.api import (
    ConfigurationError,
    ExecutorOptions,
    InvocationError,
    RemoteMismatch,
    TrialDescription,
    TrialTask,
    describe_trial,
    lost_trial,
    persist_shipment,
)
from sevro_executor_ray.limits import (
    RAY_CANCEL_GRACE_S,
    RAY_DOCTOR_TIMEOUT_S,
    RAY_MAX_REASON_CHARS,
    RAY_RESUBMITS,
    RAY_WARM_TIMEOUT_S,
)


@define
class _Submitted:
    """A trial on its way: what the owner submitted and the future it gave back."""

    task: Any
    description: TrialDescription
    future: Future[Any]
    key: str
    resubmits: int = 0
    forced: bool = False


class RayPool:
    """A started Ray executor for one run (``TrialPool``)."""

    def __init__(self, ray: Any, options: ExecutorOptions, temp: Path | None = None) -> None:
        from sevro_executor_ray.worker import CancelFlag

        self._temp = temp
        self._ray = ray
        self._options = options
        self._flag = CancelFlag.remote()
        ray.get(self._flag.reason.remote())  # the flag is up before any trial asks it
        self._lock = threading.Lock()
        self._pending: dict[Any, _Submitted] = {}
        self._checked = False
        self._closing = threading.Event()
        self._cancelled_at: float | None = None
        self._collector = threading.Thread(target=self._collect, name="sevro-ray", daemon=True)
        self._collector.start()

    def submit(self, task: TrialTask) -> Future[Any]:
        try:
            description = describe_trial(cast(Any, task))
        except ConfigurationError as exc:
            raise InvocationError(f"--executor ray cannot run this run: {exc.message}") from None
        if not self._checked:
            check_nodes(self._ray, description)
            warm_workers(self._ray, description, self._options.workers)
            self._checked = True
        submitted = _Submitted(task, description, Future(), f"{task.unit}#{task.trial}")
        submitted.future.set_running_or_notify_cancel()
        self._launch(submitted)
        return submitted.future

    def _launch(self, submitted: _Submitted) -> None:
        from sevro_executor_ray.worker import run_trial

        ref = run_trial.remote(submitted.description, self._flag, submitted.key)
        with self._lock:
            self._pending[ref] = submitted

    def shutdown(self) -> None:
        """Every submitted trial ended (persisted, lost or failed), then the driver leaves."""
        self._closing.set()
        self._collector.join()
        with contextlib.suppress(Exception):
            self._ray.kill(self._flag)
        self._ray.shutdown()  # a cluster started for the run (local) stops here
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)

    def _collect(self) -> None:
        """Resolve each future as its task ends; never leave one unresolved."""
        try:
            while True:
                with self._lock:
                    refs = list(self._pending)
                if not refs:
                    if self._closing.is_set():
                        return
                    self._watch_cancel()
                    self._closing.wait(0.05)
                    continue
                # as soon as one trial is back, with every other one already back too
                ready, rest = self._ray.wait(refs, num_returns=1, timeout=0.1)
                if ready and rest:
                    more, _ = self._ray.wait(rest, num_returns=len(rest), timeout=0)
                    ready += more
                for ref in ready:
                    self._arrive(ref)
                self._watch_cancel()
        except BaseException as exc:  # the collector itself failed: every trial says so
            with self._lock:
                left, self._pending = list(self._pending.values()), {}
            for submitted in left:
                submitted.future.set_exception(exc)

    def _arrive(self, ref: Any) -> None:
        with self._lock:
            submitted = self._pending.pop(ref)
        task = submitted.task
        try:
            try:
                shipment = self._ray.get(ref)
            except self._ray.exceptions.RayError as exc:
                self._failed(submitted, exc)
                return
            record = persist_shipment(task.store, shipment, (task.unit, task.trial))
        except BaseException as exc:  # refused shipment or a persistence failure: run stops
            submitted.future.set_exception(exc)
            return
        submitted.future.set_result(record)

    def _failed(self, submitted: _Submitted, exc: BaseException) -> None:
        """A task that did not return: the trial's own error stops the run as locally; a lost
        worker or node makes the trial an execution failure, or runs it again when it never
        started."""
        errors = self._ray.exceptions
        if isinstance(exc, errors.RayTaskError) and not isinstance(exc, errors.TaskCancelledError):
            cause = exc.cause if isinstance(exc.cause, BaseException) else exc
            submitted.future.set_exception(cause)
            return
        if (
            not submitted.forced
            and not self._options.cancel.cancelled
            and submitted.resubmits < RAY_RESUBMITS
            and not self._started(submitted.key)
        ):
            submitted.resubmits += 1
            self._launch(submitted)
            return
        submitted.future.set_result(lost_trial(submitted.task, self._reason(submitted, exc)))

    def _started(self, key: str) -> bool:
        try:
            return bool(self._ray.get(self._flag.started.remote(key), timeout=30))
        except self._ray.exceptions.RayError:
            return True  # unknown: never run a trial twice

    def _reason(self, submitted: _Submitted, exc: BaseException) -> str:
        if submitted.forced:
            why = (
                f"the run was cancelled ({self._options.cancel.reason}) and the Ray worker did "
                f"not stop within {RAY_CANCEL_GRACE_S:g} s: it was killed"
            )
        else:
            detail = " ".join(str(exc).split())
            why = f"the Ray worker or node running the trial was lost ({type(exc).__name__}): "
            why += detail
        return why[:RAY_MAX_REASON_CHARS]

    def _watch_cancel(self) -> None:
        """Relay the owner's cancellation; force-kill what is still running after the grace."""
        cancel = self._options.cancel
        if not cancel.cancelled:
            return
        now = time.monotonic()
        if self._cancelled_at is None:
            self._cancelled_at = now
            self._flag.cancel.remote(cancel.reason or "cancelled")
            return
        if now - self._cancelled_at < RAY_CANCEL_GRACE_S:
            return
        with self._lock:
            running = [(r, s) for r, s in self._pending.items() if not s.forced]
        for ref, submitted in running:
            submitted.forced = True
            with contextlib.suppress(Exception):
                self._ray.cancel(ref, force=True)


def check_nodes(ray: Any, description: TrialDescription) -> None:
    """The per-node doctor: every alive node that can run a trial runs the run's host doctors
    there; any failing check refuses the run (exit 64) before a trial is sent."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from sevro_executor_ray.worker import node_doctor, versions

    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0)]
    if not nodes:
        raise InvocationError("the Ray cluster has no alive node with a CPU to run trials on")
    refs = [
        node_doctor.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
        ).remote(description)
        for n in nodes
    ]
    try:
        reports = ray.get(refs, timeout=RAY_DOCTOR_TIMEOUT_S)
    except (ray.exceptions.RayError, TimeoutError) as exc:
        detail = " ".join(str(exc).split())[:RAY_MAX_REASON_CHARS]
        raise InvocationError(
            f"the per-node doctor did not finish on the Ray cluster: {detail}"
        ) from None
    owner = versions()
    for node, report in zip(nodes, reports, strict=True):
        address = f"{node['NodeManagerAddress']}:{node['NodeManagerPort']}"
        where = f"Ray node {report.node} ({address}, id {node['NodeID'][:12]})"
        if report.versions != owner:
            raise InvocationError(
                f"{where} has {dict(report.versions)}, the run owner {dict(owner)}: "
                "install the same sevro on every node"
            )
        for check in report.checks:
            if not check.ok:
                fix = f"; fix: {check.fix}" if check.fix else ""
                raise InvocationError(
                    f"{where}: doctor check {check.name!r} of {check.host} failed: "
                    f"{check.detail}{fix}"
                )


def warm_workers(ray: Any, description: TrialDescription, workers: int) -> None:
    """Start the run's ``workers`` Ray workers and plan the run in each before the first trial
    is sent: each worker's imports and planning (about half a second of CPU) would otherwise
    delay its first trial. A node that plans another evaluation refuses the run here (exit 64);
    workers that are not ready within ``RAY_WARM_TIMEOUT_S`` are left to warm with their trial."""
    from sevro_executor_ray.worker import warm_worker

    refs = [warm_worker.remote(description) for _ in range(max(1, workers))]
    try:
        ray.get(refs, timeout=RAY_WARM_TIMEOUT_S)
    except RemoteMismatch as exc:
        raise InvocationError(str(exc)) from None
    except ray.exceptions.RayTaskError as exc:
        cause = exc.as_instanceof_cause() if hasattr(exc, "as_instanceof_cause") else exc
        if isinstance(cause, RemoteMismatch):
            raise InvocationError(str(cause)) from None
        detail = " ".join(str(exc).split())[:RAY_MAX_REASON_CHARS]
        raise InvocationError(f"the Ray workers could not plan this run: {detail}") from None
    except (ray.exceptions.GetTimeoutError, TimeoutError):
        return
