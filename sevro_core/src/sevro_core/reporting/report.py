"""``sevro report``: verify retained runs and summarise them as ``sevro.report.v1``.

A report is only as good as its inputs, so every input is checked: schemas, run ids, the
embedded result against the one given, and each trial file and blob against its recorded digest.
Unknown values stay unknown (null), never 0.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import stat
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.errors import InvocationError
from sevro_core.formats.canonical import canonical_json
from sevro_core.formats.jsonio import parse_json_text, read_bounded, read_json_file
from sevro_core.formats.schemas import LARGE_DOCUMENT_ITEMS, validate_input
from sevro_core.limits import (
    MAX_ARTIFACT_BYTES,
    MAX_FINAL_MESSAGE_BYTES,
    MAX_REPORT_REASONS_PER_CASE,
    MAX_RESULT_FILE_BYTES,
    MAX_RESULTS_ROOT_RUNS,
)
from sevro_core.models import unit_key
from sevro_core.plugin.manager import Registry
from sevro_core.plugin.protocols import Reporter
from sevro_core.reporting.advisory import advisory_trials
from sevro_core.reporting.failures import NOT_RUN_REASON, case_failures, not_run_reason
from sevro_core.run.results import located_result, retained_result
from sevro_core.vocabulary import COMPARATOR_ROLE, SKILLS_OBSERVATION

REPORT_FORMAT = "sevro.report.v1"


def reporter_for(registry: Registry, fmt: str) -> Reporter:
    for reporter in registry.reporters().values():
        if reporter.format == fmt:
            return reporter
    formats = sorted(r.format for r in registry.reporters().values())
    raise InvocationError(f"no reporter for format {fmt!r}; available: {', '.join(formats)}")


def _large(document: Any) -> bool:
    """Whether a run or result lists enough trials to be worth a compiled validator."""
    if not isinstance(document, dict):
        return False
    trials = document.get("trials")
    count = len(trials) if isinstance(trials, list) else 0
    cases = document.get("cases")
    if isinstance(cases, list):
        for case in cases:
            listed = case.get("trials") if isinstance(case, dict) else None
            count += len(listed) if isinstance(listed, list) else 0
    return count > LARGE_DOCUMENT_ITEMS


def _load_run(run_json: Path, document: Any = None) -> dict[str, Any]:
    if document is None:
        document = read_json_file(run_json, MAX_RESULT_FILE_BYTES, what="run evidence")
    validate_input("run-evidence.v1", document, source=run_json, compiled=_large(document))
    assert isinstance(document, dict)
    return document


def _input(path: Path) -> tuple[dict[str, Any], dict[str, Any] | None, Path | None]:
    """Return (result, run evidence or None, run directory or None) for one input.

    The result comes back with absolute paths, however ``run.json`` kept them.
    """
    target = path / "run.json" if path.is_dir() else path
    document = read_json_file(target, MAX_RESULT_FILE_BYTES, what="report input")
    if isinstance(document, dict) and document.get("format") == "sevro.run-evidence.v1":
        run = _load_run(target, document)
        run_dir = target.resolve().parent
        return located_result(retained_result(run["result"], run_dir), run_dir), run, run_dir
    validate_input("cli-result.v1", document, source=target, compiled=_large(document))
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
    # paths as the result spells them (a resolved path may differ through a symlink)
    if canonical_json(retained_result(run["result"], run_json.parent)) != canonical_json(
        retained_result(document, run_json.parent)
    ):
        raise InvocationError(f"result differs from the one retained in {run_json}", source=target)
    return document, run, run_json.resolve().parent


class _RunFiles:
    """Reads files of one run directory, refusing paths that leave it.

    Each directory is resolved once (a run of 10 000 trials has a few hundred), and the final
    component is opened without following a symlink.
    """

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._dirs: dict[str, str | None] = {}

    def path(self, relative: str, source: Path | str, what: str) -> str:
        """An absolute path as text: building ``Path`` objects dominates a 10 000-trial report."""
        if "\0" in relative:
            raise InvocationError(f"{what} path {relative!r} holds a NUL byte", source=source)
        head, _, name = relative.rpartition("/")
        parent = self._dirs.get(head, "")
        if parent == "":
            resolved = (self.run_dir / head).resolve() if head else self.run_dir
            inside = resolved == self.run_dir or self.run_dir in resolved.parents
            parent = self._dirs[head] = str(resolved) if inside else None
        if parent is None or name in ("", ".", "..") or relative.startswith("/"):
            raise InvocationError(
                f"{what} path {relative!r} leaves the run directory", source=source
            )
        return f"{parent}/{name}"


def _verify_blob(files: _RunFiles, ref: Mapping[str, Any], limit: int, source: str) -> bytes:
    """The retained blob's bytes, refused unless they are the ones the trial recorded."""
    path = files.path(ref["path"], source, "evidence")
    data = read_bounded(path, limit, what="retained evidence")
    if hashlib.sha256(data).hexdigest() != ref["sha256"] or len(data) != ref["byteLength"]:
        raise InvocationError("retained evidence does not match its recorded digest", source=path)
    return data


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_PROVEN_DECODER = json.JSONDecoder(parse_constant=_not_json)
"""One decoder for every digest-proven trial file: ``json.loads`` would build one per call."""


def _trial_document(path: str, recorded: str | None) -> tuple[dict[str, Any], bool]:
    """The parsed trial file and whether its bytes are the ones run.json recorded.

    A file whose sha256 matches run.json is byte for byte what sevro validated before writing
    it, so it is not validated again; a file that differs is refused; a run written before
    digests were recorded is validated in full.
    """
    data = read_bounded(path, MAX_RESULT_FILE_BYTES, what="trial evidence")
    if recorded is not None:
        if hashlib.sha256(data).hexdigest() != recorded:
            raise InvocationError(
                "trial evidence does not match the digest recorded in run.json", source=path
            )
        try:
            document = _PROVEN_DECODER.decode(data.decode("utf-8"))
        except (ValueError, RecursionError):
            document = None  # the strict reader below says what is wrong
        if isinstance(document, dict):
            return document, True
    document = parse_json_text(data, source=path)
    validate_input("trial-evidence.v1", document, source=path)
    assert isinstance(document, dict)
    return document, False


TrialProjection = Callable[[Path, Mapping[str, Any], Mapping[str, Any], Mapping[str, bytes]], Any]
"""What a caller wants of each verified trial (its run directory, run.json's reference, the
full trial document, and the retained blobs just read and checked against their digests, by
path), computed where the trial was read: a worker process when there are many."""


def _check_trial(
    files: _RunFiles,
    run: Mapping[str, Any],
    ref: Mapping[str, Any],
    path: str,
    project: TrialProjection | None = None,
) -> dict[str, Any]:
    document, proven = _trial_document(path, ref.get("sha256"))
    try:
        if (document["runId"], document["caseId"], document.get("arm"), document["trial"]) != (
            run["runId"],
            ref["caseId"],
            ref.get("arm"),
            ref["trial"],
        ):
            raise InvocationError(
                "trial evidence belongs to another run, case or trial", source=path
            )
        evidence = document["evidence"]
        verified: dict[str, bytes] = {}
        if evidence["rawResult"] is not None:
            raw = evidence["rawResult"]
            verified[raw["path"]] = _verify_blob(files, raw, MAX_FINAL_MESSAGE_BYTES, path)
        for artifact in evidence["artifactRefs"]:
            verified[artifact["path"]] = _verify_blob(files, artifact, MAX_ARTIFACT_BYTES, path)
        if proven and not _summable(evidence):
            raise TypeError
        skills = [o for o in evidence["observations"] if o.get("id") == SKILLS_OBSERVATION]
    except (KeyError, TypeError, AttributeError, ValueError):
        if not proven:
            raise
        # run.json and the file agree, yet the file is not what sevro writes: say where
        validate_input("trial-evidence.v1", document, source=path)
        raise InvocationError("trial evidence is malformed", source=path) from None
    reduced = {key: evidence.get(key) for key in _REPORTED_EVIDENCE}
    reduced["observations"] = skills
    checked = {
        "caseId": document["caseId"],
        "trial": document["trial"],
        "arm": document.get("arm"),
        "evidence": reduced,
    }
    if project is not None:
        checked[_PROJECTED] = project(files.run_dir, ref, document, verified)
    return checked


_PROJECTED = "projected"
"""The key a trial's projection travels under from the worker; taken off before reporting."""


_REPORTED_EVIDENCE = (
    "execution",
    "grading",
    "task",
    "checks",
    "requiredEvidence",
    "usage",
    "durations",
    "judges",
    "advisoryReview",
)
"""What rows, failure reasons, judge usage, advisory reviews and experiment statistics read
(with the ``sevro.skills`` observation): all a verified trial is reduced to (small to return)."""


def _number(value: object) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _summable(evidence: Mapping[str, Any]) -> bool:
    """The values a report row adds up have the types the schema promises."""
    usage = evidence["usage"]
    return (
        _number(evidence["durations"]["candidateMs"])
        and isinstance(usage["complete"], bool)
        and _number(usage["inputTokens"])
        and _number(usage["outputTokens"])
        and _number(usage["costUsd"])
    )


def _trials(
    run: Mapping[str, Any],
    run_dir: Path,
    project: TrialProjection | None = None,
    projected: list[tuple[dict[str, Any], Any]] | None = None,
    meanwhile: Callable[[], object] = lambda: None,
) -> dict[tuple[str, int], dict[str, Any]]:
    """The verified trials by (unit, trial); with ``project`` each reduced trial and its
    projection are added to ``projected`` in run.json's order (the trials that have a file).
    ``meanwhile`` is called once while worker processes verify (or before a small run is)."""
    files = _RunFiles(run_dir)
    run_json = str(run_dir / "run.json")
    refs = [ref for ref in run["trials"] if ref["path"] is not None]
    paths = [files.path(ref["path"], run_json, "trial") for ref in refs]
    workers = _verification_processes(len(refs))
    if workers <= 1:
        meanwhile()
        checked = [
            _check_trial(files, run, ref, path, project)
            for ref, path in zip(refs, paths, strict=True)
        ]
    else:
        checked = _check_in_processes(workers, (files, run, refs, paths, project), meanwhile)
    if projected is not None:
        projected.extend((doc, doc.pop(_PROJECTED, None)) for doc in checked)
    return {
        (unit_key(ref["caseId"], ref.get("arm")), ref["trial"]): doc
        for ref, doc in zip(refs, checked, strict=True)
    }


_PARALLEL_FROM_TRIALS = 256
_MAX_VERIFICATION_PROCESSES = 4
_Shared = tuple[_RunFiles, Mapping[str, Any], list[Any], list[str], TrialProjection | None]
_shared: _Shared | None = None
"""The run being verified, inherited by forked workers instead of being pickled to them."""


def _verification_processes(trials: int) -> int:
    """Verifying a trial is CPU-bound Python (threads only contend for the GIL), so large runs
    are split across forked processes; fork is only safe to rely on under Linux."""
    if trials < _PARALLEL_FROM_TRIALS or sys.platform != "linux":
        return 1
    return min(len(os.sched_getaffinity(0)), _MAX_VERIFICATION_PROCESSES)


def _check_in_processes(
    workers: int, shared: _Shared, meanwhile: Callable[[], object]
) -> list[dict[str, Any]]:
    """Contiguous slices in order: the first bad trial of the first bad slice is the one a
    sequential check would name. The parent runs ``meanwhile`` while the workers verify."""
    import multiprocessing

    global _shared  # noqa: PLW0603 - set only for the lifetime of the pool
    _shared = shared
    total = len(shared[2])
    step = -(-total // workers)
    try:
        with multiprocessing.get_context("fork").Pool(workers, _quiet_worker) as pool:
            pending = pool.map_async(
                _check_slice, [(i, min(i + step, total)) for i in range(0, total, step)]
            )
            meanwhile()
            slices = pending.get()
    finally:
        _shared = None
    checked: list[dict[str, Any]] = []
    for outcome in slices:
        if isinstance(outcome, tuple):
            message, source, pointer = outcome
            raise InvocationError(message, source=source, pointer=pointer)
        checked.extend(outcome)
    return checked


def _quiet_worker() -> None:
    """Ctrl-C reaches the whole group: the parent reports it; workers end by the pool's SIGTERM
    (the default action) instead of each printing a traceback."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _check_slice(
    bounds: tuple[int, int],
) -> list[dict[str, Any]] | tuple[str, str | None, str | None]:
    """A slice's reduced trials, or its first refusal as (message, source, pointer)."""
    assert _shared is not None
    files, run, refs, paths, project = _shared
    try:
        return [_check_trial(files, run, refs[i], paths[i], project) for i in range(*bounds)]
    except InvocationError as exc:
        return (exc.message, exc.source, exc.pointer)


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
    unit = unit_key(case["caseId"], case.get("arm"))
    evidences = [
        trials[(unit, t["trial"])]["evidence"]
        for t in case["trials"]
        if (unit, t["trial"]) in trials
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
        **({"arm": case["arm"]} if "arm" in case else {}),
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
        "reportedCostUsd": _sum_known([u.get("reportedCostUsd") for u in usages])
        if complete
        else None,
        "runnerBuildDigest": run["runner"]["buildDigest"],
        "evaluationDigest": run["evaluationIdentity"]["digest"],
        "requestedCondition": run["condition"]["requested"],
        "actualCondition": run["condition"]["actual"],
        "candidateRoute": {k: candidate[k] for k in ("host", "model", "effort")}
        if candidate
        else None,
        "routes": list(run["routes"]),
        "trialFiles": [t["artifactPath"] for t in case["trials"] if t["artifactPath"]],
        "judgeUsage": _judge_usage(evidences),
    }


def _judge_usage(evidences: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Judge tokens and cost per role over the case's trials, apart from the candidate's;
    a figure unknown for any call of a role is unknown (None), never 0."""
    by_role: dict[str, list[Mapping[str, Any]]] = {}
    for evidence in evidences:
        for role, usage in ((evidence.get("judges") or {}).get("usage") or {}).items():
            by_role.setdefault(role, []).append(usage)
    out: dict[str, Any] = {}
    for role, usages in sorted(by_role.items()):
        known = all(u["complete"] for u in usages)
        out[role] = {
            key: _sum_known([u[key] for u in usages]) if known else None
            for key in ("inputTokens", "outputTokens", "costUsd")
        }
        out[role]["reportedCostUsd"] = _sum_known([u.get("reportedCostUsd") for u in usages])
        out[role]["calls"] = sum(1 for _ in usages)
    return out


_Spend = tuple[int, float | None, float | None]


def spend(
    rows: Sequence[Mapping[str, Any]], experiments: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Spend per arm and role (candidate, each judge, each judged comparison's comparator),
    per arm over its roles, and overall; a cost unknown for any call is unknown (None),
    never a partial sum shown as a total."""
    groups: dict[tuple[str | None, str], list[_Spend]] = {}
    for row in rows:
        arm = row.get("arm")
        calls = row["trialCount"]
        groups.setdefault((arm, "candidate"), []).append(
            (calls, row["costUsd"], row.get("reportedCostUsd"))
        )
        for role, usage in sorted(row.get("judgeUsage", {}).items()):
            groups.setdefault((arm, role), []).append(
                (usage["calls"], usage["costUsd"], usage.get("reportedCostUsd"))
            )
    for experiment in experiments:
        for comparison in experiment["statistics"]["comparisons"]:
            usage = comparison.get("judged", {}).get("usage")
            if usage is None:
                continue
            known = usage["complete"] is True
            key = (f"{comparison['control']}..{comparison['treatment']}", COMPARATOR_ROLE)
            groups.setdefault(key, []).append(
                (
                    usage["calls"],
                    usage["costUsd"] if known else None,
                    usage.get("reportedCostUsd") if known else None,
                )
            )
    out = [_spend_entry(arm, role, parts) for (arm, role), parts in groups.items()]
    arms = list(dict.fromkeys(arm for arm, _ in groups))
    out += [
        _spend_entry(arm, "all", [p for (a, _), ps in groups.items() if a == arm for p in ps])
        for arm in arms
        if len([a for a, _ in groups if a == arm]) > 1
    ]
    if len(arms) > 1:
        out.append(_spend_entry("all", "all", [p for ps in groups.values() for p in ps]))
    return out


def _spend_entry(arm: str | None, role: str, parts: Sequence[_Spend]) -> dict[str, Any]:
    return {
        "arm": arm,
        "role": role,
        "calls": sum(p[0] for p in parts),
        "costUsd": _rounded(_sum_known([p[1] for p in parts])),
        "reportedCostUsd": _rounded(_sum_known([p[2] for p in parts])),
    }


def _rounded(value: float | int | None) -> float | None:
    return None if value is None else round(float(value), 9)


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
    case: Mapping[str, Any],
    trials: Mapping[tuple[str, int], Mapping[str, Any]],
    not_run: str = NOT_RUN_REASON,
) -> dict[str, Any] | None:
    unit = unit_key(case["caseId"], case.get("arm"))
    evidences = {
        t["trial"]: trials[(unit, t["trial"])]["evidence"]
        for t in case["trials"]
        if (unit, t["trial"]) in trials
    }
    found = case_failures(case, evidences, not_run=not_run)
    if found is None:
        return None
    kept = found.reasons[:MAX_REPORT_REASONS_PER_CASE]
    return {
        "reasons": [{"trials": list(numbers), "reason": reason} for numbers, reason in kept],
        "omittedReasons": len(found.reasons) - len(kept),
    }


def _advisory(
    case: Mapping[str, Any], trials: Mapping[tuple[str, int], Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The case's advisory reviews per trial (advice only; empty when there are none)."""
    unit = unit_key(case["caseId"], case.get("arm"))
    return advisory_trials(
        (t["trial"], trials[(unit, t["trial"])]["evidence"])
        for t in case["trials"]
        if (unit, t["trial"]) in trials
    )


def build_report(
    inputs: Sequence[Path],
    *,
    details: bool = False,
    compare: bool = False,
    on_note: Callable[[str], object] = lambda _: None,
) -> dict[str, Any]:
    """Verify each input and return a ``sevro.report.v1`` document.

    An input is a result file, a run directory or a results root (every finished run in it);
    with ``details`` each case that did not pass carries its failure reasons. An experiment run
    gets its statistics; with ``compare`` the two runs given are compared as two arms.
    """
    if not inputs:
        raise InvocationError("no input given; pass result files or run directories")
    with no_cyclic_gc():
        return _build_report(inputs, details=details, compare=compare, on_note=on_note)


@frozen
class ProjectedRun:
    """One run directory as ``build_report_projected`` verified it: its run evidence and each
    trial with a file in run.json's order, as the reduced trial document (what the report
    reads) and the projection of the full one."""

    run: Mapping[str, Any]
    trials: list[tuple[dict[str, Any], Any]]


@frozen
class _Projection:
    project: TrialProjection
    meanwhile: Callable[[], object]
    most_trials: int | None
    runs: dict[Path, ProjectedRun]


def build_report_projected(
    inputs: Sequence[Path],
    project: TrialProjection,
    *,
    details: bool = False,
    meanwhile: Callable[[], object] = lambda: None,
    most_trials: int | None = None,
) -> tuple[dict[str, Any], dict[Path, ProjectedRun]]:
    """``build_report`` plus ``project`` applied to each trial where it was verified (one read
    of each file, in the report's worker processes for a large run). ``meanwhile`` is work of
    the caller's the parent does while workers verify (it may be called once per run); more
    than ``most_trials`` trials with files across the inputs are refused before any is read."""
    if not inputs:
        raise InvocationError("no input given; pass result files or run directories")
    projection = _Projection(project, meanwhile, most_trials, {})
    with no_cyclic_gc():
        document = _build_report(
            inputs, details=details, compare=False, on_note=lambda _: None, projection=projection
        )
    return document, projection.runs


def verified_run(
    run_dir: Path,
) -> tuple[Mapping[str, Any], Mapping[str, Any], Mapping[tuple[str, int], Mapping[str, Any]]]:
    """A run directory's result, run evidence and trial documents (keyed by unit and trial),
    verified as a report verifies them: what a figure or a view of one run may draw from."""
    result, run, located = _input(run_dir.expanduser().resolve())
    if run is None or located is None:
        raise InvocationError(f"{run_dir} is not a run directory with evidence")
    return result, run, _trials(run, located)


@frozen
class _VerifiedRun:
    source: Path
    result: Mapping[str, Any]
    run: Mapping[str, Any]
    trials: Mapping[tuple[str, int], Mapping[str, Any]]
    run_dir: Path | None = None


def _skill_eval(run: Mapping[str, Any]) -> dict[str, Any]:
    """A skill-eval definition's selection and review questions, when the run has them."""
    origin = (run.get("experiment") or {}).get("skillEval")
    return {"skillEval": origin} if origin is not None else {}


def _judge_calibration(run: Mapping[str, Any]) -> dict[str, Any]:
    """Whether the run's semantic and comparator judges were calibrated, when it had any."""
    statuses = run.get("judgeCalibration")
    return {"judgeCalibration": statuses} if statuses else {}


def _holdout(run: Mapping[str, Any]) -> dict[str, Any]:
    """The sealed holdout plan that authorised the run's verdict, when one did."""
    holdout = run.get("holdout")
    return {"holdout": holdout} if holdout is not None else {}


def _experiments(verified: Sequence[_VerifiedRun], compare: bool) -> list[dict[str, Any]]:
    """The statistics each experiment run carries, or the comparison of the two runs given."""
    from sevro_core.reporting.comparing import compare_runs, run_statistics

    if not compare:
        return [
            {
                "inputs": [str(v.source)],
                "arms": [
                    {"id": arm["id"], "runId": v.run["runId"], "source": str(v.source)}
                    for arm in v.run["arms"]
                ],
                "statistics": run_statistics(v.run, v.result, v.trials.values(), v.run_dir),
                **_skill_eval(v.run),
                **_judge_calibration(v.run),
                **_holdout(v.run),
            }
            for v in verified
            if v.run.get("arms")
        ]
    if len(verified) != 2:
        raise InvocationError(
            f"--compare takes exactly two runs with evidence (A, the control, then B), "
            f"not {len(verified)}"
        )
    if verified[0].run["runId"] == verified[1].run["runId"]:
        raise InvocationError("--compare was given the same run twice")
    names, statistics = compare_runs(
        [v.run for v in verified],
        [v.result for v in verified],
        [v.trials.values() for v in verified],
    )
    return [
        {
            "inputs": [str(v.source) for v in verified],
            "arms": [
                {"id": name, "runId": v.run["runId"], "source": str(v.source)}
                for name, v in zip(names, verified, strict=True)
            ],
            "statistics": statistics,
        }
    ]


def _within(most: int, runs: Sequence[Mapping[str, Any] | None]) -> None:
    """Refused before any trial is read: more trials with files than the caller can show."""
    total = sum(
        1 for run in runs if run is not None for ref in run["trials"] if ref["path"] is not None
    )
    if total > most:
        raise InvocationError(f"more than {most} trials to view; view fewer runs")


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Evidence documents are acyclic JSON, so the cyclic collector finds nothing in them; left
    on, it re-scans every trial document already loaded, a third of a 10 000-trial report (and
    of building a page from one). Nests: only the outermost use turns it back on."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _build_report(
    inputs: Sequence[Path],
    *,
    details: bool,
    compare: bool,
    on_note: Callable[[str], object],
    projection: _Projection | None = None,
) -> dict[str, Any]:
    resolved = _expand([p.expanduser().resolve() for p in inputs], on_note)
    if len(set(resolved)) != len(resolved):
        raise InvocationError("the same input is given twice")
    loaded = [(path, *_input(path)) for path in resolved]
    if projection is not None and projection.most_trials is not None:
        _within(projection.most_trials, [run for _, _, run, _ in loaded])
    input_rows = []
    rows = []
    verified: list[_VerifiedRun] = []
    for path, result, run, run_dir in loaded:
        input_rows.append(
            {
                "source": str(path),
                "runId": result["runId"],
                "execution": result["execution"]["status"],
                "grading": result["grading"]["status"],
                "task": result["task"]["verdict"],
                "exitCode": result["exitCode"],
                "caseCount": len(result["cases"]),
                **({"spendLimits": run["spend"]} if run is not None and "spend" in run else {}),
            }
        )
        if run is None or run_dir is None:
            continue
        if projection is None:
            trials = _trials(run, run_dir)
        else:
            found = ProjectedRun(run, [])
            projection.runs[run_dir] = found
            trials = _trials(run, run_dir, projection.project, found.trials, projection.meanwhile)
        verified.append(_VerifiedRun(path, result, run, trials, run_dir))
        for case in result["cases"]:
            row = _row(path, result, run, trials, case)
            failures = _failures(case, trials, not_run_reason(result)) if details else None
            if failures is not None:
                row["failures"] = failures
            reviewed = _advisory(case, trials)
            if reviewed:
                row["advisoryReviews"] = reviewed
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
    experiments = _experiments(verified, compare)
    if experiments:
        document["experiments"] = experiments
    document["spend"] = spend(rows, experiments)
    from sevro_core.formats.schemas import validate_output

    validate_output("report.v1", document, compiled=len(rows) > LARGE_DOCUMENT_ITEMS)
    return document
