"""Measure the Ray executor against the local one, on a real local Ray cluster (a head node and a
second worker node, each its own ``ray start``, from ``sevro_executor_ray.testing``).

* **Scheduling overhead per trial**: ``sevro run`` of N trials of an instant scripted host at
  ``--jobs 1``, for a small and a large N, on each executor; the per-trial cost is the slope
  (wall(large) - wall(small)) / (large - small), so start-up (``ray.init``, the per-node doctor,
  planning) cancels out. Ray's overhead is its slope minus the local slope.
* **Parallel efficiency**: ``--waves`` x 16 trials whose host sleeps 1 s, at ``--jobs 16``, on
  each executor (each Ray node offers 8 logical CPUs: the trials sleep, they do not compute).
  ``whole`` = the ideal trial phase (trials x 1 s / 16) over the measured one (first trial start
  to last trial end, from the trial files), the ramp included; ``steady`` = once all 16 slots
  have run a trial, the share of slot time spent in the host; the goal is >= 90 %. What lies
  outside the trial phase (start-up: ``ray.init``, the doctor, the workers' warming; the
  end-of-run report) is the wall time minus the phase, reported as ``outsideSeconds``.
  ``ramp`` is how long the 16 slots took to fill once the first trial started (the run's Ray
  workers start and plan the run before it, with ``ray.init`` and the per-node doctor).

Runs are interleaved round by round (the machine is shared and noisy). ``--json`` writes the
numbers as a document too.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from sevro_executor_ray.testing import local_ray_cluster

HOST_SLEEP_MS = 1000
CONCURRENT = 16


def _project(root: Path, trials_sleep_ms: int) -> tuple[Path, Path]:
    case = root / "case.json"
    case.write_text(
        json.dumps(
            {
                "id": "bench",
                "prompt": "Return ok.",
                "fixture": {"files": {}},
                "checks": [
                    {"id": "r", "grader": "sevro.regex", "configuration": {"pattern": "^ok$"}}
                ],
                "requiredEvidence": [],
            }
        )
    )
    steps: list[dict[str, Any]] = [{"reply": {"text": "ok"}}]
    if trials_sleep_ms:
        steps.insert(0, {"sleep": {"ms": trials_sleep_ms}})
    host = root / "host.json"
    host.write_text(json.dumps({"format": "sevro.scripted-host.v1", "default": {"turns": [steps]}}))
    return case, host


def _run(
    root: Path, trials: int, jobs: int, executor: tuple[str, ...], sleep_ms: int
) -> tuple[float, Path]:
    """One ``sevro run``: its wall time and its run directory."""
    case, host = _project(root, sleep_ms)
    results = Path(tempfile.mkdtemp(dir=root))
    argv = [sys.executable, "-m", "sevro_core", "run", str(case), "--host-config", str(host)]
    argv += ["--trials", str(trials), "--jobs", str(jobs), "--json", "--results-root"]
    argv += [str(results), *executor]
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"sevro run failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, Path(json.loads(done.stdout)["evidencePath"]).parent


def _trials(run_dir: Path) -> list[tuple[float, float, float]]:
    """Each trial's (start, end, share of it spent in the host) on the trial files' clocks."""
    rows = []
    for path in (run_dir / "cases").rglob("trial-*.json"):
        evidence = json.loads(path.read_text())["evidence"]
        start = datetime.fromisoformat(evidence["startedAt"]).timestamp()
        end = datetime.fromisoformat(evidence["finishedAt"]).timestamp()
        share = min(1.0, HOST_SLEEP_MS / max(evidence["durations"]["totalMs"], 1.0))
        rows.append((start, end, share))
    return sorted(rows)


def _efficiencies(run_dir: Path, jobs: int) -> dict[str, float]:
    """``whole``: the ideal trial phase (trials x 1 s / jobs) over the measured one (first
    start to last end), the ramp included. ``steady``: from the moment all ``jobs`` slots first
    ran a trial to the last trial's start, the share of slot time spent in the host.
    ``rampSeconds``: first trial start to that moment. ``phaseSeconds``: first start to last
    end."""
    rows = _trials(run_dir)
    first, last_end = rows[0][0], max(r[1] for r in rows)
    whole = len(rows) * HOST_SLEEP_MS / 1000 / jobs / (last_end - first)
    full, last_start = rows[jobs - 1][0], rows[-1][0]
    window = last_start - full
    busy = sum(max(0.0, min(e, last_start) - max(s, full)) * share for s, e, share in rows)
    steady = busy / (jobs * window) if window > 0 else float("nan")
    phase = last_end - first
    return {"whole": whole, "steady": steady, "rampSeconds": full - first, "phaseSeconds": phase}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small", type=int, default=4)
    parser.add_argument("--large", type=int, default=20)
    parser.add_argument("--waves", type=int, default=6, help="trials = waves x 16")
    parser.add_argument("--json", type=Path, default=None)
    options = parser.parse_args()
    samples: dict[str, list[float]] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        local_ray_cluster(node_cpus=CONCURRENT // 2) as cluster,
    ):
        root = Path(tmp)
        executors = {
            "local": ("--executor", "local"),
            "ray": ("--executor", "ray", "--ray-address", cluster.address),
        }
        for _ in range(options.rounds):
            for name, executor in executors.items():
                for n in (options.small, options.large):
                    wall, _run_dir = _run(root, n, 1, executor, 0)
                    samples.setdefault(f"{name} n={n}", []).append(wall)
            for name, executor in executors.items():
                trials = options.waves * CONCURRENT
                wall, run_dir = _run(root, trials, CONCURRENT, executor, HOST_SLEEP_MS)
                found = _efficiencies(run_dir, CONCURRENT)
                found["outsideSeconds"] = wall - found.pop("phaseSeconds")
                for key, value in found.items():
                    samples.setdefault(f"{name} parallel {key}", []).append(value)
                samples.setdefault(f"{name} parallel wall s", []).append(wall)
    span = options.large - options.small
    medians = {k: statistics.median(v) for k, v in samples.items()}
    per_trial = {
        name: (medians[f"{name} n={options.large}"] - medians[f"{name} n={options.small}"]) / span
        for name in ("local", "ray")
    }
    report = {
        "perTrialSeconds": per_trial,
        "rayOverheadPerTrialSeconds": per_trial["ray"] - per_trial["local"],
        "parallel": {
            name: {
                k: medians[f"{name} parallel {k}"]
                for k in ("whole", "steady", "rampSeconds", "outsideSeconds")
            }
            | {"wallSeconds": medians[f"{name} parallel wall s"]}
            for name in ("local", "ray")
        },
        "medians": medians,
        "rounds": options.rounds,
    }
    for name, seconds in per_trial.items():
        print(f"{name:>5}: {seconds * 1000:7.1f} ms per trial (--jobs 1, slope)")
    print(f"ray overhead: {report['rayOverheadPerTrialSeconds'] * 1000:.1f} ms per trial")
    for name, got in report["parallel"].items():
        print(
            f"{name:>5}: {options.waves * CONCURRENT} trials of 1 s at --jobs {CONCURRENT}: "
            f"efficiency {got['whole']:.1%} whole, {got['steady']:.1%} steady "
            f"(goal >= 90 %), ramp {got['rampSeconds']:.1f} s, wall {got['wallSeconds']:.1f} s "
            f"of which {got['outsideSeconds']:.1f} s outside the trial phase"
        )
    if options.json is not None:
        options.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
