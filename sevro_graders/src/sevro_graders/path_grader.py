"""``sevro.path``: a workspace path exists (optionally as a file or directory) or is absent.

Read after the host, in the workspace as the host left it, without following any symlink: a
symlink at the path exists (kind ``symlink``); a symlink on the way to it cannot be judged
without following it, so the check is ``unavailable``. Needs no host observation: every host.
"""

from __future__ import annotations

from collections.abc import Mapping

from attrs import frozen

from sevro_core.api import CheckOutcome, CheckStatus, JsonValue, TrialView
from sevro_graders.configuration import check_shape
from sevro_graders.workspace_entry import Kind, file_observation, inspect, outcome, workspace_path

GRADER_ID = "sevro.path"
_KINDS = {"file": Kind.FILE, "directory": Kind.DIRECTORY, "symlink": Kind.SYMLINK}


@frozen
class PathCheck:
    path: str
    exists: bool
    kind: Kind | None
    """The kind ``exists`` demands; ``None`` for any kind."""

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        entry = inspect(view, self.path)
        observation = file_observation("path", check_id, GRADER_ID, self.path, entry)
        if entry.kind is None:
            return outcome(check_id, GRADER_ID, CheckStatus.UNAVAILABLE, entry.unknown, observation)
        detail = self.assess(entry.kind)
        status = CheckStatus.PASSED if detail is None else CheckStatus.FAILED
        return outcome(check_id, GRADER_ID, status, detail, observation)

    def assess(self, found: Kind) -> str | None:
        if not self.exists:
            return None if found is Kind.MISSING else f"{self.path!r} exists ({found.value})"
        if found is Kind.MISSING:
            return f"{self.path!r} does not exist"
        if self.kind is not None and found is not self.kind:
            return f"{self.path!r} is a {found.value}, expected a {self.kind.value}"
        return None


class PathGrader:
    """Stage 20, beside ``sevro.shell``: reads the workspace after the host; requires nothing."""

    id = GRADER_ID
    version = "1.0.0"
    capabilities: frozenset[str] = frozenset()
    requires: frozenset[str] = frozenset()
    stage = 20

    def compile(self, configuration: Mapping[str, JsonValue]) -> PathCheck:
        config = check_shape("path.v1", configuration)
        kind = config.get("kind", "any")
        assert isinstance(kind, str)
        return PathCheck(
            path=workspace_path(config),
            exists=config["expect"] == "exists",
            kind=_KINDS.get(kind),
        )
