"""Per-sample cost of Inspect AI's mock model next to sevro's per-trial cost, side by side.

Inspect is never a sevro dependency: install it into a throwaway environment and pass its
interpreter, for example::

    python3 -m uv venv /tmp/inspect-venv
    python3 -m uv pip install --python /tmp/inspect-venv/bin/python inspect-ai
    .venv/bin/python benchmarks/inspect_side_by_side.py \
        --inspect-python /tmp/inspect-venv/bin/python

Both sides do the trivial thing: one prompt, a scripted/mock reply, one string check. Inspect runs
a task of N samples against ``mockllm/model`` (replying ``ready`` with its usage given, so no
tokenizer is fetched) with ``generate()`` and ``includes()``; sevro runs
N trials of a case with an empty inline fixture, the scripted host and one ``sevro.regex`` check.
Each figure is the slope between a run of N and a run of 1 in the same fresh process (so start-up
and per-run work are excluded), at each tool's default concurrency and at one at a time.
Rounds alternate between the tools, and medians are reported.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

INSPECT = """
import sys, tempfile, time
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate

def reply(*_):
    # Usage given, so the mock does not count tokens (tiktoken would fetch a vocabulary).
    output = ModelOutput.from_content(model="mockllm", content="ready")
    output.usage = ModelUsage(input_tokens=10, output_tokens=1, total_tokens=11)
    return output

def run(n, max_samples):
    task = Task(
        dataset=[Sample(input="Reply ready.", target="ready") for _ in range(n)],
        solver=generate(),
        scorer=includes(),
    )
    with tempfile.TemporaryDirectory() as logs:
        kwargs = {"max_samples": max_samples} if max_samples else {}
        started = time.perf_counter()
        model = get_model("mockllm/model", custom_outputs=reply)
        (log,) = eval(task, model=model, log_dir=logs, display="none", **kwargs)
        elapsed = time.perf_counter() - started
    assert log.status == "success", log.error
    assert log.results.scores[0].metrics["accuracy"].value == 1.0
    return elapsed

n, max_samples = int(sys.argv[1]), int(sys.argv[2])
run(2, max_samples)  # warm imports and caches
one, many = run(1, max_samples), run(n, max_samples)
print((many - one) / (n - 1) * 1000)
"""

SEVRO = """
import json, sys, tempfile, time
from pathlib import Path
from sevro_core.logs import configure
from sevro_core.run.planning import RunSettings
from sevro_core.plugin.manager import load_plugins
from sevro_core.plugin.protocols import HostOptions
from sevro_core.run.runner import execute, prepare

CASE = {
    "id": "trivial",
    "prompt": "Reply ready.",
    "fixture": {"files": {}},
    "checks": [{"id": "ready", "grader": "sevro.regex", "configuration": {"pattern": "ready"}}],
    "requiredEvidence": [],
}
HOST = {"format": "sevro.scripted-host.v1", "default": {"turns": [[{"reply": {"text": "ready"}}]]}}

def run(root, n, jobs):
    settings = RunSettings(
        trials=n, threshold=1.0, jobs=jobs, dry=False, condition="passive",
        results_root=root / f"results-{n}-{time.monotonic_ns()}", project_root=root,
        host="scripted", host_options=HostOptions(config=HOST), workspace_root=None,
    )
    plan = prepare([root / "case.json"], load_plugins(), settings)
    started = time.perf_counter()
    outcome = execute(plan)
    elapsed = time.perf_counter() - started
    assert outcome.exit_code == 0, outcome.result
    return elapsed

configure()
n, jobs = int(sys.argv[1]), int(sys.argv[2])
with tempfile.TemporaryDirectory() as tmp:
    root = Path(tmp)
    (root / "case.json").write_text(json.dumps(CASE))
    run(root, 2, jobs)
    one, many = run(root, 1, jobs), run(root, n, jobs)
print((many - one) / (n - 1) * 1000)
"""


def slope_ms(python: str, script: str, n: int, knob: int) -> float:
    with tempfile.TemporaryDirectory() as cwd:
        done = subprocess.run(
            [python, "-c", script, str(n), str(knob)],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return float(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inspect-python", required=True)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    variants = {
        "inspect, default concurrency": (args.inspect_python, INSPECT, 0),
        "inspect, max_samples=1": (args.inspect_python, INSPECT, 1),
        "sevro, --jobs 3 (default)": (sys.executable, SEVRO, 3),
        "sevro, --jobs 1": (sys.executable, SEVRO, 1),
    }
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for number in range(1, args.rounds + 1):
        for name, (python, script, knob) in variants.items():
            samples[name].append(slope_ms(python, script, args.samples, knob))
        print(f"round {number}/{args.rounds} done", file=sys.stderr, flush=True)
    print(f"per sample / per trial, slope of {args.samples} vs 1, median of {args.rounds} rounds")
    document = {}
    for name, values in samples.items():
        low, high = min(values), max(values)
        median = statistics.median(values)
        document[name] = {"medianMs": round(median, 2), "minMs": low, "maxMs": high}
        print(f"  {name:30} {median:7.2f} ms   (range {low:.2f}-{high:.2f})")
    if args.json is not None:
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
