"""Trials run elsewhere (run/remote.py), without Ray: the real CLI's owner describes each trial,
a separate process started with multiprocessing's "spawn" context (nothing of the owner's
memory) plans the run again and runs it into its private store, and the owner checks and
persists what comes back. The result equals a local run's up to timings; a shipment that breaks
a rule is refused naming the file and the rule; a worker whose plan has another identity
refuses to run; a lost worker's trial is an execution failure with its reason."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import pickle
import socket
import stat
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from attrs import evolve, frozen

from sevro_core.api import (
    EXECUTOR_LOST_CODE,
    CancelToken,
    ConfigurationError,
    HostOptions,
    RemoteMismatch,
    ShipmentRefused,
    ShippedFile,
    TrialDescription,
    TrialJob,
    TrialShipment,
    describe_trial,
    load_plugins,
    lost_trial,
    persist_shipment,
    run_described_trial,
)
from sevro_core.errors import PersistenceError
from sevro_core.limits import (
    MAX_ARTIFACT_BYTES,
    MAX_SHIPPED_TRIAL_BYTES,
    MAX_SHIPPED_TRIAL_FILES,
)
from sevro_core.run.loading import load_cases
from sevro_core.run.planning import plan_run
from sevro_core.store.evidence import EvidenceStore
from sevro_core.store.runstate import DEFAULT_STATE_DIR, RunState
from sevro_core.testing import SevroProject, require_sandbox, require_tool
from sevro_core.testing.cliresult import CliResult
from tests.core.run_helpers import settings as run_settings
from tests.e2e.helpers import assert_valid_evidence, load, regex_check
from tests.extensions.conftest import REFERENCE

PLUGIN = Path(__file__).resolve().with_name("spawn_executor.py")
CEILING_HOST = Path(__file__).resolve().with_name("ceiling_host.py")
EXECUTOR = ("--executor", "acme.executor.spawn")
GIT_FIXTURE = {
    "kind": "generated",
    "commits": [{"message": "chore: initialize", "files": {"notes.txt": "a\n"}}],
}
STEPS = [
    [
        {"write": {"path": "notes.txt", "content": "b\n"}},
        {"reply": {"text": "trial {{sevro.trial}}"}},
    ]
]
TIMINGS = ("durations", "startedAt", "finishedAt", "workspace")
"""What differs between two runs of the same trial: when it ran, for how long, and where."""


@frozen
class Runs:
    """One project run twice with the same flags: locally, and through the spawn executor."""

    base: Path
    project: SevroProject
    cases: tuple[Path, ...]
    host: Path
    local: CliResult
    spawned: CliResult
    dump: Path

    def flags(self) -> tuple[str | Path, ...]:
        common = (*self.cases, "--host-config", self.host, "--trials", "2", "--jobs", "2")
        return (*common, "--plugin", PLUGIN)

    def run(self, results: str, *extra: str | Path) -> CliResult:
        """``sevro run`` into a results root outside the project (its digest is compared)."""
        return self.project.sevro(
            "run", *self.flags(), "--results-root", self.base / results, *extra
        )

    def description(self, unit: str, trial: int, attempt: int = 1) -> TrialDescription:
        path = self.dump / f"{unit}-{trial}-attempt-{attempt}.description.pickle"
        found: TrialDescription = pickle.loads(path.read_bytes())
        return found

    def shipment(self, unit: str, trial: int) -> TrialShipment:
        found: TrialShipment = pickle.loads(
            (self.dump / f"{unit}-{trial}-attempt-1.shipment.pickle").read_bytes()
        )
        return found


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    require_tool("git")
    base = tmp_path_factory.mktemp("remote")
    (base / "project").mkdir()
    project = SevroProject((base / "project").resolve())
    one = project.case(
        "one.json", id="one", fixture=GIT_FIXTURE, checks=[regex_check("r", "^trial 1$")]
    )
    two = project.case("two.json", id="two", checks=[regex_check("r", "^trial [12]$")])
    host = project.script(default=STEPS)
    runtime = {"format": "sevro.runtime.v1", "environment": {"set": {"NODE_ENV": "test"}}}
    project.write_json("sevro.json", runtime)  # the runtime policy travels with the settings
    dump = base / "dump"
    dump.mkdir()
    runs = Runs(
        base.resolve(), project, (one, two), host, CliResult(0, "", ""), CliResult(0, "", ""), dump
    )
    local = runs.run("local", "--json")
    spawned = runs.run("spawned", "--json", *EXECUTOR, "--acme-spawn-dump", dump)
    return evolve(runs, local=local, spawned=spawned)


def _untimed(document: dict[str, Any]) -> dict[str, Any]:
    """The trial file without its run id, workspace path and timings (any ``...Ms`` or
    ``...At`` value, at any depth: how long a step took, when it ran)."""
    evidence = {k: v for k, v in document["evidence"].items() if k not in TIMINGS}
    return _timeless({**{k: v for k, v in document.items() if k != "runId"}, "evidence": evidence})


def _timeless(value: Any) -> Any:
    if isinstance(value, dict):
        timed = [k for k in value if k.endswith(("Ms", "At"))]
        return {k: _timeless(v) for k, v in value.items() if k not in timed}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def _run_dir(result: CliResult) -> Path:
    return Path(result.json()["evidencePath"]).parent


def test_a_trial_run_in_a_spawned_process_persists_as_a_local_one(runs: Runs) -> None:
    assert runs.local.exit_code == 1, runs.local.stderr  # one's second trial fails its check
    assert runs.spawned.exit_code == 1, runs.spawned.stderr
    spawned = assert_valid_evidence(runs.spawned.json())
    local = load(runs.local.json()["evidencePath"])
    assert spawned["executor"] == {"id": "acme.executor.spawn", "version": "0.1.0"}
    assert spawned["evaluationIdentity"] == local["evaluationIdentity"]
    compared = 0
    for unit in ("one", "two"):
        here, there = _run_dir(runs.local) / "cases" / unit, _run_dir(runs.spawned) / "cases" / unit
        assert sorted(p.name for p in there.iterdir()) == sorted(p.name for p in here.iterdir())
        for trial in (1, 2):
            remote = load(there / f"trial-{trial}.json")
            assert _untimed(remote) == _untimed(load(here / f"trial-{trial}.json"))
            assert remote["runId"] == runs.spawned.json()["runId"]
            compared += 1
    assert compared == 4
    # the diff artifact and the raw final message came back too, byte for byte
    assert (there.parent / "one" / "trial-1-sevro.git.diff.bin").read_bytes() == (
        here.parent / "one" / "trial-1-sevro.git.diff.bin"
    ).read_bytes()
    assert runs.shipment("one", 1).node == socket.gethostname()


def test_a_description_pickles_and_names_what_the_owner_planned(runs: Runs) -> None:
    description = runs.description("one", 2)
    assert pickle.loads(pickle.dumps(description)) == description
    run = load(runs.spawned.json()["evidencePath"])
    assert description.run_id == runs.spawned.json()["runId"]
    assert (description.unit, description.trial, description.attempt) == ("one", 2, 1)
    assert description.identity_digest == run["evaluationIdentity"]["digest"]
    assert description.dimensions == run["evaluationIdentity"]["dimensions"]
    assert [c.id for c in description.cases] == ["one", "two"]
    assert description.plugin_files == (PLUGIN,)
    assert description.settings.results_root == runs.base / "spawned"
    assert description.settings.runtime is not None
    assert ("NODE_ENV", "test") in description.settings.runtime.variables


def _owner(root: Path, run_id: str, attempt: int = 1) -> EvidenceStore:
    """A fresh owner's run directory for ``run_id`` (as the runner opens it)."""
    return EvidenceStore(root, run_id, attempt=attempt)


def test_the_owner_persists_a_real_shipment_like_a_local_trial(runs: Runs, tmp_path: Path) -> None:
    """Positive control of every refusal below: the untouched shipment is accepted."""
    shipment = runs.shipment("one", 1)
    store = _owner(tmp_path / "results", runs.spawned.json()["runId"])
    record = persist_shipment(store, shipment, ("one", 1))
    assert record.path == store.run_dir / "cases" / "one" / "trial-1.json"
    assert record.document == load(_run_dir(runs.spawned) / "cases" / "one" / "trial-1.json")
    assert record.sha256 == hashlib.sha256(record.path.read_bytes()).hexdigest()
    assert (record.states.execution.value, record.states.verdict.value) == ("completed", "passed")
    for shipped in shipment.files:
        written = store.run_dir / shipped.relative
        assert written.read_bytes() == shipped.data
        assert stat.S_IMODE(os.lstat(written).st_mode) == 0o600
    assert len(shipment.files) == 3  # the trial file, its raw final message, its diff


def _file(shipment: TrialShipment, suffix: str) -> ShippedFile:
    return next(f for f in shipment.files if f.relative.endswith(suffix))


def _replaced(shipment: TrialShipment, old: ShippedFile, new: ShippedFile) -> TrialShipment:
    return evolve(shipment, files=tuple(new if f is old else f for f in shipment.files))


def _with_document(
    shipment: TrialShipment, change: Callable[[dict[str, Any]], None]
) -> TrialShipment:
    """The shipment with its trial file edited and consistently re-digested (a lying worker)."""
    old = _file(shipment, ".json")
    document = json.loads(old.data)
    change(document)
    data = json.dumps(document, indent=2).encode()
    return _replaced(
        shipment, old, ShippedFile(old.relative, data, hashlib.sha256(data).hexdigest())
    )


def _raw_document(shipment: TrialShipment, data: bytes) -> TrialShipment:
    old = _file(shipment, ".json")
    return _replaced(
        shipment, old, ShippedFile(old.relative, data, hashlib.sha256(data).hexdigest())
    )


def _with_blob(shipment: TrialShipment, suffix: str, data: bytes) -> TrialShipment:
    """The shipment with one blob's bytes replaced and every digest made to agree."""
    old = _file(shipment, suffix)
    digest = hashlib.sha256(data).hexdigest()
    tampered = _replaced(shipment, old, ShippedFile(old.relative, data, digest))

    def point(document: dict[str, Any]) -> None:
        evidence = document["evidence"]
        for ref in [evidence["rawResult"], *evidence["artifactRefs"]]:
            if ref["path"] == old.relative:
                ref.update(sha256=digest, byteLength=len(data))

    return _with_document(tampered, point)


def _renamed(shipment: TrialShipment, relative: str) -> TrialShipment:
    old = _file(shipment, "-raw.txt")
    return _replaced(shipment, old, evolve(old, relative=relative))


def _added(shipment: TrialShipment, relative: str, data: bytes = b"x") -> TrialShipment:
    extra = ShippedFile(relative, data, hashlib.sha256(data).hexdigest())
    return evolve(shipment, files=(*shipment.files, extra))


def _bytes_tampered(shipment: TrialShipment) -> TrialShipment:
    old = _file(shipment, "-raw.txt")
    return _replaced(shipment, old, evolve(old, data=b"trial 2"))


def _ref_tampered(shipment: TrialShipment) -> TrialShipment:
    old = _file(shipment, "-raw.txt")
    data = b"trial 2"
    return _replaced(
        shipment, old, ShippedFile(old.relative, data, hashlib.sha256(data).hexdigest())
    )


TAMPERED: dict[str, tuple[Callable[[TrialShipment], TrialShipment], str]] = {
    "bytes without their digest": (_bytes_tampered, "do not have the sha256 sent with them"),
    "bytes the trial file does not record": (_ref_tampered, "not what the trial file records"),
    "dot-dot": (lambda s: _renamed(s, "cases/one/../two/trial-1-raw.txt"), "no '..'"),
    "absolute": (lambda s: _renamed(s, "/tmp/trial-1-raw.txt"), "no absolute path"),
    "nested": (lambda s: _renamed(s, "cases/one/sub/trial-1-raw.txt"), "trial-1-<name>"),
    "dot-dot name": (lambda s: _renamed(s, "cases/one/trial-1-.."), "trial-1-<name>"),
    "another trial's name": (lambda s: _renamed(s, "cases/one/trial-2-raw.txt"), "trial-1-<name>"),
    "backslashes": (lambda s: _renamed(s, "cases\\one\\trial-1-raw.txt"), "trial-1-<name>"),
    "unreferenced extra file": (
        lambda s: _added(s, "cases/one/trial-1-extra.bin"),
        "the trial file does not reference it",
    ),
    "a file sent twice": (lambda s: evolve(s, files=(*s.files, s.files[-1])), "sent twice"),
    "an artifact over its bound": (
        lambda s: _with_blob(s, ".diff.bin", b"d" * (MAX_ARTIFACT_BYTES + 1)),
        f"bound {MAX_ARTIFACT_BYTES}",
    ),
    "too many files": (
        lambda s: evolve(s, files=s.files * (MAX_SHIPPED_TRIAL_FILES // 3 + 1)),
        f"more than {MAX_SHIPPED_TRIAL_FILES} files",
    ),
    "too many bytes": (
        lambda s: _added(s, "cases/one/trial-1-big.bin", bytes(MAX_SHIPPED_TRIAL_BYTES + 1)),
        f"more than {MAX_SHIPPED_TRIAL_BYTES} bytes",
    ),
    "another run's trial file": (
        lambda s: _with_document(s, lambda d: d.update(runId="another-run")),
        "expected run",
    ),
    "a trial file of another trial": (
        lambda s: _with_document(s, lambda d: d.update(trial=2)),
        "one#2 attempt 1",
    ),
    "a trial file of another attempt": (
        lambda s: _with_document(s, lambda d: d["evidence"].update(attempt=2)),
        "one#1 attempt 2",
    ),
    "a trial file that is not trial evidence": (
        lambda s: _with_document(s, lambda d: d.pop("evidence")),
        "does not match the trial evidence schema",
    ),
    "a trial file that is not JSON": (lambda s: _raw_document(s, b"{"), "not JSON"),
    "a trial file nested too deep": (lambda s: _raw_document(s, b"[" * 200_000), "not JSON"),
    "a trial file naming a run with control characters": (
        lambda s: _with_document(s, lambda d: d.update(runId="run\x1b[31m")),
        "it is run 'run\\x1b[31m'",
    ),
    "the trial file missing": (
        lambda s: evolve(s, files=tuple(f for f in s.files if not f.relative.endswith(".json"))),
        "not among the files",
    ),
    "a header naming another unit": (lambda s: evolve(s, unit="two"), "not the expected one#1"),
}


@pytest.mark.parametrize("case", sorted(TAMPERED))
def test_a_shipment_that_breaks_a_rule_is_refused(runs: Runs, tmp_path: Path, case: str) -> None:
    tamper, message = TAMPERED[case]
    store = _owner(tmp_path / "results", runs.spawned.json()["runId"])
    with pytest.raises(ShipmentRefused, match=_escaped(message)) as refused:
        persist_shipment(store, tamper(runs.shipment("one", 1)), ("one", 1))
    assert "trial one#1" in str(refused.value) or "trial two#1" in str(refused.value)
    assert refused.value.exit_code == 70
    assert not list((store.run_dir / "cases").rglob("*")), "nothing of a refused shipment is kept"


def _escaped(text: str) -> str:
    import re

    return re.escape(text)


@pytest.mark.parametrize(
    ("expected", "attempt", "run_id", "message"),
    [
        (("two", 1), 1, None, "not the expected two#1 of attempt 1"),
        (("one", 2), 1, None, "not the expected one#2 of attempt 1"),
        (("one", 1), 2, None, "not the expected one#1 of attempt 2"),
        (("one", 1), 1, "another-run", "expected run another-run"),
    ],
)
def test_a_shipment_for_another_trial_attempt_or_run_is_refused(
    runs: Runs,
    tmp_path: Path,
    expected: tuple[str, int],
    attempt: int,
    run_id: str | None,
    message: str,
) -> None:
    store = _owner(tmp_path / "results", run_id or runs.spawned.json()["runId"], attempt)
    with pytest.raises(ShipmentRefused, match=_escaped(message)):
        persist_shipment(store, runs.shipment("one", 1), expected)


def test_links_and_files_already_in_the_run_are_never_written_through(
    runs: Runs, tmp_path: Path
) -> None:
    shipment, run_id = runs.shipment("one", 1), runs.spawned.json()["runId"]
    outside = tmp_path / "outside"
    outside.mkdir()
    linked = _owner(tmp_path / "a", run_id)
    (linked.run_dir / "cases" / "one").symlink_to(outside)
    with pytest.raises(ShipmentRefused, match="not a plain directory"):
        persist_shipment(linked, shipment, ("one", 1))
    planted = _owner(tmp_path / "b", run_id)
    planted.case_dir("one")
    (planted.run_dir / "cases" / "one" / "trial-1.json").symlink_to(outside / "x.json")
    with pytest.raises(ShipmentRefused, match="already exists in the run"):
        persist_shipment(planted, shipment, ("one", 1))
    assert not list(outside.iterdir())
    twice = _owner(tmp_path / "c", run_id)
    persist_shipment(twice, shipment, ("one", 1))  # positive control: the first time is fine
    with pytest.raises(ShipmentRefused, match="a trial is persisted once"):
        persist_shipment(twice, shipment, ("one", 1))


@pytest.fixture
def spawned_worker() -> Iterator[Callable[[TrialDescription], Any]]:
    """Run a description in a fresh spawned process (its own plan cache), like a new node."""
    pools: list[ProcessPoolExecutor] = []

    def run(description: TrialDescription) -> Any:
        pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        pools.append(pool)
        return pool.submit(run_described_trial, description).result(timeout=120)

    yield run
    for pool in pools:
        pool.shutdown(wait=True)


def test_a_worker_whose_plan_has_another_identity_refuses_to_run(
    runs: Runs, spawned_worker: Callable[[TrialDescription], Any]
) -> None:
    description = runs.description("one", 1)
    shipment = spawned_worker(description)  # positive control: the same files, the same plan
    assert isinstance(shipment, TrialShipment) and shipment.document == "cases/one/trial-1.json"
    case_file = runs.cases[1]
    original = case_file.read_bytes()
    case_file.write_bytes(original + b"\n")  # "the node" has another copy of the project
    try:
        with pytest.raises(RemoteMismatch, match="plans a different evaluation: projectDigest"):
            spawned_worker(description)
    finally:
        case_file.write_bytes(original)
    unplanned = evolve(description, unit="three")
    with pytest.raises(RemoteMismatch, match="plans no trial three#1"):
        spawned_worker(unplanned)


def test_a_lost_worker_leaves_an_execution_failure_with_its_reason(runs: Runs) -> None:
    dump = runs.base / "lost-dump"
    dump.mkdir()
    lost = runs.run("lost", *EXECUTOR, "--acme-spawn-dump", dump, "--acme-spawn-lose", "one#2")
    assert lost.exit_code == 2, lost.stderr  # an execution failure, never a pass
    reason = "the worker running this trial was lost: node test-node-7 died (SIGKILL)"
    assert f"execution failed (sevro.executor.lost): {reason}" in lost.stdout
    run_json = next((runs.base / "lost").glob("*/run.json"))
    trial = load(run_json.parent / "cases" / "one" / "trial-2.json")
    execution = trial["evidence"]["execution"]
    assert execution == {"status": "failed", "errorCode": "sevro.executor.lost", "message": reason}
    assert trial["evidence"]["task"]["verdict"] == "not_assessed"
    assert trial["result"]["execution"] == "failed"
    # The owner died before it could start another attempt: resume reruns the lost trial and
    # keeps the one its worker sent back (the run state says it finished).
    state = RunState(runs.base / "lost" / DEFAULT_STATE_DIR)
    try:
        state.finish(run_json.parent.name, "interrupted")
    finally:
        state.close()
    resumed = runs.run("lost", "--json", "--resume", *EXECUTOR, "--acme-spawn-dump", dump)
    assert resumed.exit_code == 1, resumed.stderr  # one#2 fails its check, as locally
    assert sorted(p.name for p in dump.glob("*.description.pickle")) == [
        "one-1-attempt-1.description.pickle",
        "one-2-attempt-2.description.pickle",
        "two-1-attempt-2.description.pickle",
        "two-2-attempt-2.description.pickle",
    ]
    again = load(run_json.parent / "cases" / "one" / "trial-2.json")
    assert again["evidence"].pop("attempt") == 2
    before = load(_run_dir(runs.local) / "cases" / "one" / "trial-2.json")
    assert before["evidence"].pop("attempt") == 1
    assert _untimed(again) == _untimed(before)
    superseded = run_json.parent / "cases" / "one" / "superseded" / "before-attempt-2"
    assert load(superseded / "trial-2.json")["evidence"]["execution"]["errorCode"] == (
        "sevro.executor.lost"
    )


@pytest.fixture
def node() -> str:
    return os.path.realpath(require_tool("node"))


def test_an_extension_run_is_not_sent_to_a_worker(sevro_project: SevroProject, node: str) -> None:
    command = sevro_project.write_json("extension/command.json", [node, str(REFERENCE)])
    host = sevro_project.script(default=[[{"reply": {"text": "hello"}}]])
    common = ("--host", "scripted", "--host-config", host, "--sandbox", "none")
    common += ("--extension-command-file", str(command), "--extension-source-file", str(REFERENCE))
    common += ("--case-id", "greets", "--plugin", str(PLUGIN))
    dump = sevro_project.root.parent / "dump"
    dump.mkdir()
    local = sevro_project.run(*common)
    assert local.exit_code in (0, 1), local.stderr  # positive control: it runs locally
    refused = sevro_project.run(*common, *EXECUTOR, "--acme-spawn-dump", dump)
    _refused_before_anything_ran(sevro_project, refused, "cases come from an extension")
    assert not list(dump.iterdir())


def _refused_before_anything_ran(project: SevroProject, refused: CliResult, why: str) -> None:
    """One line, exit 64, and no run claimed beyond the positive control's."""
    assert refused.exit_code == 64, refused.stderr
    assert why in refused.stdout + refused.stderr
    assert "internal error" not in refused.stdout + refused.stderr
    runs = [p for p in project.results.iterdir() if not p.name.startswith(".")]
    assert len(runs) == 1, runs


def _in_process_job(tmp_path: Path, *plugins: Path, **settings: Any) -> TrialJob:
    """A planned trial as the scheduler submits it, planned in this process."""
    project = tmp_path / "project"
    project.mkdir(parents=True)
    case = project / "case.json"
    declared = {"id": "example", "prompt": "Say ok.", "fixture": {"files": {}}, "checks": []}
    case.write_text(json.dumps({**declared, "requiredEvidence": []}))
    script = {
        "format": "sevro.scripted-host.v1",
        "default": {"turns": [[{"reply": {"text": "ok"}}]]},
    }
    chosen = run_settings(
        tmp_path,
        **{"host": "sevro.host.scripted", "host_options": HostOptions(config=script), **settings},
    )
    plan = plan_run(load_cases([case]), load_plugins(plugins), chosen)
    store = EvidenceStore(tmp_path / "results", str(uuid.uuid4()))  # as the run state names runs
    return TrialJob(plan, plan.cases[0], 1, CancelToken(), store)


def test_a_run_that_cannot_be_pickled_is_refused_naming_the_setting(tmp_path: Path) -> None:
    job = _in_process_job(tmp_path)
    assert describe_trial(job).unit == "example"  # positive control
    settings = evolve(job.plan.settings, holdout={"planId": threading.Lock()})
    unpicklable = evolve(job, plan=evolve(job.plan, settings=settings))
    with pytest.raises(ConfigurationError, match="its setting holdout cannot be pickled"):
        describe_trial(unpicklable)


def test_describing_a_trial_never_carries_a_secret_host_setting(tmp_path: Path) -> None:
    """The safety net behind ``check_remote_plan``: an executor that did not declare itself
    remote still cannot describe such a trial."""
    options = HostOptions(settings={"acme.token": "s3cr3t-token-9f2e"})
    job = _in_process_job(tmp_path, CEILING_HOST, host="acme.host.ceiling", host_options=options)
    with pytest.raises(ConfigurationError, match=r"host setting acme\.token is secret"):
        describe_trial(job)
    plain = _in_process_job(tmp_path / "plain", CEILING_HOST, host="acme.host.ceiling")
    assert pickle.loads(pickle.dumps(describe_trial(plain))).unit == "example"  # control


def _ceiling_run(project: SevroProject, dump: Path, *extra: str | Path) -> CliResult:
    case = project.case(checks=[regex_check("r", "^ceiling 1.0$")])
    flags = (case, "--host", "acme.host.ceiling", "--sandbox", "none", "--plugin", CEILING_HOST)
    return project.run(*flags, "--plugin", PLUGIN, *extra)


def test_the_candidates_call_ceiling_reaches_the_host_on_the_worker(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    dump = tmp_path / "dump"
    dump.mkdir()
    remote = (*EXECUTOR, "--acme-spawn-dump", dump)
    ceiling = ("--max-cost-usd", "5", "--max-call-cost-usd", "1")
    given = _ceiling_run(sevro_project, dump, *remote, *ceiling)
    assert given.exit_code == 0, given.stderr  # the host on the worker was given $1
    run = assert_valid_evidence(given.json())
    assert run["spend"]["totals"]["reservations"] == 1  # reserved by the owner, once
    assert run["spend"]["totals"]["forfeits"] == 1  # the host reports no usage
    none = _ceiling_run(sevro_project, dump, *remote)  # negative control: no ceiling, none given
    assert none.exit_code == 1, none.stderr
    assert none.json()["cases"][0]["trials"][0]["checks"][0]["status"] == "failed"


def test_a_secret_host_setting_is_never_sent_to_a_worker(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    dump = tmp_path / "dump"
    dump.mkdir()
    secret = ("--acme-token", "s3cr3t-token-9f2e")
    local = _ceiling_run(sevro_project, dump, *secret)
    assert local.exit_code == 1, local.stderr  # positive control: it runs locally
    refused = _ceiling_run(sevro_project, dump, *secret, *EXECUTOR, "--acme-spawn-dump", dump)
    _refused_before_anything_ran(sevro_project, refused, "host setting acme.token is secret")
    assert not list(dump.iterdir()), "nothing was described, nothing pickled"
    assert "s3cr3t-token-9f2e" not in refused.stdout + refused.stderr


def test_judges_under_a_spend_ceiling_are_not_sent_to_a_worker(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    from tests.judges.helpers import verdicts

    semantic = {
        "id": "says-ok",
        "grader": "sevro.semantic",
        "configuration": {"proposition": "The reply says ok."},
    }
    case = sevro_project.case(checks=[regex_check("r", "^ok$"), semantic])
    judge = sevro_project.write_json(
        "host.json",
        {
            "format": "sevro.scripted-host.v1",
            "default": {"turns": [[{"reply": {"text": "ok"}}]]},
            "judges": {"semantic": [{"reply": verdicts(("says-ok", "pass", "It says ok."))}]},
        },
    )
    dump = tmp_path / "dump"
    dump.mkdir()
    flags = (case, "--host-config", judge, "--semantic-host", "scripted")
    flags += ("--semantic-host-config", judge, "--plugin", PLUGIN)
    flags += (*EXECUTOR, "--acme-spawn-dump", dump)
    judged = sevro_project.run(*flags)
    assert judged.exit_code == 0, judged.stderr  # positive control: the judge runs on the worker
    checks = judged.json()["cases"][0]["trials"][0]["checks"]
    assert {c["id"]: c["status"] for c in checks} == {"r": "passed", "says-ok": "passed"}
    described = len(list(dump.iterdir()))
    refused = sevro_project.run(*flags, "--max-cost-usd", "5", "--max-call-cost-usd", "1")
    _refused_before_anything_ran(sevro_project, refused, "judges and a spend ceiling")
    assert len(list(dump.iterdir())) == described


def test_a_cancelled_worker_trial_comes_back_cancelled_and_a_lost_one_failed(
    tmp_path: Path,
) -> None:
    """In this process (the worker's cache included): the run's cancel token reaches the trial
    on the worker, which ends ``cancelled`` as locally; ``lost_trial`` is a failure, never a
    pass, whose reason the run summary shows."""
    from sevro_core.reporting.failures import trial_reason

    job = _in_process_job(tmp_path, trials=3)
    done = run_described_trial(describe_trial(job))  # positive control: it completes
    record = persist_shipment(job.store, done, ("example", 1))
    assert record.states.execution.value == "completed"
    cancel = CancelToken()
    cancel.cancel("SIGINT")
    stopped = run_described_trial(describe_trial(evolve(job, trial=2)), cancel)
    cancelled = persist_shipment(job.store, stopped, ("example", 2))
    assert cancelled.states.execution.value == "cancelled"
    assert cancelled.error_code == "sevro.run.cancelled"
    lost = lost_trial(evolve(job, trial=3), "node n2 died")
    assert (lost.states.execution.value, lost.states.verdict.value) == ("failed", "not_assessed")
    assert lost.error_code == EXECUTOR_LOST_CODE
    assert lost.path is not None and lost.document == load(lost.path)
    assert lost.sha256 == hashlib.sha256(lost.path.read_bytes()).hexdigest()
    with pytest.raises(PersistenceError, match="example#1 is persisted already"):
        lost_trial(job, "too late")  # its shipment was persisted: nothing is counted twice
    reason = trial_reason(lost.document["evidence"])
    assert reason == (
        "execution failed (sevro.executor.lost): the worker running this trial was lost: "
        "node n2 died"
    )


def test_an_experiments_arms_run_on_workers_as_locally(
    sevro_project: SevroProject, tmp_path: Path
) -> None:
    """``case@arm`` units: each arm's skills are mounted by the worker's own plan."""
    from tests.e2e.helpers import notes_experiment

    require_sandbox()
    project = notes_experiment(sevro_project)
    dump = tmp_path / "dump"
    dump.mkdir()
    common = ("cases", "--skill", "skills/notes", "--host-config", "host.json")
    common += ("--baseline", "none", "--trials", "2", "--jobs", "2", "--plugin", str(PLUGIN))
    local = project.sevro("run", *common, "--json", "--results-root", tmp_path / "local")
    remote = project.sevro(
        "run", *common, "--json", "--results-root", tmp_path / "remote",
        *EXECUTOR, "--acme-spawn-dump", dump,
    )  # fmt: skip
    assert local.exit_code == remote.exit_code == 1, remote.stderr  # the baseline arm fails
    assert_valid_evidence(remote.json())
    units = sorted(p.name for p in (_run_dir(remote) / "cases").iterdir())
    assert units == ["notes@baseline", "notes@candidate"]
    for unit in units:
        for trial in (1, 2):
            there = load(_run_dir(remote) / "cases" / unit / f"trial-{trial}.json")
            here = load(_run_dir(local) / "cases" / unit / f"trial-{trial}.json")
            assert _untimed(there) == _untimed(here)
    assert len(list(dump.glob("*.shipment.pickle"))) == 4


def test_a_worker_plans_once_per_run_and_bounds_what_it_sends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sevro_core.run import remote

    planned: list[str] = []

    def counting(*args: Any) -> Any:
        planned.append("plan")
        return plan_run(*args)

    monkeypatch.setattr(remote, "plan_run", counting)
    job = _in_process_job(tmp_path, trials=3)
    for trial in (1, 2):
        shipment = run_described_trial(describe_trial(evolve(job, trial=trial)))
        assert shipment.document == f"cases/example/trial-{trial}.json"
    assert planned == ["plan"], "one plan per process and run attempt"
    bound = min(len(f.data) for f in shipment.files) // 2  # a bound every trial passes
    monkeypatch.setattr(remote, "MAX_SHIPPED_TRIAL_BYTES", bound)
    with pytest.raises(ShipmentRefused, match=f"wrote more than {bound} bytes of evidence"):
        run_described_trial(describe_trial(evolve(job, trial=3)))
    assert planned == ["plan"]
