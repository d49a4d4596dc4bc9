"""Which workspace files a shell command read, in full (``complete``) or only in part.

Hosts feed in each command the agent ran (with its output and exit code); this module owns the
rules, so every host counts reads alike. A read is *complete* only when sevro can verify that
the whole file reached the agent:

* the command is one of the whole-file forms: ``cat FILE`` (also ``cat -n``, ``cat -- FILE``
  and ``cat < FILE``), ``sed -n 'A,Bp' FILE`` / ``sed -n 'A,$p' FILE`` with ``A`` = 1,
  ``head -n N FILE`` (``head -N``, ``--lines=N``, ``head FILE`` = 10 lines) and
  ``tail -n +1 FILE`` / ``tail -n N FILE``, where the range covers every line of the file;
* its output reaches the agent unchanged: it is the whole pipeline, or every later stage is a
  bare ``cat``; ``cd DIR && ...`` (``;``, ``&&``, ``||``, newlines) moves the directory later
  paths are resolved against;
* it exited 0 and its output holds the file's exact text, up to whitespace at its two ends
  (an agent CLI may trim a command's output), numbered as GNU ``cat -n`` numbers it for ``cat -n``.

Any other touch is *partial*: a range that misses lines (``sed -n '1,2p'``, ``head -n 2``), a
failed or truncated read, output piped into a filter, or a command that shows content in
another shape (``grep``, ``awk``, ``less``, an interpreter, anything unknown that names the
file). Commands that only look at metadata or names (``ls``, ``wc``, ``stat``, ``file``,
``find``, ``echo``, ``test``, ``cp``, ``mv``, ``rm``, ...) read nothing. Paths are resolved
lexically against the workspace (relative, ``./``-prefixed or absolute), never through the file
system, so a symlink is never followed out of it; paths outside the workspace are not recorded.
A glob is expanded against the workspace (not ``**``). A reader whose argument cannot be
resolved (a variable, a glob matching nothing, an unknown directory after ``cd``, or a file that
is missing although the command succeeded: deleted since, or read from a directory the host does
not report, such as a command's own working directory) is reported as *unresolved*, so a grader
can refuse to call the file untouched.
"""

from __future__ import annotations

import errno
import glob
import os
import re
import shlex
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from attrs import frozen

from sevro_core.fixtures.workspace import WorkspaceEscapeError, read_confined
from sevro_core.formats.jsonio import JsonValue
from sevro_core.limits import MAX_FILE_READS, MAX_READ_CHECK_BYTES, MAX_READ_COMMAND_CHARS
from sevro_core.plugin.protocols import SkillPlaces

_SHELL_WRAPPERS = frozenset(
    {"/bin/bash", "/usr/bin/bash", "bash", "/bin/sh", "/usr/bin/sh", "sh", "/bin/zsh", "zsh"}
)
_INPUT_REDIRECTS = frozenset({"<"})
_SEPARATORS = frozenset({";", "&&", "||", "&", "\n", "(", ")", ";;"})
_PIPES = frozenset({"|", "|&"})
_REDIRECTS = frozenset({">", ">>", ">&", "&>", "&>>", ">|", "<", "<<", "<<<", "<&", "<>"})
_METADATA = frozenset(
    {
        "ls", "wc", "stat", "file", "find", "echo", "printf", "test", "[", "du", "realpath",
        "readlink", "basename", "dirname", "touch", "mkdir", "rm", "rmdir", "mv", "cp", "chmod",
        "chown", "ln", "pwd", "true", "false", "sha256sum", "md5sum", "cksum", "tree", "tee",
    }
)  # fmt: skip
_BARE_CATS = frozenset({("cat",), ("/bin/cat",), ("/usr/bin/cat",)})
_WHOLE_FORMS = frozenset({"cat", "sed", "head", "tail"})
_UNRESOLVABLE = re.compile(r"[$`~{}]")
_GLOB = re.compile(r"[*?\[]")
MAX_GLOB_MATCHES = 64
_SED_RANGE = re.compile(r"^(\d+)(?:,(\d+|\$))?p$")
_COUNT = re.compile(r"^\d+$")
_NUMBERED_LINE = re.compile(r"^\s*(\d+)[\t\u2192](.*)$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_HEREDOC = re.compile(r"(?<!<)<<(?!<)-?[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")

MISSING, FILE, OTHER = "missing", "file", "other"


class WorkspaceFiles:
    """What the files of a workspace hold, for checking a read's output against (bounded,
    UTF-8, never through a symlink, each file read once). ``known`` texts (a skill's body as
    mounted at the start of the trial) take precedence over the file as it is now."""

    def __init__(self, workspace: Path, known: Mapping[str, str | None] | None = None) -> None:
        self.workspace = workspace
        self.known = dict(known or {})
        self._cache: dict[str, tuple[str, str | None]] = {}

    def forget(self) -> None:
        """Drop what was read from the workspace (``known`` texts stay): it may have changed."""
        self._cache.clear()

    def kind(self, path: str) -> str:
        """``file``, ``missing`` or ``other`` (a directory, a symlink, a device...)."""
        return self._load(path)[0]

    def text(self, path: str) -> str | None:
        """The file's text, or None when missing, too large, not UTF-8 or not a regular file."""
        return self._load(path)[1]

    def _load(self, path: str) -> tuple[str, str | None]:
        if path in self.known:
            return FILE, self.known[path]
        if path not in self._cache:
            self._cache[path] = self._read(path)
        return self._cache[path]

    def _read(self, path: str) -> tuple[str, str | None]:
        try:
            data, size = read_confined(self.workspace, path, MAX_READ_CHECK_BYTES)
        except WorkspaceEscapeError:
            return OTHER, None
        except OSError as exc:
            missing = exc.errno in (errno.ENOENT, errno.ENOTDIR)
            return (MISSING if missing else OTHER), None
        if len(data) != size:
            return FILE, None
        try:
            return FILE, data.decode("utf-8")
        except UnicodeDecodeError:
            return FILE, None


@frozen
class FileRead:
    """One file a command touched: ``complete`` only for a verified whole-file read."""

    path: str
    """Workspace-relative POSIX path, lexically canonical."""
    complete: bool
    how: str
    """The command (``cat``, ``sed``, ``grep``...) or tool that read it."""


@frozen
class CommandReads:
    reads: tuple[FileRead, ...]
    unresolved: bool
    """A reading command named a path sevro could not resolve (glob, variable, unknown cwd)."""
    cwd: str | None
    """The workspace-relative directory the command ended in (None: unknown or outside)."""


@frozen
class _Stage:
    words: tuple[str, ...]
    inputs: tuple[str, ...]  # ``< FILE`` redirections


def shell_script(command: str) -> str:
    """The script a wrapper like ``/bin/bash -lc '<script>'`` runs, or the command itself."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return command
    if len(argv) == 3 and argv[0] in _SHELL_WRAPPERS and argv[1] in ("-c", "-lc"):
        return argv[2]
    return command


def _without_heredocs(script: str) -> str:
    """The script with every here-document body removed (it is data, not commands)."""
    lines = script.split("\n")
    kept: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        kept.append(line)
        index += 1
        for match in _HEREDOC.finditer(line):
            delimiter = match.group(2)
            while index < len(lines) and lines[index].strip() != delimiter:
                index += 1
            index += 1
    return "\n".join(kept)


def _tokens(script: str) -> list[str] | None:
    lexer = shlex.shlex(script, posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return None


def _pipelines(tokens: Sequence[str]) -> list[list[_Stage]]:
    """Split into pipelines of stages; redirection targets leave the words (``< F`` is kept)."""
    pipelines: list[list[_Stage]] = []
    stages: list[_Stage] = []
    words: list[str] = []
    inputs: list[str] = []
    index = 0

    def close_stage() -> None:
        if words or inputs:
            stages.append(_Stage(tuple(words), tuple(inputs)))
        words.clear()
        inputs.clear()

    while index < len(tokens):
        token = tokens[index]
        if token in _REDIRECTS or (token.startswith(("<", ">")) and set(token) <= set("<>&|")):
            if words and words[-1].isdigit():
                words.pop()  # the file descriptor of ``2>&1``
            target = tokens[index + 1] if index + 1 < len(tokens) else ""
            if token in _INPUT_REDIRECTS:
                inputs.append(target)
            index += 2
            continue
        if token in _PIPES:
            close_stage()
        elif token in _SEPARATORS or set(token) <= set(";&|()\n"):
            close_stage()
            if stages:
                pipelines.append(list(stages))
            stages.clear()
        else:
            words.append(token)
        index += 1
    close_stage()
    if stages:
        pipelines.append(stages)
    return pipelines


def _resolve(cwd: str | None, word: str) -> str | None:
    """The workspace-relative path ``word`` names from ``cwd`` ("" if outside, None if unknown)."""
    if _UNRESOLVABLE.search(word):
        return None
    if word.startswith("/"):
        return word  # absolute: made relative by the caller, who knows the workspace
    if cwd is None:
        return None
    joined = os.path.normpath(os.path.join(cwd or ".", word))
    if joined == ".." or joined.startswith("../"):
        return ""
    return joined


def _numbered(text: str) -> str:
    """``text`` as GNU ``cat -n`` prints it."""
    lines = text.split("\n")
    trailing = lines[-1] == ""
    if trailing:
        lines.pop()
    out = "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(lines, start=1))
    return out + "\n" if trailing and lines else out


def line_count(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def denumbered(text: str) -> str | None:
    """The text of line-numbered output (``1\\tfoo``, ``     1\\tfoo`` or ``1→foo``) numbered
    consecutively from 1, or None when it is not numbered that way."""
    result = []
    for expected, line in enumerate(text.split("\n"), start=1):
        match = _NUMBERED_LINE.match(line)
        if match is None or int(match.group(1)) != expected:
            return None
        result.append(match.group(2))
    return "\n".join(result)


@frozen
class _Form:
    """How a recognised reader reads its files: whole, or the first/last ``lines`` lines."""

    files: tuple[str, ...]
    lines: int | None  # None: the whole file
    numbered: bool
    whole_form: bool  # False: a recognised reader used in a shape that is only partial


def _options_and_files(words: Sequence[str]) -> tuple[list[str], list[str]]:
    options: list[str] = []
    files: list[str] = []
    only_files = False
    for word in words:
        if only_files or word == "-" or not word.startswith("-"):
            files.append(word)
        elif word == "--":
            only_files = True
        else:
            options.append(word)
    return options, files


def _cat(args: Sequence[str]) -> _Form:
    options, files = _options_and_files(args)
    numbered = bool(options) and all(o in ("-n", "--number") for o in options)
    return _Form(tuple(files), None, numbered, not options or numbered)


def _sed(args: Sequence[str]) -> _Form:
    if any(a.startswith("-i") or a.startswith("--in-place") for a in args):
        return _Form((), None, False, False)  # an in-place edit shows nothing
    if len(args) >= 3 and args[0] in ("-n", "--quiet", "--silent") and not args[1].startswith("-"):
        match = _SED_RANGE.match(args[1])
        files = tuple(args[2:])
        options = any(f.startswith("-") for f in files)
        if match is not None and match.group(1) == "1" and not options:
            end = match.group(2)
            lines = None if end == "$" else (1 if end is None else int(end))
            return _Form(files, lines, False, True)
        return _Form(files, None, False, False)
    _, words = _options_and_files(args)
    return _Form(tuple(words[1:]), None, False, False)  # the first is the script


def _head_tail(args: Sequence[str], from_end: bool) -> _Form:
    lines: int | None = 10
    files: list[str] = []
    whole_form = True
    words = list(args)
    while words:
        word = words.pop(0)
        value: str | None = None
        if word in ("-n", "--lines") and words:
            value = words.pop(0)
        elif word.startswith("--lines="):
            value = word.split("=", 1)[1]
        elif word.startswith("-n") and len(word) > 2:
            value = word[2:]
        elif word.startswith("-") and word[1:].isdigit():
            value = word[1:]
        elif word.startswith("-") and word != "-":
            whole_form = False  # -c, -f, -q ...: bytes or other shapes
            if word in ("-c", "--bytes") and words:
                words.pop(0)
            continue
        else:
            files.append(word)
            continue
        if from_end and value == "+1":
            lines = None
        elif _COUNT.match(value):
            lines = int(value)
        else:
            whole_form = False
    return _Form(tuple(files), lines, False, whole_form)


def _form(name: str, args: Sequence[str]) -> _Form:
    if name == "cat":
        return _cat(args)
    if name == "sed":
        return _sed(args)
    return _head_tail(args, from_end=name == "tail")


def _covers(form: _Form, text: str) -> bool:
    return form.lines is None or form.lines >= line_count(text)


class _Reader:
    """Classifies one command's pipelines into file reads."""

    def __init__(
        self, workspace: str, output: str, succeeded: bool, files: WorkspaceFiles, cwd: str | None
    ) -> None:
        self.workspace = workspace
        self.output = output
        self.succeeded = succeeded
        self.files = files
        self.cwd = cwd
        self.reads: list[FileRead] = []
        self.unresolved = False

    def relative(self, word: str) -> str | None:
        """The workspace-relative path (None: unresolvable; "": outside the workspace)."""
        resolved = None if "\0" in word else _resolve(self.cwd, word)
        if resolved is None:
            self.unresolved = True
            return None
        if resolved.startswith("/"):
            normal = os.path.normpath(resolved)
            if normal == self.workspace:
                return "."
            prefix = self.workspace.rstrip("/") + "/"
            return normal[len(prefix) :] if normal.startswith(prefix) else ""
        return resolved

    def paths(self, word: str) -> list[str]:
        """The workspace files ``word`` names: a glob is expanded against the workspace as it
        is now (never ``**``, at most ``MAX_GLOB_MATCHES``); nothing matching is unresolved."""
        path = self.relative(word)
        if not path:
            return []
        if _GLOB.search(path) is None:
            return [path]
        matches = []
        if "**" not in path and not path.startswith("../"):
            matches = sorted(glob.glob(path, root_dir=self.files.workspace))
        if not matches or len(matches) > MAX_GLOB_MATCHES:
            self.unresolved = True
            return []
        return [os.path.normpath(m) for m in matches]

    def pipeline(self, stages: Sequence[_Stage]) -> None:
        first = stages[0]
        words = [w for w in first.words]
        while words and _ASSIGNMENT.match(words[0]):
            words.pop(0)
        if not words:
            return
        name = PurePosixPath(words[0]).name
        if name in ("cd", "pushd") and len(stages) == 1:
            self.cwd = self._cd(words[1:])
            return
        transparent = all(s.words in _BARE_CATS and not s.inputs for s in stages[1:])
        self.stage(name, words[1:], first.inputs, whole=transparent)
        for stage in stages[1:]:
            later = [w for w in stage.words if not _ASSIGNMENT.match(w)]
            if later:
                self.stage(PurePosixPath(later[0]).name, later[1:], stage.inputs, whole=False)

    def _cd(self, args: Sequence[str]) -> str | None:
        if len(args) != 1 or args[0] == "-":
            return None
        target = self.relative(args[0])
        if target and _GLOB.search(target):
            self.unresolved = True
            return None
        return target or None

    def stage(self, name: str, args: Sequence[str], inputs: Sequence[str], whole: bool) -> None:
        if name in _METADATA:
            return
        if name in _WHOLE_FORMS:
            form = _form(name, args)
            for word in (*form.files, *inputs):
                for path in self.paths(word):
                    self._record(path, name, form if whole and form.whole_form else None)
            return
        for word in (*args, *inputs):
            if word.startswith("-") or _UNRESOLVABLE.search(word) or _GLOB.search(word):
                continue
            named = self.relative(word)
            if named and self.files.kind(named) == FILE:
                self._record(named, name, None)

    def _record(self, path: str, how: str, form: _Form | None) -> None:
        if path == "." or _is_directory(self.files.workspace / path):
            return  # a directory is listed, not read
        if self.succeeded and self.files.kind(path) == MISSING:
            # It read *some* file: one deleted since, or the command ran elsewhere (a CLI
            # may not report a command's own working directory). Which one is unknown.
            self.unresolved = True
            return
        text = self.files.text(path)
        complete = False
        if form is not None and text is not None and self.succeeded and _covers(form, text):
            shown = _numbered(text) if form.numbered else text
            # Whitespace at either end may be trimmed (an agent CLI's shell tool may trim output).
            complete = shown.strip() in self.output
        self.reads.append(FileRead(path, complete, how))


def workspace_path(workspace: Path, word: str) -> str | None:
    """The lexically canonical workspace-relative path a tool's path argument names (relative
    to the workspace or absolute), or None outside it; a symlink is never followed to decide."""
    root = os.path.normpath(str(workspace))
    full = os.path.normpath(word if word.startswith("/") else os.path.join(root, word))
    if full == root:
        return "."
    prefix = root.rstrip("/") + "/"
    return full[len(prefix) :] if full.startswith(prefix) else None


def front_matter_removed(text: str) -> str:
    """A ``SKILL.md`` without its YAML front matter (what an agent CLI's skill tool injects)."""
    if not text.startswith("---\n"):
        return text
    end = text.find("\n---", 3)
    if end == -1:
        return text
    rest = text[end + 4 :]
    return rest[1:] if rest.startswith("\n") else rest


def _is_directory(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def command_reads(
    command: str,
    output: str,
    exit_code: int | None,
    files: WorkspaceFiles,
    cwd: str | None = ".",
) -> CommandReads:
    """The workspace files ``command`` (run from ``cwd``, workspace-relative) read, in order."""
    root = os.path.normpath(str(files.workspace))
    reader = _Reader(root, output, exit_code == 0, files, cwd)
    if len(command) > MAX_READ_COMMAND_CHARS:
        return CommandReads((), True, None)
    tokens = _tokens(_without_heredocs(shell_script(command)))
    if tokens is None:
        return CommandReads((), True, None)
    for stages in _pipelines(tokens):
        reader.pipeline(stages)
    return CommandReads(tuple(reader.reads), reader.unresolved, reader.cwd)


class ReadLog:
    """The ``sevro.file-reads`` entries of one trial, bounded by ``MAX_FILE_READS`` (beyond it
    the observation is partial), with the commands whose reads could not be resolved."""

    def __init__(self) -> None:
        self.entries: list[dict[str, JsonValue]] = []
        self.unresolved: list[dict[str, JsonValue]] = []
        self.overflowed = False

    def add_entry(self, entry: dict[str, JsonValue]) -> None:
        if len(self.entries) >= MAX_FILE_READS:
            self.overflowed = True
            return
        self.entries.append(entry)

    def add(self, turn: int, ordinal: int, found: CommandReads) -> None:
        for read in found.reads:
            self.add_entry(
                {
                    "turn": turn,
                    "ordinal": ordinal,
                    "path": read.path,
                    "complete": read.complete,
                    "how": read.how,
                }
            )
        if found.unresolved:
            if len(self.unresolved) >= MAX_FILE_READS:
                self.overflowed = True
            else:
                self.unresolved.append({"turn": turn, "ordinal": ordinal})

    def data(self, instructions_file: str | None) -> dict[str, JsonValue]:
        return {
            "reads": list(self.entries),
            "unresolved": list(self.unresolved),
            "instructionsFile": instructions_file,
        }


def instructions_file(workspace: Path, places: SkillPlaces | None) -> str | None:
    """The instructions file the host's CLI reads (the first override present, else its own
    file): an experiment arm's context is mounted there, so reading it is reading the context."""
    if places is None:
        return None
    for candidate in places.overrides:
        try:
            if stat.S_ISREG(os.lstat(workspace / candidate).st_mode):
                return candidate
        except OSError:
            continue
    return places.instructions_file
