"""``sevro.file-text``: a workspace file's text contains, equals, or does not contain given text.

The file is read after the host, whole, up to ``MAX_CHECKED_FILE_BYTES``, without following
symlinks, and decoded as strict UTF-8. The comparison is exact (no trimming, no line-ending
changes). Outcomes that are a definite state of the workspace fail: a missing path, a symlink,
a directory, a file that is not UTF-8 -- for ``notContains`` too, since a check on a file's text
needs the file (assert absence with ``sevro.path``). What sevro could not see whole is
``unavailable``: a file over the bound, an unreadable file, a symlink on the way.
"""

from __future__ import annotations

from collections.abc import Mapping

from attrs import frozen

from sevro_core.api import CheckOutcome, CheckStatus, JsonValue, TrialView, limits
from sevro_graders.configuration import check_shape
from sevro_graders.text_assertions import TextAssertions
from sevro_graders.workspace_entry import (
    FileBytes,
    file_observation,
    outcome,
    read_file,
    workspace_path,
)

GRADER_ID = "sevro.file-text"


@frozen
class FileTextCheck:
    path: str
    assertions: TextAssertions

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        found = read_file(view, self.path, limits.MAX_CHECKED_FILE_BYTES)
        observation = file_observation("file-text", check_id, GRADER_ID, self.path, found)
        if not isinstance(found, FileBytes):
            return outcome(check_id, GRADER_ID, found.status, found.detail, observation)
        try:
            text = found.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            detail = f"{self.path!r} is not valid UTF-8 (at byte {exc.start})"
            return outcome(check_id, GRADER_ID, CheckStatus.FAILED, detail, observation)
        failure = self.assertions.first_failure(text, repr(self.path))
        status = CheckStatus.PASSED if failure is None else CheckStatus.FAILED
        return outcome(check_id, GRADER_ID, status, failure, observation)


class FileTextGrader:
    """Stage 20, beside ``sevro.shell``: reads the workspace after the host; requires nothing."""

    id = GRADER_ID
    version = "1.0.0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset()
    stage = 20

    def compile(self, configuration: Mapping[str, JsonValue]) -> FileTextCheck:
        config = check_shape("file-text.v1", configuration)
        return FileTextCheck(path=workspace_path(config), assertions=TextAssertions.of(config))
