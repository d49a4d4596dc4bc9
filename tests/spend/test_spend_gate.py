"""The gate's charge for a finished call: the computed cost, the CLI's own figure when higher,
and nothing (a forfeit) when the cost is unknown."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import pytest
from attrs import evolve

from sevro_core.models import Usage
from sevro_core.store.spendgate import Reservation, SpendCeilings, SpendGate, usage_cost
from sevro_core.store.spendjournal import SpendJournal

RUN_ID = "3e1f26a7-29c2-48f5-87c5-1e60dc62e6a1"

COMPLETE = Usage(
    input_tokens=10, output_tokens=5, cached_input_tokens=0, reasoning_tokens=0, complete=True
)


@pytest.mark.parametrize(
    ("usage", "charged"),
    [
        (evolve(COMPLETE, cost_usd=0.5), 0.5),
        (evolve(COMPLETE, cost_usd=0.5, reported_cost_usd=0.4), 0.5),  # computed is higher
        (evolve(COMPLETE, cost_usd=0.5, reported_cost_usd=0.7), 0.7),  # the CLI's is higher
        (evolve(COMPLETE, cost_usd=None, reported_cost_usd=0.7), None),  # not computed
        (evolve(COMPLETE, cost_usd=0.5, complete=False), None),  # incomplete usage
        (evolve(COMPLETE, cost_usd=math.nan), None),
        (evolve(COMPLETE, cost_usd=-1.0), None),
        (None, None),
    ],
)
def test_what_a_call_is_charged(usage: Usage | None, charged: float | None) -> None:
    assert usage_cost(usage) == charged


def test_parallel_reservations_never_pass_the_ceiling(tmp_path: Path) -> None:
    """Eight threads reserving at once: exactly as many reservations as fit, then every
    thread is refused; nothing reserved past the ceiling (the journal agrees)."""
    journal = SpendJournal.open(tmp_path, RUN_ID, attempt=1)
    gate = SpendGate(journal, SpendCeilings(1.0, {}, {"candidate": 0.3}), attempt=1)
    granted: list[Reservation] = []
    lock = threading.Lock()

    def reserve_until_refused() -> None:
        while (reservation := gate.reserve("candidate", "c#1")) is not None:
            with lock:
                granted.append(reservation)

    threads = [threading.Thread(target=reserve_until_refused) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(granted) == 3 and len({r.call for r in granted}) == 3
    assert gate.stopped is not None and gate.stopped.role == "candidate"
    assert journal.totals().committed() == pytest.approx(0.9)
    journal.close()


def test_a_role_ceiling_stops_every_role(tmp_path: Path) -> None:
    journal = SpendJournal.open(tmp_path, RUN_ID, attempt=1)
    ceilings = SpendCeilings(None, {"semantic": 0.5}, {"candidate": 1.0, "semantic": 0.3})
    gate = SpendGate(journal, ceilings, attempt=1)
    first = gate.reserve("semantic", "c#1:semantic")
    assert first is not None
    gate.settle(first, evolve(COMPLETE, cost_usd=0.25))
    assert gate.reserve("semantic", "c#2:semantic") is None  # $0.25 + $0.3 passes $0.5
    assert gate.reserve("candidate", "c#3") is None  # no new call of any role starts
    assert gate.stopped is not None and "the semantic spend ceiling $0.5" in gate.stopped.reason
    totals = journal.totals()
    assert (totals.reservations, totals.reconciled, totals.committed()) == (1, 1, 0.25)
    journal.close()


def test_without_a_role_ceiling_the_run_goes_on(tmp_path: Path) -> None:
    """Control: the same calls under a run ceiling they do not reach are all reserved."""
    journal = SpendJournal.open(tmp_path, RUN_ID, attempt=1)
    ceilings = SpendCeilings(5.0, {}, {"candidate": 1.0, "semantic": 0.3})
    gate = SpendGate(journal, ceilings, attempt=1)
    assert all(gate.reserve(role, "c") is not None for role in ("semantic",) * 3 + ("candidate",))
    assert gate.stopped is None
    journal.close()
