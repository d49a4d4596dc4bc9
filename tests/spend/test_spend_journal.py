"""The spend journal: every line fsynced and chained, every open a strict replay, and what an
earlier attempt left open forfeited at the full reservation.

Each validation rule has a journal it refuses and a near-identical one it accepts; the files
are real, and the crash is a real process killed with SIGKILL mid-call.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sevro_core.errors import InvocationError, PersistenceError
from sevro_core.formats.canonical import canonical_json
from sevro_core.limits import MAX_DIAGNOSTIC_CHARS, MAX_SPEND_JOURNAL_BYTES, MAX_SPEND_LABEL_CHARS
from sevro_core.store import spendjournal
from sevro_core.store.spendjournal import (
    GENESIS,
    JOURNAL_FORMAT,
    UNCLOSED_AT_RESUME,
    SpendJournal,
    SpendJournalCorrupt,
    SpendJournalError,
    SpendTotals,
)

RUN = "0b4c6f0e-5a0e-4f57-9d7e-1f0c2a3b4c5d"
AT = "2026-12-05T04:00:00.000+00:00"


def journal_file(root: Path) -> Path:
    return root / "spend" / f"{RUN}.jsonl"


def record(**fields: Any) -> dict[str, Any]:
    """A reserve of call 1:1 unless ``fields`` says otherwise (seq and prev are filled in)."""
    base: dict[str, Any] = {
        "format": JOURNAL_FORMAT,
        "kind": "reserve",
        "call": "1:1",
        "role": "candidate",
        "usd": 0.5,
        "attempt": 1,
        "at": AT,
        "label": "case@arm#1",
        "reason": None,
    }
    return {**base, **fields}


def forge(root: Path, records: list[dict[str, Any]]) -> Path:
    """Write ``records`` as a journal: canonical lines, seq and prev chained unless a record
    sets them itself, mode 0600 under a 0700 directory (what the journal itself writes)."""
    path = journal_file(root)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    os.chmod(path.parent, 0o700)
    prev, lines = GENESIS, []
    for seq, item in enumerate(records, start=1):
        line = canonical_json({"seq": seq, "prev": prev, **item}) + b"\n"
        prev = hashlib.sha256(line).hexdigest()
        lines.append(line)
    path.write_bytes(b"".join(lines))
    os.chmod(path, 0o600)
    return path


def refused(root: Path, attempt: int = 1) -> str:
    with pytest.raises(SpendJournalCorrupt) as caught:
        SpendJournal.open(root, RUN, attempt=attempt).close()
    message = str(caught.value)
    assert "\n" not in message and str(journal_file(root).parent) in message
    return message


def accepted(root: Path, attempt: int = 1) -> SpendTotals:
    with SpendJournal.open(root, RUN, attempt=attempt) as journal:
        return journal.totals()


def lines(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in journal_file(root).read_text().splitlines()]


# --- writing -------------------------------------------------------------------------------


def test_records_are_canonical_chained_lines(tmp_path: Path) -> None:
    with SpendJournal.open(tmp_path, RUN, attempt=1) as journal:
        journal.reserve("1:1", "candidate", 0.5, "case@arm#1")
        journal.reserve("1:2", "semantic", 0.05, "case@arm#1")
        journal.reconcile("1:1", 0.25)
        journal.forfeit("1:2", "cost unknown")
        digest = journal.sha256()
        assert journal.records == 4
    data = journal_file(tmp_path).read_bytes()
    assert digest == hashlib.sha256(data).hexdigest()
    raw = data.split(b"\n")[:-1]
    prev = GENESIS
    for seq, line in enumerate(raw, start=1):
        item = json.loads(line)
        assert canonical_json(item) == line
        assert (item["seq"], item["prev"], item["format"]) == (seq, prev, JOURNAL_FORMAT)
        prev = hashlib.sha256(line + b"\n").hexdigest()
    kinds = [(item["kind"], item["call"], item["role"], item["usd"]) for item in lines(tmp_path)]
    assert kinds == [
        ("reserve", "1:1", "candidate", 0.5),
        ("reserve", "1:2", "semantic", 0.05),
        ("reconcile", "1:1", "candidate", 0.25),
        ("forfeit", "1:2", "semantic", 0.05),
    ]
    assert [item["reason"] for item in lines(tmp_path)] == [None, None, None, "cost unknown"]


def test_fresh_file_and_directory_are_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        SpendJournal.open(tmp_path, RUN, attempt=1).close()
    finally:
        os.umask(old)
    assert journal_file(tmp_path).stat().st_mode & 0o777 == 0o600
    assert journal_file(tmp_path).parent.stat().st_mode & 0o777 == 0o700
    assert journal_file(tmp_path).read_bytes() == b""
    assert accepted(tmp_path).reservations == 0


def test_exists(tmp_path: Path) -> None:
    assert not SpendJournal.exists(tmp_path, RUN)
    SpendJournal.open(tmp_path, RUN, attempt=1).close()
    assert SpendJournal.exists(tmp_path, RUN)
    other = "another-run"
    (tmp_path / "spend" / f"{other}.jsonl").symlink_to(tmp_path / "nowhere")
    assert SpendJournal.exists(tmp_path, other)  # a dangling symlink still counts (open refuses)


def test_each_record_is_fsynced_before_the_method_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def counting(fd: int) -> None:
        synced.append(os.fstat(fd).st_size if os.path.isfile(f"/proc/self/fd/{fd}") else -1)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting)
    journal = SpendJournal.open(tmp_path, RUN, attempt=1)
    assert -1 in synced  # the directory, after creating the file
    synced.clear()
    journal.reserve("1:1", "candidate", 0.5, "x")
    size = journal_file(tmp_path).stat().st_size
    assert synced == [size]  # the file, holding the whole line
    journal.reconcile("1:1", 0.1)
    assert synced == [size, journal_file(tmp_path).stat().st_size]
    journal.close()


def test_a_failed_append_fails_the_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    journal = SpendJournal.open(tmp_path, RUN, attempt=1)
    journal.reserve("1:1", "candidate", 0.5, "x")

    def full(fd: int, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(os, "write", full)
        with pytest.raises(SpendJournalError, match="No space left on device") as caught:
            journal.reserve("1:2", "candidate", 0.5, "x")
    assert isinstance(caught.value, PersistenceError) and caught.value.exit_code == 70
    with pytest.raises(SpendJournalError, match="an earlier append failed"):
        journal.reconcile("1:1", 0.1)  # no later record may pretend the chain is whole
    assert journal.totals().reservations == 1
    journal.close()
    assert accepted(tmp_path).open_usd == 0.5


def test_an_append_that_would_pass_the_bound_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = SpendJournal.open(tmp_path, RUN, attempt=1)
    journal.reserve("1:1", "candidate", 0.5, "x")
    size = journal_file(tmp_path).stat().st_size
    monkeypatch.setattr(spendjournal, "MAX_SPEND_JOURNAL_BYTES", 2 * size + size // 2)
    journal.reserve("1:2", "candidate", 0.5, "x")  # control: still fits
    with pytest.raises(SpendJournalError, match="would pass"):
        journal.reserve("1:3", "candidate", 0.5, "x")
    journal.close()
    assert len(lines(tmp_path)) == 2


def test_misuse_is_a_value_error_and_writes_nothing(tmp_path: Path) -> None:
    journal = SpendJournal.open(tmp_path, RUN, attempt=1)
    journal.reserve("1:1", "candidate", 0.5, "x")
    misuses: list[Callable[[], None]] = [
        lambda: journal.reserve("1:1", "candidate", 0.5, "x"),  # a duplicate open call id
        lambda: journal.reserve("1:2", "judge", 0.5, "x"),
        lambda: journal.reserve("1:2", "candidate", -0.01, "x"),
        lambda: journal.reserve("1:2", "candidate", float("nan"), "x"),
        lambda: journal.reserve("1:2", "candidate", float("inf"), "x"),
        lambda: journal.reserve("", "candidate", 0.5, "x"),
        lambda: journal.reserve("c" * (MAX_SPEND_LABEL_CHARS + 1), "candidate", 0.5, "x"),
        lambda: journal.reconcile("1:9", 0.1),
        lambda: journal.reconcile("1:1", -1.0),
        lambda: journal.forfeit("1:9", "cost unknown"),
        lambda: journal.forfeit("1:1", ""),
    ]
    for misuse in misuses:
        with pytest.raises(ValueError):
            misuse()
    assert journal.records == 1 and len(lines(tmp_path)) == 1
    journal.reserve("1:2", "candidate", 0, "y" * 500)  # controls: zero is a charge, labels cut
    journal.reconcile("1:1", 0.1)
    journal.reserve("1:1", "candidate", 0.5, "x")  # a closed call id may be reserved again
    journal.close()
    assert lines(tmp_path)[1]["label"] == "y" * MAX_SPEND_LABEL_CHARS
    with pytest.raises(ValueError, match="closed"):
        journal.reserve("1:3", "candidate", 0.5, "x")
    with pytest.raises(ValueError):
        SpendJournal.open(tmp_path, "../escape", attempt=1)
    with pytest.raises(ValueError):
        SpendJournal.open(tmp_path, RUN, attempt=0)


def test_a_long_reason_is_cut(tmp_path: Path) -> None:
    with SpendJournal.open(tmp_path, RUN, attempt=1) as journal:
        journal.reserve("1:1", "advisory", 0.5, "x")
        journal.forfeit("1:1", "r" * (MAX_DIAGNOSTIC_CHARS + 10))
    assert lines(tmp_path)[1]["reason"] == "r" * MAX_DIAGNOSTIC_CHARS
    assert accepted(tmp_path).forfeits == 1


# --- totals --------------------------------------------------------------------------------


def test_totals(tmp_path: Path) -> None:
    with SpendJournal.open(tmp_path, RUN, attempt=1) as journal:
        journal.reserve("1:1", "candidate", 0.5, "a")
        journal.reserve("1:2", "candidate", 0.5, "b")
        journal.reserve("1:3", "semantic", 0.1, "a")
        journal.reserve("1:4", "comparator", 0.2, "pair")
        journal.reserve("1:5", "advisory", 0.3, "a")
        journal.reconcile("1:1", 0.75)  # an overrun, recorded as is
        journal.reconcile("1:2", 0.25)
        journal.forfeit("1:3", "call failed before reporting cost")
        journal.reconcile("1:4", 0.2)  # exactly the reservation: no overrun
        totals = journal.totals()
    assert totals.charged_usd == pytest.approx(0.75 + 0.25 + 0.1 + 0.2)
    assert totals.open_usd == pytest.approx(0.3)
    assert dict(totals.by_role) == pytest.approx(
        {"candidate": 1.0, "semantic": 0.1, "comparator": 0.2}
    )
    assert dict(totals.open_by_role) == pytest.approx({"advisory": 0.3})
    assert (totals.reservations, totals.reconciled, totals.forfeits) == (5, 3, 1)
    assert (totals.forfeited_usd, totals.overruns) == (pytest.approx(0.1), 1)
    assert totals.committed() == pytest.approx(1.6)
    assert totals.committed("advisory") == pytest.approx(0.3)
    assert totals.committed("candidate") == pytest.approx(1.0)
    assert totals.committed("semantic") == pytest.approx(0.1)
    assert totals.to_json() == {
        "chargedUsd": totals.charged_usd,
        "openUsd": totals.open_usd,
        "byRole": dict(totals.by_role),
        "openByRole": {"advisory": 0.3},
        "reservations": 5,
        "reconciled": 3,
        "forfeits": 1,
        "forfeitedUsd": 0.1,
        "overruns": 1,
    }
    assert accepted(tmp_path) == totals  # a replay sums to the same figures


def test_totals_are_exact_sums(tmp_path: Path) -> None:
    with SpendJournal.open(tmp_path, RUN, attempt=1) as journal:
        for n in range(10):
            journal.reserve(f"1:{n}", "semantic", 0.1, "x")
        assert journal.totals().open_usd == 1.0
        for n in range(10):
            journal.reconcile(f"1:{n}", 0.1)
        totals = journal.totals()
    assert sum([0.1] * 10) != 1.0  # what adding floats one by one would report
    assert (totals.charged_usd, totals.by_role["semantic"], totals.committed()) == (1.0,) * 3


# --- a crash -------------------------------------------------------------------------------

CRASHING = """
import sys, time
from pathlib import Path
from sevro_core.store.spendjournal import SpendJournal
journal = SpendJournal.open(Path(sys.argv[1]), sys.argv[2], attempt=1)
journal.reserve("1:1", "candidate", 0.5, "case@arm#1")
journal.reconcile("1:1", 0.2)
journal.reserve("1:2", "candidate", 0.75, "case@arm#2")
journal.reserve("1:3", "semantic", 0.05, "case@arm#2")
print("reserved", flush=True)
time.sleep(120)
"""


@pytest.fixture
def crashed(tmp_path: Path) -> Iterator[Path]:
    """A journal whose writer was SIGKILLed with two calls reserved and not closed."""
    process = subprocess.Popen(
        [sys.executable, "-c", CRASHING, str(tmp_path), RUN], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == "reserved\n"
        os.kill(process.pid, signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
    yield tmp_path


def test_a_reservation_left_by_a_killed_process_is_forfeited_at_resume(crashed: Path) -> None:
    journal = SpendJournal.open(crashed, RUN, attempt=2)
    totals = journal.totals()
    journal.close()
    assert (totals.forfeits, totals.forfeited_usd) == (2, pytest.approx(0.8))
    assert totals.charged_usd == pytest.approx(0.2 + 0.75 + 0.05)
    assert (totals.open_usd, totals.reconciled, totals.reservations) == (0.0, 1, 3)
    forfeits = [item for item in lines(crashed) if item["kind"] == "forfeit"]
    assert [(item["call"], item["role"], item["usd"]) for item in forfeits] == [
        ("1:2", "candidate", 0.75),
        ("1:3", "semantic", 0.05),
    ]
    assert {(item["attempt"], item["reason"]) for item in forfeits} == {(2, UNCLOSED_AT_RESUME)}
    assert {item["label"] for item in forfeits} == {"case@arm#2"}
    assert accepted(crashed, attempt=3) == totals  # forfeited once: nothing left to forfeit


def test_reopening_within_the_same_attempt_forfeits_nothing(crashed: Path) -> None:
    totals = accepted(crashed, attempt=1)
    assert (totals.forfeits, totals.open_usd) == (0, pytest.approx(0.8))
    assert len(lines(crashed)) == 4


# --- concurrency ---------------------------------------------------------------------------


def test_concurrent_reserves_lose_and_interleave_no_line(tmp_path: Path) -> None:
    journal = SpendJournal.open(tmp_path, RUN, attempt=1)
    threads, per_thread = 8, 40
    start = threading.Barrier(threads)

    def work(worker: int) -> None:
        start.wait()
        for n in range(per_thread):
            call = f"1:{worker}-{n}"
            journal.reserve(call, "candidate", 0.5, f"worker {worker}")
            journal.reconcile(call, 0.25)

    pool = [threading.Thread(target=work, args=(worker,)) for worker in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    journal.close()
    written = lines(tmp_path)
    assert len(written) == 2 * threads * per_thread
    assert [item["seq"] for item in written] == list(range(1, len(written) + 1))
    totals = accepted(tmp_path)  # the strict replay: chain, seq, one close per reserve
    assert (totals.reservations, totals.reconciled) == (threads * per_thread,) * 2
    assert totals.charged_usd == pytest.approx(0.25 * threads * per_thread)


# --- replay: one rule at a time, refused and accepted --------------------------------------


def test_an_edited_line_breaks_the_chain(tmp_path: Path) -> None:
    with SpendJournal.open(tmp_path, RUN, attempt=1) as journal:
        journal.reserve("1:1", "candidate", 0.5, "x")
        journal.reconcile("1:1", 0.5)
        journal.reserve("1:2", "candidate", 0.5, "x")
    path = journal_file(tmp_path)
    good = path.read_bytes()
    assert accepted(tmp_path).charged_usd == 0.5
    first, second, third, _ = good.split(b"\n")
    lowered = second.replace(b'"usd":0.5}', b'"usd":0.1}')  # line 2's charge lowered
    assert lowered != second
    path.write_bytes(b"\n".join([first, lowered, third, b""]))
    assert "line 3: prev is not the sha256 of line 2" in refused(tmp_path)
    path.write_bytes(good.replace(b'"usd":0.5', b'"usd": 0.5', 1))  # not canonical
    assert "line 1: not in canonical JSON form" in refused(tmp_path)
    path.write_bytes(good.split(b"\n", 1)[1])  # the first line removed
    assert "line 1: seq is not 1" in refused(tmp_path)
    path.write_bytes(good)
    assert accepted(tmp_path).open_usd == 0.5


def test_prev_chain(tmp_path: Path) -> None:
    forge(tmp_path, [record(prev="1" * 64)])
    assert "line 1: prev of the first line is not 64 zeros" in refused(tmp_path)
    forge(tmp_path, [record(), record(kind="reconcile", prev=GENESIS)])
    assert "line 2: prev is not the sha256 of line 1 (the chain is broken)" in refused(tmp_path)
    forge(tmp_path, [record(), record(kind="reconcile", prev="A" * 64)])
    assert "line 2: prev is not a lowercase sha256 hex digest" in refused(tmp_path)
    forge(tmp_path, [record(), record(kind="reconcile")])
    assert accepted(tmp_path).reconciled == 1


def test_seq(tmp_path: Path) -> None:
    forge(tmp_path, [record(), record(kind="reconcile", seq=3)])
    assert "line 2: seq is not 2" in refused(tmp_path)
    forge(tmp_path, [record(seq=0)])
    assert "line 1: seq is not 1" in refused(tmp_path)
    forge(tmp_path, [record(seq="1")])
    assert "line 1: seq is not an integer" in refused(tmp_path)
    forge(tmp_path, [record(seq=1), record(kind="reconcile", seq=2)])
    assert accepted(tmp_path).reconciled == 1


def test_a_close_needs_an_open_reservation(tmp_path: Path) -> None:
    forge(tmp_path, [record(kind="reconcile")])
    assert "line 1: reconcile of call '1:1', which has no open reservation" in refused(tmp_path)
    forge(tmp_path, [record(), record(kind="reconcile", call="1:2")])
    assert "line 2: reconcile of call '1:2'" in refused(tmp_path)
    forge(tmp_path, [record(kind="forfeit", reason="cost unknown")])
    assert "line 1: forfeit of call '1:1', which has no open reservation" in refused(tmp_path)
    forge(tmp_path, [record(), record(kind="reconcile")])
    assert accepted(tmp_path).reconciled == 1


def test_one_close_per_reservation(tmp_path: Path) -> None:
    closes = {"kind": "reconcile", "usd": 0.1}
    forge(tmp_path, [record(), record(**closes), record(**closes)])
    assert "line 3: reconcile of call '1:1', which has no open reservation" in refused(tmp_path)
    forfeit = {"kind": "forfeit", "reason": "cost unknown"}
    forge(tmp_path, [record(), record(**closes), record(**forfeit)])
    assert "line 3: forfeit of call '1:1'" in refused(tmp_path)
    forge(tmp_path, [record(), record(), record(**closes)])
    assert "line 2: reserve of call '1:1', which is already open" in refused(tmp_path)
    forge(tmp_path, [record(), record(**closes), record(), record(**forfeit)])
    assert accepted(tmp_path).reservations == 2  # reserved again once closed


def test_a_close_names_the_role_it_reserved_as(tmp_path: Path) -> None:
    forge(tmp_path, [record(), record(kind="reconcile", role="semantic")])
    assert "line 2: reconcile names role 'semantic'; the call reserved as 'candidate'" in refused(
        tmp_path
    )
    forge(tmp_path, [record(role="judge")])
    assert "line 1: role is not one of candidate, semantic, advisory, comparator" in refused(
        tmp_path
    )
    forge(tmp_path, [record(role="semantic"), record(kind="reconcile", role="semantic")])
    assert dict(accepted(tmp_path).by_role) == {"semantic": 0.5}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (b"-0.5", "usd is not a finite number >= 0"),
        (b"NaN", "not strict JSON (/usd: number NaN is not finite"),
        (b"Infinity", "not strict JSON (/usd: number Infinity is not finite"),
        (b"1e400", "not strict JSON (/usd: number 1e400 overflows a double"),
        (b'"0.5"', "usd is not a finite number >= 0"),
        (b"true", "usd is not a finite number >= 0"),
        (b"null", "usd is not a finite number >= 0"),
    ],
)
def test_usd_is_finite_and_not_negative(tmp_path: Path, text: bytes, problem: str) -> None:
    path = forge(tmp_path, [record(usd=0.25)])
    path.write_bytes(path.read_bytes().replace(b'"usd":0.25', b'"usd":' + text))
    assert f"line 1: {problem}" in refused(tmp_path)
    forge(tmp_path, [record(usd=0)])
    assert accepted(tmp_path).open_usd == 0.0


def test_a_forfeit_is_the_full_reservation_with_a_reason(tmp_path: Path) -> None:
    forfeit = {"kind": "forfeit", "reason": "cost unknown"}
    forge(tmp_path, [record(), record(**forfeit, usd=0.1)])
    assert "line 2: a forfeit's usd is not the full reservation (0.5)" in refused(tmp_path)
    forge(tmp_path, [record(), record(**{**forfeit, "reason": None})])
    assert "line 2: a forfeit's reason must be a non-empty string" in refused(tmp_path)
    forge(tmp_path, [record(), record(**{**forfeit, "reason": "x" * (MAX_DIAGNOSTIC_CHARS + 1)})])
    assert "line 2: a forfeit's reason must be a non-empty string" in refused(tmp_path)
    forge(tmp_path, [record(reason="cost unknown")])
    assert "line 1: reason must be null except on a forfeit" in refused(tmp_path)
    forge(tmp_path, [record(), record(**forfeit)])
    assert accepted(tmp_path).forfeited_usd == 0.5


def test_attempts_never_go_back_nor_pass_this_one(tmp_path: Path) -> None:
    forge(tmp_path, [record(attempt=2), record(kind="reconcile", attempt=1)])
    assert "line 2: attempt goes back from 2" in refused(tmp_path, attempt=2)
    forge(tmp_path, [record(attempt=3)])
    assert "line 1: attempt is later than this attempt (2)" in refused(tmp_path, attempt=2)
    forge(tmp_path, [record(attempt=0)])
    assert "line 1: attempt is not an integer >= 1" in refused(tmp_path, attempt=2)
    forge(tmp_path, [record(attempt=1), record(kind="reconcile", attempt=2)])
    assert accepted(tmp_path, attempt=2).reconciled == 1


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"format": "sevro.spend-journal.v2"}, "format is not sevro.spend-journal.v1"),
        ({"kind": "refund"}, "kind is not one of reserve, reconcile, forfeit"),
        ({"call": ""}, "call is not a non-empty string"),
        ({"call": "c" * (MAX_SPEND_LABEL_CHARS + 1)}, "call is not a non-empty string"),
        ({"label": 7}, "label is not a string"),
        ({"label": "l" * (MAX_SPEND_LABEL_CHARS + 1)}, "label is not a string"),
        ({"at": "2026-12-05T04:00:00Z"}, "at is not a UTC timestamp with milliseconds"),
        ({"extra": 1}, "fields differ (missing [], unexpected ['extra'])"),
    ],
)
def test_fields(tmp_path: Path, fields: dict[str, Any], problem: str) -> None:
    forge(tmp_path, [record(**fields)])
    assert f"line 1: {problem}" in refused(tmp_path)
    forge(tmp_path, [record(label="l" * MAX_SPEND_LABEL_CHARS, call="c" * MAX_SPEND_LABEL_CHARS)])
    assert accepted(tmp_path).reservations == 1


def test_missing_field_and_bad_lines(tmp_path: Path) -> None:
    path = forge(tmp_path, [record()])
    good = path.read_bytes()
    path.write_bytes(good.replace(b'"reason":null,', b""))
    assert "line 1: fields differ (missing ['reason'], unexpected [])" in refused(tmp_path)
    path.write_bytes(good + b"[]\n")
    assert "line 2: not a JSON object" in refused(tmp_path)
    path.write_bytes(good + b"\n")
    assert "line 2: not strict JSON" in refused(tmp_path)
    path.write_bytes(good + good[:40])
    assert "line 2: does not end with a newline" in refused(tmp_path)
    path.write_bytes(good)
    assert accepted(tmp_path).reservations == 1


# --- the file itself -----------------------------------------------------------------------


def test_a_symlinked_journal_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = forge(elsewhere, [record()])
    path = journal_file(tmp_path)
    path.parent.mkdir(mode=0o700)
    path.symlink_to(target)
    assert "the spend journal file is a symlink" in refused(tmp_path)
    assert target.read_bytes().count(b"\n") == 1  # nothing appended through the link
    path.unlink()
    os.link(target, path)  # a hard link: the journal could be changed through another name
    assert "the spend journal file has more than one link" in refused(tmp_path)
    target.unlink()
    assert accepted(tmp_path).reservations == 1


def test_a_symlinked_spend_directory_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "spend").symlink_to(real)
    assert "the spend journal directory is a symlink" in refused(tmp_path)
    (tmp_path / "spend").unlink()
    assert accepted(tmp_path).reservations == 0


def test_an_existing_journal_readable_by_others_is_refused(tmp_path: Path) -> None:
    path = forge(tmp_path, [record()])
    path.chmod(0o644)
    assert "the spend journal file is readable or writable by group or others (chmod 600)" in (
        refused(tmp_path)
    )
    path.chmod(0o600)
    path.parent.chmod(0o755)
    assert "the spend journal directory is readable or writable by group or others (chmod 700)" in (
        refused(tmp_path)
    )
    path.parent.chmod(0o700)
    assert accepted(tmp_path).reservations == 1


def test_a_journal_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("only root can give a file to another user; CI runs the suite as root")
        pytest.skip("only root can give a file to another user")
    path = forge(tmp_path, [record()])
    os.chown(path, 65534, 65534)
    assert "the spend journal file is not owned by you" in refused(tmp_path)
    os.chown(path, 0, 0)
    assert accepted(tmp_path).reservations == 1


def test_a_fifo_is_refused(tmp_path: Path) -> None:
    path = journal_file(tmp_path)
    path.parent.mkdir(mode=0o700)
    os.mkfifo(path, 0o600)
    assert "the spend journal file is not a regular file" in refused(tmp_path)
    path.unlink()
    assert accepted(tmp_path).reservations == 0


def test_an_oversize_journal_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = forge(tmp_path, [record()])
    with path.open("r+b") as handle:
        handle.truncate(MAX_SPEND_JOURNAL_BYTES + 1)  # sparse: the size alone refuses it
    assert f"the spend journal is larger than {MAX_SPEND_JOURNAL_BYTES} bytes" in refused(tmp_path)
    path = forge(tmp_path, [record(), record(kind="reconcile")])
    monkeypatch.setattr(spendjournal, "MAX_SPEND_JOURNAL_BYTES", path.stat().st_size - 1)
    assert "is larger than" in refused(tmp_path)
    monkeypatch.setattr(spendjournal, "MAX_SPEND_JOURNAL_BYTES", path.stat().st_size)
    assert accepted(tmp_path).reconciled == 1


def test_errors_are_one_line_invocation_errors(tmp_path: Path) -> None:
    forge(tmp_path, [record(), record(kind="reconcile", role="advisory")])
    with pytest.raises(SpendJournalCorrupt) as caught:
        SpendJournal.open(tmp_path, RUN, attempt=1)
    error = caught.value
    assert isinstance(error, InvocationError) and error.exit_code == 64
    assert error.code == "sevro.spend-journal.corrupt"
    assert SpendJournalError.code == "sevro.spend-journal.failed"
    assert str(error) == (
        f"{journal_file(tmp_path)}: line 2: reconcile names role 'advisory'; "
        "the call reserved as 'candidate'"
    )
