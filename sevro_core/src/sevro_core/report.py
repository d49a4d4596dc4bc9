"""``sevro report``: verify retained runs and summarise them as ``sevro.report.v1``.

A report is only as good as its inputs, so every input is checked: schemas, run ids, the
embedded result against the one given, and each trial file and blob against its recorded digest.
Unknown values stay unknown (null), never 0.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sevro_core.canonical import canonical_json
from sevro_core.errors import InvocationError
from sevro_core.failures import case_failures
from sevro_core.jsonio import read_bounded, read_json_file
from sevro_core.limits import (
    MAX_ARTIFACT_BYTES,
    MAX_FINAL_MESSAGE_BYTES,
    MAX_REPORT_REASONS_PER_CASE,
    MAX_RESULT_FILE_BYTES,
    MAX_RESULTS_ROOT_RUNS,
)
from sevro_core.plugins import Registry
from sevro_core.schemas import validate_input

REPORT_FORMAT = "sevro.report.v1"


def reporter_for(registry: Registry, fmt: str) -> Any:
    for reporter in registry.all("reporter").values():
        if reporter.format == fmt:
            return reporter
    formats = sorted(r.format for r in registry.all("reporter").values())
    raise InvocationError(f"no reporter for format {fmt!r}; available: {', '.join(formats)}")


def _load_run(run_json: Path) -> dict[str, Any]:
    document = read_json_file(run_json, MAX_RESULT_FILE_BYTES, what="run evidence")
    validate_input("run-evidence.v1", document, source=run_json)
    assert isinstance(document, dict)
    return document


def _input(path: Path) -> tuple[dict[str, Any], dict[str, Any] | None, Path | None]:
    """Return (result, run evidence or None, run directory or None) for one input."""
    target = path / "run.json" if path.is_dir() else path
    document = read_json_file(target, MAX_RESULT_FILE_BYTES, what="report input")
    if isinstance(document, dict) and document.get("format") == "sevro.run-evidence.v1":
        run = _load_run(target)
        return run["result"], run, target.resolve().parent
    validate_input("cli-result.v1", document, source=target)
    assert isinstance(document, dict)
    if document["evidencePath"] is None:
        if document["cases"] or document["exitCode"] == 0:
            raise InvocationError(
                "a result without evidencePath must be a pre-run failure", source=target
            )
        return document, None, None
    run_json = Path(document["evidencePath"])
    if not run_json.is_absolute():
        raise InvocationError(
            "evidencePath must be absolute", source=target, pointer="/evidencePath"
        )
    run = _load_run(run_json)
    if run["runId"] != document["runId"]:
        raise InvocationError(
            f"runId differs from the evidence at {run_json}", source=target, pointer="/runId"
        )
    if canonical_json(run["result"]) != canonical_json(document):
        raise InvocationError(f"result differs from the one retained in {run_json}", source=target)
    return document, run, run_json.resolve().parent


def _verify_blob(run_dir: Path, ref: Mapping[str, Any], limit: int, source: Path) -> None:
    path = (run_dir / ref["path"]).resolve()
    if run_dir not in path.parents:
        raise InvocationError(
            f"evidence path {ref['path']!r} leaves the run directory", source=source
        )
    data = read_bounded(path, limit, what="retained evidence")
    if hashlib.sha256(data).hexdigest() != ref["sha256"] or len(data) != ref["byteLength"]:
        raise InvocationError("retained evidence does not match its recorded digest", source=path)


def _trials(run: Mapping[str, Any], run_dir: Path) -> dict[tuple[str, int], dict[str, Any]]:
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for ref in run["trials"]:
        if ref["path"] is None:
            continue
        path = (run_dir / ref["path"]).resolve()
        if run_dir not in path.parents:
            raise InvocationError(
                f"trial path {ref['path']!r} leaves the run directory", source=run_dir / "run.json"
            )
        document = read_json_file(path, MAX_RESULT_FILE_BYTES, what="trial evidence")
        validate_input("trial-evidence.v1", document, source=path)
        assert isinstance(document, dict)
        if (document["runId"], document["caseId"], document["trial"]) != (
            run["runId"],
            ref["caseId"],
            ref["trial"],
        ):
            raise InvocationError(
                "trial evidence belongs to another run, case or trial", source=path
            )
        evidence = document["evidence"]
        if evidence["rawResult"] is not None:
            _verify_blob(run_dir, evidence["rawResult"], MAX_FINAL_MESSAGE_BYTES, path)
        for artifact in evidence["artifactRefs"]:
            _verify_blob(run_dir, artifact, MAX_ARTIFACT_BYTES, path)
        out[(ref["caseId"], ref["trial"])] = document
    return out


def _sum_known(values: Sequence[float | int | None]) -> float | int | None:
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)


def _row(
    source: Path,
    result: Mapping[str, Any],
    run: Mapping[str, Any],
    trials: Mapping[tuple[str, int], Mapping[str, Any]],
    case: Mapping[str, Any],
) -> dict[str, Any]:
    evidences = [
        trials[(case["caseId"], t["trial"])]["evidence"]
        for t in case["trials"]
        if (case["caseId"], t["trial"]) in trials
    ]
    complete = len(evidences) == len(case["trials"])
    assessed = complete and all(
        t["execution"] == "completed"
        and t["grading"] == "completed"
        and t["task"] != "not_assessed"
        for t in case["trials"]
    )
    usages = [e["usage"] for e in evidences]
    usage_known = complete and bool(usages) and all(u["complete"] for u in usages)

    def usage_sum(key: str) -> float | int | None:
        return _sum_known([u[key] for u in usages]) if usage_known else None

    candidate = next((r for r in run["routes"] if r["role"] == "candidate"), None)
    return {
        "source": str(source),
        "evidencePath": result["evidencePath"],
        "runId": result["runId"],
        "caseId": case["caseId"],
        "execution": case["execution"],
        "grading": case["grading"],
        "task": case["task"],
        "exitCode": result["exitCode"],
        "trialCount": case["trialCount"],
        "passedTrials": case["passedTrials"],
        "taskPassRate": case["passedTrials"] / case["trialCount"] if assessed else None,
        "candidateDurationMs": _sum_known([e["durations"]["candidateMs"] for e in evidences])
        if complete
        else None,
        "inputTokens": usage_sum("inputTokens"),
        "outputTokens": usage_sum("outputTokens"),
        "costUsd": usage_sum("costUsd"),
        "runnerBuildDigest": run["runner"]["buildDigest"],
        "evaluationDigest": run["evaluationIdentity"]["digest"],
        "requestedCondition": run["condition"]["requested"],
        "actualCondition": run["condition"]["actual"],
        "candidateRoute": {k: candidate[k] for k in ("host", "model", "effort")}
        if candidate
        else None,
        "routes": list(run["routes"]),
        "trialFiles": [t["artifactPath"] for t in case["trials"] if t["artifactPath"]],
    }


def _runs_in_root(root: Path, on_note: Callable[[str], object]) -> list[Path]:
    """The run directories of a results root (those with a run.json), oldest first.

    Symlinks are not followed; a directory without run.json (a run in progress or interrupted,
    see ``sevro runs``) is skipped with a note; hidden entries (the run state) are ignored.
    """
    found: list[tuple[int, str, Path]] = []
    skipped = 0
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue
            try:
                info = os.lstat(Path(entry.path) / "run.json")
            except FileNotFoundError:
                skipped += 1
                continue
            if stat.S_ISREG(info.st_mode):
                found.append((info.st_mtime_ns, entry.name, Path(entry.path)))
            if len(found) > MAX_RESULTS_ROOT_RUNS:
                raise InvocationError(
                    f"more than {MAX_RESULTS_ROOT_RUNS} runs in this results root; "
                    "pass the run directories to report",
                    source=root,
                )
    if not found:
        raise InvocationError(
            "neither a run directory (no run.json) nor a results root (no finished run in it)",
            source=root,
        )
    if skipped:
        on_note(f"skipped {skipped} run director(ies) without run.json in {root} (see sevro runs)")
    return [path for _, _, path in sorted(found)]


def _expand(paths: Sequence[Path], on_note: Callable[[str], object]) -> list[Path]:
    """Inputs as given, with each results root replaced by the runs in it."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir() and not os.path.lexists(path / "run.json"):
            out += _runs_in_root(path, on_note)
        else:
            out.append(path)
    return out


def _failures(
    case: Mapping[str, Any], trials: Mapping[tuple[str, int], Mapping[str, Any]]
) -> dict[str, Any] | None:
    evidences = {
        t["trial"]: trials[(case["caseId"], t["trial"])]["evidence"]
        for t in case["trials"]
        if (case["caseId"], t["trial"]) in trials
    }
    found = case_failures(case, evidences)
    if found is None:
        return None
    kept = found.reasons[:MAX_REPORT_REASONS_PER_CASE]
    return {
        "reasons": [{"trials": list(numbers), "reason": reason} for numbers, reason in kept],
        "omittedReasons": len(found.reasons) - len(kept),
    }


def build_report(
    inputs: Sequence[Path],
    *,
    details: bool = False,
    on_note: Callable[[str], object] = lambda _: None,
) -> dict[str, Any]:
    """Verify each input and return a ``sevro.report.v1`` document.

    An input is a result file, a run directory or a results root (every finished run in it);
    with ``details`` each case that did not pass carries its failure reasons.
    """
    if not inputs:
        raise InvocationError("no input given; pass result files or run directories")
    resolved = _expand([p.expanduser().resolve() for p in inputs], on_note)
    if len(set(resolved)) != len(resolved):
        raise InvocationError("the same input is given twice")
    input_rows = []
    rows = []
    for path in resolved:
        result, run, run_dir = _input(path)
        input_rows.append(
            {
                "source": str(path),
                "runId": result["runId"],
                "execution": result["execution"]["status"],
                "grading": result["grading"]["status"],
                "task": result["task"]["verdict"],
                "exitCode": result["exitCode"],
                "caseCount": len(result["cases"]),
            }
        )
        if run is None or run_dir is None:
            continue
        trials = _trials(run, run_dir)
        for case in result["cases"]:
            row = _row(path, result, run, trials, case)
            failures = _failures(case, trials) if details else None
            if failures is not None:
                row["failures"] = failures
            rows.append(row)
    verdicts = [r["task"] for r in rows]
    document = {
        "format": REPORT_FORMAT,
        "inputs": input_rows,
        "rows": rows,
        "summary": {
            "cases": len(rows),
            "passed": verdicts.count("passed"),
            "failed": verdicts.count("failed"),
            "notAssessed": verdicts.count("not_assessed"),
        },
    }
    from sevro_core.schemas import validate_output

    validate_output("report.v1", document)
    return document
