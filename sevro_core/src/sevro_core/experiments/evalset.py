"""skill-creator output evals: a skill's ``evals/evals.json`` as cases.

skill-creator keeps a skill's test prompts in ``<skill>/evals/evals.json``:
``{"skill_name", "evals": [{"id", "prompt", "expected_output", "files", "expectations"}]}``,
where ``files`` are input files relative to the skill directory and each expectation is a
statement a grader decides from what the agent did. Here each eval becomes one case: its prompt,
its input files copied into the workspace (read now, so the case's identity covers their bytes),
every expectation a ``sevro.semantic`` check and ``expected_output`` kept on the case for the
advisory reviewer.

The file is loaded strictly and bounded before anything runs: an unknown key, a wrong type, a
duplicate id, a blank prompt, an input file that is absolute, climbs with ``..``, is or passes
through a symbolic link, is not a regular UTF-8 file or is too large are one line naming the file
and the JSON pointer at fault (exit 64).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Final

from attrs import frozen

from sevro_core.errors import InvocationError, join_pointer
from sevro_core.formats.fileio import read_at_most
from sevro_core.formats.jsonio import JsonValue
from sevro_core.limits import (
    MAX_CHECKS_PER_CASE,
    MAX_EVAL_EXPECTATION_BYTES,
    MAX_EVAL_EXPECTED_OUTPUT_BYTES,
    MAX_EVAL_INPUT_FILE_BYTES,
    MAX_EVAL_SET_EVALS,
    MAX_EVAL_SET_INPUT_BYTES,
    MAX_FIXTURE_FILES,
    MAX_PROMPT_BYTES,
)

EVALS_DIRECTORY: Final = "evals"
"""The skill's own directory of evals: skill-creator's packager leaves it out, and so does every
arm that mounts the skill (the agent never sees the expectations)."""
EVALS_FILE: Final = "evals.json"
SET_KEYS: Final = frozenset({"skill_name", "evals"})
EVAL_KEYS: Final = frozenset({"id", "prompt", "expected_output", "files", "expectations"})
SEMANTIC_GRADER: Final = "sevro.semantic"
CHECK_PREFIX: Final = "expectation-"
CASE_PREFIX: Final = "eval-"
MAX_EVAL_ID: Final = 10**15
"""Eval ids are integers; beyond this one the case id would stop being short."""

_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@frozen
class SkillEval:
    """One eval of the set, with the case id it runs under and its input files' text."""

    case_id: str
    eval_id: int
    prompt: str
    expected_output: str | None
    files: tuple[tuple[str, str], ...]
    """(name in the workspace, text) per input file, in the order declared."""
    expectations: tuple[str, ...]
    pointer: str


@frozen
class EvalSet:
    skill_name: str
    skill_root: Path
    evals: tuple[SkillEval, ...]


def is_eval_set(document: JsonValue) -> bool:
    """A JSON object with ``evals`` or ``skill_name`` and no ``id`` (a case object has one)."""
    return isinstance(document, dict) and "id" not in document and bool(SET_KEYS & document.keys())


def skill_root_of(path: Path) -> Path:
    """The skill directory of ``<skill>/evals/evals.json`` (its ``files`` are relative to it)."""
    absolute = path.absolute()
    if absolute.name != EVALS_FILE or absolute.parent.name != EVALS_DIRECTORY:
        raise InvocationError(
            "a skill-creator eval set is read from SKILL_DIR/evals/evals.json (its files are "
            "relative to the skill directory); pass that file or the skill directory",
            source=path,
        )
    return absolute.parent.parent


def load_eval_set(document: JsonValue, source: Path, skill_root: Path) -> EvalSet:
    """The set's evals with their case ids and input files read, or the one-line refusal."""
    if not isinstance(document, dict):
        raise InvocationError("a skill-creator eval set is a JSON object", source=source)
    _known_keys(document, SET_KEYS, "", source, "the set has skill_name and evals")
    name = document.get("skill_name")
    if not isinstance(name, str) or not name.strip():
        raise InvocationError(
            "skill_name must be the skill's name (a non-blank string)",
            source=source,
            pointer="/skill_name",
        )
    items = document.get("evals")
    if not isinstance(items, list) or not items:
        raise InvocationError("evals must be a non-empty array", source=source, pointer="/evals")
    if len(items) > MAX_EVAL_SET_EVALS:
        raise InvocationError(
            f"more than {MAX_EVAL_SET_EVALS} evals in one set", source=source, pointer="/evals"
        )
    reader = _InputReader(skill_root, source)
    seen: dict[int, int] = {}
    evals = []
    for index, item in enumerate(items):
        pointer = join_pointer("", "evals", index)
        loaded = _eval(item, source, pointer, reader)
        if loaded.eval_id in seen:
            raise InvocationError(
                f"duplicate id {loaded.eval_id} (also /evals/{seen[loaded.eval_id]})",
                source=source,
                pointer=join_pointer(pointer, "id"),
            )
        seen[loaded.eval_id] = index
        evals.append(loaded)
    return EvalSet(name, skill_root, tuple(evals))


def _known_keys(
    item: dict[str, JsonValue], keys: frozenset[str], pointer: str, source: Path, hint: str
) -> None:
    unknown = sorted(item.keys() - keys)
    if not unknown:
        return
    key = unknown[0]
    why = (
        "'assertions' is called 'expectations' in evals.json (skill-creator's "
        "references/schemas.md); rename it"
        if key == "assertions" and keys == EVAL_KEYS
        else f"unknown key {key[:80]!r} ({hint})"
    )
    raise InvocationError(why, source=source, pointer=join_pointer(pointer, key))


def _eval(item: JsonValue, source: Path, pointer: str, reader: _InputReader) -> SkillEval:
    if not isinstance(item, dict):
        raise InvocationError(
            'an eval is an object {"id", "prompt", "expectations", ...}',
            source=source,
            pointer=pointer,
        )
    hint = "an eval has id, prompt, expected_output, files and expectations"
    _known_keys(item, EVAL_KEYS, pointer, source, hint)
    for key in ("id", "prompt", "expectations"):
        if key not in item:
            raise InvocationError(f"missing {key!r}", source=source, pointer=pointer)
    eval_id = item["id"]
    if not isinstance(eval_id, int) or isinstance(eval_id, bool) or not 0 <= eval_id <= MAX_EVAL_ID:
        raise InvocationError(
            f"id must be an integer from 0 to {MAX_EVAL_ID}",
            source=source,
            pointer=join_pointer(pointer, "id"),
        )
    prompt = _text(item["prompt"], MAX_PROMPT_BYTES, "prompt", source, pointer)
    expected = item.get("expected_output")
    if isinstance(expected, str) and not expected.strip():
        expected = None  # skill-creator's drafts leave it empty; nothing for the reviewer
    if expected is not None:
        limit = MAX_EVAL_EXPECTED_OUTPUT_BYTES
        expected = _text(expected, limit, "expected_output", source, pointer)
    files = reader.read_all(item.get("files", []), join_pointer(pointer, "files"))
    where = join_pointer(pointer, "expectations")
    expectations = _expectations(item["expectations"], source, where)
    return SkillEval(
        f"{CASE_PREFIX}{eval_id}", eval_id, prompt, expected, files, expectations, pointer
    )


def _text(value: JsonValue, limit: int, key: str, source: Path, pointer: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvocationError(
            f"{key} must be a non-blank string", source=source, pointer=join_pointer(pointer, key)
        )
    if len(value.encode("utf-8")) > limit:
        raise InvocationError(
            f"{key} longer than {limit} bytes", source=source, pointer=join_pointer(pointer, key)
        )
    return value


def _expectations(value: JsonValue, source: Path, pointer: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise InvocationError(
            "expectations must be a non-empty array of statements: without one nothing grades "
            "the eval (skill-creator drafts them after the first runs; add them first)",
            source=source,
            pointer=pointer,
        )
    if len(value) > MAX_CHECKS_PER_CASE:
        raise InvocationError(
            f"more than {MAX_CHECKS_PER_CASE} expectations in one eval",
            source=source,
            pointer=pointer,
        )
    seen: dict[str, int] = {}
    for index, text in enumerate(value):
        where = join_pointer(pointer, index)
        if not isinstance(text, str) or not text.strip():
            raise InvocationError(
                "an expectation must be a non-blank string", source=source, pointer=where
            )
        if len(text.encode("utf-8")) > MAX_EVAL_EXPECTATION_BYTES:
            raise InvocationError(
                f"expectation longer than {MAX_EVAL_EXPECTATION_BYTES} bytes",
                source=source,
                pointer=where,
            )
        if text in seen:
            raise InvocationError(
                f"duplicate expectation (also {join_pointer(pointer, seen[text])})",
                source=source,
                pointer=where,
            )
        seen[text] = index
    return tuple(str(text) for text in value)


class _InputReader:
    """Reads input files inside the skill directory: component by component without following
    a link, regular files only, each and all bounded, each file read once."""

    def __init__(self, root: Path, source: Path) -> None:
        self.root = root
        self.source = source
        self.total = 0
        self.cache: dict[tuple[str, ...], str] = {}

    def read_all(self, value: JsonValue, pointer: str) -> tuple[tuple[str, str], ...]:
        if not isinstance(value, list):
            raise InvocationError(
                "files must be an array of paths relative to the skill directory",
                source=self.source,
                pointer=pointer,
            )
        if len(value) > MAX_FIXTURE_FILES:
            raise InvocationError(
                f"more than {MAX_FIXTURE_FILES} input files", source=self.source, pointer=pointer
            )
        names: dict[str, int] = {}
        files = []
        for index, raw in enumerate(value):
            where = join_pointer(pointer, index)
            parts = self._parts(raw, where)
            name = parts[-1]
            if name in names:
                also = join_pointer(pointer, names[name])
                raise InvocationError(
                    f"two input files named {name[:80]!r} (also {also}): each is copied to the "
                    "workspace under its own name",
                    source=self.source,
                    pointer=where,
                )
            names[name] = index
            files.append((name, self._text(parts, where)))
        return tuple(files)

    def _parts(self, raw: JsonValue, where: str) -> tuple[str, ...]:
        if not isinstance(raw, str) or not raw.strip() or "\x00" in raw or "\\" in raw:
            raise InvocationError(
                "an input file is a non-blank relative path with / separators",
                source=self.source,
                pointer=where,
            )
        pure = PurePosixPath(raw)
        if pure.is_absolute() or ".." in pure.parts or not pure.parts:
            raise InvocationError(
                f"input file {raw[:120]!r} must stay inside the skill directory (a relative "
                "path without '..')",
                source=self.source,
                pointer=where,
            )
        return pure.parts

    def _text(self, parts: tuple[str, ...], where: str) -> str:
        if parts in self.cache:
            return self.cache[parts]
        data = self._read(parts, where)
        self.total += len(data)
        if self.total > MAX_EVAL_SET_INPUT_BYTES:
            raise InvocationError(
                f"input files of the set exceed {MAX_EVAL_SET_INPUT_BYTES} bytes together",
                source=self.source,
                pointer=where,
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvocationError(
                f"input file {'/'.join(parts)[:120]!r} is not UTF-8 text (sevro copies input "
                "files as inline text files)",
                source=self.source,
                pointer=where,
            ) from None
        self.cache[parts] = text
        return text

    def _read(self, parts: tuple[str, ...], where: str) -> bytes:
        shown = "/".join(parts)[:120]
        try:
            directory = os.open(self.root, _DIRECTORY_FLAGS)
        except OSError as exc:
            message = f"the skill directory cannot be read: {exc.strerror}"
            raise self._refusal(message, where) from None
        try:
            for part in parts[:-1]:
                directory = self._enter(directory, part, shown, where)
            return self._read_regular(directory, parts[-1], shown, where)
        finally:
            os.close(directory)

    def _enter(self, directory: int, part: str, shown: str, where: str) -> int:
        self._not_a_link(directory, part, shown, where)
        try:
            child = os.open(part, _DIRECTORY_FLAGS, dir_fd=directory)
        except OSError as exc:
            raise self._open_refusal(exc, shown, where) from None
        os.close(directory)
        return child

    def _read_regular(self, directory: int, name: str, shown: str, where: str) -> bytes:
        self._not_a_link(directory, name, shown, where)
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=directory)
        except OSError as exc:
            raise self._open_refusal(exc, shown, where) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise self._refusal(f"input file {shown!r} is not a regular file", where)
            data = read_at_most(fd, MAX_EVAL_INPUT_FILE_BYTES + 1)
        finally:
            os.close(fd)
        if len(data) > MAX_EVAL_INPUT_FILE_BYTES:
            raise self._refusal(
                f"input file {shown!r} is larger than {MAX_EVAL_INPUT_FILE_BYTES} bytes", where
            )
        return data

    def _not_a_link(self, directory: int, name: str, shown: str, where: str) -> None:
        try:
            info = os.stat(name, dir_fd=directory, follow_symlinks=False)
        except FileNotFoundError:
            raise self._refusal(f"input file {shown!r} does not exist", where) from None
        except OSError as exc:
            message = f"input file {shown!r} cannot be read: {exc.strerror}"
            raise self._refusal(message, where) from None
        if stat.S_ISLNK(info.st_mode):
            raise self._refusal(
                f"input file {shown!r} is or passes through a symbolic link (refused)", where
            )

    def _open_refusal(self, exc: OSError, shown: str, where: str) -> InvocationError:
        if exc.errno == errno.ELOOP:
            return self._refusal(f"input file {shown!r} passes through a symbolic link", where)
        if exc.errno == errno.ENOTDIR:
            return self._refusal(f"input file {shown!r}: a parent is not a directory", where)
        return self._refusal(f"input file {shown!r} cannot be read: {exc.strerror}", where)

    def _refusal(self, message: str, where: str) -> InvocationError:
        return InvocationError(message, source=self.source, pointer=where)


def eval_case(item: SkillEval) -> dict[str, JsonValue]:
    """The ``case.v1`` document of one eval: its input files inline, one semantic check per
    expectation (``expectation-1``, ... in the order written)."""
    return {
        "id": item.case_id,
        "prompt": item.prompt,
        "fixture": {"files": dict(item.files)},
        "checks": [
            {
                "id": f"{CHECK_PREFIX}{number}",
                "grader": SEMANTIC_GRADER,
                "configuration": {"proposition": text},
            }
            for number, text in enumerate(item.expectations, start=1)
        ],
        "requiredEvidence": [],
    }
