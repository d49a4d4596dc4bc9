"""``sevro.path``: a workspace path exists (optionally as a file or directory) or is absent.

Read after the host, in the workspace as the host left it, without following any symlink: a
symlink at the path exists (kind ``symlink``); a symlink on the way to it cannot be judged
without following it, so the check is ``unavailable``. Needs no host observation: every host.
A ``glob`` instead of a ``path`` asks whether anything matches (:mod:`sevro_graders.path_glob`).
"""

from __future__ import annotations

import stat
from collections.abc import Mapping

from attrs import frozen

from sevro_core.api import (
    ENGINE_OBSERVATION_PREFIX,
    CheckOutcome,
    CheckStatus,
    Completeness,
    ConfigurationError,
    JsonValue,
    Observation,
    TrialView,
)
from sevro_graders.configuration import check_shape
from sevro_graders.path_glob import Glob, compile_glob, walk
from sevro_graders.workspace_entry import (
    Kind,
    file_observation,
    inspect,
    observation_segment,
    outcome,
    workspace_path,
)

GRADER_ID = "sevro.path"
_KINDS = {"file": Kind.FILE, "directory": Kind.DIRECTORY, "symlink": Kind.SYMLINK}
_FILE_TYPES = {Kind.FILE: stat.S_IFREG, Kind.DIRECTORY: stat.S_IFDIR, Kind.SYMLINK: stat.S_IFLNK}


@frozen
class PathCheck:
    path: str
    exists: bool
    kind: Kind | None
    """The kind ``exists`` demands; ``None`` for any kind."""
    glob: Glob | None = None
    """When set, ``path`` is its source and the check asks whether anything matches."""

    def grade(self, check_id: str, view: TrialView) -> CheckOutcome:
        if self.glob is not None:
            return self.grade_glob(check_id, view, self.glob)
        entry = inspect(view, self.path)
        observation = file_observation("path", check_id, GRADER_ID, self.path, entry)
        if entry.kind is None:
            return outcome(check_id, GRADER_ID, CheckStatus.UNAVAILABLE, entry.unknown, observation)
        detail = self.assess(entry.kind)
        status = CheckStatus.PASSED if detail is None else CheckStatus.FAILED
        return outcome(check_id, GRADER_ID, status, detail, observation)

    def grade_glob(self, check_id: str, view: TrialView, glob: Glob) -> CheckOutcome:
        accept = None if self.kind is None else _FILE_TYPES[self.kind]
        try:
            found = walk(view.workspace, glob, accept)
        except OSError:
            found = None
        data: dict[str, JsonValue] = {"glob": glob.source}
        detail: str | None
        if found is None or (found.seen == 0 and found.unseen is not None):
            detail = "the workspace is unavailable"
            status = CheckStatus.UNAVAILABLE
        elif found.match is not None:
            data["match"] = found.match
            status = CheckStatus.PASSED if self.exists else CheckStatus.FAILED
            detail = None if self.exists else f"{found.match!r} matches {glob.source!r}"
        elif found.unseen is not None:
            status, detail = CheckStatus.UNAVAILABLE, f"no match seen, but {found.unseen}"
        else:
            status = CheckStatus.FAILED if self.exists else CheckStatus.PASSED
            detail = f"nothing matches {glob.source!r}" if self.exists else None
        if found is not None:
            data["entriesSeen"] = found.seen
        completeness = (
            Completeness.PARTIAL if status is CheckStatus.UNAVAILABLE else Completeness.COMPLETE
        )
        obs_id = f"{ENGINE_OBSERVATION_PREFIX}path.{observation_segment(check_id)}"
        observation = Observation(obs_id, GRADER_ID, completeness, data)
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
        exists = config["expect"] == "exists"
        if ("glob" in config) == ("path" in config):
            raise ConfigurationError("give exactly one of path and glob", "")
        if "glob" in config:
            glob = compile_glob(config)
            return PathCheck(path=glob.source, exists=exists, kind=_KINDS.get(kind), glob=glob)
        return PathCheck(path=workspace_path(config), exists=exists, kind=_KINDS.get(kind))
