"""Measure the Ray executor against the local one, on a real local Ray cluster (a head node and a
second worker node, each its own ``ray start``, from ``sevro_executor_ray.testing``).

* **Scheduling overhead per trial**: ``sevro run`` of N trials of an instant scripted host at
  ``--jobs 1``, for a small and a large N, on each executor; the per-trial cost is the slope
  (wall(large) - wall(small)) / (large - small), so start-up (``ray.init``, the per-node doctor,
  planning) cancels out. Ray's overhead is its slope minus the local slope.
* **Parallel efficiency**: 2 x 16 trials whose host sleeps 1 s, at ``--jobs 16`` on the Ray
  cluster (each node offers 8 logical CPUs: the trials sleep, they do not compute). Efficiency =
  the ideal trial phase (trials x 1 s / 16) over the measured one (first trial start to last
  trial end, from the trial files); the goal is >= 90 %.

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


def _trial_phase(run_dir: Path) -> float:
    """Seconds from the first trial's start to the last trial's end (the trial files' clocks)."""
    starts, ends = [], []
    for path in (run_dir / "cases").rglob("trial-*.json"):
        evidence = json.loads(path.read_text())["evidence"]
        starts.append(datetime.fromisoformat(evidence["startedAt"]))
        ends.append(datetime.fromisoformat(evidence["finishedAt"]))
    return (max(ends) - min(starts)).total_seconds()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small", type=int, default=4)
    parser.add_argument("--large", type=int, default=20)
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
            trials = 2 * CONCURRENT
            wall, run_dir = _run(root, trials, CONCURRENT, executors["ray"], HOST_SLEEP_MS)
            phase = _trial_phase(run_dir)
            ideal = trials * HOST_SLEEP_MS / 1000 / CONCURRENT
            samples.setdefault("ray efficiency", []).append(ideal / phase)
            samples.setdefault("ray parallel wall s", []).append(wall)
    span = options.large - options.small
    medians = {k: statistics.median(v) for k, v in samples.items()}
    per_trial = {
        name: (medians[f"{name} n={options.large}"] - medians[f"{name} n={options.small}"]) / span
        for name in ("local", "ray")
    }
    report = {
        "perTrialSeconds": per_trial,
        "rayOverheadPerTrialSeconds": per_trial["ray"] - per_trial["local"],
        "parallelEfficiency": medians["ray efficiency"],
        "parallelWallSeconds": medians["ray parallel wall s"],
        "medians": medians,
        "rounds": options.rounds,
    }
    for name, seconds in per_trial.items():
        print(f"{name:>5}: {seconds * 1000:7.1f} ms per trial (--jobs 1, slope)")
    print(f"ray overhead: {report['rayOverheadPerTrialSeconds'] * 1000:.1f} ms per trial")
    print(
        f"parallel efficiency, {2 * CONCURRENT} trials of 1 s at --jobs {CONCURRENT}: "
        f"{report['parallelEfficiency']:.1%} (goal >= 90 %)"
    )
    if options.json is not None:
        options.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
