"""An extension's ``prepare`` answer, checked once per run and installed into every trial.

:func:`check_preparation` holds the schema-valid ``prepare`` result to the runtime rules a
schema cannot say (docs/extensions.md, "Prepare: runtime rules") before anything runs; any
broken rule is an :class:`InvocationError` (exit 64) naming the artifact or declaration and the
rule. The artifacts' bytes are decoded (or read from the case source root) and digested there,
so what each trial installs is exactly what was checked, whatever happens to the sources later.

:meth:`Preparation.install` then writes the artifacts into a fresh workspace without following
any link the fixture put there, lists the ``gitExclude`` ones in ``.git/info/exclude`` and runs
the fixture setup. Any failure there is a :class:`FixtureFailure`: the trial's fixture fails and
the host never starts.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import stat
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import field, frozen

from sevro_core.api import (
    CancelToken,
    Case,
    CaseSources,
    CodexMarketplace,
    ConfigurationError,
    EvaluationArtifact,
    HostPreparation,
    InvocationError,
    JsonValue,
    SkillInvocation,
    WorkspaceEscapeError,
    check_collisions,
    check_git_path,
    open_directory,
)
from sevro_extensions.errors import one_line
from sevro_extensions.fixturesetup import (
    FixtureFailure,
    FixtureSetup,
    check_fixture_setup,
    run_fixture_setup,
)
from sevro_extensions.limits import (
    FIXTURE_SETUP_TIMEOUT_SECONDS,
    MAX_PREPARATION_BYTES,
    MAX_PREPARATION_SOURCE_FILE_BYTES,
)

GIT_FIXTURE_KINDS = frozenset({"generated", "repository"})
"""Fixture kinds that are Git repositories (``gitExclude`` needs one)."""
RESERVED_ARTIFACT_ID = "sevro.semantic.verdicts"
SKILL_INVOCATION_PLACEHOLDER = "{{sevro.skill_invocation}}"
LEGACY_SKILL_INVOCATION_PLACEHOLDER = "{{sevro.codex.skill_invocation}}"
FIXTURE_SETUP_CAPABILITY = "sevro.fixture.setup"
"""The engine capability a ``fixtureSetup`` needs negotiated."""
DECLARATION_CAPABILITIES: Mapping[str, str] = {
    "codexMarketplace": "sevro.codex.plugin-marketplace",
    "claudePluginDirs": "sevro.claude.plugin-dirs",
    "codexSkillInvocation": "sevro.codex.explicit-invocation",
    "codexRepositorySkillInvocation": "sevro.codex.repository-invocation",
    "claudeRepositorySkillInvocation": "sevro.claude.repository-invocation",
    "claudeSkillInvocation": "sevro.claude.explicit-invocation",
}
"""Each host declaration and the capability it needs negotiated and advertised by the host."""
INVOCATION_KINDS: Mapping[str, str] = {
    "codexSkillInvocation": "codex-plugin",
    "codexRepositorySkillInvocation": "codex-repository",
    "claudeRepositorySkillInvocation": "claude-repository",
    "claudeSkillInvocation": "claude-plugin",
}
MARKETPLACE_MANIFEST = ".claude-plugin/marketplace.json"
CLAUDE_PLUGIN_MANIFEST = ".claude-plugin/plugin.json"
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_SKILL = re.compile(r"^[A-Za-z0-9._-]+$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CHUNK = 1 << 20


@frozen
class PreparedArtifact:
    """One checked artifact and the bytes every trial installs."""

    id: str
    relative_path: str
    sha256: str
    content: bytes = field(repr=False)
    git_exclude: bool = False
    executable: bool = False

    @property
    def mode(self) -> int:
        return 0o700 if self.executable else 0o600

    def record(self) -> dict[str, JsonValue]:
        return {
            "id": self.id,
            "relativePath": self.relative_path,
            "sha256": self.sha256,
            "executable": self.executable,
            "gitExclude": self.git_exclude,
        }


@frozen
class Preparation:
    """A checked preparation: implements the core ``CasePreparation`` protocol."""

    artifacts: tuple[PreparedArtifact, ...]
    fixture_setup: FixtureSetup | None
    host: HostPreparation
    prompt: str
    """The initial prompt with the skill-invocation placeholder rendered."""
    follow_up_prompt: str | None
    extension_data: Mapping[str, JsonValue]
    record: Mapping[str, JsonValue]
    """What evidence retains: artifact ids, paths, digests and modes, the declarations and
    ``fixtureSetupDigest`` (never the setup's values)."""
    prompts: tuple[str, ...] = ()
    """Every turn's prompt, rendered (``prompt`` and ``follow_up_prompt`` are the first two)."""
    setup_timeout_s: float = FIXTURE_SETUP_TIMEOUT_SECONDS

    def install(
        self,
        workspace: Path,
        *,
        git: bool,
        fixture_bin_dir: Path | None,
        project_root: Path,
        cancel: CancelToken,
    ) -> None:
        """Write the artifacts, exclude the ``gitExclude`` ones, run the fixture setup."""
        if cancel.cancelled:
            raise FixtureFailure("preparation was cancelled before it started")
        for artifact in self.artifacts:
            if cancel.cancelled:
                raise FixtureFailure("preparation was cancelled")
            write_artifact(workspace, artifact)
        excluded = [a.relative_path for a in self.artifacts if a.git_exclude]
        if excluded:
            if not git:
                raise FixtureFailure("gitExclude artifacts need a Git fixture")
            append_git_excludes(workspace, excluded)
        if self.fixture_setup is not None:
            run_fixture_setup(
                self.fixture_setup,
                workspace,
                project_root=project_root,
                fixture_bin_dir=fixture_bin_dir,
                cancel=cancel,
                timeout_s=self.setup_timeout_s,
            )

    def artifacts_in(self, workspace: Path) -> tuple[EvaluationArtifact, ...]:
        """The artifacts as installed in ``workspace``, for ``evaluate``."""
        return tuple(
            EvaluationArtifact(
                id=a.id,
                path=workspace / a.relative_path,
                sha256=a.sha256,
                git_exclude=a.git_exclude,
                executable=a.executable,
            )
            for a in self.artifacts
        )


def declared_fixture_paths(fixture: Mapping[str, Any]) -> tuple[str, ...]:
    """Every path a fixture declaration writes: its ``files`` and every commit's ``files``.

    What ``check_preparation``'s ``fixture_paths`` wants; a repository's own files are known
    only once it is cloned, and an artifact on one of them fails that trial at install.
    """
    paths: set[str] = set()
    files = fixture.get("files")
    if isinstance(files, dict):
        paths.update(files)
    commits = fixture.get("commits")
    for commit in commits if isinstance(commits, list) else ():
        if isinstance(commit, dict) and isinstance(commit.get("files"), dict):
            paths.update(commit["files"])
    return tuple(sorted(paths))


def _refuse(message: str) -> InvocationError:
    return InvocationError(one_line(f"prepare {message}"))


def check_preparation(
    result: Mapping[str, Any],
    *,
    case: Case,
    fixture_kind: str,
    fixture_paths: Collection[str],
    negotiated: Collection[str],
    host_capabilities: Collection[str],
    sources: CaseSources | None,
    instrumentation_negotiated: bool = False,
) -> Preparation:
    """Check a ``prepare`` result for ``case`` (``InvocationError``, exit 64, one line).

    ``requestedInstrumentation`` is negotiated elsewhere (``instrumentation.py``); until the
    caller says it was (``instrumentation_negotiated``), a request is refused, never ignored.
    """
    requested = result.get("requestedInstrumentation") or []
    if requested and not instrumentation_negotiated:
        wanted = requested[0].get("id") if isinstance(requested[0], dict) else None
        raise _refuse(
            f"requestedInstrumentation: {one_line(str(wanted), 128)} is requested but no "
            "instrumentation is negotiated for this run"
        )
    git = fixture_kind in GIT_FIXTURE_KINDS
    _check_capabilities(result, set(negotiated), set(host_capabilities))
    artifacts = _check_artifacts(result.get("artifacts", []), git=git, sources=sources)
    _check_collisions(artifacts, fixture_paths)
    by_path = {a.relative_path: a for a in artifacts}
    marketplace = _check_marketplace(result.get("codexMarketplace"), artifacts)
    plugin_dirs = _check_plugin_dirs(result.get("claudePluginDirs"), by_path)
    invocation = _check_invocation(result, marketplace, by_path)
    prompts = _rendered_prompts(case, invocation)
    setup_declared = result.get("fixtureSetup")
    setup = None if setup_declared is None else check_fixture_setup(setup_declared)
    extension_data = result.get("extensionData", {})
    if not isinstance(extension_data, dict):
        raise _refuse("extensionData must be an object")
    host = HostPreparation(
        codex_marketplace=marketplace, claude_plugin_dirs=plugin_dirs, invocation=invocation
    )
    return Preparation(
        artifacts=artifacts,
        fixture_setup=setup,
        host=host,
        prompt=prompts[0],
        follow_up_prompt=prompts[1] if len(prompts) > 1 else None,
        extension_data=extension_data,
        record=_record(artifacts, setup, host),
        prompts=prompts,
    )


def _check_capabilities(result: Mapping[str, Any], negotiated: set[str], host: set[str]) -> None:
    """Every declaration's capability negotiated by the extension and advertised by the host."""
    for key, capability in DECLARATION_CAPABILITIES.items():
        if key not in result:
            continue
        if capability not in negotiated:
            raise _refuse(f"{key}: needs capability {capability} negotiated by the extension")
        if capability not in host:
            raise _refuse(f"{key}: needs capability {capability}, which the host does not offer")
    if "fixtureSetup" in result and FIXTURE_SETUP_CAPABILITY not in negotiated:
        raise _refuse(
            f"fixtureSetup: needs engine capability {FIXTURE_SETUP_CAPABILITY} negotiated by "
            "the extension"
        )


def _check_artifacts(
    declared: Sequence[Any], *, git: bool, sources: CaseSources | None
) -> tuple[PreparedArtifact, ...]:
    if not isinstance(declared, list):
        raise _refuse("artifacts must be an array")
    artifacts: list[PreparedArtifact] = []
    ids: set[str] = set()
    total = 0
    for index, item in enumerate(declared):
        artifact = _check_artifact(item, index, git=git, sources=sources)
        if artifact.id in ids:
            raise _refuse(f"artifact {artifact.id}: the id is used twice")
        ids.add(artifact.id)
        total += len(artifact.content)
        if total > MAX_PREPARATION_BYTES:
            raise _refuse(f"artifacts: more than {MAX_PREPARATION_BYTES} bytes together")
        artifacts.append(artifact)
    return tuple(artifacts)


def _check_artifact(
    item: Any, index: int, *, git: bool, sources: CaseSources | None
) -> PreparedArtifact:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str):
        raise _refuse(f"artifacts[{index}]: must be an object with a string id")
    artifact_id = item["id"]
    name = f"artifact {one_line(artifact_id, 128)}"
    if artifact_id == RESERVED_ARTIFACT_ID:
        raise _refuse(f"{name}: the id {RESERVED_ARTIFACT_ID} is reserved")
    path = item.get("relativePath")
    if not isinstance(path, str):
        raise _refuse(f"{name}: relativePath must be a string")
    _check_path(path, name)
    digest = item.get("sha256")
    if not isinstance(digest, str):
        raise _refuse(f"{name}: sha256 must be a string")
    if ("contentBase64" in item) == ("sourceRef" in item):
        raise _refuse(f"{name}: needs exactly one of contentBase64 and sourceRef")
    if "contentBase64" in item:
        content = _decode(item["contentBase64"], name)
    else:
        content = _read_source(item["sourceRef"], name, sources)
    if hashlib.sha256(content).hexdigest() != digest:
        raise _refuse(f"{name}: sha256 does not match the content")
    git_exclude = item.get("gitExclude", False) is True
    if git_exclude and not git:
        raise _refuse(f"{name}: gitExclude needs a Git fixture (generated or repository)")
    return PreparedArtifact(
        id=artifact_id,
        relative_path=path,
        sha256=digest,
        content=content,
        git_exclude=git_exclude,
        executable=item.get("executable", False) is True,
    )


def _check_path(path: str, name: str) -> None:
    """Normalised, relative, no ``..``, no control characters, never inside ``.git``."""
    if _CONTROL.search(path):
        raise _refuse(f"{name}: relativePath contains a control character")
    try:
        check_git_path(path, "")
    except ConfigurationError as exc:
        raise _refuse(f"{name}: relativePath: {exc.message}") from None


def _decode(text: Any, name: str) -> bytes:
    """Strict base64 whose re-encoding is the text itself (one spelling per content)."""
    if not isinstance(text, str):
        raise _refuse(f"{name}: contentBase64 must be a string")
    try:
        content = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise _refuse(f"{name}: contentBase64 is not valid base64") from None
    if base64.b64encode(content).decode("ascii") != text:
        raise _refuse(f"{name}: contentBase64 is not canonical base64")
    return content


def _read_source(ref: Any, name: str, sources: CaseSources | None) -> bytes:
    """The file a ``sourceRef`` names through the CLI source map, inside the source root."""
    if sources is None:
        raise _refuse(f"{name}: sourceRef needs --case-source-root and --case-source-map-file")
    if not isinstance(ref, str) or ref not in sources.sources:
        raise _refuse(
            f"{name}: sourceRef {one_line(str(ref), 128)!r} is not in {sources.map_file} "
            f"({sources.describe()})"
        )
    try:
        canonical = sources.sources[ref].resolve(strict=True)
    except OSError:
        raise _refuse(f"{name}: sourceRef {ref!r} no longer exists") from None
    if not canonical.is_relative_to(sources.root):
        raise _refuse(f"{name}: sourceRef {ref!r} resolves outside --case-source-root")
    try:
        fd = os.open(canonical, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise _refuse(f"{name}: sourceRef {ref!r} cannot be read ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(f"{name}: sourceRef {ref!r} is not a regular file")
        if info.st_size > MAX_PREPARATION_SOURCE_FILE_BYTES:
            raise _refuse(
                f"{name}: sourceRef {ref!r} is larger than {MAX_PREPARATION_SOURCE_FILE_BYTES} "
                "bytes"
            )
        chunks, size = [], 0
        while size <= MAX_PREPARATION_SOURCE_FILE_BYTES:
            chunk = os.read(fd, min(_CHUNK, MAX_PREPARATION_SOURCE_FILE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        content = b"".join(chunks)
    finally:
        os.close(fd)
    if len(content) > MAX_PREPARATION_SOURCE_FILE_BYTES:
        raise _refuse(f"{name}: sourceRef {ref!r} grew while it was read")
    return content


def _check_collisions(
    artifacts: Sequence[PreparedArtifact], fixture_paths: Collection[str]
) -> None:
    """No artifact on, above or below a fixture path or another artifact (case-insensitive).

    Fixture paths are not held to each other: a generated history may legitimately replace a
    file by a directory from one commit to the next.
    """
    files = {_folded(path): path for path in fixture_paths}
    parents = {
        folded[:depth]: path for folded, path in files.items() for depth in range(1, len(folded))
    }
    for artifact in artifacts:
        folded = _folded(artifact.relative_path)
        name = f"artifact {artifact.id}"
        if folded in files:
            raise _refuse(
                f"{name}: {artifact.relative_path!r} is the fixture path {files[folded]!r}"
            )
        if folded in parents:
            raise _refuse(
                f"{name}: {artifact.relative_path!r} is a parent of the fixture path "
                f"{parents[folded]!r}"
            )
        for depth in range(1, len(folded)):
            if folded[:depth] in files:
                raise _refuse(
                    f"{name}: {artifact.relative_path!r} is inside the fixture file "
                    f"{files[folded[:depth]]!r}"
                )
    labels = {a.relative_path: f"artifact {a.id}" for a in artifacts}
    try:
        check_collisions([a.relative_path for a in artifacts], "", pointers=labels)
    except ConfigurationError as exc:
        raise _refuse(f"{exc.pointer}: {exc.message}") from None


def _folded(path: str) -> tuple[str, ...]:
    """One spelling per name a case- and normalization-insensitive file system would merge."""
    return tuple(
        unicodedata.normalize("NFD", unicodedata.normalize("NFD", part).casefold())
        for part in path.split("/")
    )


def _check_marketplace(
    declared: Any, artifacts: Sequence[PreparedArtifact]
) -> CodexMarketplace | None:
    """Every package file under ``artifactRoot`` is a ``gitExclude`` artifact; the manifest
    is one of them."""
    if declared is None:
        return None
    root = declared.get("artifactRoot") if isinstance(declared, dict) else None
    if not isinstance(root, str):
        raise _refuse("codexMarketplace: artifactRoot must be a string")
    _check_path(root, "codexMarketplace")
    name, plugins = declared.get("marketplaceName"), declared.get("pluginNames")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _refuse(f"codexMarketplace: marketplaceName must match {_NAME.pattern}")
    if not isinstance(plugins, list) or not plugins:
        raise _refuse("codexMarketplace: pluginNames must be a non-empty array")
    for plugin in plugins:
        if not isinstance(plugin, str) or not _NAME.fullmatch(plugin):
            raise _refuse(f"codexMarketplace: plugin names must match {_NAME.pattern}")
    if len(set(plugins)) != len(plugins):
        raise _refuse("codexMarketplace: pluginNames are not unique")
    package = [a for a in artifacts if a.relative_path.startswith(root + "/")]
    for artifact in package:
        if not artifact.git_exclude:
            raise _refuse(
                f"codexMarketplace: artifact {artifact.id} under {root} is not gitExclude; "
                "every package file must be"
            )
    if f"{root}/{MARKETPLACE_MANIFEST}" not in {a.relative_path for a in package}:
        raise _refuse(f"codexMarketplace: no artifact {root}/{MARKETPLACE_MANIFEST}")
    return CodexMarketplace(artifact_root=root, marketplace_name=name, plugin_names=tuple(plugins))


def _check_plugin_dirs(declared: Any, by_path: Mapping[str, PreparedArtifact]) -> tuple[str, ...]:
    """Unique, non-overlapping roots, each with a ``.claude-plugin/plugin.json`` artifact."""
    if declared is None:
        return ()
    roots = declared.get("artifactRoots") if isinstance(declared, dict) else None
    if not isinstance(roots, list) or not roots or not all(isinstance(r, str) for r in roots):
        raise _refuse("claudePluginDirs: artifactRoots must be a non-empty array of strings")
    for root in roots:
        _check_path(root, f"claudePluginDirs root {root!r}")
    try:
        check_collisions(roots, "", pointers={root: root for root in roots})
    except ConfigurationError as exc:
        raise _refuse(f"claudePluginDirs: roots overlap: {exc.message}") from None
    for root in roots:
        if f"{root}/{CLAUDE_PLUGIN_MANIFEST}" not in by_path:
            raise _refuse(f"claudePluginDirs: no artifact {root}/{CLAUDE_PLUGIN_MANIFEST}")
    return tuple(roots)


def _check_invocation(
    result: Mapping[str, Any],
    marketplace: CodexMarketplace | None,
    by_path: Mapping[str, PreparedArtifact],
) -> SkillInvocation | None:
    """At most one invocation declaration, with its skill where the host will look for it."""
    declared = [key for key in INVOCATION_KINDS if key in result]
    if len(declared) > 1:
        raise _refuse(f"{declared[0]} and {declared[1]}: only one invocation declaration")
    if not declared:
        return None
    key = declared[0]
    body = result[key]
    skill = body.get("skillName") if isinstance(body, dict) else None
    if not isinstance(skill, str) or not _SKILL.fullmatch(skill) or skill in (".", ".."):
        raise _refuse(f"{key}: skillName must match {_SKILL.pattern} and not be . or ..")
    plugin = body.get("pluginName")
    kind = INVOCATION_KINDS[key]
    if kind in ("codex-plugin", "claude-plugin"):
        if not isinstance(plugin, str) or not _NAME.fullmatch(plugin):
            raise _refuse(f"{key}: pluginName must match {_NAME.pattern}")
    else:
        plugin = None
    needed = None
    if kind == "codex-plugin":
        if marketplace is None or plugin not in marketplace.plugin_names:
            raise _refuse(f"{key}: plugin {plugin!r} is not in the codexMarketplace pluginNames")
        needed = f"{marketplace.artifact_root}/plugin/skills/{skill}/SKILL.md"
    elif kind == "codex-repository":
        needed = f".agents/skills/{skill}/SKILL.md"
        if needed in by_path and not by_path[needed].git_exclude:
            raise _refuse(f"{key}: artifact {needed} must be gitExclude")
    elif kind == "claude-repository":
        needed = f".claude/skills/{skill}/SKILL.md"
    if needed is not None and needed not in by_path:
        raise _refuse(f"{key}: no artifact {needed} for skill {skill!r}")
    return SkillInvocation(kind=kind, plugin_name=plugin, skill_name=skill)


def invocation_token(invocation: SkillInvocation) -> str:
    """How the host spells the explicit invocation in a prompt."""
    if invocation.kind == "codex-plugin":
        return f"${invocation.plugin_name}:{invocation.skill_name}"
    if invocation.kind == "codex-repository":
        return f"${invocation.skill_name}"
    if invocation.kind == "claude-repository":
        return f"/{invocation.skill_name}"
    return f"/{invocation.plugin_name}:{invocation.skill_name}"


def _rendered_prompts(case: Case, invocation: SkillInvocation | None) -> tuple[str, ...]:
    """The case's prompts with the one placeholder replaced by the invocation token."""
    placeholders = (SKILL_INVOCATION_PLACEHOLDER, LEGACY_SKILL_INVOCATION_PLACEHOLDER)
    prompts = case.prompts
    count = sum(prompt.count(p) for prompt in prompts for p in placeholders)
    if invocation is None:
        if count:
            raise _refuse(
                f"case {case.id}: the prompt uses {SKILL_INVOCATION_PLACEHOLDER} but no "
                "invocation is declared"
            )
        return prompts
    if count != 1:
        raise _refuse(
            f"case {case.id}: {SKILL_INVOCATION_PLACEHOLDER} must appear exactly once across "
            f"the prompts with an invocation declaration (found {count})"
        )
    if invocation.kind == "claude-repository" and not prompts[0].startswith(placeholders):
        raise _refuse(
            f"case {case.id}: claudeRepositorySkillInvocation needs the initial prompt to start "
            f"with {SKILL_INVOCATION_PLACEHOLDER}"
        )
    token = invocation_token(invocation)
    return tuple(
        prompt.replace(SKILL_INVOCATION_PLACEHOLDER, token).replace(
            LEGACY_SKILL_INVOCATION_PLACEHOLDER, token
        )
        for prompt in prompts
    )


def _record(
    artifacts: Sequence[PreparedArtifact], setup: FixtureSetup | None, host: HostPreparation
) -> dict[str, JsonValue]:
    record: dict[str, JsonValue] = {"artifacts": [a.record() for a in artifacts]}
    if setup is not None:
        record["fixtureSetupDigest"] = setup.digest
    if host.codex_marketplace is not None:
        record["codexMarketplace"] = host.codex_marketplace.record()
    if host.claude_plugin_dirs:
        record["claudePluginDirs"] = list(host.claude_plugin_dirs)
    if host.invocation is not None:
        record["skillInvocation"] = host.invocation.record()
    return record


def _open_parent(workspace: Path, parts: Sequence[str], what: str) -> int:
    """A descriptor of ``workspace/parts[:-1]``, creating directories, following no link."""
    try:
        return open_directory(workspace, parts[:-1], create=True, mode=0o755)
    except WorkspaceEscapeError as exc:
        raise FixtureFailure(
            f"{what}: {exc.where} in the workspace is a symlink or not a directory"
        ) from None
    except OSError as exc:
        where = "/".join(parts[:-1])
        raise FixtureFailure(f"{what}: cannot open {where} ({exc.strerror})") from None


def write_artifact(workspace: Path, artifact: PreparedArtifact) -> None:
    """Create the file fresh (never over something the fixture put there), mode 0600/0700."""
    what = f"artifact {artifact.id} ({artifact.relative_path})"
    parts = artifact.relative_path.split("/")
    parent = _open_parent(workspace, parts, what)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(parts[-1], flags, artifact.mode, dir_fd=parent)
        except FileExistsError:
            raise FixtureFailure(f"{what}: the path already exists in the workspace") from None
        except OSError as exc:
            raise FixtureFailure(f"{what}: cannot be created ({exc.strerror})") from None
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), artifact.mode)
            view = memoryview(artifact.content)
            for start in range(0, len(view), _CHUNK):
                handle.write(view[start : start + _CHUNK])
    finally:
        os.close(parent)


def exclude_pattern(path: str) -> str:
    """A ``.git/info/exclude`` line matching exactly ``path`` (anchored, globs escaped)."""
    escaped = re.sub(r"([\\*?\[])", r"\\\1", path)
    stripped = escaped.rstrip(" ")
    return "/" + stripped + "\\ " * (len(escaped) - len(stripped))


def append_git_excludes(workspace: Path, paths: Sequence[str]) -> None:
    """Append the paths to ``.git/info/exclude`` (creating it), following no link."""
    what = ".git/info/exclude"
    parent = _open_parent(workspace, [".git", "info", "exclude"], what)
    try:
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open("exclude", flags, 0o644, dir_fd=parent)
        except OSError as exc:
            raise FixtureFailure(f"{what}: cannot be opened ({exc.strerror})") from None
        with os.fdopen(fd, "r+b") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise FixtureFailure(f"{what} is not a regular file")
            lead = b""
            if info.st_size and os.pread(handle.fileno(), 1, info.st_size - 1) != b"\n":
                lead = b"\n"
            lines = "".join(exclude_pattern(path) + "\n" for path in paths)
            handle.write(lead + b"# sevro preparation artifacts\n" + lines.encode("utf-8"))
    finally:
        os.close(parent)
