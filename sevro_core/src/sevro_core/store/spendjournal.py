"""The spend journal: what a run reserved, was charged and forfeited, crash-safe and chained.

One file per run, ``<run-state root>/spend/<run-id>.jsonl``. Each record is one line of
canonical JSON written with one ``os.write`` and fsynced before the method returns, so a
reservation is on disk before the call it pays for starts; a process killed mid-call leaves
the reservation open, and the next attempt forfeits it at the full amount (money the run may
have spent is never forgotten). Each line carries the sha256 of the line before it, so an
edited or removed line breaks the chain; every open replays the whole file strictly and refuses
anything it cannot account for (exit 64), rather than guess what was spent.
"""

from __future__ import annotations

import datetime
import hashlib
import math
import os
import re
import stat
import threading
from collections.abc import Iterator, Mapping
from fractions import Fraction
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any

from attrs import field, frozen

from sevro_core.errors import InvocationError, PersistenceError
from sevro_core.formats.canonical import CanonicalJsonError, canonical_json
from sevro_core.formats.fileio import read_at_most
from sevro_core.formats.jsonio import JsonValue, parse_json_text
from sevro_core.limits import MAX_DIAGNOSTIC_CHARS, MAX_SPEND_JOURNAL_BYTES, MAX_SPEND_LABEL_CHARS
from sevro_core.vocabulary import JUDGE_ROLES

JOURNAL_FORMAT = "sevro.spend-journal.v1"
JOURNAL_DIRECTORY = "spend"
"""The journals' directory under the run-state root."""
CANDIDATE_ROLE = "candidate"
SPEND_ROLES = (CANDIDATE_ROLE, *JUDGE_ROLES)
"""The roles a journal record may name: the candidate's trials and each judge role's calls."""
RESERVE, RECONCILE, FORFEIT = "reserve", "reconcile", "forfeit"
KINDS = (RESERVE, RECONCILE, FORFEIT)
COST_UNKNOWN = "cost unknown"
FAILED_BEFORE_COST = "call failed before reporting cost"
UNCLOSED_AT_RESUME = "unclosed at resume: the process died"
GENESIS = "0" * 64
"""The ``prev`` of the first line."""
FIELDS = frozenset(
    ("format", "seq", "prev", "kind", "call", "role", "usd", "attempt", "at", "label", "reason")
)
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_AT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+00:00")


class SpendJournalCorrupt(InvocationError):
    """The journal on disk cannot be trusted (edited, truncated, misplaced or unsafe): exit 64.

    The run does not start; what was spent is unknown, so nothing is guessed.
    """

    code = "sevro.spend-journal.corrupt"


class SpendJournalError(PersistenceError):
    """A record could not be made durable (disk full, I/O error, the size bound): exit 70."""

    code = "sevro.spend-journal.failed"


def _mapping(value: Mapping[str, float]) -> Mapping[str, float]:
    return MappingProxyType(dict(sorted(value.items())))


@frozen
class SpendTotals:
    """What the journal holds, summed: closed calls are charged, open ones are committed."""

    charged_usd: float
    """Reconciled actual charges plus forfeited reservations."""
    open_usd: float
    """Reservations not closed yet."""
    by_role: Mapping[str, float] = field(converter=_mapping)
    open_by_role: Mapping[str, float] = field(converter=_mapping)
    reservations: int
    reconciled: int
    forfeits: int
    forfeited_usd: float
    overruns: int
    """Reconciles above their reservation (the actual charge is recorded as is)."""

    def committed(self, role: str | None = None) -> float:
        """Charged plus still reserved, for the run (``None``) or one role."""
        if role is None:
            return self.charged_usd + self.open_usd
        return self.by_role.get(role, 0.0) + self.open_by_role.get(role, 0.0)

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "chargedUsd": self.charged_usd,
            "openUsd": self.open_usd,
            "byRole": dict(self.by_role),
            "openByRole": dict(self.open_by_role),
            "reservations": self.reservations,
            "reconciled": self.reconciled,
            "forfeits": self.forfeits,
            "forfeitedUsd": self.forfeited_usd,
            "overruns": self.overruns,
        }


@frozen
class _Open:
    """A reservation not closed yet."""

    role: str
    usd: float
    attempt: int
    label: str


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _bounded(value: object, limit: int, *, empty: bool) -> bool:
    return isinstance(value, str) and (empty or bool(value)) and len(value) <= limit


def _reason_problem(record: Mapping[str, Any]) -> str | None:
    reason = record["reason"]
    if record["kind"] != FORFEIT:
        return None if reason is None else "reason must be null except on a forfeit"
    if not _bounded(reason, MAX_DIAGNOSTIC_CHARS, empty=False):
        return f"a forfeit's reason must be a non-empty string of at most {MAX_DIAGNOSTIC_CHARS}"
    return None


def _is_hex64(value: object) -> bool:
    return isinstance(value, str) and _HEX64.fullmatch(value) is not None


def _is_timestamp(value: object) -> bool:
    return isinstance(value, str) and _AT.fullmatch(value) is not None


def field_problem(record: Mapping[str, Any]) -> str | None:
    """The first rule one record breaks on its own (its fields), or None."""
    usd = record["usd"]
    rules = (
        (record["format"] != JOURNAL_FORMAT, f"format is not {JOURNAL_FORMAT}"),
        (not _is_int(record["seq"]), "seq is not an integer"),
        (not _is_hex64(record["prev"]), "prev is not a lowercase sha256 hex digest"),
        (record["kind"] not in KINDS, f"kind is not one of {', '.join(KINDS)}"),
        (
            not _bounded(record["call"], MAX_SPEND_LABEL_CHARS, empty=False),
            f"call is not a non-empty string of at most {MAX_SPEND_LABEL_CHARS} characters",
        ),
        (record["role"] not in SPEND_ROLES, f"role is not one of {', '.join(SPEND_ROLES)}"),
        (
            not _is_number(usd) or not math.isfinite(usd) or usd < 0,
            "usd is not a finite number >= 0",
        ),
        (not _is_int(record["attempt"]) or record["attempt"] < 1, "attempt is not an integer >= 1"),
        (not _is_timestamp(record["at"]), "at is not a UTC timestamp with milliseconds"),
        (
            not _bounded(record["label"], MAX_SPEND_LABEL_CHARS, empty=True),
            f"label is not a string of at most {MAX_SPEND_LABEL_CHARS} characters",
        ),
    )
    for broken, problem in rules:
        if broken:
            return problem
    return _reason_problem(record)


class _Ledger:
    """The journal's state as replayed so far; the sequence rules live here, for replay and
    writes alike."""

    def __init__(self) -> None:
        self.seq = 0
        self.prev = GENESIS
        self.attempt = 1
        self.open: dict[str, _Open] = {}
        # exact sums (a float's Fraction is exact), so a total never drifts with the order of
        # the calls and costs O(1) per record
        self.charged: dict[str, Fraction] = {}  # per role, of every closed call
        self.forfeited = Fraction(0)
        self.closed = 0
        self.forfeits = 0
        self.reconciled = 0
        self.overruns = 0
        self.size = 0
        self.digest = hashlib.sha256()

    def problem(self, record: Mapping[str, Any], attempt: int) -> str | None:
        """The first sequence rule ``record`` breaks as the next line, or None."""
        reserved = self.open.get(record["call"])
        rules = (
            (record["seq"] != self.seq + 1, f"seq is not {self.seq + 1} (seq must count from 1)"),
            (record["prev"] != self.prev, self._chain_problem()),
            (record["attempt"] < self.attempt, f"attempt goes back from {self.attempt}"),
            (record["attempt"] > attempt, f"attempt is later than this attempt ({attempt})"),
            (
                record["kind"] == RESERVE and reserved is not None,
                f"reserve of call {record['call']!r}, which is already open",
            ),
            (
                record["kind"] != RESERVE and reserved is None,
                f"{record['kind']} of call {record['call']!r}, which has no open reservation",
            ),
        )
        for broken, problem in rules:
            if broken:
                return problem
        return None if reserved is None else _close_problem(record, reserved)

    def _chain_problem(self) -> str:
        if self.seq == 0:
            return "prev of the first line is not 64 zeros"
        return f"prev is not the sha256 of line {self.seq} (the chain is broken)"

    def apply(self, record: Mapping[str, Any], line: bytes) -> None:
        """Account for a record that passed every rule and is on disk as ``line``."""
        self.seq, self.attempt = record["seq"], record["attempt"]
        self.prev = hashlib.sha256(line).hexdigest()
        self.size += len(line)
        self.digest.update(line)
        call, usd = record["call"], float(record["usd"])
        if record["kind"] == RESERVE:
            self.open[call] = _Open(record["role"], usd, record["attempt"], record["label"])
            return
        reserved = self.open.pop(call)
        self.charged[reserved.role] = self.charged.get(reserved.role, Fraction(0)) + Fraction(usd)
        self.closed += 1
        if record["kind"] == FORFEIT:
            self.forfeits += 1
            self.forfeited += Fraction(usd)
        else:
            self.reconciled += 1
            self.overruns += usd > reserved.usd

    def totals(self) -> SpendTotals:
        return SpendTotals(
            charged_usd=float(sum(self.charged.values(), Fraction(0))),
            open_usd=math.fsum(item.usd for item in self.open.values()),
            by_role={role: float(usd) for role, usd in self.charged.items()},
            open_by_role=_by_role((item.role, item.usd) for item in self.open.values()),
            reservations=len(self.open) + self.closed,
            reconciled=self.reconciled,
            forfeits=self.forfeits,
            forfeited_usd=float(self.forfeited),
            overruns=self.overruns,
        )


def _close_problem(record: Mapping[str, Any], reserved: _Open) -> str | None:
    if record["role"] != reserved.role:
        kind, role = record["kind"], record["role"]
        return f"{kind} names role {role!r}; the call reserved as {reserved.role!r}"
    if record["kind"] == FORFEIT and float(record["usd"]) != reserved.usd:
        return f"a forfeit's usd is not the full reservation ({reserved.usd})"
    return None


def _by_role(pairs: Iterator[tuple[str, float]]) -> dict[str, float]:
    amounts: dict[str, list[float]] = {}
    for role, usd in pairs:
        amounts.setdefault(role, []).append(usd)
    return {role: math.fsum(values) for role, values in amounts.items()}


def _parse_line(line: bytes, number: int, path: Path) -> Mapping[str, Any]:
    """One line as a record whose fields follow every rule; else SpendJournalCorrupt."""
    try:
        record = parse_json_text(line, source=path)
    except InvocationError as exc:
        where = f"{exc.pointer}: " if exc.pointer else ""
        raise _corrupt(path, number, f"not strict JSON ({where}{exc.message})") from None
    if not isinstance(record, dict):
        raise _corrupt(path, number, "not a JSON object")
    if set(record) != FIELDS:
        missing, extra = sorted(FIELDS - set(record)), sorted(set(record) - FIELDS)
        raise _corrupt(path, number, f"fields differ (missing {missing}, unexpected {extra})")
    problem = field_problem(record)
    if problem is not None:
        raise _corrupt(path, number, problem)
    if canonical_json(record) != line:
        raise _corrupt(path, number, "not in canonical JSON form (the line was edited)")
    return record


def _corrupt(path: Path, number: int, problem: str) -> SpendJournalCorrupt:
    return SpendJournalCorrupt(f"line {number}: {problem}", source=path)


def replay(data: bytes, path: Path, attempt: int) -> _Ledger:
    """Check every line of a journal's bytes in order; the state they leave."""
    ledger = _Ledger()
    lines = data.split(b"\n")
    if lines[-1]:
        raise _corrupt(path, len(lines), "does not end with a newline (a torn or edited write)")
    for number, line in enumerate(lines[:-1], start=1):
        record = _parse_line(line, number, path)
        problem = ledger.problem(record, attempt)
        if problem is not None:
            raise _corrupt(path, number, problem)
        ledger.apply(record, line + b"\n")
    return ledger


def journal_path(root: Path, run_id: str) -> Path:
    """Where ``run_id``'s journal lives under the run-state root ``root``."""
    if not isinstance(run_id, str) or _RUN_ID.fullmatch(run_id) is None:
        raise ValueError(f"not a run id usable as a file name: {run_id!r}")
    return root / JOURNAL_DIRECTORY / f"{run_id}.jsonl"


def _refuse(path: Path, info: os.stat_result, what: str) -> None:
    """Refuse a journal file or directory that is not the user's own private one."""
    directory = what == "directory"
    problems = (
        (stat.S_ISLNK(info.st_mode), "is a symlink (refused)"),
        (directory and not stat.S_ISDIR(info.st_mode), "is not a directory"),
        (not directory and not stat.S_ISREG(info.st_mode), "is not a regular file"),
        (info.st_uid != os.geteuid(), "is not owned by you"),
        (not directory and info.st_nlink != 1, "has more than one link (a hard link)"),
        (
            bool(info.st_mode & 0o077),
            f"is readable or writable by group or others (chmod {700 if directory else 600})",
        ),
    )
    for broken, problem in problems:
        if broken:
            raise SpendJournalCorrupt(f"the spend journal {what} {problem}", source=path)


def _open_directory(directory: Path) -> int:
    """The journals' directory, created 0700 when missing; refused when not private."""
    try:
        os.mkdir(directory, 0o700)
        os.chmod(directory, 0o700)  # the umask may have narrowed or widened nothing; be exact
        parent = os.open(directory.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(parent)
        finally:
            os.close(parent)
    except FileExistsError:
        pass
    except OSError as exc:
        raise SpendJournalError(
            f"{directory}: cannot create the spend directory: {exc.strerror}"
        ) from None
    _refuse(directory, os.lstat(directory), "directory")
    try:
        return os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise SpendJournalCorrupt(
            f"cannot open the spend directory: {exc.strerror}", source=directory
        ) from None


def _open_file(directory: int, path: Path) -> tuple[int, bytes]:
    """The journal opened for appending (created when missing) and its bytes so far."""
    flags = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(path.name, flags | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=directory)
        os.fchmod(fd, 0o600)  # a umask never widens O_CREAT's mode, but be exact
        os.fsync(directory)
    except FileExistsError:
        try:
            _refuse(path, os.stat(path.name, dir_fd=directory, follow_symlinks=False), "file")
            fd = os.open(path.name, flags, dir_fd=directory)
        except OSError as exc:
            raise SpendJournalCorrupt(f"cannot open: {exc.strerror}", source=path) from None
    except OSError as exc:
        raise SpendJournalError(
            f"{path}: cannot create the spend journal: {exc.strerror}"
        ) from None
    try:
        return fd, _read_checked(fd, path)
    except BaseException:
        os.close(fd)
        raise


def _read_checked(fd: int, path: Path) -> bytes:
    _refuse(path, os.fstat(fd), "file")
    if os.fstat(fd).st_size > MAX_SPEND_JOURNAL_BYTES:
        raise SpendJournalCorrupt(
            f"the spend journal is larger than {MAX_SPEND_JOURNAL_BYTES} bytes", source=path
        )
    data = read_at_most(fd, MAX_SPEND_JOURNAL_BYTES + 1)
    if len(data) > MAX_SPEND_JOURNAL_BYTES:
        raise SpendJournalCorrupt(
            f"the spend journal is larger than {MAX_SPEND_JOURNAL_BYTES} bytes", source=path
        )
    return data


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


def _check_usd(usd: float) -> float:
    if not _is_number(usd) or not math.isfinite(usd) or usd < 0:
        raise ValueError(f"usd must be a finite number >= 0, not {usd!r}")
    return float(usd)


class SpendJournal:
    """One run's spend journal, open for appending. Thread-safe: one lock guards each write
    and the state it updates, so concurrent calls never lose or interleave lines."""

    def __init__(self, path: Path, fd: int, attempt: int, ledger: _Ledger) -> None:
        self.path = path
        self.attempt = attempt
        self._fd: int | None = fd
        self._ledger = ledger
        self._lock = threading.Lock()
        self._failed: str | None = None

    @classmethod
    def open(cls, root: Path, run_id: str, *, attempt: int) -> SpendJournal:
        """Create or reopen ``run_id``'s journal, replay it strictly, and forfeit what earlier
        attempts reserved and never closed (their process died mid-call)."""
        if not _is_int(attempt) or attempt < 1:
            raise ValueError(f"attempt must be an integer >= 1, not {attempt!r}")
        path = journal_path(root, run_id)
        directory = _open_directory(path.parent)
        try:
            fd, data = _open_file(directory, path)
        finally:
            os.close(directory)
        try:
            journal = cls(path, fd, attempt, replay(data, path, attempt))
        except BaseException:
            os.close(fd)
            raise
        try:
            journal._forfeit_earlier()
        except BaseException:
            journal.close()
            raise
        return journal

    @staticmethod
    def exists(root: Path, run_id: str) -> bool:
        """Whether ``run_id`` has a journal (anything at its path counts; open checks it)."""
        return os.path.lexists(journal_path(root, run_id))

    @property
    def records(self) -> int:
        """Lines written so far."""
        with self._lock:
            return self._ledger.seq

    def reserve(self, call: str, role: str, usd: float, label: str) -> None:
        """Record that ``call`` may spend up to ``usd`` before it starts."""
        if not _bounded(call, MAX_SPEND_LABEL_CHARS, empty=False):
            raise ValueError(f"call must be a non-empty string of at most {MAX_SPEND_LABEL_CHARS}")
        if role not in SPEND_ROLES:
            raise ValueError(f"role must be one of {', '.join(SPEND_ROLES)}, not {role!r}")
        amount = _check_usd(usd)
        with self._lock:
            if call in self._ledger.open:
                raise ValueError(f"call {call!r} already has an open reservation")
            self._append(RESERVE, call, role, amount, label[:MAX_SPEND_LABEL_CHARS], None)

    def reconcile(self, call: str, usd: float) -> None:
        """Close ``call`` with its actual charge (above the reservation: an overrun, kept)."""
        amount = _check_usd(usd)
        with self._lock:
            reserved = self._reserved(call)
            self._append(RECONCILE, call, reserved.role, amount, reserved.label, None)

    def forfeit(self, call: str, reason: str) -> None:
        """Close ``call`` at its full reservation: what it cost is not known."""
        if not isinstance(reason, str) or not reason:
            raise ValueError("a forfeit needs a reason")
        with self._lock:
            reserved = self._reserved(call)
            text = reason[:MAX_DIAGNOSTIC_CHARS]
            self._append(FORFEIT, call, reserved.role, reserved.usd, reserved.label, text)

    def totals(self) -> SpendTotals:
        with self._lock:
            return self._ledger.totals()

    def sha256(self) -> str:
        """Of the file's bytes as written so far (run.json records it)."""
        with self._lock:
            return self._ledger.digest.hexdigest()

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> SpendJournal:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _forfeit_earlier(self) -> None:
        with self._lock:
            earlier = [
                (call, item)
                for call, item in self._ledger.open.items()
                if item.attempt < self.attempt
            ]
            for call, item in earlier:
                self._append(FORFEIT, call, item.role, item.usd, item.label, UNCLOSED_AT_RESUME)

    def _reserved(self, call: str) -> _Open:
        reserved = self._ledger.open.get(call)
        if reserved is None:
            raise ValueError(f"call {call!r} has no open reservation")
        return reserved

    def _append(
        self, kind: str, call: str, role: str, usd: float, label: str, reason: str | None
    ) -> None:
        """Write one record as the next line and make it durable; the lock is held."""
        record = {
            "format": JOURNAL_FORMAT,
            "seq": self._ledger.seq + 1,
            "prev": self._ledger.prev,
            "kind": kind,
            "call": call,
            "role": role,
            "usd": usd,
            "attempt": self.attempt,
            "at": _now(),
            "label": label,
            "reason": reason,
        }
        problem = field_problem(record) or self._ledger.problem(record, self.attempt)
        if problem is not None:
            raise ValueError(
                f"{self.path}: refused to write a record that breaks a rule: {problem}"
            )
        try:
            line = canonical_json(record) + b"\n"
        except CanonicalJsonError as exc:
            raise ValueError(f"the record cannot be canonical JSON: {exc}") from None
        self._write(line)
        self._ledger.apply(record, line)

    def _write(self, line: bytes) -> None:
        if self._fd is None:
            raise ValueError(f"{self.path}: the spend journal is closed")
        if self._failed is not None:
            raise SpendJournalError(f"{self.path}: an earlier append failed ({self._failed})")
        if self._ledger.size + len(line) > MAX_SPEND_JOURNAL_BYTES:
            raise SpendJournalError(
                f"{self.path}: the spend journal would pass {MAX_SPEND_JOURNAL_BYTES} bytes"
            )
        try:
            written = os.write(self._fd, line)
            os.fsync(self._fd)
        except OSError as exc:
            self._failed = exc.strerror or str(exc)
            raise SpendJournalError(f"{self.path}: cannot append: {self._failed}") from None
        if written != len(line):
            self._failed = f"a short write ({written} of {len(line)} bytes)"
            raise SpendJournalError(f"{self.path}: cannot append: {self._failed}")
