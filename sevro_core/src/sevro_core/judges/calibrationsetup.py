"""A calibration from the command line's choices: the judge routes, the sandbox, a session per item.

``sevro judge calibrate`` configures the chosen host for each judge role the corpus needs
exactly as a run configures its judges (:func:`~sevro_core.judges.routes.configure_judges`),
selects the sandbox a run would, and asks every item in a :class:`JudgeSession` of its own (so
an item's calls are bounded and recorded like a trial's). Every refusal is one line, exit 64,
before any judge is asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from attrs import frozen

from sevro_core.errors import InvocationError
from sevro_core.formats.jsonio import JsonValue
from sevro_core.isolation.protection import ProtectedRoot, credential_locations, engine_roots
from sevro_core.isolation.sandbox import SandboxSelection, select_sandbox
from sevro_core.judges.calibration import (
    SEMANTIC_GRADER,
    JudgeIdentity,
    PairDecisions,
    PairJudge,
    calibrate,
    judge_identity,
    record,
)
from sevro_core.judges.comparator import judge_pair
from sevro_core.judges.corpus import Corpus, load_corpus
from sevro_core.judges.routes import DEFAULT_RUBRIC, JudgeRoutes, JudgeRouteSpec, configure_judges
from sevro_core.judges.session import JudgeSession
from sevro_core.models import CancelToken, JudgeReply, TrialJudges
from sevro_core.plugin.manager import Registry
from sevro_core.plugin.protocols import (
    NETWORK_NONE,
    ComparisonSubject,
    Grader,
    HostOptions,
    Rubric,
)
from sevro_core.vocabulary import COMPARATOR_ROLE, SEMANTIC_ROLE


@frozen
class CalibrationChoices:
    """What the operator chose: the corpus, the judge host and how to run it."""

    corpus: Path | None
    host: str
    options: HostOptions
    """Model, effort, configuration and host-specific settings of the judge."""
    rubric: str | None = None
    sandbox: str = "auto"
    output: Path | None = None


@frozen
class CalibrationSetup:
    """Everything a calibration needs, resolved and checked before any judge is asked."""

    corpus: Corpus
    routes: JudgeRoutes
    identities: Mapping[str, JudgeIdentity]
    semantic: Grader | None
    rubric: Rubric | None
    sandbox: SandboxSelection


def prepare_calibration(registry: Registry, choices: CalibrationChoices) -> CalibrationSetup:
    """Load the corpus, configure the judge for each role it needs, find the semantic grader
    and the rubric, select the sandbox; exit 64 on the first thing that cannot run."""
    corpus = load_corpus(choices.corpus)
    if not any(registry.host(h) for h in (choices.host, f"sevro.host.{choices.host}")):
        raise InvocationError(
            f"--host {choices.host!r} is not installed; available hosts: "
            f"{', '.join(registry.ids('host')) or 'none'}"
        )
    roles = ((SEMANTIC_ROLE,) if corpus.singles else ()) + (
        (COMPARATOR_ROLE,) if corpus.pairs else ()
    )
    roots = _roots(registry, choices)
    options = choices.options
    base = HostOptions(
        config=options.config,
        config_source=options.config_source,
        model=options.model,
        effort=options.effort,
        settings=options.settings,
        protected_roots=tuple(root.path for root in roots),
        runtime=options.runtime,
    )
    specs = [
        JudgeRouteSpec(role, choices.host, base.model, base.effort, base.config, base.config_source)
        for role in roles
    ]
    routes = configure_judges(registry, specs, (choices.host, base))
    semantic = registry.grader(SEMANTIC_GRADER) if corpus.singles else None
    if corpus.singles and semantic is None:
        raise InvocationError(f"the corpus has single items but no {SEMANTIC_GRADER} grader")
    sandbox = select_sandbox(registry, choices.sandbox, NETWORK_NONE, roots)
    if sandbox.problem is not None:
        raise InvocationError(f"a judge runs sandboxed: {sandbox.problem}")
    return CalibrationSetup(
        corpus=corpus,
        routes=routes,
        identities={role: judge_identity(routes.routes[role].host) for role in roles},
        semantic=semantic,
        rubric=_rubric(registry, choices.rubric, corpus),
        sandbox=sandbox,
    )


def _roots(registry: Registry, choices: CalibrationChoices) -> tuple[ProtectedRoot, ...]:
    """What a judge's sandbox hides: the working directory, where the record goes, the corpus
    and configuration files and every host's credentials (as a run's engine roots)."""
    inputs = [p.resolve() for p in (choices.corpus,) if p is not None]
    if choices.options.config_source:
        inputs.append(Path(choices.options.config_source).resolve())
    output = choices.output.resolve().parent if choices.output is not None else Path.cwd()
    return engine_roots(
        project_root=Path.cwd(),
        results_root=output,
        input_files=dict.fromkeys(inputs),
        credentials=credential_locations(registry.hosts()),
    )


def _rubric(registry: Registry, rubric_id: str | None, corpus: Corpus) -> Rubric | None:
    if not corpus.pairs:
        return None
    known = registry.ids("rubric")
    rubric_id = rubric_id or DEFAULT_RUBRIC  # the rubric a run's comparator uses by default
    found = registry.rubric(rubric_id)
    if found is None:
        raise InvocationError(
            f"--rubric {rubric_id!r} is not installed (installed: {', '.join(known) or 'none'})"
        )
    return found


_CORPUS_LABEL = {"baseline": "A", "candidate": "B", "tie": "tie"}
"""A corpus pair's A is shown as the comparator's baseline, its B as the candidate."""


def pair_judge(rubric: Rubric) -> PairJudge:
    """The core's two-order comparison (``judge_pair``) with ``rubric``, exactly as a run
    judges a pair: each order's decision is mapped back to the corpus's A/B labels."""

    def judge(subject: ComparisonSubject, judges: TrialJudges) -> PairDecisions:
        def ask(prompt: str, purpose: str) -> JudgeReply:
            return judges.ask(COMPARATOR_ROLE, prompt, purpose=purpose)

        judged = judge_pair(
            ask,
            rubric,
            subject.task,
            subject.base_files,
            subject.base_files_truncated,
            baseline=subject.a,
            candidate=subject.b,
        )
        ab, ba = (
            None if order.mapped is None else _CORPUS_LABEL[order.mapped] for order in judged.orders
        )
        errors = [f"{o.order}: {o.error}" for o in judged.orders if o.error is not None]
        return PairDecisions(ab, ba, error="; ".join(errors) or None)

    return judge


def run_calibration(setup: CalibrationSetup, version: str) -> dict[str, JsonValue]:
    """Calibrate the set-up judge, one session per item, and return its record."""
    cancel = CancelToken()

    def session(item_id: str) -> TrialJudges:
        return JudgeSession(setup.routes, setup.sandbox, cancel, label=(item_id, 1))

    comparison = pair_judge(setup.rubric) if setup.rubric is not None else None
    calibration = calibrate(
        setup.corpus,
        session,
        tuple(setup.routes.routes),
        semantic=setup.semantic,
        judge_pair=comparison,
    )
    return record(calibration, setup.identities, version)
