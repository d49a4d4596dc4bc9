"""Trials on a real local Ray cluster (a head node and a second worker node, each its own
``ray start`` process): results equal the local executor's up to timings, each node is checked
before any trial, a worker killed mid-trial loses only its trial, a killed owner resumes, and
SIGINT cancels the remote trials."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from sevro_core.testing import SevroProject, require_sandbox, start_sevro
from sevro_executor_ray.testing import LocalRayCluster, free_ports, local_ray_cluster
from tests.e2e.helpers import assert_valid_evidence, load, notes_experiment, regex_check

TRIAL_TITLE = b"ray::SevroWorker.trial"


def _outcome(result: dict[str, Any]) -> list[Any]:
    """A result without its timings, paths and run id: what must not depend on the executor."""
    return [
        (c["caseId"], c.get("arm"), c["passedTrials"], c["task"], [t["task"] for t in c["trials"]])
        for c in result["cases"]
    ]


def _trial_files(result: dict[str, Any]) -> list[str]:
    run_dir = Path(result["evidencePath"]).parent
    return sorted(str(p.relative_to(run_dir)) for p in (run_dir / "cases").rglob("trial-*.json"))


def _run(project: SevroProject, results: str, *args: str | Path) -> Any:
    """``sevro run`` into its own results root outside the project (whose digest is part of
    the identity and must be the same for every run compared)."""
    out = project.root.parent / results
    return project.sevro("run", *args, "--json", "--results-root", out, timeout=300)


def _on_ray(cluster: LocalRayCluster) -> tuple[str, ...]:
    return ("--executor", "ray", "--ray-address", cluster.address)


def _running_trials(cluster: LocalRayCluster) -> list[int]:
    """Worker processes of this cluster running a trial right now (Ray retitles them)."""
    found = []
    for pid in cluster.processes():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.startswith(TRIAL_TITLE):
            found.append(pid)
    return found


def _wait_no_trials(cluster: LocalRayCluster, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while _running_trials(cluster):
        assert time.monotonic() < deadline, "a remote trial outlived its run"
        time.sleep(0.2)


def test_a_scripted_run_on_the_cluster_equals_the_local_run(
    sevro_project: SevroProject, ray_cluster: LocalRayCluster
) -> None:
    first = sevro_project.case("one.json", id="one", checks=[regex_check("r", "^trial [12]$")])
    second = sevro_project.case("two.json", id="two", checks=[regex_check("r", "^trial 1$")])
    host = sevro_project.script(default=[[{"reply": {"text": "trial {{sevro.trial}}"}}]])
    common = (first, second, "--host-config", host, "--trials", "3", "--jobs", "4")
    local = _run(sevro_project, "local", *common)
    assert local.exit_code == 1, local.stderr
    remote = _run(sevro_project, "ray", *common, *_on_ray(ray_cluster))
    assert remote.exit_code == 1, remote.stderr
    assert json.loads(remote.stdout)  # stdout stays the JSON result: Ray prints nothing there
    run = assert_valid_evidence(remote.json())
    assert run["executor"] == {"id": "sevro.executor.ray", "version": "0.1.0"}
    assert run["evaluationIdentity"] == load(local.json()["evidencePath"])["evaluationIdentity"]
    assert _outcome(remote.json()) == _outcome(local.json())
    assert _trial_files(remote.json()) == _trial_files(local.json())
    _wait_no_trials(ray_cluster)


def test_an_experiment_on_the_cluster_equals_the_local_run(
    sevro_project: SevroProject, ray_cluster: LocalRayCluster
) -> None:
    require_sandbox()
    project = notes_experiment(sevro_project)
    common = ("cases", "--skill", "skills/notes", "--host-config", "host.json")
    common += ("--baseline", "none", "--trials", "2", "--jobs", "2")
    local = _run(project, "local", *common)
    assert local.exit_code == 1, local.stderr  # the baseline arm fails, as before
    remote = _run(project, "ray", *common, *_on_ray(ray_cluster))
    assert remote.exit_code == 1, remote.stderr
    assert _outcome(remote.json()) == _outcome(local.json())
    run = assert_valid_evidence(remote.json())
    assert run["executor"]["id"] == "sevro.executor.ray"
    assert run["evaluationIdentity"] == load(local.json()["evidencePath"])["evaluationIdentity"]
    assert _trial_files(remote.json()) == _trial_files(local.json())


def _slow_project(project: SevroProject, slow_ms: int) -> tuple[Path, ...]:
    """Case ``quick`` replies at once, case ``slow`` sleeps ``slow_ms`` first; both pass."""
    quick = project.case("quick.json", id="quick", checks=[regex_check("r", "^done$")])
    slow = project.case("slow.json", id="slow", checks=[regex_check("r", "^done$")])
    host = project.script(
        cases={
            "quick": [[{"reply": {"text": "done"}}]],
            "slow": [[{"sleep": {"ms": slow_ms}}, {"reply": {"text": "done"}}]],
        }
    )
    return quick, slow, Path("--host-config"), host


def _wait_quick_done_and_slow_running(process: Any, results: Path, cluster: LocalRayCluster) -> int:
    """The quick trial persisted by the owner, the slow one running on a worker: its pid
    (a second later: the trial has told the owner it started, so it is not run again)."""
    process.wait_until(lambda: any(results.rglob("quick/trial-1.json")), timeout=120)
    process.wait_until(lambda: len(_running_trials(cluster)) == 1, timeout=60)
    time.sleep(1)
    (pid,) = _running_trials(cluster)
    return pid


def test_a_worker_killed_mid_trial_loses_only_that_trial(
    sevro_project: SevroProject, ray_cluster: LocalRayCluster
) -> None:
    args = (*_slow_project(sevro_project, 60_000), "--jobs", "2", *_on_ray(ray_cluster))
    results = sevro_project.root.parent / "killed"
    argv = ("run", *args, "--json", "--results-root", results)
    with start_sevro(argv, cwd=sevro_project.root) as process:
        worker = _wait_quick_done_and_slow_running(process, results, ray_cluster)
        os.kill(worker, signal.SIGKILL)
        done = process.finish(timeout=120)
    assert done.stdout, done.stderr
    result = done.json()
    assert done.exit_code not in (0, 1), done.stderr  # an execution failure, never a pass
    by_case = {c["caseId"]: c for c in result["cases"]}
    assert by_case["quick"]["passedTrials"] == 1
    assert by_case["slow"]["passedTrials"] == 0
    (trial,) = by_case["slow"]["trials"]
    document = load(Path(result["evidencePath"]).parent / "cases" / "slow" / "trial-1.json")
    assert trial["execution"] == document["result"]["execution"] == "failed"
    execution = document["evidence"]["execution"]
    assert execution["errorCode"] == "sevro.executor.lost"
    assert "Ray worker or node running the trial was lost" in execution["message"]
    assert _trial_files(result) == ["cases/quick/trial-1.json", "cases/slow/trial-1.json"]
    _wait_no_trials(ray_cluster)


SLOW_PLUGIN = """# Slow to load where SEVRO_TEST_SLOW_PLUGIN_S is set: that node warms late.
import os
import time

time.sleep(float(os.environ.get("SEVRO_TEST_SLOW_PLUGIN_S", "0")))
"""


def _titled(cluster: LocalRayCluster, title: bytes) -> list[int]:
    """The cluster's processes whose title (Ray sets it) is exactly ``title``."""
    found = []
    for pid in cluster.processes():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.split(b"\0")[0].strip() == title:
            found.append(pid)
    return found


def test_a_worker_lost_before_its_trial_started_runs_the_trial_on_a_new_one(
    sevro_project: SevroProject,
) -> None:
    """The worker node's workers warm late (a ``--plugin`` file sleeps there); meanwhile the
    head's worker, warmed and idle, is SIGKILLed. The trial the owner then sends it never
    starts, so it runs again on a new worker: the run passes, each trial once, nothing lost.
    (Without the resubmission the trial would be an execution failure.)"""
    plugin = sevro_project.root / "slow_plugin.py"
    plugin.write_text(SLOW_PLUGIN)
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    flags = (case, "--host-config", host, "--plugin", plugin, "--trials", "2", "--jobs", "2")
    results = sevro_project.root.parent / "resubmitted"
    with local_ray_cluster(worker_env={"SEVRO_TEST_SLOW_PLUGIN_S": "8"}) as cluster:
        argv = ("run", *flags, *_on_ray(cluster), "--json", "--results-root", results)
        with start_sevro(argv, cwd=sevro_project.root) as process:
            process.wait_until(
                lambda: (
                    _titled(cluster, b"ray::SevroWorker.warm")
                    and _titled(cluster, b"ray::SevroWorker")
                ),
                timeout=120,
            )
            (idle,) = _titled(cluster, b"ray::SevroWorker")
            assert _titled(cluster, b"ray::SevroWorker.warm")  # the other is still warming
            os.kill(idle, signal.SIGKILL)
            done = process.finish(timeout=180)
        _wait_no_trials(cluster)
    assert done.exit_code == 0, done.stderr
    result = done.json()
    assert [c["passedTrials"] for c in result["cases"]] == [2]
    assert _trial_files(result) == ["cases/example/trial-1.json", "cases/example/trial-2.json"]


def test_a_killed_owner_resumes_on_the_cluster(
    sevro_project: SevroProject, ray_cluster: LocalRayCluster
) -> None:
    args = (*_slow_project(sevro_project, 8_000), "--jobs", "2", *_on_ray(ray_cluster))
    results = sevro_project.root.parent / "resumed"
    argv = ("run", *args, "--json", "--results-root", results)
    with start_sevro(argv, cwd=sevro_project.root) as process:
        _wait_quick_done_and_slow_running(process, results, ray_cluster)
        quick = next(results.rglob("quick/trial-1.json")).read_bytes()
        process.signal_group(signal.SIGKILL)  # the owner dies; Ray cancels its tasks
        process.finish(timeout=30)
    _wait_no_trials(ray_cluster)
    again = sevro_project.sevro("run", *argv[1:], "--resume", timeout=300)
    assert again.exit_code == 0, again.stderr
    result = again.json()
    assert [c["passedTrials"] for c in result["cases"]] == [1, 1]
    run_dir = Path(result["evidencePath"]).parent
    assert (run_dir / "cases" / "quick" / "trial-1.json").read_bytes() == quick  # reused
    assert _trial_files(result) == ["cases/quick/trial-1.json", "cases/slow/trial-1.json"]


def test_sigint_cancels_the_remote_trials(
    sevro_project: SevroProject, ray_cluster: LocalRayCluster
) -> None:
    args = (*_slow_project(sevro_project, 120_000), "--jobs", "2", *_on_ray(ray_cluster))
    results = sevro_project.root.parent / "cancelled"
    argv = ("run", *args, "--json", "--results-root", results)
    with start_sevro(argv, cwd=sevro_project.root) as process:
        _wait_quick_done_and_slow_running(process, results, ray_cluster)
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        done = process.finish(timeout=60)
    assert time.monotonic() - started < 20  # the relayed token stopped the sleep, no grace
    result = done.json()
    assert done.exit_code == 130, done.stderr
    document = load(Path(result["evidencePath"]).parent / "cases" / "slow" / "trial-1.json")
    assert document["result"]["execution"] == "cancelled"
    _wait_no_trials(ray_cluster, timeout=10)


def test_a_node_failing_its_doctor_refuses_the_run_before_any_trial(
    sevro_project: SevroProject,
) -> None:
    """The worker node cannot find bubblewrap (its PATH lacks it): the run names that node and
    the sandbox check, exit 64, and nothing ran; the same cluster's head alone is fine."""
    require_sandbox()
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    bin_dir = str(Path(sys.executable).parent)
    with local_ray_cluster(worker_env={"PATH": bin_dir}) as cluster:
        refused = _run(sevro_project, "refused", case, "--host-config", host, *_on_ray(cluster))
        assert refused.exit_code == 64, refused.stderr
        line = refused.stderr.strip()
        assert "\n" not in line
        assert line.startswith("sevro: error: Ray node ")
        worker_port = cluster.nodes[1].node_manager_port
        assert f":{worker_port}, id " in line and "doctor check 'sandbox'" in line
        assert not any((sevro_project.root.parent / "refused").rglob("trial-*.json"))
        assert not _running_trials(cluster)


def test_a_node_whose_workers_cannot_plan_the_run_refuses_it_before_any_trial(
    sevro_project: SevroProject,
) -> None:
    """The worker node passes its doctor (its host and sandbox are fine) but loads no graders
    (``SEVRO_LOAD_PLUGINS`` on that node): its Ray workers cannot plan the run, so the run is
    refused with one line, exit 64, before any trial is sent. Positive control: the same run
    passes on a cluster whose nodes all plan it."""
    require_sandbox()
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    args = (case, "--host-config", host, "--trials", "2", "--jobs", "2")
    only_core = {"SEVRO_LOAD_PLUGINS": "sevro-core,sevro-sandbox,sevro-executor-ray"}
    with local_ray_cluster(worker_env=only_core) as cluster:
        refused = _run(sevro_project, "unplanned", *args, *_on_ray(cluster))
    assert refused.exit_code == 64, refused.stderr
    line = refused.stderr.strip()
    assert "\n" not in line
    assert line.startswith("sevro: error: a Ray worker could not plan this run: "), line
    assert "sevro.regex" in line
    assert not any((sevro_project.root.parent / "unplanned").rglob("trial-*.json"))
    with local_ray_cluster() as cluster:
        planned = _run(sevro_project, "planned", *args, *_on_ray(cluster))
    assert planned.exit_code == 0, planned.stderr


def test_more_jobs_than_the_cluster_has_cpus_runs_every_trial(
    sevro_project: SevroProject, ray_cluster: LocalRayCluster
) -> None:
    """``--jobs 8`` on a cluster of 4 CPUs: the workers that do not fit wait for a CPU, no
    trial waits on them, and every trial runs once, as locally."""
    case = sevro_project.case(checks=[regex_check("r", "^done$")])
    host = sevro_project.script(default=[[{"sleep": {"ms": 300}}, {"reply": {"text": "done"}}]])
    common = (case, "--host-config", host, "--trials", "8", "--jobs", "8")
    remote = _run(sevro_project, "wide", *common, *_on_ray(ray_cluster))
    assert remote.exit_code == 0, remote.stderr
    local = _run(sevro_project, "wide-local", *common)
    assert _outcome(remote.json()) == _outcome(local.json())
    assert len(_trial_files(remote.json())) == 8
    _wait_no_trials(ray_cluster)


def test_a_node_that_joins_mid_run_and_cannot_plan_it_gets_no_trial(
    sevro_project: SevroProject,
) -> None:
    """The cluster starts with the head alone (1 CPU), so the run's second worker waits for a
    CPU. A node without bubblewrap joins mid-run: the worker starts there and cannot plan the
    run, so the owner warns once and the worker gets no trial; every trial runs on the head
    and passes. (Were the late worker given trials, each would fail to plan there and stop
    the run.)"""
    require_sandbox()
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(default=[[{"sleep": {"ms": 4_000}}, {"reply": {"text": "ok"}}]])
    flags = (case, "--host-config", host, "--trials", "6", "--jobs", "2")
    results = sevro_project.root.parent / "late-node"
    no_bwrap = {"PATH": str(Path(sys.executable).parent)}
    with local_ray_cluster(workers=0, head_cpus=1) as cluster:
        argv = ("run", *flags, *_on_ray(cluster), "--json", "--results-root", results)
        with start_sevro(argv, cwd=sevro_project.root) as process:
            process.wait_until(lambda: bool(_running_trials(cluster)), timeout=120)
            cluster.add_worker(no_bwrap)
            done = process.finish(timeout=240)
        _wait_no_trials(cluster)
    assert done.exit_code == 0, done.stderr
    assert [c["passedTrials"] for c in done.json()["cases"]] == [6]
    warnings = [line for line in done.stderr.splitlines() if line.startswith("sevro: warning:")]
    assert len(warnings) == 1, done.stderr
    assert "a Ray worker could not plan this run: " in warnings[0]
    assert warnings[0].endswith("(a worker that started after the first trial; it gets no trial)")


CEILING_HOST = Path(__file__).resolve().parents[1] / "executors" / "ceiling_host.py"


def test_a_secret_host_setting_is_refused_before_anything_reaches_the_cluster(
    sevro_project: SevroProject, ray_cluster: LocalRayCluster
) -> None:
    """A secret given as a flag value would have to travel in the task's arguments: refused
    (exit 64, one line) before the run is claimed (the executor declares ``remote``); the value
    is nowhere in the cluster's files. Positive control: without the secret the same run
    passes on the cluster."""
    secret = "s3cr3t-ray-token-7c1d"
    case = sevro_project.case(checks=[regex_check("r", "^ceiling None$")])
    flags = (case, "--host", "acme.host.ceiling", "--sandbox", "none", "--plugin", CEILING_HOST)
    refused = _run(sevro_project, "secret", *flags, "--acme-token", secret, *_on_ray(ray_cluster))
    assert refused.exit_code == 64, refused.stderr
    line = refused.stderr.splitlines()[-1]  # after --sandbox none's warning: one line
    assert line.startswith("sevro: error: --executor ray: host setting acme.token is secret")
    assert secret not in refused.stderr + refused.stdout
    assert not (sevro_project.root.parent / "secret").exists()  # refused before the claim
    files = [p for p in ray_cluster.root.rglob("*") if p.is_file() and not p.is_symlink()]
    assert files  # the grep sees the cluster's logs and session files
    assert [p for p in files if secret.encode() in p.read_bytes()] == []
    # the scripted host's sandbox check would refuse --sandbox none; this host has no doctor
    passed = _run(sevro_project, "plain", *flags, *_on_ray(ray_cluster))
    assert passed.exit_code == 0, passed.stderr


def test_auto_finds_the_cluster_named_by_ray_address(
    sevro_project: SevroProject, ray_cluster: LocalRayCluster
) -> None:
    """``--ray-address`` defaults to ``auto``: ``RAY_ADDRESS`` names the cluster (as Ray's own
    ``ray.init()`` reads it); a cluster that is not there is one line, exit 64."""
    case = sevro_project.case(checks=[regex_check("r", "^ok$")])
    host = sevro_project.script(default=[[{"reply": {"text": "ok"}}]])
    found = sevro_project.sevro(
        "run", case, "--host-config", host, "--executor", "ray", "--json",
        "--results-root", sevro_project.root.parent / "auto",
        env={"RAY_ADDRESS": ray_cluster.address}, timeout=300,
    )  # fmt: skip
    assert found.exit_code == 0, found.stderr
    assert assert_valid_evidence(found.json())["executor"]["id"] == "sevro.executor.ray"
    (port,) = free_ports(1)
    missing = sevro_project.sevro(
        "run", case, "--host-config", host, "--executor", "ray", "--json",
        "--results-root", sevro_project.root.parent / "missing",
        env={"RAY_ADDRESS": f"127.0.0.1:{port}"},
        timeout=60,
    )  # fmt: skip
    assert missing.exit_code == 64, missing.stderr
    line = missing.stderr.splitlines()[-1]
    assert line.startswith("sevro: error: cannot reach the Ray cluster (--ray-address auto): ")
    assert not any((sevro_project.root.parent / "missing").rglob("trial-*.json"))


def test_a_node_lost_mid_trial_loses_only_that_trial(sevro_project: SevroProject) -> None:
    """The worker node's raylet dies (SIGKILL) while it runs the slow trial: that trial is an
    execution failure naming the lost node or worker, the quick one kept. The head offers no
    CPU, so every trial runs on the worker node (killing the head would kill the owner's
    connection too)."""
    with local_ray_cluster(head_cpus=0) as cluster:
        args = (*_slow_project(sevro_project, 60_000), "--jobs", "2", *_on_ray(cluster))
        results = sevro_project.root.parent / "node-lost"
        argv = ("run", *args, "--json", "--results-root", results)
        with start_sevro(argv, cwd=sevro_project.root) as process:
            worker = _wait_quick_done_and_slow_running(process, results, cluster)
            raylet = int(Path(f"/proc/{worker}/stat").read_text().rsplit(")", 1)[1].split()[1])
            assert b"raylet" in Path(f"/proc/{raylet}/cmdline").read_bytes()
            os.kill(raylet, signal.SIGKILL)
            done = process.finish(timeout=180)
        assert done.stdout, done.stderr
        result = done.json()
        by_case = {c["caseId"]: c for c in result["cases"]}
        assert by_case["quick"]["passedTrials"] == 1 and by_case["slow"]["passedTrials"] == 0
        document = load(Path(result["evidencePath"]).parent / "cases" / "slow" / "trial-1.json")
        execution = document["evidence"]["execution"]
        assert execution["errorCode"] == "sevro.executor.lost", execution
        assert "Ray worker or node running the trial was lost" in execution["message"]
        assert _trial_files(result) == ["cases/quick/trial-1.json", "cases/slow/trial-1.json"]
