"""Measure ``sevro report`` on a large retained run (issue 12: 10 000 trials in at most 2 s).

With ``--compare`` two such runs are built (default 20 cases x 10 trials each, some trials
failing in each so the comparison has discordant pairs) and ``sevro report --compare A B`` is
timed, statistics included (issue 14: an experiment's report renders in at most 1 s).

The run is synthetic but made of real evidence: one trial is run for real (scripted host, one
inline file, one ``sevro.regex`` check), then its trial document and raw final message are
cloned into ``--cases`` x ``--trials`` trials with their own ids, paths and digests, and
``run.json`` is rebuilt to reference every one of them. ``sevro report`` then verifies all of
it as it would any run: both schemas, every trial's run, case and trial ids, and the sha256 of
every blob. The figure is the median wall time of fresh ``sevro report --json`` processes.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUDGET_S = 2.0
COMPARE_BUDGET_S = 1.0

CASE = {
    "id": "bench",
    "prompt": "Reply ok.",
    "fixture": {"files": {"README.md": "# bench\n"}},
    "checks": [{"id": "r", "grader": "sevro.regex", "configuration": {"pattern": "^ok"}}],
    "requiredEvidence": [],
}
HOST = {
    "format": "sevro.scripted-host.v1",
    "default": {"turns": [[{"reply": {"text": "ok"}}]]},
}


def seed_run(root: Path) -> Path:
    """One real trial, run in-process; returns its run directory."""
    from sevro_core.plugin.manager import load_plugins
    from sevro_core.plugin.protocols import HostOptions
    from sevro_core.run.planning import RunSettings
    from sevro_core.run.runner import execute, prepare

    (root / "case.json").write_text(json.dumps(CASE))
    settings = RunSettings(
        trials=1,
        threshold=1.0,
        jobs=1,
        dry=False,
        condition="passive",
        results_root=root / "results",
        project_root=root,
        host="scripted",
        host_options=HostOptions(config=HOST),
    )
    outcome = execute(prepare([root / "case.json"], load_plugins(), settings))
    assert outcome.exit_code == 0, outcome.result
    return outcome.run_dir


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_bytes(data)
    path.chmod(0o600)


def clone_run(run_dir: Path, cases: int, trials: int, fails: int = 0) -> None:
    """Rewrite ``run_dir`` into ``cases`` x ``trials`` trials cloned from its only trial."""
    run = json.loads((run_dir / "run.json").read_text())
    seed_ref = run["trials"][0]
    seed = json.loads((run_dir / seed_ref["path"]).read_text())
    raw = (run_dir / seed["evidence"]["rawResult"]["path"]).read_bytes()
    seed_case = run["cases"][0]
    seed_summary = run["result"]["cases"][0]
    run_cases, run_trials, result_cases = [], [], []
    for c in range(1, cases + 1):
        case_id = f"bench-{c:04d}"
        run_cases.append({**seed_case, "caseId": case_id})
        summaries = []
        for t in range(1, trials + 1):
            rel = f"cases/{case_id}/trial-{t}.json"
            raw_rel = f"cases/{case_id}/trial-{t}-raw.txt"
            _write(run_dir / raw_rel, raw)
            document = copy.deepcopy(seed)
            document["caseId"] = document["evidence"]["caseId"] = case_id
            document["trial"] = document["evidence"]["trial"] = document["result"]["trial"] = t
            document["evidence"]["rawResult"]["path"] = raw_rel
            if fails and (c * trials + t) % fails == 0:  # only the statistics read the verdict
                document["evidence"]["task"]["verdict"] = "failed"
            summary = copy.deepcopy(seed_summary["trials"][0])
            summary["trial"] = t
            summary["artifactPath"] = document["result"]["artifactPath"] = (
                rel
                if not Path(seed_summary["trials"][0]["artifactPath"]).is_absolute()
                else str(run_dir / rel)
            )
            data = json.dumps(document, indent=2).encode()
            _write(run_dir / rel, data)
            digest = hashlib.sha256(data).hexdigest()
            run_trials.append(
                {**seed_ref, "caseId": case_id, "trial": t, "path": rel, "sha256": digest}
            )
            summaries.append(summary)
        result_cases.append(
            {
                **seed_summary,
                "caseId": case_id,
                "trialCount": trials,
                "passedTrials": trials,
                "trials": summaries,
            }
        )
    run["cases"], run["trials"], run["result"]["cases"] = run_cases, run_trials, result_cases
    _write(run_dir / "run.json", json.dumps(run, indent=2).encode())


def report_seconds(sevro: str, inputs: list[str], repeats: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user + system) of fresh ``sevro report`` runs.

    On a shared machine the CPU time is the steadier figure; the budget applies to wall time.
    """
    walls, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            [sevro, "report", *inputs, "--json"], capture_output=True, check=False
        )
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            sys.exit(f"sevro report failed: {done.stderr.decode(errors='replace')}")
    return statistics.median(walls), statistics.median(cpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--trials", type=int, default=100, help="trials per case")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="exit 1 when over budget")
    parser.add_argument("--keep", type=Path, help="build the run in this new directory and keep it")
    parser.add_argument("--compare", action="store_true", help="time report --compare A B")
    args = parser.parse_args()
    if args.compare:
        return compare(
            args.cases if args.cases != 100 else 20,
            args.trials if args.trials != 100 else 10,
            args.repeats,
            args.check,
        )
    from sevro_core.logs import configure

    configure()
    sevro = str(Path(sys.executable).parent / "sevro")
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        run_dir = seed_run(root)
        clone_run(run_dir, args.cases, args.trials)
        seconds, cpu = report_seconds(sevro, [str(run_dir)], args.repeats)
        print(f"run directory: {run_dir}" if args.keep else "", end="\n" if args.keep else "")
    total = args.cases * args.trials
    ok = seconds <= BUDGET_S
    print(
        f"sevro report, {total} trials (s)     {seconds:8.3f}   budget {BUDGET_S:6.3f}   "
        f"{'ok' if ok else 'OVER'}"
    )
    print(f"  cpu time (user + system, s)        {cpu:8.3f}")
    return 1 if (args.check and not ok) else 0


def compare(cases: int, trials: int, repeats: int, check: bool) -> int:
    from sevro_core.logs import configure

    configure()
    sevro = str(Path(sys.executable).parent / "sevro")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        first = seed_run(root)
        clone_run(first, cases, trials, fails=4)
        second = seed_run(root)
        clone_run(second, cases, trials, fails=7)
        seconds, cpu = report_seconds(sevro, ["--compare", str(first), str(second)], repeats)
    ok = seconds <= COMPARE_BUDGET_S
    print(
        f"sevro report --compare, 2 x {cases * trials} trials (s) {seconds:8.3f}   "
        f"budget {COMPARE_BUDGET_S:6.3f}   {'ok' if ok else 'OVER'}"
    )
    print(f"  cpu time (user + system, s)        {cpu:8.3f}")
    return 1 if (check and not ok) else 0


if __name__ == "__main__":
    sys.exit(main())
