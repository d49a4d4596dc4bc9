"""One run's trials on a Ray cluster: the owner's side.

The run keeps ``--jobs`` Ray workers (actors, one CPU each, spread over the nodes) for its whole
length; each plans the run once before its first trial, and each trial is a call on an idle one.
A collector thread waits for the calls and persists each shipment through the owner's store
(digests and bounds checked on arrival), or records a lost worker's trial as an execution
failure and replaces the worker. The owner's cancel token is relayed to the workers, which end
their trials ``cancelled`` as a local run does; a worker that does not stop within the grace is
killed and its trial is lost.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import threading
import time
from collections import deque
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
    RAY_COLLECT_POLL_S,
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


@define
class _Slot:
    """One of the run's Ray workers (an actor) and the trial it runs, if any."""

    actor: Any
    running: _Submitted | None = None


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
        self._queue: deque[_Submitted] = deque()
        self._idle: list[_Slot] = []
        self._calls: dict[Any, _Submitted] = {}
        self._slots: dict[Any, _Slot] = {}  # by the call it is making (a trial or its warming)
        self._warming: set[Any] = set()
        self._live = 0
        self._description: TrialDescription | None = None
        self._refusal: str | None = None
        self._sending = False  # the first trial was sent: a worker's failure no longer refuses
        self._closing = threading.Event()
        self._wake = threading.Event()  # a call was made or the pool is closing
        self._cancelled_at: float | None = None
        self._collector = threading.Thread(target=self._collect, name="sevro-ray", daemon=True)

    def submit(self, task: TrialTask) -> Future[Any]:
        try:
            description = describe_trial(cast(Any, task))
        except ConfigurationError as exc:
            raise InvocationError(f"--executor ray cannot run this run: {exc.message}") from None
        if self._description is None:
            check_nodes(self._ray, description)
            self._description = description
            self._start_workers(description)
            self._sending = True
            self._collector.start()
        submitted = _Submitted(task, description, Future(), f"{task.unit}#{task.trial}")
        submitted.future.set_running_or_notify_cancel()
        with self._lock:
            self._queue.append(submitted)
            self._dispatch()
        return submitted.future

    def _start_workers(self, description: TrialDescription) -> None:
        """The run's workers, warmed before the first trial: all of them, or as many as the
        cluster has free CPUs for, or those ready within ``RAY_WARM_TIMEOUT_S`` (the rest join
        as they come up). A node that cannot plan the run refuses it (exit 64)."""
        free = int(self._ray.available_resources().get("CPU", 0))
        for _ in range(max(1, self._options.workers)):
            self._add_worker()
        expected = max(1, min(len(self._warming), free))
        deadline = time.monotonic() + RAY_WARM_TIMEOUT_S
        while self._warming and len(self._idle) < expected:
            left = deadline - time.monotonic()
            if left <= 0 or self._options.cancel.cancelled:
                break
            poll = min(left, RAY_COLLECT_POLL_S)
            ready, _ = self._ray.wait(list(self._warming), num_returns=1, timeout=poll)
            for ref in ready:
                self._warmed(ref)
            if self._refusal is not None:
                raise InvocationError(self._refusal)

    def _add_worker(self) -> None:
        """A new worker for the run, spread over the nodes, planning the run."""
        from sevro_executor_ray.worker import trial_worker

        actor = trial_worker.options(scheduling_strategy="SPREAD").remote()
        ref = actor.warm.remote(self._description)
        self._slots[ref] = _Slot(actor)
        self._warming.add(ref)
        self._live += 1

    def _warmed(self, ref: Any) -> None:
        """A worker finished planning: idle from now on, or gone. A worker that cannot plan
        the run (its node plans another evaluation) refuses the run while it has not started;
        a worker that died is only one worker less."""
        slot = self._slots.pop(ref)
        self._warming.discard(ref)
        errors = self._ray.exceptions
        try:
            self._ray.get(ref)
        except errors.RayError as exc:
            self._live -= 1
            with contextlib.suppress(Exception):
                self._ray.kill(slot.actor, no_restart=True)
            cause = exc.cause if isinstance(exc, errors.RayTaskError) else None
            problem = None
            if isinstance(cause, RemoteMismatch):
                problem = str(cause)
            elif isinstance(cause, BaseException):
                problem = _one_line(f"a Ray worker could not plan this run: {cause}")
            if problem is not None and self._sending:
                sys.stderr.write(
                    f"sevro: warning: {problem} (a worker that started after the first trial; "
                    "it gets no trial)\n"
                )
            elif problem is not None:
                self._refusal = problem
            if self._live == 0:
                self._refusal = (
                    self._refusal
                    or problem
                    or _one_line(f"no Ray worker could start for this run: {exc}")
                )
            return
        self._idle.append(slot)

    def _dispatch(self) -> None:
        """Queued trials onto idle workers (under the lock); with no worker left, each queued
        trial fails the run with the reason."""
        while self._queue and self._idle:
            slot, submitted = self._idle.pop(), self._queue.popleft()
            ref = slot.actor.trial.remote(submitted.description, self._flag, submitted.key)
            slot.running = submitted
            self._slots[ref] = slot
            self._calls[ref] = submitted
            self._wake.set()
        if self._live == 0:
            while self._queue:
                reason = self._refusal or "no Ray worker is left to run this run's trials"
                self._queue.popleft().future.set_exception(InvocationError(reason))

    def shutdown(self) -> None:
        """Every submitted trial ended (persisted, lost or failed), then the driver leaves."""
        self._closing.set()
        self._wake.set()
        if self._collector.is_alive():
            self._collector.join()
        for slot in list(self._slots.values()) + self._idle:
            with contextlib.suppress(Exception):
                self._ray.kill(slot.actor, no_restart=True)
        with contextlib.suppress(Exception):
            self._ray.kill(self._flag)
        self._ray.shutdown()  # a cluster started for the run (local) stops here
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)

    def _collect(self) -> None:
        """Resolve each future as its call ends; never leave one unresolved."""
        try:
            while True:
                self._wake.clear()
                with self._lock:
                    busy = bool(self._calls or self._queue)
                    refs = list(self._calls) + list(self._warming)
                if not busy and self._closing.is_set():
                    return
                timeout = RAY_COLLECT_POLL_S
                if not self._calls:  # a trial sent now wakes it at once: none waits on a nap
                    self._watch_cancel()
                    if self._wake.wait(RAY_COLLECT_POLL_S) or not refs:
                        continue
                    timeout = 0.0  # only workers warming: a quick look at them
                # as soon as one call is back, with every other one already back too
                ready, rest = self._ray.wait(refs, num_returns=1, timeout=timeout)
                if ready and rest:
                    more, _ = self._ray.wait(rest, num_returns=len(rest), timeout=0)
                    ready += more
                for ref in ready:
                    self._returned(ref)
                self._watch_cancel()
        except BaseException as exc:  # the collector itself failed: every trial says so
            with self._lock:
                left = list(self._calls.values()) + list(self._queue)
                self._calls, self._queue = {}, deque()
            for submitted in left:
                submitted.future.set_exception(exc)

    def _returned(self, ref: Any) -> None:
        with self._lock:
            if ref in self._warming:
                self._warmed(ref)
                self._dispatch()
                return
        self._arrive(ref)

    def _arrive(self, ref: Any) -> None:
        with self._lock:
            submitted = self._calls.pop(ref)
            slot = self._slots.pop(ref)
            slot.running = None
        task = submitted.task
        try:
            try:
                shipment = self._ray.get(ref)
            except self._ray.exceptions.RayError as exc:
                self._failed(submitted, slot, exc)
                return
            self._release(slot)
            record = persist_shipment(task.store, shipment, (task.unit, task.trial))
        except BaseException as exc:  # refused shipment or a persistence failure: run stops
            submitted.future.set_exception(exc)
            return
        submitted.future.set_result(record)

    def _release(self, slot: _Slot) -> None:
        """The worker is idle again: the next queued trial goes to it."""
        with self._lock:
            self._idle.append(slot)
            self._dispatch()

    def _failed(self, submitted: _Submitted, slot: _Slot, exc: BaseException) -> None:
        """A call that did not return: the trial's own error stops the run as locally; a lost
        worker or node makes the trial an execution failure, or runs it again (on a new worker)
        when it never started."""
        errors = self._ray.exceptions
        if isinstance(exc, errors.RayTaskError) and not isinstance(exc, errors.TaskCancelledError):
            self._release(slot)
            cause = exc.cause if isinstance(exc.cause, BaseException) else exc
            submitted.future.set_exception(cause)
            return
        with self._lock:
            self._live -= 1
            with contextlib.suppress(Exception):
                self._ray.kill(slot.actor, no_restart=True)
        again = (
            not submitted.forced
            and not self._options.cancel.cancelled
            and submitted.resubmits < RAY_RESUBMITS
            and not self._started(submitted.key)
        )
        with self._lock:
            if again or self._queue:  # a new worker in the lost one's place, for what waits
                self._add_worker()
            if again:
                submitted.resubmits += 1
                self._queue.appendleft(submitted)
            self._dispatch()
        if not again:
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
        """Relay the owner's cancellation; kill the workers still running a trial after the
        grace."""
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
            running = [(r, s) for r, s in self._calls.items() if not s.forced]
            slots = [self._slots[r] for r, _ in running]
        for (_, submitted), slot in zip(running, slots, strict=True):
            submitted.forced = True
            with contextlib.suppress(Exception):
                self._ray.kill(slot.actor, no_restart=True)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:RAY_MAX_REASON_CHARS]


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
