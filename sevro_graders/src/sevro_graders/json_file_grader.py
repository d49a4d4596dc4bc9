"""``sevro.json-file``: a workspace JSON file is available, missing or malformed, or a value at an
RFC 6901 pointer in it is present, absent or equal to an expected value.

The file is read after the host, whole, up to ``MAX_CHECKED_FILE_BYTES``, without following
symlinks, and parsed as strictly as sevro parses its own input (UTF-8, no byte-order mark, no
duplicate keys, no ``NaN``/``Infinity``, integers exact as doubles, bounded nesting); anything
else is ``malformed``. Equality is JSON equality (``1`` equals ``1.0``, ``true`` is not ``1``).
A file sevro could not see whole (over the bound, unreadable) is ``unavailable`` -- except for
``missing``, which such a file definitely is not; behind a symlinked directory, always
``unavailable``.
"""

from __future__ import annotations

from collections.abc import Mapping

from attrs import frozen

from sevro_core.api import (
    CheckOutcome,
    CheckStatus,
    InvocationError,
    JsonValue,
    TrialView,
    limits,
    parse_json_text,
)
from sevro_graders.configuration import check_shape, pointer_at
from sevro_graders.jsondoc import MISSING, Pointer, js_equal
from sevro_graders.workspace_entry import (
    FileBytes,
    Kind,
    NoFile,
    file_observation,
    outcome,
    read_file,
    workspace_path,
)

GRADER_ID = "sevro.json-file"
POINTER_EXPECTATIONS = ("present", "absent", "equals")


@frozen
class Parsed:
    value: JsonValue


@frozen
class Malformed:
    reason: str


@frozen
class JsonFileCheck:
    path: str
    expect: str
    pointer: Pointer | None = None
    value: JsonValue = None

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        found = read_file(view, self.path, limits.MAX_CHECKED_FILE_BYTES)
        observation = file_observation("json-file", check_id, GRADER_ID, self.path, found)
        status, detail = self.judge(found)
        return outcome(check_id, GRADER_ID, status, detail, observation)

    def judge(self, found: FileBytes | NoFile) -> tuple[CheckStatus, str | None]:
        if isinstance(found, NoFile):
            if self.expect == "missing":
                if found.kind is Kind.MISSING:
                    return CheckStatus.PASSED, None
                if found.kind is not None:
                    return CheckStatus.FAILED, f"{self.path!r} exists ({found.kind.value})"
            return found.status, found.detail
        document = self.parse(found.data)
        if self.expect == "missing":
            return CheckStatus.FAILED, f"{self.path!r} exists"
        if self.expect == "malformed":
            if isinstance(document, Malformed):
                return CheckStatus.PASSED, None
            return CheckStatus.FAILED, f"{self.path!r} is valid JSON"
        if isinstance(document, Malformed):
            return CheckStatus.FAILED, f"{self.path!r} is not valid JSON ({document.reason})"
        failure = self.assess(document.value)
        return (CheckStatus.PASSED, None) if failure is None else (CheckStatus.FAILED, failure)

    def parse(self, data: bytes) -> Parsed | Malformed:
        try:
            return Parsed(parse_json_text(data, source=self.path))
        except InvocationError as exc:
            return Malformed(exc.one_line())

    def assess(self, document: JsonValue) -> str | None:
        if self.pointer is None:
            return None  # available: the document parsed
        selected = self.pointer.resolve(document)
        where = self.pointer.subject()
        if self.expect == "absent":
            return None if selected is MISSING else f"{where} is present"
        if selected is MISSING:
            return f"pointer {self.pointer.source} not found"
        if self.expect == "equals" and not js_equal(self.value, selected):
            return f"{where} does not equal the expected value"
        return None


class JsonFileGrader:
    """Stage 20, beside ``sevro.shell``: reads the workspace after the host; requires nothing."""

    id = GRADER_ID
    version = "1.0.0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset()
    stage = 20

    def compile(self, configuration: Mapping[str, JsonValue]) -> JsonFileCheck:
        config = check_shape("json-file.v1", configuration)
        expect = config["expect"]
        assert isinstance(expect, str)
        pointer = None
        if expect in POINTER_EXPECTATIONS:
            source = config["pointer"]
            assert isinstance(source, str)
            pointer = pointer_at(source, "pointer")
        return JsonFileCheck(
            path=workspace_path(config), expect=expect, pointer=pointer, value=config.get("value")
        )
