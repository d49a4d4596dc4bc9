"""The operator's runtime configuration (``sevro.runtime.v1``): the tools sandboxed commands see.

Without it every sandboxed command gets a fixed ``PATH`` and nothing of the operator's
environment, so a check that runs the project's own tests cannot find ``uv`` or ``node``. The
file declares which variables to take from the invoking environment or set, and which
directories to read. It is read once, before anything runs, and every problem is one exit-64
line naming the file and JSON pointer. The result is a value: the sandbox applies it to every
command it runs, and the evaluation identity records it (names and roots, never inherited
values).
"""

from __future__ import annotations

import os
import pwd
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.errors import InvocationError
from sevro_core.formats.canonical import hash_json
from sevro_core.formats.jsonio import parse_json_text, read_bounded
from sevro_core.formats.schemas import validate_input
from sevro_core.isolation.candidateartifacts import ArtifactDirectory, artifact_directories
from sevro_core.isolation.protection import ProtectedRoot, canonical
from sevro_core.isolation.seeds import (
    RoleRuntime,
    RuntimeUnavailable,
    SeedDirectory,
    SharedCache,
    fill_slots,
    parse_slots,
    prepare_root,
)
from sevro_core.limits import (
    MAX_RUNTIME_CONFIG_BYTES,
    MAX_RUNTIME_PATH_TOOLS,
    MAX_RUNTIME_VALUE_CHARS,
)
from sevro_core.plugin.hostruntime import HostRuntime
from sevro_core.plugin.protocols import CredentialLocations

FORMAT = "sevro.runtime.v1"
SCHEMA = "runtime.v1"
DEFAULT_FILE = "sevro.json"

RUNNER_SET = {"UV_OFFLINE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
"""Set by sevro for every command when a runtime file is in effect (with ``TMPPREFIX``)."""
RUNNER_OWNED = frozenset(
    {
        *RUNNER_SET,
        "HOME",
        "TMPDIR",
        "TMP",
        "TEMP",
        "TEMPDIR",
        "TMPPREFIX",
        "LANG",
        "USERPROFILE",
        "XDG_RUNTIME_DIR",
    }
)
"""Names the runner gives each role itself (private home, temp directory, fixed locale)."""
SHELL_STARTUP = frozenset(
    {
        "BASH_ENV",
        "ENV",
        "ZDOTDIR",
        "PROMPT_COMMAND",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "IFS",
        "INPUTRC",
        "CDPATH",
        "GLOBIGNORE",
    }
)
INJECTION = frozenset(
    {
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONSTARTUP",
        "PYTHONINSPECT",
        "PYTHONUSERBASE",
        "NODE_OPTIONS",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "GCONV_PATH",
    }
)
"""Variables that make an interpreter or the loader run code nobody named."""
REFUSED_PREFIXES = {
    "LD_": "a dynamic-loader injection variable",
    "DYLD_": "a dynamic-loader injection variable",
    "BASH_FUNC_": "a shell function import",
    "SEVRO_": "owned by the runner",
    "GIT_": "owned by the runner (fixture Git runs with a fixed configuration)",
}
_CREDENTIAL = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|PRIVATE|APIKEY|(^|_)KEYS?($|_)"
)
BROAD_ROOTS = frozenset(map(Path, ("/", "/usr", "/usr/local", "/opt", "/opt/homebrew")))
"""Never granted whole: a ``bin`` below one is granted alone, not its prefix."""
SYSTEM_TREES = tuple(map(Path, ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")))
"""System trees every sandbox leaves readable: a PATH entry or tool target there needs no grant."""
RUNTIME_PLACEHOLDER = "{{sevro.runtime}}"
STATE_KEY = "codexState"
"""The top-level key of seed 002's host-state opt-in (a runtime-file name, not a host's)."""
NOT_YET = {
    "nativeTranscripts": "nativeTranscripts (host-specific)",
}
"""Fields of Sevro's format this version refuses with a clear line rather than ignoring."""
_VARIABLE_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]{0,127})\}")


@frozen
class RuntimePolicy:
    """The effective runtime configuration: variables, effective PATH and read grants.

    ``variables`` holds every declared variable with its value (``PATH`` as filtered);
    ``grants`` pairs each canonical read root with the JSON pointer that asked for it, so an
    overlap found later still names the declaration.
    """

    source: str
    variables: tuple[tuple[str, str], ...]
    inherited: tuple[str, ...]
    explicit: tuple[str, ...]
    grants: tuple[tuple[Path, str], ...]
    skipped: tuple[str, ...] = ()
    dropped_path: tuple[str, ...] = ()
    local_http: bool | None = None
    seeds: tuple[SeedDirectory, ...] = ()
    caches: tuple[SharedCache, ...] = ()
    artifacts: tuple[ArtifactDirectory, ...] = ()
    """``runtime.artifactDirectories``: subtrees of the candidate's home checks may read."""
    hook_plugins: tuple[str, ...] = ()
    """``hooks.plugins``: the mounted plugins whose command hooks the candidate's host runs,
    each handler in a credential-free sandbox; the host refuses a name it has not mounted."""
    codex_state: bool = False
    """The top-level state opt-in: the candidate host exposes its native configuration and
    user skills to commands and binds them read-only for checks (a host that cannot supply
    them makes grading an error)."""
    native_goal: bool = False
    """``hooks.nativeGoal``: the host may run its CLI's native goal; a host that cannot honour
    it refuses the run before anything starts."""

    @property
    def read_roots(self) -> tuple[Path, ...]:
        """Each granted directory once, in order, leaving out those inside another grant."""
        paths = list(dict.fromkeys(path for path, _ in self.grants))
        return tuple(p for p in paths if not any(o != p and p.is_relative_to(o) for o in paths))

    @property
    def path(self) -> str | None:
        return dict(self.variables).get("PATH")

    def environment(self, tmpdir: Path, root: Path | None = None) -> dict[str, str]:
        """What every sandboxed command gets from the policy, ``PATH`` aside; a ``set`` value's
        ``{{sevro.runtime}}`` becomes the role's runtime ``root``."""
        out = {name: value for name, value in self.variables if name != "PATH"}
        if root is not None:
            for name in self.explicit:
                if name != "PATH":
                    out[name] = out[name].replace(RUNTIME_PLACEHOLDER, str(root))
        return {**out, **RUNNER_SET, "TMPPREFIX": str(tmpdir / "zsh")}

    def role_runtime(self, role: str, root: Path) -> RoleRuntime:
        """Prepare ``root`` as ``role``'s private runtime root (``home``, ``tmp``, a private
        copy of each seed the role selects, a link to each shared cache it selects) and say
        what the role's commands get. Idempotent for one root; raises
        :class:`~sevro_core.isolation.seeds.RuntimeUnavailable` when a seed changed since the
        file was read or a shared cache is gone (the command must then not run)."""
        try:
            home, tmpdir = prepare_root(root)
            caches = fill_slots(root, role, self.seeds, self.caches)
        except OSError as exc:
            raise RuntimeUnavailable(f"the runtime root of role {role}: {exc}") from None
        return RoleRuntime(
            root=root,
            home=home,
            tmpdir=tmpdir,
            path=self.path,
            environment=self.environment(tmpdir, root),
            read_roots=self.read_roots,
            writable_roots=(root, *caches),
        )

    def host_runtime(self) -> HostRuntime:
        """The policy as agent-CLI hosts apply it: the same value for every role, no temp
        path in it; each role's host prepares its own root with :meth:`role_runtime`."""
        return HostRuntime(
            path=self.path,
            read_roots=self.read_roots,
            record=self.configuration(),
            prepare=self.role_runtime,
            artifact_paths=tuple(a.path for a in self.artifacts),
            hook_plugins=self.hook_plugins,
            codex_state=self.codex_state,
            native_goal=self.native_goal,
        )

    def configuration(self) -> dict[str, Any]:
        """What enters ``configuration.redacted.runtimePolicy``: names, the effective PATH,
        the declared (non-secret by contract) ``set`` values and the read roots; an inherited
        value other than PATH enters only through ``digest``."""
        values = dict(self.variables)
        document: dict[str, Any] = {
            "format": FORMAT,
            "environment": {
                "names": sorted(values),
                "inherited": sorted(self.inherited),
                "set": {name: values[name] for name in sorted(self.explicit)},
                "path": self.path,
                "runnerSet": sorted([*RUNNER_SET, "TMPPREFIX"]),
            },
            "readRoots": [str(p) for p in self.read_roots],
            "skippedOptionalRoots": list(self.skipped),
            "droppedPathEntries": list(self.dropped_path),
            "localHttp": self.local_http,
        }
        if self.codex_state:
            # absent otherwise, so a file without it keeps its digest
            document[STATE_KEY] = True
        if self.artifacts:  # absent otherwise, so a file without them keeps its digest
            document["artifactDirectories"] = [a.to_json() for a in self.artifacts]
        if self.seeds:
            document["seedDirectories"] = [seed.configuration() for seed in self.seeds]
        if self.caches:
            document["sharedCacheDirectories"] = [cache.configuration() for cache in self.caches]
        hooks: dict[str, Any] = {}  # each key absent when off, so older files keep digests
        if self.native_goal:
            hooks["nativeGoal"] = True
        if self.hook_plugins:
            hooks["plugins"] = list(self.hook_plugins)
        if hooks:
            document["hooks"] = hooks
        return {**document, "digest": hash_json({**document, "values": values})}


def refused_name(name: str, host_homes: Sequence[str]) -> str | None:
    """Why ``name`` may not be declared, or None."""
    upper = name.upper()
    if upper in RUNNER_OWNED:
        return "owned by the runner (each role gets its own)"
    if upper in {h.upper() for h in host_homes}:
        return "an agent CLI's home, which holds its credentials"
    if upper in SHELL_STARTUP:
        return "a shell start-up variable"
    if upper in INJECTION:
        return "a subprocess injection variable"
    for prefix, why in REFUSED_PREFIXES.items():
        if upper.startswith(prefix):
            return why
    if _CREDENTIAL.search(upper):
        return "a credential (its value would be retained in evidence and given to the candidate)"
    return None


def runtime_file(project_root: Path, explicit: Path | None) -> tuple[Path, bool] | None:
    """The file to read: the explicit one, else ``<project-root>/sevro.json`` if it exists."""
    if explicit is not None:
        return explicit.expanduser(), True
    default = project_root / DEFAULT_FILE
    return (default, False) if os.path.lexists(default) else None


def load_runtime(
    project_root: Path,
    explicit: Path | None,
    credentials: CredentialLocations,
    environ: Mapping[str, str] | None = None,
) -> RuntimePolicy | None:
    """Read and check the runtime file once (exit 64 on the first problem); None without one."""
    chosen = runtime_file(project_root, explicit)
    if chosen is None:
        return None
    path, _ = chosen
    env = dict(os.environ if environ is None else environ)
    if os.path.islink(path):
        raise InvocationError("runtime configuration must not be a symbolic link", source=path)
    data = read_bounded(path, MAX_RUNTIME_CONFIG_BYTES, what="runtime configuration")
    document = parse_json_text(data, source=path)
    if isinstance(document, dict):
        _refuse_not_yet(document, path)
    validate_input(SCHEMA, document, source=path)
    if not isinstance(document, dict):  # the schema says it is: this keeps the type checker sure
        raise InvocationError("runtime configuration must be a JSON object", source=path)
    return _Loader(path, env, credentials).policy(document)


def _refuse_not_yet(document: dict[str, Any], path: Path) -> None:
    """Refuse a field of Sevro's format this version does not honour yet (one clear line)."""
    for key, what in NOT_YET.items():
        if key in document:
            raise InvocationError(f"{what} is not supported yet", source=path, pointer=f"/{key}")


def flag_runtime(
    document: dict[str, Any], label: str, credentials: CredentialLocations
) -> RuntimePolicy:
    """The policy deprecated flags stand for (``label`` names them), with a file's checks."""
    source = Path(label)
    validate_input(SCHEMA, document, source=source)
    return _Loader(source, dict(os.environ), credentials).policy(document)


class _Loader:
    """One file's checks, in order, with the file named in every refusal."""

    def __init__(self, path: Path, env: dict[str, str], credentials: CredentialLocations):
        self.path = path
        self.env = env
        self.home = _real_home(env)
        self.host_homes = credentials.home_variables
        self.home_entries = credentials.home_entries
        self.credential_roots = _credential_roots(self.home, env, credentials)
        self.grants: dict[Path, str] = {}

    def fail(self, message: str, pointer: str) -> InvocationError:
        return InvocationError(message, source=self.path, pointer=pointer)

    def policy(self, document: dict[str, Any]) -> RuntimePolicy:
        environment = document.get("environment", {})
        inherit: list[str] = environment.get("inherit", [])
        explicit: dict[str, str] = environment.get("set", {})
        values = self._variables(inherit, explicit)
        dropped: list[str] = []
        if "PATH" in values:
            pointer = "/environment/set/PATH" if "PATH" in explicit else _inherit_pointer(inherit)
            values["PATH"] = self._path(values["PATH"], pointer, "PATH" not in explicit, dropped)
        filesystem = document.get("filesystem", {})
        skipped: list[str] = []
        for key, optional in (("readOnlyRoots", False), ("optionalReadOnlyRoots", True)):
            for index, declared in enumerate(filesystem.get(key, [])):
                pointer = f"/filesystem/{key}/{index}"
                root = self._root(declared, values, pointer, optional=optional)
                if root is None:
                    skipped.append(declared)
                else:
                    self.grants.setdefault(root, pointer)
        seeds, caches = parse_slots(
            document.get("runtime", {}),
            lambda declared, pointer, what: self._required(declared, values, pointer, what),
            self.fail,
            self.credential_roots,
            list(self.grants),
        )
        return RuntimePolicy(
            source=str(self.path),
            variables=tuple(sorted(values.items())),
            inherited=tuple(inherit),
            explicit=tuple(explicit),
            grants=tuple(self.grants.items()),
            skipped=tuple(skipped),
            dropped_path=tuple(dropped),
            local_http=document.get("network", {}).get("localHttp"),
            seeds=seeds,
            caches=caches,
            artifacts=artifact_directories(
                document.get("runtime", {}).get("artifactDirectories", []),
                self.home_entries,
                self.fail,
            ),
            hook_plugins=tuple(document.get("hooks", {}).get("plugins", [])),
            codex_state=document.get(STATE_KEY, False),
            native_goal=document.get("hooks", {}).get("nativeGoal") is True,
        )

    def _variables(self, inherit: list[str], explicit: dict[str, str]) -> dict[str, str]:
        values: dict[str, str] = {}
        for index, name in enumerate(inherit):
            pointer = f"/environment/inherit/{index}"
            self._check_name(name, pointer)
            if name not in self.env:
                raise self.fail(f"{name} is not set in the invoking environment", pointer)
            if len(self.env[name]) > MAX_RUNTIME_VALUE_CHARS:
                raise self.fail(
                    f"{name} is longer than {MAX_RUNTIME_VALUE_CHARS} characters", pointer
                )
            values[name] = self.env[name]
        for name, value in explicit.items():
            pointer = f"/environment/set/{name}"
            self._check_name(name, pointer)
            values[name] = value  # an explicit value overrides an inherited one
        return values

    def _check_name(self, name: str, pointer: str) -> None:
        why = refused_name(name, self.host_homes)
        if why is not None:
            raise self.fail(f"{name} cannot be declared: {why}", pointer)

    def _path(self, value: str, pointer: str, inherited: bool, dropped: list[str]) -> str:
        """The effective PATH: credential entries of an inherited PATH dropped, existing
        entries canonical, each one granted with its bounded install prefix."""
        kept: list[str] = []
        for entry in value.split(":"):
            if not entry or not os.path.isabs(entry):
                raise self.fail(f"PATH entry {entry!r} is not a nonempty absolute path", pointer)
            if self._credential(Path(os.path.normpath(entry))) or self._credential(
                canonical(Path(entry))
            ):
                if not inherited:
                    raise self.fail(f"PATH entry {entry} lies in a credential location", pointer)
                dropped.append(entry)
                continue
            resolved = canonical(Path(entry))
            if not os.path.exists(resolved):
                kept.append(entry)  # inert: nothing to find there, nothing to grant
                continue
            if not resolved.is_dir() or not os.access(resolved, os.R_OK | os.X_OK):
                raise self.fail(f"PATH entry {entry} is not a readable directory", pointer)
            if _system(resolved):
                kept.append(entry)  # as written: /bin and /usr/bin may be one directory
            elif self._tools(resolved, pointer, inherited):
                kept.append(str(resolved))
                self.grants.setdefault(self._prefix(resolved), pointer)
            else:
                dropped.append(entry)
        if not kept:
            raise self.fail("PATH has no entry left once credential locations are removed", pointer)
        return ":".join(dict.fromkeys(kept))

    def _tools(self, directory: Path, pointer: str, inherited: bool) -> bool:
        """Grant the targets of the directory's symlinked tools; False when one points into a
        credential location (the entry is dropped, or refused when set explicitly)."""
        targets: list[Path] = []
        with os.scandir(directory) as entries:
            for count, entry in enumerate(entries):
                if count >= MAX_RUNTIME_PATH_TOOLS:
                    raise self.fail(
                        f"PATH entry {directory} holds more than {MAX_RUNTIME_PATH_TOOLS} entries",
                        pointer,
                    )
                if entry.is_symlink():
                    targets.append(canonical(Path(entry.path)))
        for target in targets:
            if self._credential(target):
                if not inherited:
                    raise self.fail(
                        f"a tool in {directory} points into a credential location", pointer
                    )
                return False
            if target.is_relative_to(directory) or _system(target):
                continue  # already readable
            if not os.access(target, os.R_OK):
                continue  # inaccessible: inert
            self.grants.setdefault(self._prefix(target.parent), pointer)
        return True

    def _prefix(self, directory: Path) -> Path:
        """A ``bin`` directory's install prefix, unless that is broad or a home."""
        if directory.name != "bin":
            return directory
        prefix = directory.parent
        if prefix in BROAD_ROOTS or (self.home is not None and self.home.is_relative_to(prefix)):
            return directory
        return prefix

    def _credential(self, path: Path) -> bool:
        return any(path.is_relative_to(root) for root in self.credential_roots)

    def _root(
        self, declared: str, values: Mapping[str, str], pointer: str, *, optional: bool
    ) -> Path | None:
        return self._source(declared, values, pointer, "read-only root", optional=optional)

    def _source(
        self,
        declared: str,
        values: Mapping[str, str],
        pointer: str,
        what: str,
        *,
        optional: bool = False,
    ) -> Path | None:
        """A declared directory: beside the file, ``~/`` or ``${NAME}``, canonical, readable,
        outside credential locations (None for a missing optional one)."""
        if RUNTIME_PLACEHOLDER in declared:
            raise self.fail(f"{RUNTIME_PLACEHOLDER} is only understood in environment.set", pointer)
        text = self._expand(declared, values, pointer)
        if text.startswith("~/") or text == "~":
            if self.home is None:
                raise self.fail("~ names no home: HOME is unset and the account has none", pointer)
            text = str(self.home / text[2:])
        elif text.startswith("~"):
            raise self.fail("only ~/ (the operator's home) is understood", pointer)
        lexical = Path(os.path.normpath(self.path.parent / text))
        resolved = canonical(lexical)
        if not os.path.lexists(lexical) or not os.path.exists(resolved):
            if optional:
                return None
            raise self.fail(f"{what} {declared} does not exist", pointer)
        if not resolved.is_dir():
            raise self.fail(f"{what} {declared} is not a directory", pointer)
        if not os.access(resolved, os.R_OK | os.X_OK):
            raise self.fail(f"{what} {declared} is not readable", pointer)
        if self._credential(lexical) or self._credential(resolved):
            raise self.fail(f"{what} {declared} lies in a credential location", pointer)
        return resolved

    def _required(self, declared: str, values: Mapping[str, str], pointer: str, what: str) -> Path:
        resolved = self._source(declared, values, pointer, what)
        if resolved is None:  # only an optional root is skipped
            raise self.fail(f"{what} {declared} does not exist", pointer)
        return resolved

    def _expand(self, declared: str, values: Mapping[str, str], pointer: str) -> str:
        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in values:
                raise self.fail(f"${{{name}}} is not a declared environment variable", pointer)
            return values[name]

        if "$" in _VARIABLE_REFERENCE.sub("", declared):
            raise self.fail("only ${NAME} of a declared variable is expanded", pointer)
        return _VARIABLE_REFERENCE.sub(value, declared)


def refuse_overlaps(
    policy: RuntimePolicy,
    roots: Sequence[ProtectedRoot],
    credentials: CredentialLocations,
    hidden: Sequence[Path] = (),
) -> None:
    """Refuse (exit 64) a read grant, seed or shared cache that overlaps a protected root or
    is too broad.

    A grant may lie inside a home (that is how ``~/.local`` is read) but never be or hold a
    home; it may hold a credential location, which stays hidden below it (the sandbox mounts
    the deeper hidden root last), but never lie inside one. Every other protected root (the
    project, results, inputs, ``--protected-root``) may not overlap a grant either way, and no
    grant may hold a directory where workspaces live (``hidden``).
    """
    variables = {name.lower().replace("_", "-") for name in credentials.home_variables}
    declared = [("read grant", grant, pointer) for grant, pointer in policy.grants]
    declared += [("seed directory", s.source, s.pointer + "/source") for s in policy.seeds]
    declared += [("shared cache", c.source, c.pointer + "/source") for c in policy.caches]
    for what, grant, pointer in declared:
        problem = _overlap(grant, roots, variables, hidden)
        if problem is not None:
            raise InvocationError(
                f"{what} {grant} {problem}", source=policy.source, pointer=pointer
            )


def _overlap(
    grant: Path, roots: Sequence[ProtectedRoot], variables: set[str], hidden: Sequence[Path]
) -> str | None:
    if grant in BROAD_ROOTS:
        return "is too broad"
    for root in roots:
        path = canonical(root.path)
        credential = root.label.startswith("home/") or root.label in variables
        if path.is_relative_to(grant) and not credential:
            return f"holds the protected {root.symbol}"
        if grant.is_relative_to(path) and root.label != "home":
            return f"lies inside the protected {root.symbol}"
    for directory in hidden:
        if canonical(directory).is_relative_to(grant):
            return f"holds {directory}, where trial workspaces live"
    return None


def _system(path: Path) -> bool:
    return any(path.is_relative_to(tree) for tree in SYSTEM_TREES)


def _real_home(env: Mapping[str, str]) -> Path | None:
    declared = env.get("HOME")
    if declared and os.path.isabs(declared):
        return canonical(Path(declared))
    try:
        return canonical(Path(pwd.getpwuid(os.getuid()).pw_dir))
    except KeyError:
        return None


def _credential_roots(
    home: Path | None, env: Mapping[str, str], credentials: CredentialLocations
) -> tuple[Path, ...]:
    """Credential locations, lexical and canonical (absent ones too)."""
    roots: list[Path] = []
    if home is not None:
        roots += [home / entry for entry in credentials.home_entries]
    for name in credentials.home_variables:
        value = env.get(name)
        if value and os.path.isabs(value):
            roots.append(Path(os.path.normpath(value)))
    return tuple(dict.fromkeys([*roots, *map(canonical, roots)]))


def _inherit_pointer(inherit: list[str]) -> str:
    return f"/environment/inherit/{inherit.index('PATH')}"


__all__ = [
    "DEFAULT_FILE",
    "FORMAT",
    "RUNNER_OWNED",
    "RUNNER_SET",
    "RuntimePolicy",
    "load_runtime",
    "refuse_overlaps",
    "refused_name",
]
