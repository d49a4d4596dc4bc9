"""Measure what isolation costs per sandboxed command.

A one-trial ``sevro run`` whose case has N ``sevro.shell`` checks that each run ``true``, once
under the default sandbox and once with ``--sandbox none``, each the median of a few fresh
processes; the per-command cost is the difference divided by N. It includes everything a
sandboxed command adds: building the policy (canonical roots, the host's Unix sockets), the
bwrap command line, and bubblewrap setting up the namespaces and mounts. The run uses its own
``--workspace-root`` inside the temp directory, as the test suite does.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_case(root: Path, checks: int) -> tuple[Path, Path]:
    case = {
        "id": "sandbox-cost",
        "prompt": "Reply.",
        "fixture": {"files": {"README.md": "bench\n"}},
        "checks": [
            {"id": f"true-{i}", "grader": "sevro.shell", "configuration": {"run": "true"}}
            for i in range(checks)
        ],
        "requiredEvidence": [],
    }
    host = {"format": "sevro.scripted-host.v1", "default": {"turns": [[{"reply": {"text": "x"}}]]}}
    (root / "case.json").write_text(json.dumps(case))
    (root / "host.json").write_text(json.dumps(host))
    return root / "case.json", root / "host.json"


def run_seconds(root: Path, sandbox: str, repeats: int) -> float:
    case, host = root / "case.json", root / "host.json"
    workspaces = root / "workspaces"
    workspaces.mkdir(exist_ok=True)
    times = []
    for index in range(repeats):
        argv = [sys.executable, "-m", "sevro_core", "run", str(case), "--host-config", str(host)]
        argv += ["--results-root", str(root / f"results-{sandbox}-{index}")]
        argv += ["--workspace-root", str(workspaces), "--sandbox", sandbox, "--json"]
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=root, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"the {sandbox} run failed: {done.stdout[-500:]!r}")
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sevro-bench-sandbox-") as scratch:
        root = Path(scratch).resolve()
        write_case(root, args.checks)
        isolated = run_seconds(root, "auto", args.repeats)
        bare = run_seconds(root, "none", args.repeats)
    per_command = (isolated - bare) / args.checks * 1000
    print(f"{args.checks} shell checks, one trial: sandboxed {isolated:.2f} s, none {bare:.2f} s")
    print(f"isolation per sandboxed command: {per_command:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
