"""Fixture setup: the trusted command an extension's ``prepare`` may ask to run per trial.

It runs after the fixture and the preparation artifacts exist and before the host starts, in
the workspace, with a fresh private ``HOME``/``TMPDIR``, the fixture's Git identity and the
fixture tools first on ``PATH``, for at most :data:`FIXTURE_SETUP_TIMEOUT_SECONDS`. Its output
is ignored and its whole process group dies when it ends, so nothing it started outlives it. A
nonzero exit, a timeout or a cancellation fails the trial's fixture (the host never starts).

The declaration is checked once, before anything runs (:func:`check_fixture_setup`, exit 64).
Only ``{{sevro.project}}`` and ``{{sevro.workspace}}`` may appear as placeholders; they become
absolute paths when the command runs. Retained configuration keeps only the setup's digest:
environment values may be secrets.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

from sevro_core.api import (
    DEFAULT_PATH,
    FIXTURE_EMAIL,
    FIXTURE_NAME,
    CancelToken,
    InvocationError,
    hash_json,
    run_bounded,
)
from sevro_extensions.errors import one_line
from sevro_extensions.limits import (
    FIXTURE_SETUP_TIMEOUT_SECONDS,
    MAX_FIXTURE_SETUP_ARGS,
    MAX_FIXTURE_SETUP_ARGV_BYTES,
    MAX_FIXTURE_SETUP_ENV_BYTES,
    MAX_FIXTURE_SETUP_ENV_NAMES,
)

PROJECT_PLACEHOLDER = "{{sevro.project}}"
WORKSPACE_PLACEHOLDER = "{{sevro.workspace}}"
_PLACEHOLDERS = (PROJECT_PLACEHOLDER, WORKSPACE_PLACEHOLDER)
_ANY_PLACEHOLDER = re.compile(r"\{\{[^{}]*\}\}")
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
RESERVED_ENVIRONMENT = frozenset(
    {"PATH", "HOME", "TMPDIR", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_TERMINAL_PROMPT"}
)
"""Names the runner sets itself; an extension may not override them."""
_WHERE = "prepare fixtureSetup"


class FixtureFailure(Exception):
    """Preparing a trial's workspace failed: the fixture fails and the host never starts.

    What ``CasePreparation.install`` raises; ``str(error)`` is one line.
    """


class FixtureSetupError(FixtureFailure):
    """Fixture setup failed (nonzero exit, timeout, cancellation, could not start)."""


@frozen
class FixtureSetup:
    """A checked ``fixtureSetup``: argv and environment as declared (placeholders unrendered)."""

    command: tuple[str, ...]
    environment: tuple[tuple[str, str], ...] = ()

    @property
    def digest(self) -> str:
        """``fixtureSetupDigest``: identifies the setup without retaining its values."""
        return hash_json({"command": list(self.command), "environment": dict(self.environment)})

    def rendered(self, *, project_root: Path, workspace: Path) -> FixtureSetup:
        """The same setup with its two placeholders replaced by absolute paths."""

        def render(text: str) -> str:
            return text.replace(PROJECT_PLACEHOLDER, str(project_root)).replace(
                WORKSPACE_PLACEHOLDER, str(workspace)
            )

        return FixtureSetup(
            command=tuple(render(arg) for arg in self.command),
            environment=tuple((name, render(value)) for name, value in self.environment),
        )


def _refuse(message: str) -> InvocationError:
    return InvocationError(f"{_WHERE}: {message}")


def _check_text(text: str, what: str) -> None:
    if "\0" in text:
        raise _refuse(f"{what} contains NUL")
    for found in _ANY_PLACEHOLDER.findall(text):
        if found not in _PLACEHOLDERS:
            raise _refuse(
                f"{what} uses placeholder {one_line(found, 80)}; only {PROJECT_PLACEHOLDER} and "
                f"{WORKSPACE_PLACEHOLDER} are allowed"
            )


def check_fixture_setup(declared: Mapping[str, Any]) -> FixtureSetup:
    """Check a ``fixtureSetup`` declaration (``InvocationError``, exit 64, one line)."""
    command = declared.get("command")
    if not isinstance(command, list) or not all(isinstance(arg, str) for arg in command):
        raise _refuse("command must be an array of strings")
    if not 1 <= len(command) <= MAX_FIXTURE_SETUP_ARGS:
        raise _refuse(f"command must have 1 to {MAX_FIXTURE_SETUP_ARGS} arguments")
    for index, arg in enumerate(command):
        _check_text(arg, f"command[{index}]")
    if sum(len(arg.encode("utf-8")) + 1 for arg in command) > MAX_FIXTURE_SETUP_ARGV_BYTES:
        raise _refuse(f"command is longer than {MAX_FIXTURE_SETUP_ARGV_BYTES} bytes")
    if not command[0].startswith(("/", *_PLACEHOLDERS)):
        raise _refuse(f"command[0] {one_line(command[0], 200)!r} is not an absolute path")
    environment = declared.get("environment", {})
    if not isinstance(environment, dict):
        raise _refuse("environment must be an object of strings")
    if len(environment) > MAX_FIXTURE_SETUP_ENV_NAMES:
        raise _refuse(f"environment sets more than {MAX_FIXTURE_SETUP_ENV_NAMES} variables")
    size = 0
    for name, value in environment.items():
        if not _ENV_NAME.fullmatch(name):
            raise _refuse(f"environment name {one_line(name, 80)!r} must match {_ENV_NAME.pattern}")
        if name in RESERVED_ENVIRONMENT:
            raise _refuse(f"environment may not set {name}; the runner sets it")
        if not isinstance(value, str):
            raise _refuse(f"environment {name} must be a string")
        _check_text(value, f"environment {name}")
        size += len(name.encode()) + len(value.encode("utf-8")) + 2
    if size > MAX_FIXTURE_SETUP_ENV_BYTES:
        raise _refuse(f"environment is larger than {MAX_FIXTURE_SETUP_ENV_BYTES} bytes")
    if unknown := sorted(set(declared) - {"command", "environment"}):
        raise _refuse(f"unknown field {one_line(unknown[0], 80)!r}")
    return FixtureSetup(command=tuple(command), environment=tuple(sorted(environment.items())))


def setup_environment(
    setup: FixtureSetup, *, home: Path, fixture_bin_dir: Path | None
) -> dict[str, str]:
    """The whole environment of the setup process: nothing of the operator's leaks in."""
    path = DEFAULT_PATH if fixture_bin_dir is None else f"{fixture_bin_dir}:{DEFAULT_PATH}"
    return {
        **dict(setup.environment),
        "PATH": path,
        "HOME": str(home),
        "TMPDIR": str(home),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": FIXTURE_NAME,
        "GIT_AUTHOR_EMAIL": FIXTURE_EMAIL,
        "GIT_COMMITTER_NAME": FIXTURE_NAME,
        "GIT_COMMITTER_EMAIL": FIXTURE_EMAIL,
    }


def _remove(home: Path) -> None:
    """Remove the setup's home even where it took away its own permissions."""
    for directory, subdirectories, _files in os.walk(home):
        for name in subdirectories:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                with contextlib.suppress(OSError):
                    os.chmod(path, 0o700)
    shutil.rmtree(home, ignore_errors=True)


def run_fixture_setup(
    setup: FixtureSetup,
    workspace: Path,
    *,
    project_root: Path,
    fixture_bin_dir: Path | None,
    cancel: CancelToken,
    timeout_s: float = FIXTURE_SETUP_TIMEOUT_SECONDS,
) -> None:
    """Run the setup in ``workspace``; raise :class:`FixtureSetupError` unless it exits 0."""
    rendered = setup.rendered(project_root=project_root, workspace=workspace)
    home = Path(tempfile.mkdtemp(prefix="sevro-setup-"))
    try:
        env = setup_environment(rendered, home=home, fixture_bin_dir=fixture_bin_dir)
        try:
            outcome = run_bounded(
                rendered.command,
                cwd=workspace,
                env=env,
                timeout_s=timeout_s,
                cancel=cancel,
                output_limit=0,
                stderr="discard",
                capture_output=False,
                kill_grace_s=0,
            )
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise FixtureSetupError(
                one_line(f"fixture setup could not start {rendered.command[0]}: {reason}")
            ) from None
    finally:
        _remove(home)
    if outcome.timed_out:
        raise FixtureSetupError(f"fixture setup did not finish within {timeout_s:g} s; killed")
    if outcome.cancelled:
        raise FixtureSetupError("fixture setup was cancelled")
    if outcome.exit_code is not None and outcome.exit_code < 0:
        raise FixtureSetupError(f"fixture setup was killed by signal {-outcome.exit_code}")
    if outcome.exit_code != 0:
        raise FixtureSetupError(f"fixture setup exited with status {outcome.exit_code}")
