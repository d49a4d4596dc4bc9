"""What sevro's pi observer (``observer.mjs``) recorded for one turn, read back strictly.

The observer is a read-only pi extension loaded last with ``-e``: it sees the system prompt
after every other extension chained it, each request's provider-neutral context, and the tool
names of each final provider payload. Its file is trusted only as far as it is well formed:
every line a bounded JSON object of a known kind with exactly its keys, requests numbered
1, 2, ... in order, at most one system prompt. A record cut at a bound, tool names it could not
read, or an ``unobserved`` record (the observer stopped) make the observation partial
(``truncated``), never complete; anything malformed is a ``StreamError``.
"""

from __future__ import annotations

import json
import os
import stat
from importlib.resources import files
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.api import StreamError
from sevro_hosts_pi.limits import (
    MAX_PI_OBSERVE_FILE_BYTES,
    MAX_PI_OBSERVE_LINE_BYTES,
    MAX_PI_OBSERVED_REQUESTS,
    MAX_PI_OBSERVED_TEXT_CHARS,
    MAX_PI_OBSERVED_TOOL_NAME_CHARS,
    MAX_PI_OBSERVED_TOOL_NAMES,
)

__all__ = [
    "OBSERVE_CONTEXT_ENV",
    "OBSERVE_ENV",
    "TurnObservation",
    "observer_source",
    "read_observations",
]

OBSERVE_ENV = "SEVRO_PI_OBSERVE"
"""The environment variable naming the file the observer appends its records to."""
OBSERVE_CONTEXT_ENV = "SEVRO_PI_OBSERVE_CONTEXT"
"""Set to ``1`` to record the system prompt and each request's provider context as well."""
RECORD_KEYS = {
    "tools": frozenset({"kind", "request", "names"}),
    "system-prompt": frozenset({"kind", "text", "truncated"}),
    "provider-context": frozenset({"kind", "request", "text", "truncated"}),
    "unobserved": frozenset({"kind", "reason"}),
}


@frozen
class TurnObservation:
    """One turn's observations (``offered_tools`` and ``contexts`` in request order)."""

    system_prompt: str | None
    contexts: tuple[str, ...]
    offered_tools: tuple[tuple[str, ...], ...]
    truncated: bool
    """Something is missing: a text cut at its bound, a request whose tool names the observer
    could not read, or records it stopped writing."""


def observer_source() -> Path:
    """The packaged ``observer.mjs`` (to copy into a trial and load last with ``-e``)."""
    return Path(str(files("sevro_hosts_pi").joinpath("observer.mjs")))


def read_observations(path: Path) -> TurnObservation:
    """The observer's records for one turn; ``StreamError`` when the file is missing (the
    observer did not load), too large, not a regular file, or holds a malformed record."""
    reader = _Reader()
    for number, record in enumerate(_records(_read(path)), start=1):
        _Reader.check(record, number)
        reader.add(record, number)
    return reader.result()


def _read(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise StreamError(f"observer file {path.name}: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise StreamError(f"observer file {path.name} is not a regular file")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_PI_OBSERVE_FILE_BYTES + 1)
    if len(data) > MAX_PI_OBSERVE_FILE_BYTES:
        raise StreamError(f"observer file is larger than {MAX_PI_OBSERVE_FILE_BYTES} bytes")
    if data and not data.endswith(b"\n"):
        raise StreamError("observer file is truncated (its last record has no newline)")
    return data


def _records(data: bytes) -> list[dict[str, Any]]:
    records = []
    for number, line in enumerate(data.split(b"\n")[:-1], start=1):
        if len(line) > MAX_PI_OBSERVE_LINE_BYTES:
            raise StreamError(f"observer record {number} is longer than its bound")
        try:
            record = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
        except (UnicodeDecodeError, ValueError) as exc:
            raise StreamError(f"observer record {number} is not JSON: {exc}") from None
        if not isinstance(record, dict) or record.get("kind") not in RECORD_KEYS:
            raise StreamError(f"observer record {number} is not a record of a known kind")
        if set(record) != RECORD_KEYS[record["kind"]]:
            raise StreamError(f"observer record {number} ({record['kind']}) has other keys")
        records.append(record)
    return records


def _no_constant(name: str) -> None:
    raise ValueError(f"non-standard constant {name}")


def _text(record: dict[str, Any], number: int) -> str:
    text, truncated = record["text"], record["truncated"]
    if not isinstance(text, str) or not isinstance(truncated, bool):
        raise StreamError(f"observer record {number}: text or truncated of the wrong type")
    if len(text.encode("utf-16-le", "surrogatepass")) // 2 > MAX_PI_OBSERVED_TEXT_CHARS:
        raise StreamError(f"observer record {number}: text longer than its bound")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise StreamError(f"observer record {number}: text with a lone surrogate") from None
    return text


class _Reader:
    def __init__(self) -> None:
        self.system_prompt: str | None = None
        self.contexts: list[str] = []
        self.tools: list[tuple[str, ...]] = []
        self.truncated = False
        self.stopped = False

    @staticmethod
    def check(record: dict[str, Any], number: int) -> None:
        """Field types of one record (its keys were checked while decoding)."""
        kind = record["kind"]
        if "request" in record:
            request = record["request"]
            if not isinstance(request, int) or isinstance(request, bool):
                raise StreamError(f"observer record {number}: request is not a number")
            if not 1 <= request <= MAX_PI_OBSERVED_REQUESTS:
                raise StreamError(f"observer record {number}: request {request} out of range")
        if kind in ("system-prompt", "provider-context"):
            _text(record, number)
        elif kind == "unobserved" and not isinstance(record["reason"], str):
            raise StreamError(f"observer record {number}: unobserved without a reason")
        elif kind == "tools":
            _names(record["names"], number)

    def add(self, record: dict[str, Any], number: int) -> None:
        kind = record["kind"]
        if self.stopped:
            raise StreamError(f"observer record {number} follows the observer's last record")
        if kind == "unobserved":
            self.truncated = self.stopped = True
        elif kind == "system-prompt":
            if self.system_prompt is not None:
                raise StreamError(f"observer record {number}: a second system prompt")
            self.system_prompt = record["text"]
            self.truncated = self.truncated or record["truncated"]
        elif kind == "provider-context":
            self._expect(self.contexts, record["request"], number)
            self.contexts.append(record["text"])
            self.truncated = self.truncated or record["truncated"]
        else:
            self._expect(self.tools, record["request"], number)
            names = record["names"]
            self.truncated = self.truncated or names is None
            self.tools.append(tuple(names) if names is not None else ())

    @staticmethod
    def _expect(seen: list[Any], request: int, number: int) -> None:
        if request != len(seen) + 1:
            raise StreamError(
                f"observer record {number}: request {request} where {len(seen) + 1} was next"
            )

    def result(self) -> TurnObservation:
        return TurnObservation(
            system_prompt=self.system_prompt,
            contexts=tuple(self.contexts),
            offered_tools=tuple(self.tools),
            truncated=self.truncated,
        )


def _names(names: Any, number: int) -> None:
    if names is None:
        return
    if not isinstance(names, list) or len(names) > MAX_PI_OBSERVED_TOOL_NAMES:
        raise StreamError(f"observer record {number}: names is not a bounded list")
    for name in names:
        if not isinstance(name, str) or not name or len(name) > MAX_PI_OBSERVED_TOOL_NAME_CHARS:
            raise StreamError(f"observer record {number}: a tool name is not a bounded string")
