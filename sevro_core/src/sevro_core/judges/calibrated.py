"""Requiring a calibrated judge: a calibration record checked against a judge and minimum figures.

An experiment's ``judges.<role>.requireCalibratedJudge`` names a calibration record, optionally
the corpus digest it must have been measured on, and minimum figures. The record is read bounded
and validated; its figures are recomputed from its per-item results (a record whose figures do
not follow from its items is refused); its judge identity must equal the configured judge, its
corpus digest the one required, and every minimum must hold. Each failure is one exit-64 line.
What passed becomes the line reports show: ``judge calibrated: κ=…, balanced accuracy=… on
corpus <sha12>`` (or ``judge not calibrated``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.errors import InvocationError
from sevro_core.formats.jsonio import JsonValue, read_json_file
from sevro_core.formats.schemas import validate_input
from sevro_core.judges.calibration import RECORD_SCHEMA, JudgeIdentity, judge_identity
from sevro_core.judges.figures import (
    Agreement,
    CheckJudgement,
    Figures,
    PairResult,
    SingleResult,
    figures,
)
from sevro_core.judges.routes import JudgeRoutes, JudgeSettings
from sevro_core.limits import MAX_CALIBRATION_RECORD_BYTES
from sevro_core.vocabulary import COMPARATOR_ROLE, SEMANTIC_ROLE

CALIBRATED_ROLES = (SEMANTIC_ROLE, COMPARATOR_ROLE)
"""Roles whose verdicts count, so a calibration can be required of them (advisory never
changes a verdict)."""
MINIMA = ("agreement", "balancedAccuracy", "kappa", "maxOrderDisagreement")


@frozen
class CalibrationRequirement:
    """``requireCalibratedJudge`` as written; ``record`` is resolved against the file's folder."""

    record: Path
    corpus_sha256: str | None
    minimum: Mapping[str, float]


@frozen
class CalibrationRecord:
    source: str
    judges: Mapping[str, JudgeIdentity]
    """The judge calibrated for each role (``semantic``: single items, ``comparator``: pairs)."""
    corpus_sha256: str
    corpus_items: int
    figures: Figures


@frozen
class CalibrationStatus:
    """What a run and its report say about one judge role's calibration."""

    role: str
    calibrated: bool
    corpus_sha256: str | None = None
    items: int | None = None
    figures: Mapping[str, float | None] | None = None

    def to_json(self) -> dict[str, JsonValue]:
        out: dict[str, JsonValue] = {"role": self.role, "calibrated": self.calibrated}
        if self.calibrated:
            out |= {
                "corpusSha256": self.corpus_sha256,
                "items": self.items,
                "figures": dict(self.figures or {}),
            }
        return out

    def line(self) -> str:
        if not self.calibrated or self.figures is None:
            return f"{self.role} judge not calibrated"
        kappa = _number(self.figures.get("kappa"))
        accuracy = _number(self.figures.get("balancedAccuracy"))
        return (
            f"{self.role} judge calibrated: κ={kappa}, balanced accuracy={accuracy} "
            f"on {self.items} item(s) of corpus {str(self.corpus_sha256)[:12]}"
        )


def _number(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.2f}"


def requirement_from_json(
    spec: Mapping[str, Any], base: Path, *, source: str | Path
) -> CalibrationRequirement:
    """A schema-valid ``requireCalibratedJudge`` object; its paths relative to ``base``."""
    if "\x00" in str(spec["calibration"]):
        raise InvocationError("calibration path contains a NUL byte", source=source)
    return CalibrationRequirement(
        record=(base / str(spec["calibration"])).resolve(),
        corpus_sha256=spec.get("corpusSha256"),
        minimum=dict(spec.get("minimum", {})),
    )


def load_record(path: Path) -> CalibrationRecord:
    """A calibration record, validated, with its figures recomputed from its items."""
    document = read_json_file(path, MAX_CALIBRATION_RECORD_BYTES, what="calibration record")
    validate_input(RECORD_SCHEMA, document, source=path)
    singles, pairs = _results(document["items"])
    if len(document["items"]) != document["corpus"]["items"]:
        raise InvocationError("the record's items do not match its corpus item count", source=path)
    recomputed = figures(singles, pairs)
    if recomputed.to_json() != document["figures"]:
        raise InvocationError(
            "the record's figures do not follow from its per-item results (edited?)",
            source=path,
            pointer="/figures",
        )
    return CalibrationRecord(
        source=str(path),
        judges={
            role: JudgeIdentity(j["host"], j["model"], j["effort"], j["configurationSha256"])
            for role, j in document["judges"].items()
        },
        corpus_sha256=document["corpus"]["sha256"],
        corpus_items=document["corpus"]["items"],
        figures=recomputed,
    )


def _results(items: list[Any]) -> tuple[list[SingleResult], list[PairResult]]:
    singles: list[SingleResult] = []
    pairs: list[PairResult] = []
    for item in items:
        if item["kind"] == "single":
            checks = tuple(
                CheckJudgement(c["id"], c["gold"], c["judged"], c["error"]) for c in item["checks"]
            )
            singles.append(SingleResult(item["id"], checks, item.get("probe")))
        else:
            pairs.append(
                PairResult(
                    item["id"],
                    item["gold"],
                    item["ab"],
                    item["ba"],
                    item["error"],
                    item.get("probe"),
                    item.get("longer"),
                )
            )
    return singles, pairs


def check_calibration(
    role: str,
    requirement: CalibrationRequirement,
    judge: JudgeIdentity | None,
    *,
    source: str | Path,
) -> CalibrationStatus:
    """The role's calibration status; exit 64 with the one reason the requirement fails.

    ``judge`` is the configured judge's identity; None only when the experiment file is loaded,
    before any host is configured (the record, corpus and minima are checked then, and
    everything again once the judge route is configured)."""
    record = load_record(requirement.record)
    where = f"requireCalibratedJudge of the {role} judge"
    calibrated = record.judges.get(role)
    if calibrated is None:
        raise InvocationError(f"{where}: the record calibrated no {role} judge", source=source)
    if judge is not None and calibrated != judge:
        raise InvocationError(
            f"{where}: the record calibrated {_describe(calibrated)}, but the {role} judge "
            f"is {_describe(judge)}",
            source=source,
        )
    wanted = requirement.corpus_sha256
    if wanted is not None and wanted != record.corpus_sha256:
        raise InvocationError(
            f"{where}: the record's corpus is {record.corpus_sha256[:12]}, not {wanted[:12]}",
            source=source,
        )
    measured = role_figures(role, record.figures)
    for name, bound in sorted(requirement.minimum.items()):
        _check_minimum(name, bound, measured, where, source)
    return CalibrationStatus(
        role, True, record.corpus_sha256, _item_count(role, record.figures), measured
    )


def role_figures(role: str, measured: Figures) -> dict[str, float | None]:
    """The figures a role is held to: single-item agreement for the semantic judge, pair
    agreement and order disagreement for the comparator."""
    chosen: Agreement = measured.singles if role == SEMANTIC_ROLE else measured.pairs
    out: dict[str, float | None] = {
        "agreement": chosen.agreement,
        "balancedAccuracy": chosen.balanced_accuracy,
        "kappa": chosen.kappa,
    }
    if role == COMPARATOR_ROLE:
        out["orderDisagreement"] = measured.order.rate
    return out


def _item_count(role: str, measured: Figures) -> int:
    return measured.singles.total if role == SEMANTIC_ROLE else measured.pairs.total


def _check_minimum(
    name: str,
    bound: float,
    measured: Mapping[str, float | None],
    where: str,
    source: str | Path,
) -> None:
    if name == "maxOrderDisagreement":
        value = measured.get("orderDisagreement")
        if value is None:
            raise InvocationError(
                f"{where}: the record has no order disagreement figure for this judge",
                source=source,
            )
        if value > bound:
            raise InvocationError(
                f"{where}: order disagreement {value:.3f} exceeds the maximum {bound}",
                source=source,
            )
        return
    value = measured.get(name)
    if value is None:
        raise InvocationError(
            f"{where}: {name} is undefined on the record's corpus for this judge", source=source
        )
    if value < bound:
        raise InvocationError(
            f"{where}: {name} {value:.3f} is below the minimum {bound}", source=source
        )


def _describe(judge: JudgeIdentity) -> str:
    return (
        f"host {judge.host}, model {judge.model}, effort {judge.effort}, "
        f"configuration {judge.configuration_sha256[:12]}"
    )


def judge_calibrations(
    settings: JudgeSettings, routes: JudgeRoutes, *, source: str | Path
) -> tuple[CalibrationStatus, ...]:
    """Each configured verdict-bearing judge's calibration status; a requirement that does not
    hold for the configured judge (identity included) is one line, exit 64."""
    statuses = []
    for role in CALIBRATED_ROLES:
        route = routes.get(role)
        if route is None:
            continue
        raw = settings.require_calibrated_judge.get(role)
        if raw is None:
            statuses.append(CalibrationStatus(role, False))
            continue
        requirement = requirement_from_json(raw, Path.cwd(), source=source)
        identity = judge_identity(route.host)
        statuses.append(check_calibration(role, requirement, identity, source=source))
    return tuple(statuses)
