"""Trials on another machine: a picklable description goes out, the trial's evidence comes back.

A remote executor (a Ray cluster) cannot call ``task.run()`` on a worker: the run owner's plan,
evidence store and run state live in the owner's process. So the owner describes the trial
(:func:`describe_trial`: the loaded cases, settings and ``--plugin`` files it planned from, and
the identity it computed); the worker plans the same run again from them, refuses when its plan
has another identity, runs the trial into a private temporary evidence store and sends back the
trial file with every file it references (:func:`run_described_trial`). The owner checks each
file's bound, digest and place and writes them through its own store
(:func:`persist_shipment`), so the trial is checkpointed, reported and resumed exactly as a local
one: the owner stays the run's single writer. A trial whose worker or node died is persisted as
an execution failure with the reason (:func:`lost_trial`), never as a pass.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import socket
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import structlog
from attrs import field, fields, frozen

from sevro_core.errors import ConfigurationError, InvocationError, PersistenceError, SevroError
from sevro_core.fixtures.workspace import read_confined
from sevro_core.formats.schemas import is_valid
from sevro_core.limits import (
    MAX_RESULT_FILE_BYTES,
    MAX_SHIPPED_TRIAL_BYTES,
    MAX_SHIPPED_TRIAL_FILES,
)
from sevro_core.logs import configure as configure_logs
from sevro_core.models import CancelToken, Case, unit_key
from sevro_core.plugin.manager import Registry, load_plugins
from sevro_core.run.engine import execute_trial, persist_failure
from sevro_core.run.executors import TrialJob
from sevro_core.run.planning import RunPlan, RunSettings, plan_run
from sevro_core.run.records import EXECUTOR_LOST_CODE, TrialRecord
from sevro_core.run.resume import referenced_blobs
from sevro_core.store.evidence import EvidenceStore
from sevro_core.store.spendgate import CANDIDATE_ROLE, SpendCeilings, SpendGate
from sevro_core.store.spendjournal import SpendJournal

_HEX64 = re.compile(r"[0-9a-f]{64}")


class RemoteMismatch(SevroError):
    """A worker's plan of the described run is not the owner's (its files, plugins or sevro
    differ): the trial does not run there."""

    code = "sevro.executor.remote-mismatch"


class ShipmentRefused(PersistenceError):
    """What a worker sent back breaks a rule (a digest, a bound, a path, the trial it names):
    nothing of it is written, and the run stops (exit 70)."""

    code = "sevro.executor.shipment-refused"


@frozen
class TrialDescription:
    """One admitted trial as a worker needs it: picklable, and without any secret (hosts'
    credentials are named in the settings as variables or file paths, read on the worker)."""

    run_id: str
    attempt: int
    identity_digest: str
    """The owner's ``plan.identity["digest"]``: the worker's plan must have the same."""
    unit: str
    """The planned unit: a case id, or ``case@arm``."""
    trial: int
    cases: tuple[Case, ...]
    """The loaded cases the owner planned from, in its order."""
    settings: RunSettings
    plugin_files: tuple[Path, ...]
    """The ``--plugin`` files (the same absolute paths on every node)."""
    dimensions: Mapping[str, Any] = field(factory=dict)
    """The owner's identity dimensions, so a mismatch names what differs."""


@frozen
class ShippedFile:
    """One evidence file, by its path relative to the run directory."""

    relative: str
    data: bytes
    sha256: str


@frozen
class TrialShipment:
    """What a worker sends back: the trial's file (``document``) and every file it references."""

    unit: str
    trial: int
    attempt: int
    document: str
    """The relative path of ``trial-N.json`` among ``files``."""
    files: tuple[ShippedFile, ...]
    node: str
    """The worker's host name (for diagnostics only)."""


def describe_trial(job: TrialJob) -> TrialDescription:
    """The admitted trial as a worker can run it; refuses (``ConfigurationError``) a run that
    cannot run elsewhere: an extension case source, a secret host setting, judges under a spend
    ceiling, or anything that does not pickle."""
    plan = job.plan
    problem = _unshippable(plan)
    if problem is not None:
        raise ConfigurationError(problem)
    description = TrialDescription(
        run_id=job.store.run_id,
        attempt=job.store.attempt,
        identity_digest=plan.identity["digest"],
        unit=job.unit,
        trial=job.trial,
        cases=tuple({p.case.id: p.case for p in plan.cases}.values()),
        settings=plan.settings,
        plugin_files=plugin_files(plan.registry),
        dimensions=dict(plan.identity["dimensions"]),
    )
    problem = _unpicklable(description.cases, description.settings)
    if problem is not None:
        raise ConfigurationError(problem)
    return description


def plugin_files(registry: Registry) -> tuple[Path, ...]:
    """The ``--plugin`` files ``registry`` loaded, as the absolute paths it loaded."""
    return tuple(
        Path(info.name.removeprefix("file:")) for info in registry.plugins if info.source == "file"
    )


def check_remote_plan(plan: RunPlan) -> None:
    """Refuse, before anything runs (exit 64), a run whose trials cannot be described for a
    remote executor's workers (see :func:`describe_trial`); the runner calls it when the
    chosen executor declares ``remote = True``."""
    problem = _unshippable(plan) or _unpicklable(
        tuple({p.case.id: p.case for p in plan.cases}.values()), plan.settings
    )
    if problem is not None:
        raise InvocationError(f"--executor {plan.settings.executor.name}: {problem}")


def _unshippable(plan: RunPlan) -> str | None:
    """Why the run's trials cannot run on another machine, or None."""
    if plan.case_source is not None or plan.settings.extension is not None:
        return (
            "a run whose cases come from an extension (--extension-command-file) cannot run on "
            "a remote executor: the extension's process lives with the run owner"
        )
    hosts = plan.registry.hosts().values()
    secrets = {s.key for host in hosts for s in getattr(host, "settings", ()) if s.secret}
    given = sorted(secrets & set(plan.settings.host_options.settings))
    if given:
        return (
            f"host setting {given[0]} is secret and is never sent to a remote worker: give the "
            "workers what they need as an environment variable or a file on each node"
        )
    if plan.settings.spend is not None and plan.judges.routes:
        return (
            "a run with judges and a spend ceiling cannot run on a remote executor: each judge "
            "call reserves its ceiling in the run owner's spend journal"
        )
    return None


def _unpicklable(cases: tuple[Case, ...], settings: RunSettings) -> str | None:
    """What of a description would not reach a worker (named), or None."""
    try:
        pickle.dumps((cases, settings))
    except Exception as exc:
        parts: list[tuple[str, object]] = [(f"case {c.id}", c) for c in cases]
        parts += [(f"setting {f.name}", getattr(settings, f.name)) for f in fields(RunSettings)]
        culprit = next((name for name, value in parts if not _pickles(value)), "description")
        return (
            f"this trial cannot be sent to a remote worker: its {culprit} cannot be pickled "
            f"({type(exc).__name__}: {exc})"
        )
    return None


def _pickles(value: object) -> bool:
    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True


_CACHE_LOCK = threading.Lock()
_REGISTRIES: dict[tuple[Path, ...], Registry] = {}
_PLANS: dict[tuple[str, str, int], RunPlan] = {}


def node_name() -> str:
    return socket.gethostname()


def _worker_plan(description: TrialDescription) -> RunPlan:
    """The described run planned on this worker: once per process, run attempt and identity
    (plugins loaded as ``sevro`` loads them); refused when its identity is not the owner's."""
    key = (description.identity_digest, description.run_id, description.attempt)
    with _CACHE_LOCK:
        plan = _PLANS.get(key)
        if plan is not None:
            return plan
        if not structlog.is_configured():  # a worker's log lines go to stderr, as sevro's do
            configure_logs()
        registry = _REGISTRIES.get(description.plugin_files)
        if registry is None:
            registry = load_plugins(description.plugin_files)
            _REGISTRIES[description.plugin_files] = registry
        plan = plan_run(description.cases, registry, description.settings)
        if plan.identity["digest"] != description.identity_digest:
            mine, theirs = plan.identity["dimensions"], description.dimensions
            differ = sorted(k for k in {*mine, *theirs} if mine.get(k) != theirs.get(k))
            raise RemoteMismatch(
                f"node {node_name()} plans a different evaluation: "
                f"{', '.join(differ) or 'its identity digest'} differ"
            )
        _PLANS[key] = plan
        return plan


def plan_described_trial(description: TrialDescription) -> str:
    """ON THE WORKER: plan the described run in this process ahead of its trials (what
    :func:`run_described_trial` would do first), so a worker started for the run pays its
    imports and planning before the trials are sent; the node's name. A node that plans
    another evaluation raises :class:`RemoteMismatch` here, before any trial."""
    _worker_plan(description)
    return node_name()


def run_described_trial(
    description: TrialDescription, cancel: CancelToken | None = None
) -> TrialShipment:
    """ON THE WORKER: run the described trial into a private temporary evidence store and
    return its files (bounded by ``MAX_SHIPPED_TRIAL_BYTES``); the directory is removed."""
    plan = _worker_plan(description)
    planned = next((p for p in plan.cases if p.unit == description.unit), None)
    if planned is None or not 1 <= description.trial <= plan.settings.trials:
        raise RemoteMismatch(
            f"node {node_name()} plans no trial {description.unit}#{description.trial}"
        )
    with tempfile.TemporaryDirectory(prefix="sevro-remote-") as temp:
        root = Path(temp)
        store = EvidenceStore(root / "results", description.run_id, attempt=description.attempt)
        spend = _worker_gate(plan.settings, root, description)
        try:
            record = execute_trial(
                plan, planned, description.trial, cancel or CancelToken(), store, spend
            )
        finally:
            if spend is not None:
                spend.journal.close()
        return _shipment(store, record, description)


def _worker_gate(
    settings: RunSettings, root: Path, description: TrialDescription
) -> SpendGate | None:
    """The candidate's per-call ceiling on the worker (the owner reserved the call): a gate
    over a private journal that only carries it to the host; None without one."""
    ceiling = settings.spend.call_ceiling(CANDIDATE_ROLE) if settings.spend else None
    if ceiling is None:
        return None
    journal = SpendJournal.open(root, description.run_id, attempt=description.attempt)
    ceilings = SpendCeilings(call_usd={CANDIDATE_ROLE: ceiling})
    return SpendGate(journal, ceilings, description.attempt)


def _shipment(
    store: EvidenceStore, record: TrialRecord, description: TrialDescription
) -> TrialShipment:
    """The trial file and every file it references, read back without following links."""
    if record.path is None or record.document is None:
        raise PersistenceError(f"trial {description.unit}#{description.trial} wrote no evidence")
    document = store.relative(record.path)
    refs = referenced_blobs(record.document["evidence"])
    files: list[ShippedFile] = []
    left = MAX_SHIPPED_TRIAL_BYTES
    for relative in (document, *(str(ref["path"]) for ref, _ in refs)):
        data, size = read_confined(store.run_dir, relative, left + 1)
        if size > left:
            raise ShipmentRefused(
                f"trial {description.unit}#{description.trial} on node {node_name()} wrote more "
                f"than {MAX_SHIPPED_TRIAL_BYTES} bytes of evidence; it is not sent"
            )
        left -= size
        files.append(ShippedFile(relative, data, hashlib.sha256(data).hexdigest()))
    return TrialShipment(
        unit=description.unit,
        trial=description.trial,
        attempt=description.attempt,
        document=document,
        files=tuple(files),
        node=node_name(),
    )


def persist_shipment(
    store: EvidenceStore, shipment: TrialShipment, expected: tuple[str, int]
) -> TrialRecord:
    """ON THE OWNER: check what a worker sent for trial ``expected`` (unit, trial) and write it
    through ``store``, blobs first; the record is what a local trial's would be."""
    refuse = _Refusal(shipment)
    unit, trial = expected
    if (shipment.unit, shipment.trial, shipment.attempt) != (unit, trial, store.attempt):
        refuse(
            "the shipment",
            f"it is trial {shipment.unit}#{shipment.trial} of attempt {shipment.attempt}, "
            f"not the expected {unit}#{trial} of attempt {store.attempt}",
        )
    files = _checked_files(shipment, refuse)
    document = _checked_document(store, shipment, files, refuse)
    _check_references(document, shipment, files, refuse)
    case_dir = store.run_dir / "cases" / unit
    if case_dir.is_symlink() or (os.path.lexists(case_dir) and not case_dir.is_dir()):
        refuse(f"cases/{unit}", "the trial's directory in the run is not a plain directory")
    for relative in files:
        if os.path.lexists(store.run_dir / relative):
            refuse(relative, "it already exists in the run (a trial is persisted once)")
    for relative, data in files.items():
        if relative != shipment.document:
            store.write_blob(unit, relative.rsplit("/", 1)[1], data)
    data = files[shipment.document]
    store.write_blob(unit, shipment.document.rsplit("/", 1)[1], data)
    path = store.run_dir / shipment.document
    return TrialRecord.from_document(document, path, hashlib.sha256(data).hexdigest())


@frozen
class _Refusal:
    """Raises :class:`ShipmentRefused` naming the trial, the node, the file and the rule."""

    shipment: TrialShipment

    def __call__(self, what: str, rule: str) -> NoReturn:
        shipment = self.shipment
        raise ShipmentRefused(
            f"refused the evidence of trial {shipment.unit}#{shipment.trial} from node "
            f"{shipment.node!r}: {what}: {rule}"
        )


def _checked_files(shipment: TrialShipment, refuse: _Refusal) -> dict[str, bytes]:
    """Each file by its path: bounded, where the trial's files belong, with its digest."""
    if len(shipment.files) > MAX_SHIPPED_TRIAL_FILES:
        refuse("the shipment", f"more than {MAX_SHIPPED_TRIAL_FILES} files")
    if sum(len(f.data) for f in shipment.files) > MAX_SHIPPED_TRIAL_BYTES:
        refuse("the shipment", f"more than {MAX_SHIPPED_TRIAL_BYTES} bytes")
    prefix = f"cases/{shipment.unit}/"
    name = re.compile(rf"trial-{shipment.trial}(?:\.json|-[A-Za-z0-9][A-Za-z0-9._-]*)")
    files: dict[str, bytes] = {}
    for shipped in shipment.files:
        relative = shipped.relative
        if not relative.startswith(prefix) or not name.fullmatch(relative[len(prefix) :]):
            refuse(
                repr(relative),
                f"a trial's file must be {prefix}trial-{shipment.trial}.json or "
                f"{prefix}trial-{shipment.trial}-<name> (no '..', no absolute path, no link)",
            )
        if relative in files:
            refuse(relative, "it is sent twice")
        if not _HEX64.fullmatch(shipped.sha256):
            refuse(relative, "its sha256 is not 64 lowercase hex digits")
        if hashlib.sha256(shipped.data).hexdigest() != shipped.sha256:
            refuse(relative, "its bytes do not have the sha256 sent with them")
        files[relative] = shipped.data
    return files


def _checked_document(
    store: EvidenceStore, shipment: TrialShipment, files: Mapping[str, bytes], refuse: _Refusal
) -> dict[str, Any]:
    """The trial file: bounded, valid, and about this run, unit, trial and attempt."""
    relative = shipment.document
    if relative != f"cases/{shipment.unit}/trial-{shipment.trial}.json" or relative not in files:
        refuse(repr(relative), "the trial file is not among the files or not where it belongs")
    data = files[relative]
    if len(data) > MAX_RESULT_FILE_BYTES:
        refuse(relative, f"larger than {MAX_RESULT_FILE_BYTES} bytes")
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        refuse(relative, "not JSON")
    if not is_valid("trial-evidence.v1", document):
        refuse(relative, "it does not match the trial evidence schema")
    found = (
        document["runId"],
        unit_key(document["caseId"], document.get("arm")),
        document["trial"],
        document["evidence"]["attempt"],
        document["result"].get("artifactPath"),
    )
    wanted = (store.run_id, shipment.unit, shipment.trial, store.attempt, relative)
    if found != wanted:
        run, unit, trial, attempt, path = (_shown(v) for v in found)
        refuse(
            relative,
            f"it is run {run}, {unit}#{trial} attempt {attempt} at {path}; expected run "
            f"{wanted[0]}, {wanted[1]}#{wanted[2]} attempt {wanted[3]} at {wanted[4]}",
        )
    return dict(document)


def _shown(value: object) -> str:
    """A value a worker sent, safe on one terminal line (quoted when it is not plain)."""
    text = str(value)
    return text if text.isprintable() and len(text) <= 200 else repr(text[:200])


def _check_references(
    document: Mapping[str, Any],
    shipment: TrialShipment,
    files: Mapping[str, bytes],
    refuse: _Refusal,
) -> None:
    """Every file the trial references is sent, with its size and digest, within its bound;
    nothing else is."""
    referenced = {shipment.document}
    for ref, limit in referenced_blobs(document["evidence"]):
        relative = str(ref["path"])
        data = files.get(relative)
        if data is None:
            refuse(repr(relative), "the trial file references it but it was not sent")
        if (
            len(data) > limit
            or len(data) != ref["byteLength"]
            or ref["sha256"] != hashlib.sha256(data).hexdigest()
        ):
            refuse(
                relative, f"its size or sha256 is not what the trial file records (bound {limit})"
            )
        referenced.add(relative)
    for relative in files:
        if relative not in referenced:
            refuse(relative, "the trial file does not reference it")


def lost_trial(job: TrialJob, reason: str) -> TrialRecord:
    """ON THE OWNER: the trial whose worker or node died, persisted through the owner's store
    as an execution failure (``sevro.executor.lost``) with ``reason``; resume runs it again."""
    message = f"the worker running this trial was lost: {reason}"
    if os.path.lexists(job.store.run_dir / "cases" / job.unit / f"trial-{job.trial}.json"):
        raise PersistenceError(  # what its worker sent was persisted: it is not lost
            f"trial {job.unit}#{job.trial} is persisted already; it cannot also be lost"
        )
    return persist_failure(
        job.plan, job.planned, job.trial, job.store, (EXECUTOR_LOST_CODE, message)
    )


__all__ = [
    "EXECUTOR_LOST_CODE",
    "RemoteMismatch",
    "ShipmentRefused",
    "ShippedFile",
    "TrialDescription",
    "TrialShipment",
    "check_remote_plan",
    "describe_trial",
    "lost_trial",
    "persist_shipment",
    "plugin_files",
    "run_described_trial",
]
