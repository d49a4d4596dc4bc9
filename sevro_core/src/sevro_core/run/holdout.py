"""Holdout plans: an experiment sealed before it runs, run once, exactly as sealed.

``sevro holdout seal`` writes a ``sevro.holdout-plan.v1`` document binding the cases (their
task fingerprints and digests), the arms (their source fingerprints and routes), the host,
model, effort, judges and repetitions. ``sevro run --holdout PLAN`` reads it strictly,
recomputes every binding from the planned run, refuses any difference, and consumes the plan
once with an ``O_EXCL`` record beside it, so re-running a held-out set until it passes is
refused ("already consumed"). See docs/holdouts.md for what this does and does not guard.
"""

from __future__ import annotations

import os
import secrets
import stat
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.errors import InvocationError
from sevro_core.formats.canonical import hash_json, sha256_hex
from sevro_core.formats.fileio import read_at_most, write_all
from sevro_core.formats.jsonio import dumps_pretty, parse_json_text
from sevro_core.formats.schemas import validate_input
from sevro_core.limits import MAX_HOLDOUT_PLAN_BYTES, MIN_HOLDOUT_DISTINCT_TASKS
from sevro_core.models import Case
from sevro_core.run.planning import PlannedCase, RunPlan

PLAN_FORMAT = "sevro.holdout-plan.v1"
CONSUMPTION_FORMAT = "sevro.holdout-consumption.v1"
CONSUMPTION_SUFFIX = ".consumed.json"
_BINDINGS = ("host", "model", "effort", "repetitions", "judges", "arms", "cases")
_MAX_SEED = 2**53 - 1


@frozen
class HoldoutUse:
    """The plan a run was authorised by, and its consumption record (run.json ``holdout``)."""

    path: Path
    plan_id: str
    digest: str
    document: Mapping[str, Any]
    consumption: Path | None = None
    consumed_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "planId": self.plan_id,
            "planDigest": self.digest,
            "planPath": str(self.path),
            "seed": self.document["seed"],
            "consumptionRecord": str(self.consumption) if self.consumption else None,
            "consumedAt": self.consumed_at,
        }


def task_fingerprint(case: Case, fixture_digest: str) -> str:
    """What the agent is given: its prompts, its fixture and the host profile; never the
    oracle (checks, required evidence, review questions, expected output), so two cases that
    differ only in how they are graded are one task."""
    task: dict[str, Any] = {"prompts": list(case.prompts), "fixture": fixture_digest}
    if case.host_profile is not None:
        task["hostProfile"] = case.host_profile.to_json()
    return hash_json(task)


def _case_binding(planned: PlannedCase) -> dict[str, str]:
    return {
        "caseId": planned.case.id,
        "taskFingerprint": task_fingerprint(planned.case, planned.digests["fixture"]),
        "caseDigest": planned.digests["identity"],
    }


def bindings(plan: RunPlan) -> dict[str, Any]:
    """Everything a holdout plan binds, recomputed from a planned run."""
    cases = {p.case.id: _case_binding(p) for p in plan.cases}
    route = plan.host.route
    return {
        "host": route.host,
        "model": route.model,
        "effort": route.effort,
        "repetitions": plan.settings.trials,
        "judges": [r.to_json() for r in plan.judges.route_list()],
        "arms": [
            {"id": a.id, "sourceDigest": a.resolved.fingerprint, "route": a.host.route.to_json()}
            for a in plan.arms
        ],
        "cases": [cases[key] for key in sorted(cases)],
    }


def distinct_tasks(cases: Sequence[Mapping[str, str]]) -> int:
    """How many different tasks the cases are (near-duplicates count once)."""
    return len({c["taskFingerprint"] for c in cases})


def tasks_by_skill(plan: RunPlan, cases: Sequence[Mapping[str, str]]) -> dict[str, int]:
    """Distinct tasks per skill under test: the skill an arm targets for a case (a case counts
    for every skill some arm targets on it); empty when no arm targets a skill."""
    fingerprints = {c["caseId"]: c["taskFingerprint"] for c in cases}
    found: dict[str, set[str]] = {}
    for planned in plan.cases:
        if planned.arm is None:
            continue
        target = planned.arm.resolved.for_case(planned.case.id).target
        if target is not None:
            found.setdefault(target, set()).add(fingerprints[planned.case.id])
    return {skill: len(tasks) for skill, tasks in sorted(found.items())}


def plan_document(plan: RunPlan, seed: int | None) -> dict[str, Any]:
    """The plan for a planned experiment; refused (exit 64) without arms or with fewer than
    ``MIN_HOLDOUT_DISTINCT_TASKS`` distinct tasks."""
    if not plan.arms:
        raise InvocationError("a holdout plan seals an experiment: give --skill or its file")
    bound = bindings(plan)
    tasks = distinct_tasks(bound["cases"])
    per_skill = tasks_by_skill(plan, bound["cases"])
    short = {skill: n for skill, n in per_skill.items() if n < MIN_HOLDOUT_DISTINCT_TASKS}
    if tasks < MIN_HOLDOUT_DISTINCT_TASKS or short:
        what = f"these {len(bound['cases'])} cases have {tasks}"
        if short:
            what = "; ".join(f"skill {skill!r} has {n}" for skill, n in short.items())
        raise InvocationError(
            f"a holdout plan needs at least {MIN_HOLDOUT_DISTINCT_TASKS} distinct task "
            f"fingerprints per skill under test, {what} "
            "(cases that differ only in their checks are one task)"
        )
    if seed is not None and not 0 <= seed <= _MAX_SEED:
        raise InvocationError(f"--seed must be in [0, {_MAX_SEED}], not {seed}")
    return {
        "format": PLAN_FORMAT,
        "planId": str(uuid.uuid4()),
        "status": "sealed",
        "createdAt": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "seed": secrets.randbelow(_MAX_SEED) if seed is None else seed,
        "distinctTasks": tasks,
        "distinctTasksBySkill": per_skill,
        **bound,
    }


def check_outside(path: Path, roots: Sequence[Path]) -> Path:
    """The plan's absolute path; refused inside the project or a case's directory (a plan
    beside the suite is one edit away from the cases it seals)."""
    target = path.expanduser().absolute()
    parent = target.parent.resolve()
    if not parent.is_dir():
        raise InvocationError("the holdout plan's directory does not exist", source=path)
    target = parent / target.name
    for root in roots:
        if target.is_relative_to(root.resolve()):
            raise InvocationError(
                f"a holdout plan must be written outside {root.resolve()}", source=path
            )
    return target


def seal(path: Path, document: Mapping[str, Any]) -> bytes:
    """Write the plan to a new file (``O_EXCL``, 0600, fsynced); its bytes."""
    data = dumps_pretty(dict(document)).encode("utf-8")
    if len(data) > MAX_HOLDOUT_PLAN_BYTES:
        raise InvocationError(f"the plan would be larger than {MAX_HOLDOUT_PLAN_BYTES} bytes")
    _create_new(path, data, "a holdout plan")
    return data


def _create_new(path: Path, data: bytes, what: str) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        raise InvocationError(
            f"{what} already exists here; it is never replaced", source=path
        ) from None
    except OSError as exc:
        raise InvocationError(f"cannot create {what}: {exc.strerror}", source=path) from None
    try:
        os.fchmod(fd, 0o600)
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _refuse_file(info: os.stat_result, path: Path) -> None:
    problems = (
        (not stat.S_ISREG(info.st_mode), "is not a regular file (symlinks are refused)"),
        (info.st_uid != os.geteuid(), "is not owned by you"),
        (info.st_nlink != 1, "has more than one link"),
        (bool(info.st_mode & 0o077), "is readable or writable by group or others (chmod 600)"),
        (info.st_size > MAX_HOLDOUT_PLAN_BYTES, f"is larger than {MAX_HOLDOUT_PLAN_BYTES} bytes"),
    )
    for failed, problem in problems:
        if failed:
            raise InvocationError(f"--holdout: the plan {problem}", source=path)


def read_plan(path: Path) -> HoldoutUse:
    """Read a plan strictly: a regular non-symlink file you own, one link, mode 0600 or
    narrower, bounded, schema-valid (exit 64 naming the first problem)."""
    try:
        before = os.lstat(path)
        _refuse_file(before, path)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise InvocationError("--holdout: the plan does not exist", source=path) from None
    except OSError as exc:
        raise InvocationError(
            f"--holdout: cannot open the plan: {exc.strerror}", source=path
        ) from None
    try:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != (before.st_dev, before.st_ino):
            raise InvocationError("--holdout: the plan changed while it was opened", source=path)
        _refuse_file(info, path)
        data = read_at_most(fd, MAX_HOLDOUT_PLAN_BYTES + 1)
    finally:
        os.close(fd)
    document = parse_json_text(data, source=path)
    validate_input("holdout-plan.v1", document, source=path)
    assert isinstance(document, dict)
    return HoldoutUse(path.absolute(), document["planId"], sha256_hex(data), document)


def consumption_path(plan: Path) -> Path:
    return plan.with_name(plan.name + CONSUMPTION_SUFFIX)


def refuse_consumed(use: HoldoutUse) -> None:
    """A plan already consumed is refused before anything is planned."""
    record = consumption_path(use.path)
    if os.path.lexists(record):
        raise InvocationError(f"--holdout: the plan was already consumed ({record})")


def check_bindings(use: HoldoutUse, plan: RunPlan) -> None:
    """Every binding recomputed and compared; the first difference is named (exit 64)."""
    now = bindings(plan)
    for key in _BINDINGS:
        sealed = use.document[key]
        if sealed == now[key]:
            continue
        detail = _case_difference(sealed, now[key]) if key == "cases" else ""
        detail = detail or _arm_difference(sealed, now[key]) if key == "arms" else detail
        shown = detail or f"sealed {_short(sealed)}, now {_short(now[key])}"
        raise InvocationError(
            f"--holdout: the run's {key} differ from the sealed plan: {shown}", source=use.path
        )


def _case_difference(sealed: list[dict[str, str]], now: list[dict[str, str]]) -> str:
    before = {c["caseId"]: c for c in sealed}
    after = {c["caseId"]: c for c in now}
    for case_id in sorted(before.keys() | after.keys()):
        if case_id not in after:
            return f"case {case_id!r} is sealed but not in the run"
        if case_id not in before:
            return f"case {case_id!r} is not in the sealed plan"
        for key in ("taskFingerprint", "caseDigest"):
            if before[case_id][key] != after[case_id][key]:
                return f"case {case_id!r} has a different {key}"
    return ""


def _arm_difference(sealed: list[dict[str, Any]], now: list[dict[str, Any]]) -> str:
    before = {a["id"]: a for a in sealed}
    after = {a["id"]: a for a in now}
    if before.keys() != after.keys():
        return f"sealed arms {sorted(before)}, now {sorted(after)}"
    for arm_id in sorted(before):
        for key in ("sourceDigest", "route"):
            if before[arm_id][key] != after[arm_id][key]:
                return f"arm {arm_id!r} has a different {key}"
    return ""


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:119] + "…"


def consume(use: HoldoutUse) -> HoldoutUse:
    """Claim the plan once, before the first trial: an ``O_EXCL`` record beside it. Of two
    runs on one plan exactly one creates it; the other is refused "already consumed"."""
    record = consumption_path(use.path)
    consumed_at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    document = {
        "format": CONSUMPTION_FORMAT,
        "planId": use.plan_id,
        "planDigest": use.digest,
        "consumedAt": consumed_at,
        "pid": os.getpid(),
    }
    try:
        _create_new(record, dumps_pretty(document).encode("utf-8"), "a consumption record")
    except InvocationError as exc:
        if os.path.lexists(record):
            raise InvocationError(f"--holdout: the plan was already consumed ({record})") from exc
        raise
    return HoldoutUse(use.path, use.plan_id, use.digest, use.document, record, consumed_at)


def recheck_plan(use: HoldoutUse) -> None:
    """The plan's bytes are what was checked (a plan swapped after its check is refused)."""
    if read_plan(use.path).digest != use.digest:
        raise InvocationError("--holdout: the plan changed after it was checked", source=use.path)


def refuse_flags(flags: Any, command: str) -> None:
    """A holdout runs every sealed case from the start: case filters, ``--resume`` and dry
    runs are refused (exit 64). ``flags`` is the run's ``RunFlags`` (``runflags`` sits above
    this room, so it is not imported here)."""
    for flag, value in (
        ("--resume", flags.resume),
        ("--case-id", flags.case_id),
        ("--group", flags.group),
        ("--variant", flags.variant),
        ("--dry", flags.dry),
        ("--extension-command-file", flags.extension_command_file),
    ):
        if value:
            raise InvocationError(f"{flag} cannot be combined with {command}")
